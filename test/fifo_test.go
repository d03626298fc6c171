package test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance c: 10 waiters, each with its own session and connection,
// queued in a known order (each started only once LOCK.INFO shows the one
// before it queued), get the lock in that order, each with a larger token.
func TestFIFOOrder(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "fifo"
	holder := openSession(t, c, 60000, "holder")
	last := mustInt(t, c, "FLOCK", l, holder)

	const waiters = 10
	sessions := make([]string, waiters)
	clients := make([]*redis.Client, waiters)
	replies := make([]<-chan reply, waiters)
	for i := range waiters {
		clients[i] = n.soloClient(t)
		sessions[i] = openSession(t, clients[i], 60000, fmt.Sprintf("w%d", i))
		replies[i] = async(clients[i], "FLOCK", l, sessions[i], "WAIT", 0)
		li := waitQueued(t, c, l, sessions[:i+1]...)
		if li.Holder != holder {
			t.Fatalf("holder changed while queueing: %+v", li)
		}
		if si := getSessionInfo(t, c, sessions[i]); !slices.Equal(si.Waiting, []string{l}) {
			t.Fatalf("SESSION.INFO waiting = %v, want [%s]", si.Waiting, l)
		}
	}
	for i, ch := range replies {
		if r, ok := pending(ch); !ok {
			t.Fatalf("waiter %d answered %v/%v before any release", i, r.val, r.err)
		}
	}

	// Each release hands the lock to the head of the queue, and only to it.
	if got := mustInt(t, c, "FUNLOCK", l, holder); got != 0 {
		t.Fatalf("holder's FUNLOCK = %d, want 0", got)
	}
	for i := range waiters {
		tok := replyInt(t, await(t, replies[i], fmt.Sprintf("waiter %d", i)), fmt.Sprintf("waiter %d", i))
		if tok <= last {
			t.Fatalf("waiter %d got token %d, want > %d", i, tok, last)
		}
		last = tok
		li := getLockInfo(t, c, l)
		want := lockInfo{Held: true, Holder: sessions[i], Count: 1, Token: tok}
		for _, s := range sessions[i+1:] {
			want.Waiters = append(want.Waiters, waiterInfo{Session: s})
		}
		if !equalLockInfo(li.withoutRemaining(), want) {
			t.Fatalf("after grant %d, LOCK.INFO = %+v, want %+v", i, li, want)
		}
		for j := i + 1; j < waiters; j++ {
			if r, ok := pending(replies[j]); !ok {
				t.Fatalf("waiter %d answered %v/%v out of turn (lock is %d's)", j, r.val, r.err, i)
			}
		}
		if got := mustInt(t, clients[i], "FUNLOCK", l, sessions[i]); got != 0 {
			t.Fatalf("waiter %d FUNLOCK = %d, want 0", i, got)
		}
	}
	mustNil(t, c, "FENCE", l)
}

// Acceptance c: FLOCK ... WAIT 200 on a held lock answers null after
// 200-400 ms and leaves the queue.
func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "timeout"
	holder := openSession(t, c, 60000, "holder")
	tok := mustInt(t, c, "FLOCK", l, holder)
	wc := n.soloClient(t)
	w := openSession(t, wc, 60000, "waiter")
	// Warm up the waiter's connection so the timing covers only the FLOCK.
	if err := wc.Ping(tctx(t)).Err(); err != nil {
		t.Fatal(err)
	}

	ch := async(wc, "FLOCK", l, w, "WAIT", 200)
	li := waitQueued(t, c, l, w)
	if rem := li.Waiters[0].Remaining; rem <= 0 || rem > 200 {
		t.Errorf("queued waiter's remaining = %d, want in (0, 200]", rem)
	}
	r := await(t, ch, "FLOCK WAIT 200")
	if !errors.Is(r.err, redis.Nil) {
		t.Fatalf("FLOCK WAIT 200 on a held lock = %v/%v, want null", r.val, r.err)
	}
	if d := r.done.Sub(r.sent); d < 200*time.Millisecond || d > 400*time.Millisecond {
		t.Errorf("FLOCK WAIT 200 answered after %v, want 200-400 ms", d)
	}
	want := lockInfo{Held: true, Holder: holder, Count: 1, Token: tok}
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Errorf("after the timeout, LOCK.INFO = %+v, want %+v (no waiters)", li, want)
	}
	if si := getSessionInfo(t, c, w); len(si.Waiting) != 0 {
		t.Errorf("after the timeout, SESSION.INFO waiting = %v, want none", si.Waiting)
	}
	// The timed-out waiter does not get the lock later.
	mustInt(t, c, "FUNLOCK", l, holder)
	mustNil(t, c, "FENCE", l)
}

