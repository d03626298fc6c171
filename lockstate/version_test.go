package lockstate

import (
	"errors"
	"strings"
	"testing"
)

// The version gate, checked against what it promises rather than against
// its own code: the cluster version only rises, only to a version every
// live member has announced, and a replica that does not know a version
// refuses it (to stop) instead of applying it.
func TestVersionGate(t *testing.T) {
	a := newApplier(t)
	a.s = New(Config{MaxVersion: 3})
	ids := []string{"n1", "n2", "n3"}
	if v := a.s.Version(); v != 1 {
		t.Fatalf("a new state is at version %d", v)
	}
	if v, why := a.s.NextVersion(ids); v != 0 || !strings.Contains(why, "n1 has not announced") {
		t.Fatalf("NextVersion with no members = %d, %q", v, why)
	}
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1"}, Result{Int: 1}, "set n/n1") // RAFT.JOIN: no version said
	a.expect(Entry{Op: OpNodeJoin, Node: "n2", RaftAddr: "r:2", Addr: "a:2", Version: 3}, Result{Int: 1}, "set n/n2")
	a.expect(Entry{Op: OpNodeJoin, Node: "n3", RaftAddr: "r:3", Addr: "a:3", Version: 2}, Result{Int: 1}, "set n/n3")

	// n1 never said: it counts as 1, and holds the cluster there.
	if v, why := a.s.NextVersion(ids); v != 0 || why != "" {
		t.Fatalf("NextVersion with n1 at 1 = %d, %q", v, why)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Err: ErrVersionBehind})
	if v := a.s.Version(); v != 1 {
		t.Fatalf("refused raise left version %d", v)
	}

	// n1 restarts on a new binary and announces it.
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3}, Result{}, "set n/n1")
	if v, why := a.s.NextVersion(ids); v != 2 || why != "" {
		t.Fatalf("NextVersion = %d, %q; want 2 (n3 knows 2 only)", v, why)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Err: ErrVersionBehind})
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	if v := a.s.Version(); v != 2 {
		t.Fatalf("version %d after raising to 2", v)
	}
	// Never down, and a repeat changes nothing.
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{})
	a.expect(Entry{Op: OpSetVersion, Version: 1}, Result{})
	// Beyond what this replica knows: refused, for raftstore to stop on.
	a.expect(Entry{Op: OpSetVersion, Version: 4}, Result{Err: ErrVersionUnknown})
	a.expect(Entry{Op: OpSetVersion}, Result{})

	// A join that says no version (RAFT.JOIN again) keeps the announced one.
	a.expect(Entry{Op: OpNodeJoin, Node: "n3", RaftAddr: "r:3", Addr: "a:3"}, Result{})
	if m, _ := a.s.Member("n3"); m.Version != 2 {
		t.Fatalf("n3's version became %d", m.Version)
	}
	a.expect(Entry{Op: OpNodeJoin, Node: "n3", RaftAddr: "r:3", Addr: "a:3", Version: -1}, Result{Err: ErrBadEntry})

	// A live member outside the configuration holds the cluster back too;
	// once removed it does not.
	a.expect(Entry{Op: OpNodeJoin, Node: "n3", RaftAddr: "r:3", Addr: "a:3", Version: 3}, Result{}, "set n/n3")
	a.expect(Entry{Op: OpNodeJoin, Node: "n4", RaftAddr: "r:4", Addr: "a:4"}, Result{Int: 1}, "set n/n4")
	if v, why := a.s.NextVersion(ids); v != 0 || !strings.Contains(why, "n4 knows cluster version 1") {
		t.Fatalf("NextVersion with n4 live = %d, %q", v, why)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Err: ErrVersionBehind})
	a.expect(Entry{Op: OpNodeRemove, Node: "n4"}, Result{Int: 1}, "set n/n4")
	if v, why := a.s.NextVersion(ids); v != 3 || why != "" {
		t.Fatalf("NextVersion = %d, %q; want 3", v, why)
	}
	if v, _ := a.s.NextVersion(append(ids, "n5")); v != 0 {
		t.Fatal("a configuration member without a record did not hold the cluster back")
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")

	// The version and the members' versions survive a reload, which a
	// binary that knows fewer versions refuses.
	recs := map[string][]byte{}
	var keys []string
	if err := a.s.Records(func(k, v []byte) error {
		keys = append(keys, string(k))
		recs[string(k)] = append([]byte(nil), v...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	load := func(cfg Config) (*State, error) {
		s := New(cfg)
		for _, k := range keys {
			if err := s.Load([]byte(k), recs[k]); err != nil {
				return s, err
			}
		}
		return s, nil
	}
	s, err := load(Config{MaxVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 3 || s.Hash() != a.s.Hash() {
		t.Fatalf("reloaded: version %d, same hash %v", s.Version(), s.Hash() == a.s.Hash())
	}
	if m, _ := s.Member("n1"); m.Version != 3 {
		t.Fatalf("reloaded n1 at version %d", m.Version)
	}
	if _, err := load(Config{MaxVersion: 2}); !errors.Is(err, ErrVersionUnknown) {
		t.Fatalf("a binary that knows version 2 loaded a state at 3: %v", err)
	}
	for _, bad := range [][]byte{{1, 2}, {1, 0}, {1, 4, 0}, {2, 6}} { // version 1, 0, trailing byte, record version 2
		if err := New(Config{MaxVersion: 3}).Load([]byte(versionKey), bad); err == nil {
			t.Errorf("version record %x loaded", bad)
		}
	}
}

// A state that never left version 1 has no version record, so its records
// and its hash are those of a binary from before the gate; and INCR keeps
// its step at version 1 in every build.
func TestVersionOneUnchanged(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1"}, Result{Int: 1}, "set n/n1")
	for _, k := range a.s.keys() {
		if k == versionKey {
			t.Fatal("a state at version 1 stores its version")
		}
	}
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 1 {
		t.Fatalf("INCR at version 1 = %+v", got.Reply)
	}
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 2 {
		t.Fatalf("INCR at version 1 = %+v", got.Reply)
	}
	if MaxVersion < 1 {
		t.Fatal("MaxVersion below 1")
	}
}
