package lockstate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// logWriter records the exact sequence of writes, and applies them to a map.
type logWriter struct {
	*memWriter
	log []string
}

func (w *logWriter) Set(k, v []byte) error {
	w.log = append(w.log, fmt.Sprintf("set %q %x", k, v))
	return w.memWriter.Set(k, v)
}

func (w *logWriter) Delete(k []byte) error {
	w.log = append(w.log, fmt.Sprintf("del %q", k))
	return w.memWriter.Delete(k)
}

// TestDeterminism applies one long random sequence to two fresh States: they
// must answer, write and hash identically. Every 50 entries a third State is
// rebuilt from the first's Records: it must hash the same and then keep in
// step with the other two. Go randomises map order per iteration, so any
// map order leaking into the output shows up here.
func TestDeterminism(t *testing.T) {
	steps := 20000
	if testing.Short() {
		steps = 3000
	}
	cfg := smallConfig()
	a, b := New(cfg), New(cfg)
	wa, wb := &logWriter{memWriter: newMemWriter()}, &logWriter{memWriter: newMemWriter()}
	var c *State
	var wc *logWriter
	g := &gen{src: rngSource{rand.New(rand.NewPCG(42, 7))}, fence: func(l string) int64 { return a.LockInfo(l, 0).Token }}
	for i := range steps {
		index, e := g.next()
		wa.log, wb.log = wa.log[:0], wb.log[:0]
		ra, err := a.Apply(index, e, wa)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Apply(index, e, wb)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ra, rb) || !slices.Equal(wa.log, wb.log) || a.Hash() != b.Hash() {
			t.Fatalf("step %d %+v: two fresh states diverge:\n%+v %q\n%+v %q", i, e, ra, wa.log, rb, wb.log)
		}
		if c != nil {
			wc.log = wc.log[:0]
			rc, err := c.Apply(index, e, wc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ra, rc) || !slices.Equal(wa.log, wc.log) || a.Hash() != c.Hash() {
				t.Fatalf("step %d %+v: reloaded state diverges:\n%+v %q\n%+v %q", i, e, ra, wa.log, rc, wc.log)
			}
		}
		if err := sameRecords(a, wa.memWriter); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i%50 == 0 {
			if c, err = reload(a); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			// The loaded State's writes must land on a copy of the records.
			wc = &logWriter{memWriter: newMemWriter()}
			_ = c.Records(func(k, v []byte) error { return wc.Set(k, v) })
		}
	}
	if n, _ := a.Counts(); n == 0 {
		t.Log("note: the run ended with no sessions")
	}
}

// TestHashSensitive makes sure Hash sees every kind of record, so equal
// hashes in the other tests mean something.
func TestHashSensitive(t *testing.T) {
	apply := func(s *State, index uint64, e Entry) {
		t.Helper()
		if _, err := s.Apply(index, e, newMemWriter()); err != nil {
			t.Fatal(err)
		}
	}
	base := func() *State {
		s := New(Config{})
		apply(s, 1, Entry{Op: OpSessionOpen, Time: 10, Session: "s1", TTL: 1000})
		apply(s, 2, Entry{Op: OpSessionOpen, Time: 10, Session: "s2", TTL: 1000})
		apply(s, 3, Entry{Op: OpFlock, Time: 10, Session: "s1", Lock: "a", Req: "r1"})
		apply(s, 4, Entry{Op: OpFlock, Time: 10, Session: "s2", Lock: "a", Wait: 0, WaitID: 1<<32 | 9})
		apply(s, 5, Entry{Op: OpNodeJoin, Time: 10, Node: "n1", RaftAddr: "r:1", Addr: "a:1"})
		apply(s, 6, Entry{Op: OpExec, Time: 10, Args: []string{"SET", "k", "v"}})
		apply(s, 7, Entry{Op: OpExec, Time: 10, Args: []string{"HSET", "h", "f", "1"}})
		return s
	}
	h := base().Hash()
	if h != base().Hash() {
		t.Fatal("same entries, different hashes")
	}
	for name, e := range map[string]Entry{
		"time":    {Op: OpTick, Time: 11},
		"session": {Op: OpSessionOpen, Time: 10, Session: "s3", TTL: 5},
		"lock":    {Op: OpFlock, Time: 10, Session: "s1", Lock: "a"},
		"waiter":  {Op: OpCancelWait, Time: 10, WaitID: 1<<32 | 9},
		"memo":    {Op: OpFunlock, Time: 10, Session: "s2", Lock: "b", Req: "r2"},
		"retry":   {Op: OpFlock, Time: 10, Session: "s1", Lock: "a", Req: "r1"},
		"member":  {Op: OpNodeJoin, Time: 10, Node: "n2", RaftAddr: "r:2", Addr: "a:2"},
		"address": {Op: OpNodeJoin, Time: 10, Node: "n1", RaftAddr: "r:1", Addr: "a:2"},
		"removed": {Op: OpNodeRemove, Time: 10, Node: "n1"},
		"rejoin":  {Op: OpNodeJoin, Time: 10, Node: "n1", RaftAddr: "r:1", Addr: "a:1"},
		"epoch":   {Op: OpCancelWaits, Time: 10, WaitID: 1 << 32},
		"other":   {Op: OpCancelWaits, Time: 10, WaitID: 2 << 32},
		"key":     {Op: OpExec, Time: 10, Args: []string{"SET", "k2", "v"}},
		"value":   {Op: OpExec, Time: 10, Args: []string{"SET", "k", "w"}},
		"same":    {Op: OpExec, Time: 10, Args: []string{"SET", "k", "v"}},
		"ttl":     {Op: OpExec, Time: 10, Args: []string{"PEXPIRE", "k", "100"}},
		"field":   {Op: OpExec, Time: 10, Args: []string{"HSET", "h", "g", "1"}},
		"del":     {Op: OpExec, Time: 10, Args: []string{"DEL", "k"}},
		"read":    {Op: OpExec, Time: 10, Args: []string{"GET", "k"}},
	} {
		s := base()
		apply(s, 8, Entry{Op: OpTick, Time: 10})
		if s.Hash() != h {
			t.Fatal("a no-op tick changed the hash")
		}
		apply(s, 9, e)
		unchanged := name == "retry" || name == "rejoin" || name == "other" || name == "same" || name == "read"
		if changed := s.Hash() != h; changed == unchanged {
			t.Errorf("%s: hash changed %v", name, changed)
		}
	}
}
