package test

import (
	"testing"
	"time"
)

// Acceptance e: FLOCK and FUNLOCK repeated with the same REQ return the
// first result (a token, a count, null or an error) and change neither the
// count nor the token, even after the lock has moved on.
func TestReqExactlyOnce(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "req"
	s := openSession(t, c, 60000, "s")
	o := openSession(t, c, 60000, "other")

	tok := mustInt(t, c, "FLOCK", l, s, "REQ", "a")
	for range 3 {
		if got := mustInt(t, c, "FLOCK", l, s, "REQ", "a"); got != tok {
			t.Fatalf("repeated FLOCK REQ a = %d, want %d", got, tok)
		}
	}
	want := lockInfo{Held: true, Holder: s, Count: 1, Token: tok}
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("after repeated FLOCK REQ a: %+v, want %+v", li, want)
	}
	mustInt(t, c, "FLOCK", l, s, "REQ", "b")
	want.Count = 2
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("after FLOCK REQ b: %+v, want %+v", li, want)
	}

	if got := mustInt(t, c, "FUNLOCK", l, s, "REQ", "c"); got != 1 {
		t.Fatalf("FUNLOCK REQ c = %d, want 1", got)
	}
	for range 3 {
		if got := mustInt(t, c, "FUNLOCK", l, s, "REQ", "c"); got != 1 {
			t.Fatalf("repeated FUNLOCK REQ c = %d, want 1", got)
		}
	}
	want.Count = 1
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("after repeated FUNLOCK REQ c: %+v, want %+v", li, want)
	}
	if got := mustInt(t, c, "FUNLOCK", l, s, "REQ", "d"); got != 0 {
		t.Fatalf("FUNLOCK REQ d = %d, want 0", got)
	}
	if got := mustInt(t, c, "FUNLOCK", l, s, "REQ", "d"); got != 0 {
		t.Fatalf("repeated FUNLOCK REQ d = %d, want 0 (not -NOTOWNER)", got)
	}
	mustNil(t, c, "FENCE", l)

	// The lock moves on; old REQs still answer their first result and
	// touch nothing.
	tokO := mustInt(t, c, "FLOCK", l, o)
	if tokO <= tok {
		t.Fatalf("next owner's token %d, want > %d", tokO, tok)
	}
	wantO := lockInfo{Held: true, Holder: o, Count: 1, Token: tokO}
	if got := mustInt(t, c, "FLOCK", l, s, "REQ", "a"); got != tok {
		t.Fatalf("FLOCK REQ a after the lock moved = %d, want the first result %d", got, tok)
	}
	if got := mustInt(t, c, "FUNLOCK", l, s, "REQ", "c"); got != 1 {
		t.Fatalf("FUNLOCK REQ c after the lock moved = %d, want the first result 1", got)
	}
	if li := getLockInfo(t, c, l); !equalLockInfo(li, wantO) {
		t.Fatalf("after old REQs: %+v, want %+v", li, wantO)
	}

	// Null and error results are remembered too.
	mustNil(t, c, "FLOCK", l, s, "REQ", "e")
	mustErr(t, c, "NOTOWNER", "FUNLOCK", l, s, "REQ", "f")
	mustInt(t, c, "FUNLOCK", l, o) // the lock is free now
	mustNil(t, c, "FLOCK", l, s, "REQ", "e")
	mustNil(t, c, "FENCE", l) // the repeat did not take the free lock
	tokS := mustInt(t, c, "FLOCK", l, s, "REQ", "g")
	mustErr(t, c, "NOTOWNER", "FUNLOCK", l, s, "REQ", "f")
	if li := getLockInfo(t, c, l); !equalLockInfo(li, lockInfo{Held: true, Holder: s, Count: 1, Token: tokS}) {
		t.Fatalf("after repeated FUNLOCK REQ f: %+v (the repeat must not release)", li)
	}
	// LIMIT answers are remembered: a repeat after a release does not
	// acquire.
	mustInt(t, c, "FUNLOCK", l, s)
	tokL := mustInt(t, c, "FLOCK", l, s, "LIMIT", 1, "REQ", "h")
	mustErr(t, c, "LIMIT", "FLOCK", l, s, "REQ", "i")
	mustErr(t, c, "LIMIT", "FLOCK", l, s, "REQ", "i")
	if li := getLockInfo(t, c, l); li.Count != 1 || li.Token != tokL {
		t.Fatalf("after repeated -LIMIT: %+v, want count 1 token %d", li, tokL)
	}
}

