package raftstore

import (
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/lockstate"
)

// recordingMeter counts the disk writes it hears of.
type recordingMeter struct {
	mu                     sync.Mutex
	logSyncs, stateCommits int
}

func (m *recordingMeter) LogSynced(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d > 0 {
		m.logSyncs++
	}
}

func (m *recordingMeter) StateCommitted(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d > 0 {
		m.stateCommits++
	}
}

func (m *recordingMeter) counts() (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logSyncs, m.stateCommits
}

// A single node's Counts: it saw one leader (itself), every proposal ended
// and none failed, and its indexes moved with the proposals; the Meter
// heard the synced log appends, and the write-back a snapshot makes first.
func TestCountsAndMeter(t *testing.T) {
	cfg := testNodeConfig(t.TempDir())
	m := &recordingMeter{}
	cfg.Meter = m
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !n.CanPropose() {
		if time.Now().After(deadline) {
			t.Fatal("the node never became a ready leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := n.Counts()
	if !before.HasLeader || !before.IsLeader || before.LeaderChanges != 1 || before.Term == 0 {
		t.Fatalf("a lone leader's counts: %+v", before)
	}
	const proposals = 5
	for i := range proposals {
		propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(i), TTL: 60_000})
	}
	after := n.Counts()
	if after.ProposalsPending != 0 || after.ProposalsFailed != 0 {
		t.Errorf("after %d answered proposals: %+v", proposals, after)
	}
	if after.Applied < before.Applied+proposals || after.CommitIndex < after.Applied {
		t.Errorf("indexes before %+v, after %d proposals %+v", before, proposals, after)
	}
	if syncs, _ := m.counts(); syncs < proposals {
		t.Errorf("%d synced log appends heard for %d proposals", syncs, proposals)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if _, commits := m.counts(); commits == 0 {
		t.Error("no write-back heard after a snapshot")
	}
}
