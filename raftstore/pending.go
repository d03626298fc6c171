package raftstore

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/reply"
)

// DefaultMaxPendingBytes is Config.MaxPendingBytes's default: four of the
// largest commands a client may send (16 MiB) in flight at once, far
// beyond what small writes ever have pending.
const DefaultMaxPendingBytes = 64 << 20

// ErrBusy answers a write that waited the apply timeout for room among the
// bytes of writes already pending: nothing was proposed, so a retry is
// safe. TRYAGAIN, so that go-redis retries by itself.
var ErrBusy = reply.NewErr("TRYAGAIN", "too many bytes of writes pending on this node; retry")

// pendingMinSize is the least an entry counts, so that the queue of tiny
// entries is bounded too.
const pendingMinSize = 256

// pendingBytes bounds the bytes of the entries a leader has handed to
// Raft and not yet seen the outcome of: the proposals of every connection
// and of every follower's forwarding link together. Each connection bounds
// its own queue, but not all of them at once; a writer that finds the
// budget spent waits (the back-pressure reaches its socket) until earlier
// entries are applied. The bytes come back when Raft answers an entry's
// future, which a single goroutine awaits in proposal order (the order
// Raft answers them), whether or not its proposer is still waiting: a
// client that never reads its replies must not keep the budget spent.
type pendingBytes struct {
	budget *inflight
	queue  chan pendingEntry // to reap, in proposal order
}

type pendingEntry struct {
	f    raft.ApplyFuture
	size int64
}

// sharedFuture is an ApplyFuture that two goroutines may wait on: raft's
// own answers the first Error call only (its later calls read what that
// one stored, unsynchronised, and two calls at once would both wait for
// the one answer). The first caller waits, the other waits for it.
type sharedFuture struct {
	raft.ApplyFuture
	once sync.Once
	err  error
}

func (f *sharedFuture) Error() error {
	f.once.Do(func() { f.err = f.ApplyFuture.Error() })
	return f.err
}

func newPendingBytes(max int64) *pendingBytes {
	return &pendingBytes{budget: newInflight(max, nil), queue: make(chan pendingEntry, 1<<14)}
}

// Used is the bytes of the entries pending.
func (p *pendingBytes) Used() int64 { return p.budget.Used() }

// tryAcquire takes room for size more bytes if there is some now. An
// entry larger than the whole budget is let in alone, when nothing else
// is pending.
func (p *pendingBytes) tryAcquire(size int64) bool {
	return p.budget.tryAcquire(max(size, pendingMinSize))
}

// acquire waits up to timeout for room for size more bytes, or until stop
// is closed.
func (p *pendingBytes) acquire(size int64, timeout time.Duration, stop <-chan struct{}) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	switch ok, timedOut := p.budget.acquireUntil(max(size, pendingMinSize), stop, t.C); {
	case ok:
		return nil
	case timedOut:
		return ErrBusy
	default:
		return ErrNotReady
	}
}

// track hands the proposed entry's future to the reaper, which gives its
// bytes back once Raft answers it, and returns the future the proposer
// waits on in its stead.
func (p *pendingBytes) track(f raft.ApplyFuture, size int64) raft.ApplyFuture {
	sf := &sharedFuture{ApplyFuture: f}
	p.queue <- pendingEntry{f: sf, size: max(size, pendingMinSize)}
	return sf
}

func (p *pendingBytes) release(size int64) { p.budget.release(size) }

// reap gives back each entry's bytes once Raft has answered it, until stop
// is closed. Raft answers every future, with a result or an error
// (shutdown included), so none is waited for forever while raft runs.
func (p *pendingBytes) reap(stop <-chan struct{}) {
	for {
		select {
		case e := <-p.queue:
			e.f.Error()
			p.release(e.size)
		case <-stop:
			return
		}
	}
}
