package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// startup tracks a node's start: until it has settled (recorded its
// address and cancelled the waits of its earlier process, see announce),
// its clients' commands on the replicated state wait for it, for up to
// settleWait, and then answer -LOADING with what it is waiting for. A
// single node on an empty directory settles well within that, so the
// first write sent once it answers PING succeeds; a node that cannot reach
// a quorum says so instead of leaving the client to guess.
type startup struct {
	settled atomic.Bool
	done    chan struct{} // closed once settled
	once    sync.Once
	reason  atomic.Pointer[string]
}

// settleWait bounds how long a client's command waits for its node to
// settle: below go-redis's 3 s read timeout, so a waiting client hears
// -LOADING (and retries) rather than timing out.
const settleWait = 2 * time.Second

func newStartup() *startup {
	u := &startup{done: make(chan struct{})}
	u.waitingFor("a leader")
	return u
}

// waitingFor records what the node is waiting for, for -LOADING.
func (u *startup) waitingFor(what string) { u.reason.Store(&what) }

// settle marks the node settled and releases the waiting commands.
func (u *startup) settle() {
	u.once.Do(func() {
		u.settled.Store(true)
		close(u.done)
	})
}

// wait waits up to d, or until ctx ends, for the node to settle, and
// reports whether it has.
func (u *startup) wait(ctx context.Context, d time.Duration) bool {
	if u.settled.Load() {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-u.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return u.settled.Load()
}

// why is the -LOADING reason.
func (u *startup) why() string { return "waiting for " + *u.reason.Load() }
