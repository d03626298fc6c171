package server

import (
	"testing"

	"github.com/fenced/fenced/lockstate"
)

type discard struct{}

func (discard) Set(k, v []byte) error { return nil }
func (discard) Delete(k []byte) error { return nil }

// After a snapshot install, waits decided inside the snapshot are answered
// from the restored state when it shows the decision (a grant, a dead
// session), and left alone when it doesn't.
func TestResolveMissingAfterRestore(t *testing.T) {
	w, err := newWaits(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	granted, gch := w.register("L", "s2", "")
	stillQueued, qch := w.register("M", "s2", "")
	lost, lch := w.register("N", "s3", "")
	_, nch := w.register("L", "s2", "") // never queued

	st, apply := appliedState(t)
	for _, s := range []string{"s1", "s2", "s3"} {
		apply(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: s, TTL: 60000})
	}
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "L", Session: "s1", Wait: lockstate.NoWait})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "M", Session: "s1", Wait: lockstate.NoWait})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "N", Session: "s1", Wait: lockstate.NoWait})
	for _, q := range []struct {
		id         uint64
		lock, sess string
	}{{granted, "L", "s2"}, {stillQueued, "M", "s2"}, {lost, "N", "s3"}} {
		r := apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: q.lock, Session: q.sess, WaitID: q.id})
		if !r.Queued {
			t.Fatalf("FLOCK %s %s: %+v, want queued", q.lock, q.sess, r)
		}
		w.queued(q.id, r.Int)
	}
	apply(lockstate.Entry{Op: lockstate.OpFunlock, Lock: "L", Session: "s1"}) // hands L to s2
	apply(lockstate.Entry{Op: lockstate.OpSessionKill, Session: "s3"})

	w.resolveMissing(st, 12)
	select {
	case r := <-gch:
		if r.Err != nil || r.Int <= 0 {
			t.Fatalf("granted wait answered %+v, want its token", r)
		}
	default:
		t.Fatal("the wait granted inside the snapshot was not answered")
	}
	select {
	case r := <-lch:
		if r.Err != lockstate.ErrNoSession {
			t.Fatalf("wait of a killed session answered %+v, want ErrNoSession", r)
		}
	default:
		t.Fatal("the wait of a killed session was not answered")
	}
	for name, ch := range map[string]<-chan lockstate.Result{"still queued": qch, "not yet queued": nch} {
		select {
		case r := <-ch:
			t.Fatalf("%s wait answered %+v, want it left waiting", name, r)
		default:
		}
	}
}

// A snapshot that predates a wait says nothing about it, even when it shows
// the owner holding the lock: that hold is an earlier one, let go before
// the FLOCK queued. Answering from it handed the old token to the new
// FLOCK (the fault tests' TestChaos/reentrant, seed 1795626843439970801: a
// lagging node installed such a snapshot).
func TestResolveMissingIgnoresOlderSnapshot(t *testing.T) {
	entries := []lockstate.Entry{
		{Op: lockstate.OpSessionOpen, Session: "s1", TTL: 60000},
		{Op: lockstate.OpSessionOpen, Session: "s2", TTL: 60000},
		{Op: lockstate.OpFlock, Lock: "L", Session: "s2", Wait: lockstate.NoWait}, // 3: s2 holds, token 3
		{Op: lockstate.OpFunlock, Lock: "L", Session: "s2"},                       // 4: free
		{Op: lockstate.OpFlock, Lock: "L", Session: "s1", Wait: lockstate.NoWait}, // 5: s1 holds
		{Op: lockstate.OpFlock, Lock: "L", Session: "s2", WaitID: 77},             // 6: s2 queues
		{Op: lockstate.OpFunlock, Lock: "L", Session: "s1"},                       // 7: hands L to s2, token 7
	}
	// The wait's place, as the leader answers it.
	_, apply := appliedState(t)
	var pos int64
	for _, e := range entries {
		if r := apply(e); r.Queued {
			pos = r.Int
		}
	}
	if pos != 6 {
		t.Fatalf("the queued FLOCK's place is %d, want its index 6", pos)
	}
	for _, tc := range []struct {
		upTo   int   // the snapshot's last index
		answer int64 // the token it must answer; 0: left waiting
	}{
		{3, 0}, // s2's earlier hold
		{4, 0},
		{5, 0},
		{6, 0}, // queued, undecided
		{7, 7}, // granted inside the snapshot
	} {
		w, err := newWaits(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		id, ch := w.register("L", "s2", "")
		w.queued(id, pos)
		st, apply := appliedState(t)
		for _, e := range entries[:tc.upTo] {
			if e.WaitID != 0 {
				e.WaitID = id
			}
			apply(e)
		}
		w.resolveMissing(st, uint64(tc.upTo))
		select {
		case r := <-ch:
			if tc.answer == 0 || r.Err != nil || r.Int != tc.answer {
				t.Errorf("snapshot up to %d answered the wait %+v, want %d", tc.upTo, r, tc.answer)
			}
		default:
			if tc.answer != 0 {
				t.Errorf("snapshot up to %d left the wait waiting, want token %d", tc.upTo, tc.answer)
			}
		}
	}
}

// appliedState returns an empty state and a function that applies entries
// to it at consecutive indexes from 1.
func appliedState(t *testing.T) (*lockstate.State, func(lockstate.Entry) lockstate.Result) {
	st := lockstate.New(lockstate.Config{})
	idx := uint64(0)
	return st, func(e lockstate.Entry) lockstate.Result {
		idx++
		e.Time = int64(idx)
		r, err := st.Apply(idx, e, discard{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}