// Acceptance c: a waiter whose session is SESSION.KILLed is answered
// -NOSESSION and leaves the queue; the others keep their places.
func TestKilledWaiterGetsNoSession(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "killed"
	holder := openSession(t, c, 60000, "holder")
	tok := mustInt(t, c, "FLOCK", l, holder)
	c1, c2 := n.soloClient(t), n.soloClient(t)
	w1 := openSession(t, c1, 60000, "w1")
	w2 := openSession(t, c2, 60000, "w2")
	r1 := async(c1, "FLOCK", l, w1, "WAIT", 0)
	waitQueued(t, c, l, w1)
	r2 := async(c2, "FLOCK", l, w2, "WAIT", 0)
	waitQueued(t, c, l, w1, w2)

	if got := mustInt(t, c, "SESSION.KILL", w1); got != 1 {
		t.Fatalf("SESSION.KILL = %d, want 1", got)
	}
	if r := await(t, r1, "killed waiter"); !isCode(r.err, "NOSESSION") {
		t.Fatalf("killed waiter answered %v/%v, want -NOSESSION", r.val, r.err)
	}
	li := waitQueued(t, c, l, w2)
	if li.Holder != holder || li.Token != tok {
		t.Fatalf("LOCK.INFO = %+v, want still held by the holder", li)
	}
	if _, ok := pending(r2); !ok {
		t.Fatal("the other waiter was answered by the kill")
	}
	mustInt(t, c, "FUNLOCK", l, holder)
	if got := replyInt(t, await(t, r2, "w2"), "w2"); got <= tok {
		t.Fatalf("w2 token %d, want > %d", got, tok)
	}
	if li := getLockInfo(t, c, l); li.Holder != w2 {
		t.Fatalf("LOCK.INFO = %+v, want held by w2", li)
	}
}

// Acceptance c: a new FLOCK (another REQ) from an owner already waiting on
// the lock cancels its old wait: the old call answers -CANCELLED and the
// owner is queued once.
func TestNewFlockCancelsOldWait(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "supersede"
	holder := openSession(t, c, 60000, "holder")
	tok := mustInt(t, c, "FLOCK", l, holder)
	ca, cb := n.soloClient(t), n.soloClient(t)
	w := openSession(t, c, 60000, "w")

	old := async(ca, "FLOCK", l, w, "OWNER", "task", "WAIT", 0, "REQ", "r1")
	waitQueued(t, c, l, w)
	neu := async(cb, "FLOCK", l, w, "OWNER", "task", "WAIT", 0, "REQ", "r2")
	if r := await(t, old, "old wait"); !isCode(r.err, "CANCELLED") {
		t.Fatalf("old wait answered %v/%v, want -CANCELLED", r.val, r.err)
	}
	li := waitQueued(t, c, l, w)
	if li.Waiters[0].Owner != "task" {
		t.Fatalf("waiter = %+v, want owner tag task", li.Waiters[0])
	}
	if _, ok := pending(neu); !ok {
		t.Fatal("the new wait was answered before any release")
	}
	mustInt(t, c, "FUNLOCK", l, holder)
	got := replyInt(t, await(t, neu, "new wait"), "new wait")
	if got <= tok {
		t.Fatalf("new wait token %d, want > %d", got, tok)
	}
	want := lockInfo{Held: true, Holder: w, Owner: "task", Count: 1, Token: got}
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("LOCK.INFO = %+v, want %+v", li, want)
	}
	// The cancelled request's id remembers its answer.
	mustErr(t, c, "CANCELLED", "FLOCK", l, w, "OWNER", "task", "WAIT", 0, "REQ", "r1")
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("after retrying the cancelled REQ, LOCK.INFO = %+v, want %+v", li, want)
	}
}

