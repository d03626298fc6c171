package raftstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// doneFuture is an ApplyFuture answered when its channel is closed.
type doneFuture struct {
	raft.ApplyFuture
	done chan struct{}
}

func (f doneFuture) Error() error { <-f.done; return nil }

// A writer waits while the budget is spent, gets room when an earlier
// entry's future is answered (whether or not its proposer ever waits for
// it), and gives up with ErrBusy after its timeout.
func TestPendingBytes(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	p := newPendingBytes(1 << 20)
	go p.reap(stop)

	first := doneFuture{done: make(chan struct{})}
	if !p.tryAcquire(800 << 10) {
		t.Fatal("an empty budget refused 800 KiB")
	}
	waited := p.track(first, 800<<10)
	if p.tryAcquire(300 << 10) {
		t.Fatal("300 KiB more fitted in a 1 MiB budget holding 800 KiB")
	}
	if err := p.acquire(300<<10, 50*time.Millisecond, stop); !errors.Is(err, ErrBusy) {
		t.Fatalf("acquire with the budget spent: %v, want ErrBusy", err)
	}
	got := make(chan error, 1)
	go func() { got <- p.acquire(300<<10, 10*time.Second, stop) }()
	select {
	case err := <-got:
		t.Fatalf("acquire returned %v before any room came back", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(first.done) // Raft answers the first entry; nobody waits on it
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the room of an answered entry never came back")
	}
	if err := waited.Error(); err != nil { // the reaper waited on it too
		t.Fatal(err)
	}
	if u := p.Used(); u != 300<<10 {
		t.Fatalf("Used = %d, want %d", u, 300<<10)
	}
	p.release(300 << 10)

	// An entry larger than the budget goes alone.
	if !p.tryAcquire(2 << 20) {
		t.Fatal("an entry larger than the budget was refused with nothing pending")
	}
	if p.tryAcquire(1) {
		t.Fatal("a second entry went in beside one larger than the budget")
	}
	p.release(2 << 20)
	if u := p.Used(); u != 0 {
		t.Fatalf("Used = %d after every release", u)
	}
}
