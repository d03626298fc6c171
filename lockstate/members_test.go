package lockstate

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// applier applies entries at increasing indexes at a fixed time, logging
// the writes of the last one.
type applier struct {
	t     *testing.T
	s     *State
	w     *logWriter
	index uint64
}

func newApplier(t *testing.T) *applier {
	return &applier{t: t, s: New(Config{}), w: &logWriter{memWriter: newMemWriter()}}
}

func (a *applier) apply(e Entry) Result {
	a.t.Helper()
	a.index++
	e.Time = 1000
	a.w.log = a.w.log[:0]
	r, err := a.s.Apply(a.index, e, a.w)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := checkInvariants(a.s); err != nil {
		a.t.Fatalf("%+v: %v", e, err)
	}
	if err := sameRecords(a.s, a.w.memWriter); err != nil {
		a.t.Fatalf("%+v: %v", e, err)
	}
	return r
}

func (a *applier) expect(e Entry, want Result, writes ...string) {
	a.t.Helper()
	got := a.apply(e)
	got.Changes = nil // what tracking is told: TestChanges and the model check it
	if !reflect.DeepEqual(got, want) {
		a.t.Errorf("%v %+v: got %+v, want %+v", e.Op, e, got, want)
	}
	var keys []string
	for _, l := range a.w.log {
		var k string
		if _, err := fmt.Sscanf(l[4:], "%q", &k); err != nil {
			a.t.Fatal(err)
		}
		if k != timeKey {
			keys = append(keys, l[:4]+k)
		}
	}
	if !slices.Equal(keys, writes) {
		a.t.Errorf("%v %+v: wrote %q, want %q", e.Op, e, keys, writes)
	}
}

func join(id, raft, addr string) Entry {
	return Entry{Op: OpNodeJoin, Node: id, RaftAddr: raft, Addr: addr}
}

func TestNodeJoin(t *testing.T) {
	a := newApplier(t)
	a.expect(join("n1", "r1:1", "a1:1"), Result{Int: 1}, "set n/n1")
	a.expect(join("n1", "r1:1", "a1:1"), Result{}) // unchanged: nothing written
	a.expect(join("n1", "r1:1", "a1:2"), Result{}, "set n/n1")
	a.expect(join("n1", "r1:2", "a1:2"), Result{}, "set n/n1")
	a.expect(join("n2", "r2:1", "a2:1"), Result{Int: 1}, "set n/n2")
	for _, e := range []Entry{join("", "r:1", "a:1"), join("n3", "", "a:1"), join("n3", "r:1", ""), join("n1", "", "")} {
		a.expect(e, Result{Err: ErrBadEntry})
	}
	if m, ok := a.s.Member("n1"); !ok || m != (Member{ID: "n1", RaftAddr: "r1:2", Addr: "a1:2"}) {
		t.Errorf("Member(n1) = %+v, %v", m, ok)
	}
	if _, ok := a.s.Member("n3"); ok {
		t.Error("a refused join was recorded")
	}
	want := []Member{{ID: "n1", RaftAddr: "r1:2", Addr: "a1:2"}, {ID: "n2", RaftAddr: "r2:1", Addr: "a2:1"}}
	if got := a.s.Members(); !reflect.DeepEqual(got, want) {
		t.Errorf("Members() = %+v", got)
	}
}

func TestNodeRemove(t *testing.T) {
	a := newApplier(t)
	if got := a.s.Members(); got == nil || len(got) != 0 {
		t.Errorf("Members() of an empty state = %#v", got)
	}
	a.expect(join("n1", "r1:1", "a1:1"), Result{Int: 1}, "set n/n1")
	a.expect(Entry{Op: OpNodeRemove, Node: "n1"}, Result{Int: 1}, "set n/n1")
	a.expect(Entry{Op: OpNodeRemove, Node: "n1"}, Result{})
	// The id can never come back, and the attempt changes nothing.
	a.expect(join("n1", "r1:1", "a1:1"), Result{Err: ErrNodeRemoved})
	a.expect(join("n1", "r9:1", "a9:1"), Result{Err: ErrNodeRemoved})
	if m, _ := a.s.Member("n1"); m != (Member{ID: "n1", RaftAddr: "r1:1", Addr: "a1:1", Removed: true}) {
		t.Errorf("Member(n1) = %+v", m)
	}
	// An id that never joined is recorded as removed all the same.
	a.expect(Entry{Op: OpNodeRemove, Node: "n7"}, Result{}, "set n/n7")
	a.expect(join("n7", "r7:1", "a7:1"), Result{Err: ErrNodeRemoved})
	a.expect(Entry{Op: OpNodeRemove}, Result{Err: ErrBadEntry})
	want := []Member{{ID: "n1", RaftAddr: "r1:1", Addr: "a1:1", Removed: true}, {ID: "n7", Removed: true}}
	if got := a.s.Members(); !reflect.DeepEqual(got, want) {
		t.Errorf("Members() = %+v", got)
	}
	// And it stays so across a reload.
	s, err := reload(a.s)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Members(); !reflect.DeepEqual(got, want) {
		t.Errorf("Members() after reload = %+v", got)
	}
	if r, err := s.Apply(a.index+1, join("n7", "r7:1", "a7:1"), newMemWriter()); err != nil || !errors.Is(r.Err, ErrNodeRemoved) {
		t.Errorf("rejoin after reload: %+v %v", r, err)
	}
}

