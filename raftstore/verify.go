package raftstore

import (
	"context"
	"sync"
)

// verifier coalesces leadership checks across concurrent reads (see
// DESIGN.md, Linearizable reads): every caller waits for a round that
// started after it arrived, so a read can never be confirmed by a round
// that began before the read's commit index was captured. While a round is in flight, new
// callers gather into the next one; at most one round runs at a time.
type verifier struct {
	check func() error // one quorum round trip (raft.VerifyLeader)

	mu      sync.Mutex
	running bool
	next    *round // the group waiting for the next round
}

type round struct {
	done chan struct{}
	err  error
}

// verify returns nil once a round that started after the call confirmed
// leadership, or that round's error.
func (v *verifier) verify(ctx context.Context) error {
	v.mu.Lock()
	if v.next == nil {
		v.next = &round{done: make(chan struct{})}
	}
	r := v.next
	if !v.running {
		v.running = true
		v.next = nil
		go v.run(r)
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (v *verifier) run(r *round) {
	for r != nil {
		r.err = v.check()
		close(r.done)
		v.mu.Lock()
		r, v.next = v.next, nil
		if r == nil {
			v.running = false
		}
		v.mu.Unlock()
	}
}
