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
	notQueued, nch := w.register("L", "s2", "")
	for _, id := range []uint64{granted, stillQueued, lost} {
		w.queued(id)
	}
	_ = notQueued

	st := lockstate.New(lockstate.Config{})
	idx := uint64(0)
	apply := func(e lockstate.Entry) lockstate.Result {
		idx++
		e.Time = int64(idx)
		r, err := st.Apply(idx, e, discard{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		apply(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: s, TTL: 60000})
	}
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "L", Session: "s1", Wait: lockstate.NoWait})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "M", Session: "s1", Wait: lockstate.NoWait})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "N", Session: "s1", Wait: lockstate.NoWait})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "L", Session: "s2", WaitID: granted})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "M", Session: "s2", WaitID: stillQueued})
	apply(lockstate.Entry{Op: lockstate.OpFlock, Lock: "N", Session: "s3", WaitID: lost})
	apply(lockstate.Entry{Op: lockstate.OpFunlock, Lock: "L", Session: "s1"}) // hands L to s2
	apply(lockstate.Entry{Op: lockstate.OpSessionKill, Session: "s3"})

	w.resolveMissing(st)
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