// Acceptance c: closing the connection of a waiting FLOCK cancels the wait:
// LOCK.INFO shows it gone, and on release the lock goes to the next waiter
// (or is free), never to the closed one.
func TestClosedConnectionCancelsWait(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)

	t.Run("next waiter gets it", func(t *testing.T) {
		const l = "closed-next"
		holder := openSession(t, c, 60000, "holder")
		tok := mustInt(t, c, "FLOCK", l, holder)
		gone := openSession(t, c, 60000, "gone")
		next := openSession(t, c, 60000, "next")
		rc := dialRaw(t, n.addr)
		rc.send("FLOCK", l, gone, "WAIT", "0")
		waitQueued(t, c, l, gone)
		nc := n.soloClient(t)
		r := async(nc, "FLOCK", l, next, "WAIT", 0)
		waitQueued(t, c, l, gone, next)

		rc.nc.Close()
		waitQueued(t, c, l, next)
		if si := getSessionInfo(t, c, gone); len(si.Waiting) != 0 {
			t.Fatalf("closed waiter's session still waits on %v", si.Waiting)
		}
		mustInt(t, c, "FUNLOCK", l, holder)
		got := replyInt(t, await(t, r, "next waiter"), "next waiter")
		if got <= tok {
			t.Fatalf("next waiter's token %d, want > %d", got, tok)
		}
		want := lockInfo{Held: true, Holder: next, Count: 1, Token: got}
		if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
			t.Fatalf("LOCK.INFO = %+v, want %+v", li, want)
		}
		mustErr(t, c, "NOTOWNER", "FENCE", l, gone)
	})

	t.Run("lock becomes free", func(t *testing.T) {
		const l = "closed-free"
		holder := openSession(t, c, 60000, "holder")
		mustInt(t, c, "FLOCK", l, holder)
		gone := openSession(t, c, 60000, "gone")
		rc := dialRaw(t, n.addr)
		rc.send("FLOCK", l, gone, "OWNER", "t", "WAIT", "60000")
		waitQueued(t, c, l, gone)
		rc.nc.Close()
		waitQueued(t, c, l)
		mustInt(t, c, "FUNLOCK", l, holder)
		mustNil(t, c, "FENCE", l)
		if li := getLockInfo(t, c, l); li.Held || len(li.Waiters) != 0 {
			t.Fatalf("LOCK.INFO = %+v, want free", li)
		}
		mustErr(t, c, "NOTOWNER", "FENCE", l, gone, "OWNER", "t")
	})
}

// Acceptance c (complement): a waiter whose FLOCK was answered -CANCELLED,
// -NOSESSION or null never appears among the waiters afterwards.
func TestNoGhostWaiters(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "ghosts"
	holder := openSession(t, c, 60000, "holder")
	mustInt(t, c, "FLOCK", l, holder)
	w := openSession(t, c, 60000, "w")
	for i := range 5 {
		// Each WAIT 50 times out; none of them stays queued.
		r := await(t, async(c, "FLOCK", l, w, "WAIT", 50, "REQ", fmt.Sprintf("g%d", i)), "timed wait")
		if !errors.Is(r.err, redis.Nil) {
			t.Fatalf("timed wait %d = %v/%v, want null", i, r.val, r.err)
		}
	}
	li := getLockInfo(t, c, l)
	if len(li.Waiters) != 0 || li.Holder != holder {
		t.Fatalf("LOCK.INFO = %+v, want held by the holder with no waiters", li)
	}
	if s := strings.Join(getSessionInfo(t, c, w).Waiting, ","); s != "" {
		t.Fatalf("SESSION.INFO waiting = %q, want none", s)
	}
}
