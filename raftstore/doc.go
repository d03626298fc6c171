// Package raftstore wires hashicorp/raft to fenced: Pebble-backed log, stable
// and state-machine storage in one database, snapshots, and the node that
// proposes entries.
//
// Every key starts with a one-byte prefix naming its owner: 0x01 the Raft log
// (followed by the big-endian uint64 index, so byte order is log order), 0x02
// the Raft stable store (current term, vote), 0x03 the state machine's
// records and 0x04 bookkeeping such as the applied index; each reader
// iterates only within its own prefix. Keeping all of this in one Pebble
// database means one write-ahead log: the synced batch that makes a Raft
// append durable also makes every earlier unsynced state-machine write
// durable. The state machine can therefore commit with NoSync, and only
// every so many entries (fsm.go): after a crash it is at worst behind the
// durable log and replays the rest from it.
package raftstore
