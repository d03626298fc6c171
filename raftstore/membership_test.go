package raftstore

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// TestRemoveLeaderStepsDown: a leader that removes itself gets an answer,
// steps down and stays up without a vote (it starts no elections), and the
// remaining voter takes over with the state intact.
func TestRemoveLeaderStepsDown(t *testing.T) {
	n1 := openNode(t, t.TempDir())
	tok := workload(t, n1)

	cfg := testNodeConfig(t.TempDir())
	cfg.ID, cfg.Bootstrap = "n2", false
	n2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n2.Close() })
	if err := n1.AddNonvoter("n2", n2.RaftAddr()); err != nil {
		t.Fatalf("add n2: %v", err)
	}
	waitFor(t, "n2 to catch up", func() bool {
		applied, _ := n2.CaughtUp()
		return applied >= n1.fsm.appliedIndex()
	})
	if err := n1.Promote("n2"); err != nil {
		t.Fatalf("promote n2: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- n1.Remove("n1") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("leader removing itself: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a leader removing itself got no answer in 30 s")
	}

	waitFor(t, "n2 to lead", n2.CanPropose)
	res := propose(t, n2, lockstate.Entry{Op: lockstate.OpFlock, Lock: "after", Session: sessionID(0), Wait: lockstate.NoWait})
	if res.Err != nil || res.Int <= tok {
		t.Fatalf("FLOCK on the new leader = %+v, want a token above %d", res, tok)
	}
	// Several election timeouts later the removed node is still up, a
	// follower in the term it left: it has not campaigned.
	term := n1.raft.CurrentTerm()
	time.Sleep(5 * testNodeConfig("").ElectionTimeout)
	if st := n1.raft.State(); st != raft.Follower {
		t.Fatalf("removed leader is %v, want Follower", st)
	}
	if got := n1.raft.CurrentTerm(); got != term {
		t.Fatalf("removed leader moved from term %d to %d: it campaigned", term, got)
	}
	if n1.CanPropose() {
		t.Fatal("removed leader still accepts proposals")
	}
	if servers, err := n2.Servers(); err != nil || len(servers) != 1 || servers[0].ID != "n2" {
		t.Fatalf("configuration after the removal = %+v, %v; want n2 alone", servers, err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
