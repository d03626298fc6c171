package raftstore

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Meter hears how long the node's disk writes take, for the server's
// metrics. Its methods run on Raft's and the state machine's goroutines, in
// their write paths: they must only record.
type Meter interface {
	// LogSynced: a Raft log append, committed to Pebble with its fsync
	// (the write that makes an entry durable, as etcd's WAL fsync).
	LogSynced(time.Duration)
	// StateCommitted: a write-back of the state machine's records, a
	// Pebble batch committed without fsync (as etcd's backend commit).
	StateCommitted(time.Duration)
}

// timed runs fn, reporting how long it took to report (a Meter method) when
// the meter is set.
func timed(m Meter, report func(Meter, time.Duration), fn func() error) error {
	if m == nil {
		return fn()
	}
	start := time.Now()
	err := fn()
	report(m, time.Since(start))
	return err
}

// Counts are the node's running counts since it opened, for the metrics.
type Counts struct {
	// HasLeader: this node knows a leader; IsLeader: it is the leader.
	HasLeader, IsLeader bool
	// LeaderChanges counts the leaders this node saw take over (etcd's
	// leader_changes_seen): each time a leader is known after none, or
	// after another.
	LeaderChanges uint64
	// Term is the current Raft term. CommitIndex and Applied are the Raft
	// commit index and this node's applied index: all three only grow
	// while the process runs.
	Term, CommitIndex, Applied uint64
	// ProposalsPending are the entries this node handed to Raft as leader
	// whose outcome it has not seen; ProposalsFailed those Raft answered
	// with an error (not leader any more, leadership lost, a failed
	// append).
	ProposalsPending int64
	ProposalsFailed  uint64
	// ProposalBytes are the bytes of the pending proposals, which
	// Config.MaxPendingBytes bounds; LogCacheBytes the bytes of the
	// recent log entries kept in memory (at most 16 MiB); ReplicationBytes
	// those of the appends sent to followers and not yet answered (at
	// most 32 MiB and one append per follower).
	ProposalBytes, LogCacheBytes, ReplicationBytes int64
}

// Counts returns the node's counts; each is read on its own, without a
// lock, so they may be a moment apart.
func (n *Node) Counts() Counts {
	leader, _ := n.raft.LeaderWithID()
	return Counts{
		HasLeader: leader != "", IsLeader: n.IsLeader(),
		LeaderChanges: n.counts.leaderChanges.Load(),
		Term:          n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), Applied: n.fsm.appliedIndex(),
		ProposalsPending: n.counts.pending.Load(), ProposalsFailed: n.counts.failed.Load(),
		ProposalBytes: n.pending.Used(), LogCacheBytes: n.cache.Bytes(), ReplicationBytes: n.replicating.Load(),
	}
}

// nodeCounts are Counts' running counters.
type nodeCounts struct {
	leaderChanges atomic.Uint64
	pending       atomic.Int64
	failed        atomic.Uint64
}

// countLeaderChanges counts leader changes as Raft observes them. The
// observer has no channel: its filter, which Raft calls on its own
// goroutine for every observation (observer.go, observe), counts and sends
// nothing, so no goroutine is needed and no observation is dropped. Raft
// observes a leader change only when the leader differs from the last one
// it set, "" (none) included.
func (n *Node) countLeaderChanges() {
	n.raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if l, ok := o.Data.(raft.LeaderObservation); ok && l.LeaderID != "" {
			n.counts.leaderChanges.Add(1)
		}
		return false
	}))
}
