package raftstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Callers that arrive while a round is in flight share the next round,
// which starts after all of them arrived; none is answered by a round that
// started before it called.
func TestVerifierRoundsStartAfterCallers(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	gate := make(chan struct{})
	v := &verifier{check: func() error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		<-gate
		return nil
	}}
	const callers = 50
	type answer struct {
		arrived time.Time
		rounds  int // rounds started when it was answered
	}
	answers := make(chan answer, callers)
	call := func() {
		a := answer{arrived: time.Now()}
		if err := v.verify(context.Background()); err != nil {
			t.Error(err)
		}
		mu.Lock()
		a.rounds = len(starts)
		mu.Unlock()
		answers <- a
	}
	go call()
	for {
		mu.Lock()
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			break // the first round is in flight, blocked on gate
		}
		time.Sleep(time.Millisecond)
	}
	for range callers - 1 {
		go call()
	}
	time.Sleep(100 * time.Millisecond) // let them all join the pending group
	close(gate)
	for range callers {
		a := <-answers
		mu.Lock()
		last := starts[a.rounds-1]
		mu.Unlock()
		if last.Before(a.arrived) {
			t.Fatalf("a caller that arrived at %v was answered by a round started at %v", a.arrived, last)
		}
	}
	if len(starts) != 2 {
		t.Fatalf("%d rounds for %d callers: want 2 (one in flight, one for everyone who came meanwhile)", len(starts), callers)
	}
}

func TestVerifierPassesErrorsAndContext(t *testing.T) {
	boom := errors.New("deposed")
	v := &verifier{check: func() error { return boom }}
	if err := v.verify(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
	block := make(chan struct{})
	defer close(block)
	v = &verifier{check: func() error { <-block; return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := v.verify(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
}