func TestCancelWaits(t *testing.T) {
	id := func(epoch, n uint64) uint64 { return epoch<<32 | n }
	a := newApplier(t)
	for _, s := range []string{"s1", "s2", "s3"} {
		a.apply(Entry{Op: OpSessionOpen, Session: s, TTL: 1 << 30})
	}
	for _, l := range []string{"a", "b", "c"} {
		a.apply(Entry{Op: OpFlock, Session: "s1", Lock: l, Wait: NoWait})
	}
	queue := func(sess, lock, req string, wid uint64) {
		t.Helper()
		if r := a.apply(Entry{Op: OpFlock, Session: sess, Lock: lock, Req: req, WaitID: wid}); !r.Queued {
			t.Fatalf("not queued: %+v", r)
		}
	}
	queue("s2", "a", "ra", id(1, 9)) // ends with epoch 1
	queue("s3", "a", "", id(2, 1))   // of epoch 2: stays
	queue("s2", "b", "rb", id(1, 2)) // has an id of epoch 2 too: stays
	queue("s2", "b", "rb", id(2, 2))
	queue("s3", "b", "rb", id(1, 3)) // two ids of epoch 1: ends
	queue("s3", "b", "rb", id(1, 4))
	queue("s3", "c", "rc", 5) // no epoch

	a.expect(Entry{Op: OpCancelWaits, WaitID: 0}, Result{})
	a.expect(Entry{Op: OpCancelWaits, WaitID: 5}, Result{}) // epoch 0, whatever the low bits
	a.expect(Entry{Op: OpCancelWaits, WaitID: id(3, 0)}, Result{})
	r := a.apply(Entry{Op: OpCancelWaits, WaitID: id(1, 12345)})
	if !reflect.DeepEqual(r, Result{Int: 4}) {
		t.Fatalf("cancel epoch 1: %+v", r) // no Wakes: nobody listens
	}
	if got, want := a.s.WaitIDs(), []uint64{5, id(2, 1), id(2, 2)}; !slices.Equal(got, want) {
		t.Errorf("WaitIDs() = %v, want %v", got, want)
	}
	waiters := func(lock string) []string {
		var ss []string
		for _, w := range a.s.LockInfo(lock, 1000).Waiters {
			ss = append(ss, w.Session)
		}
		return ss
	}
	if got := waiters("a"); !slices.Equal(got, []string{"s3"}) {
		t.Errorf("waiters of a: %v", got)
	}
	if got := waiters("b"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("waiters of b: %v", got)
	}
	if got := waiters("c"); !slices.Equal(got, []string{"s3"}) {
		t.Errorf("waiters of c: %v", got)
	}
	// The ended waits' REQs answer CANCELLED; the one that stays is still
	// queued.
	a.expect(Entry{Op: OpFlock, Session: "s2", Lock: "a", Req: "ra", WaitID: id(3, 1)}, Result{Err: ErrCancelled})
	a.expect(Entry{Op: OpFlock, Session: "s3", Lock: "b", Req: "rb", WaitID: id(3, 2)}, Result{Err: ErrCancelled})
	if r := a.apply(Entry{Op: OpFlock, Session: "s2", Lock: "b", Req: "rb", WaitID: id(3, 3)}); !r.Queued {
		t.Errorf("retry of the surviving wait: %+v", r)
	}
	a.expect(Entry{Op: OpCancelWaits, WaitID: id(1, 0)}, Result{})
	// Epoch 2 ends the wait of s3 on a (at index 8, without a REQ) and
	// leaves b's (at index 9) with id 3.3.
	a.expect(Entry{Op: OpCancelWaits, WaitID: id(2, 0)}, Result{Int: 2}, "del "+waiterKey("a", 8), "set "+waiterKey("b", 9))
	r = a.apply(Entry{Op: OpFunlock, Session: "s1", Lock: "b"})
	if want := []Wake{{WaitID: id(3, 3), Result: Result{Int: int64(a.index)}}}; !reflect.DeepEqual(r.Wakes, want) {
		t.Errorf("wakes of b's release: %+v", r.Wakes)
	}
}

// TestCancelWaitsOrder: the waits that one OpCancelWaits ends remember
// their REQs in ascending wait id order, whatever the map order.
func TestCancelWaitsOrder(t *testing.T) {
	var first [32]byte
	for i := range 20 {
		a := newApplier(t)
		a.apply(Entry{Op: OpSessionOpen, Session: "h", TTL: 1 << 30})
		a.apply(Entry{Op: OpSessionOpen, Session: "w", TTL: 1 << 30})
		const n = 8
		for l := range n {
			a.apply(Entry{Op: OpFlock, Session: "h", Lock: fmt.Sprint(l), Wait: NoWait})
		}
		for l := range n {
			// Lock l waits under id n-l: queue order is the reverse of
			// id order.
			a.apply(Entry{Op: OpFlock, Session: "w", Lock: fmt.Sprint(l), Req: fmt.Sprint("r", l), WaitID: 7<<32 | uint64(n-l)})
		}
		if r := a.apply(Entry{Op: OpCancelWaits, WaitID: 7 << 32}); r.Int != n {
			t.Fatalf("cancelled %d", r.Int)
		}
		var reqs []string
		for _, m := range a.s.refs["w"].memos {
			reqs = append(reqs, m.req)
		}
		if want := []string{"r7", "r6", "r5", "r4", "r3", "r2", "r1", "r0"}; !slices.Equal(reqs, want) {
			t.Fatalf("memos in order %v, want %v", reqs, want)
		}
		if i == 0 {
			first = a.s.Hash()
		} else if a.s.Hash() != first {
			t.Fatal("same entries, different hashes")
		}
	}
}
