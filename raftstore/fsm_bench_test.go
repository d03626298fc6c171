package raftstore

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// BenchmarkApplyBatch is the follower's and leader's apply path: batches of
// 64 committed FLOCK/FUNLOCK entries decoded and applied, with the state
// written back to Pebble every writeBackEntries (in memory, so the figure is
// the CPU, not the disk). Reported per entry.
func BenchmarkApplyBatch(b *testing.B) {
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	const sessions, batch = 64, 64
	index := uint64(0)
	next := func(e lockstate.Entry) *raft.Log {
		index++
		return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: e.Encode(nil)}
	}
	ids := make([]string, sessions)
	var open []*raft.Log
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
		open = append(open, next(lockstate.Entry{Op: lockstate.OpSessionOpen, Time: 1, Session: ids[i], TTL: 1 << 40}))
	}
	f.ApplyBatch(open)
	logs := make([]*raft.Log, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		for j := range logs {
			s := (i + j) % sessions
			e := lockstate.Entry{Op: lockstate.OpFlock, Time: int64(i + 2), Session: ids[s], Lock: "lock-" + ids[s], Wait: lockstate.NoWait}
			if (i/batch)%2 == 1 {
				e = lockstate.Entry{Op: lockstate.OpFunlock, Time: int64(i + 2), Session: ids[s], Lock: "lock-" + ids[s]}
			}
			logs[j] = next(e)
		}
		for _, r := range f.ApplyBatch(logs) {
			if res := r.(*lockstate.Result); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	}
}