// Acceptance e: a waiting FLOCK repeated with the same REQ (on other
// connections, as a client retrying would) rejoins its place in the queue
// instead of queueing again; when granted, the original call and the retry
// are answered with the same token and the count is 1. A second retry whose
// connection closes does not cancel the wait while the others still wait.
func TestReqWaitingRejoins(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "req-wait"
	holder := openSession(t, c, 60000, "holder")
	tok := mustInt(t, c, "FLOCK", l, holder)
	a := openSession(t, c, 60000, "a")
	b := openSession(t, c, 60000, "b")

	c1, c2, cb := n.soloClient(t), n.soloClient(t), n.soloClient(t)
	first := async(c1, "FLOCK", l, a, "WAIT", 0, "REQ", "q1")
	waitQueued(t, c, l, a)
	rb := async(cb, "FLOCK", l, b, "WAIT", 0)
	waitQueued(t, c, l, a, b)

	// Each retry goes through Raft. Nothing else writes to this node now
	// (no deadline is due, so no ticks), so the applied index going up by
	// one tells that the retry was applied, before we look at the queue.
	idx := appliedIndex(t, c)
	retry := async(c2, "FLOCK", l, a, "WAIT", 0, "REQ", "q1")
	eventually(t, 10*time.Second, "the retry to be applied", func() bool { return appliedIndex(t, c) == idx+1 })
	rc := dialRaw(t, n.addr)
	rc.send("FLOCK", l, a, "WAIT", "0", "REQ", "q1")
	eventually(t, 10*time.Second, "the second retry to be applied", func() bool { return appliedIndex(t, c) == idx+2 })
	// a is still first, and queued once.
	li := waitQueued(t, c, l, a, b)
	if li.Holder != holder || li.Token != tok {
		t.Fatalf("LOCK.INFO = %+v, want still held by the holder", li)
	}
	if si := getSessionInfo(t, c, a); len(si.Waiting) != 1 {
		t.Fatalf("SESSION.INFO waiting = %v, want [%s]", si.Waiting, l)
	}
	// The second retry's connection goes away: its cancellation goes
	// through Raft, but the other calls still wait, so a keeps its place.
	rc.nc.Close()
	eventually(t, 10*time.Second, "the closed connection's cancellation to be applied", func() bool { return appliedIndex(t, c) >= idx+3 })
	waitQueued(t, c, l, a, b)
	for i, ch := range []<-chan reply{first, retry, rb} {
		if r, ok := pending(ch); !ok {
			t.Fatalf("call %d answered %v/%v before any release", i, r.val, r.err)
		}
	}

	mustInt(t, c, "FUNLOCK", l, holder)
	t1 := replyInt(t, await(t, first, "original call"), "original call")
	t2 := replyInt(t, await(t, retry, "retry"), "retry")
	if t1 <= tok || t1 != t2 {
		t.Fatalf("tokens: original %d, retry %d; want equal and > %d", t1, t2, tok)
	}
	want := lockInfo{Held: true, Holder: a, Count: 1, Token: t1, Waiters: []waiterInfo{{Session: b}}}
	if li := getLockInfo(t, c, l); !equalLockInfo(li.withoutRemaining(), want) {
		t.Fatalf("LOCK.INFO = %+v, want %+v", li, want)
	}
	// A retry after the grant gets the same answer and does not count.
	if got := mustInt(t, c, "FLOCK", l, a, "WAIT", 0, "REQ", "q1"); got != t1 {
		t.Fatalf("retry after grant = %d, want %d", got, t1)
	}
	if li := getLockInfo(t, c, l); li.Count != 1 {
		t.Fatalf("count after the late retry = %d, want 1", li.Count)
	}
	if _, ok := pending(rb); !ok {
		t.Fatal("b was answered while a holds the lock")
	}
	mustInt(t, c, "FUNLOCK", l, a)
	if got := replyInt(t, await(t, rb, "b"), "b"); got <= t1 {
		t.Fatalf("b's token %d, want > %d", got, t1)
	}
}
