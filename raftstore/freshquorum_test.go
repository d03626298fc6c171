package raftstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Only answers to appends sent after the check began, in its term, count
// toward a read's quorum: an answer that waited in a frozen leader's
// socket, sent before the check, never does.
func TestAwaitFresh(t *testing.T) {
	p := newProgress()
	peers := []raft.ServerID{"n2", "n3"}
	began := time.Now()
	p.observeAck("n2", 3, began.Add(-time.Millisecond)) // sent before the check
	p.observeAck("n3", 2, began.Add(time.Millisecond))  // an older term
	if err := p.awaitFresh(peers, 1, 3, began, 50*time.Millisecond, nil); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("stale answers confirmed leadership: %v", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.observeAck("n3", 3, began.Add(2*time.Millisecond))
	}()
	if err := p.awaitFresh(peers, 1, 3, began, 5*time.Second, nil); err != nil {
		t.Fatalf("a fresh answer in the term did not confirm: %v", err)
	}
	if err := p.awaitFresh(peers, 2, 3, began, 50*time.Millisecond, nil); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("one fresh answer of two needed confirmed: %v", err)
	}
	p.observeAck("n3", 3, began.Add(-time.Second)) // an older one never replaces a newer
	if err := p.awaitFresh(peers, 1, 3, began, 50*time.Millisecond, nil); err != nil {
		t.Fatalf("the newer answer was forgotten: %v", err)
	}
	if err := p.awaitFresh(nil, 0, 3, began, time.Millisecond, nil); err != nil {
		t.Fatalf("a single voter needs no answer: %v", err)
	}
}
