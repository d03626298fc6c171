package lockstate

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
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

// versionTwoCalls are a call of each command that came with cluster
// version 2, and EXPIRETIME and PEXPIRETIME, which only scripts see gated.
var versionTwoCalls = [][]string{
	{"SETNX", "k", "v"}, {"setex", "k", "10", "v"}, {"PSETEX", "k", "10000", "v"}, {"GETSET", "k", "v"},
	{"GETEX", "k", "PERSIST"}, {"APPEND", "k", "v"}, {"SETRANGE", "k", "1", "v"}, {"INCRBY", "n", "5"},
	{"INCRBYFLOAT", "f", "0.5"}, {"DECR", "n"}, {"DECRBY", "n", "2"},
	{"SETNX", "k"}, {"GETEX"}, // a wrong arity is unknown too: the old binary has no arity to check
}

// At cluster version 1 each new command is answered as by a binary that
// lacks it: unknown, in the very text Redis (and that binary) gives, from
// OpExec and from a script alike, and nothing changes; once the cluster
// moves to 2 they run. In the fencednext build (make test runs -run
// Version with it) the same holds for that binary, which knows 3.
func TestVersionGatesStringCommands(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	unknown := func(args []string) string {
		var b strings.Builder
		for _, x := range args[1:] {
			b.WriteString("'" + x + "' ")
		}
		return "ERR unknown command '" + args[0] + "', with args beginning with: " + b.String()
	}
	const pcall = "return redis.pcall(ARGV[1], KEYS[1], unpack(ARGV, 2))"
	script := func(args []string) []string {
		return append([]string{"EVAL", pcall, "1", args[1]}, append([]string{args[0]}, args[2:]...)...)
	}
	// What a script gets from a command no binary knows.
	nope := a.apply(Entry{Op: OpExec, Args: script([]string{"NOPE", "k", "v"})}).Reply
	if !nope.IsError() {
		t.Fatalf("a script calling NOPE: %+v", nope)
	}
	before := a.s.Hash()
	for _, args := range versionTwoCalls {
		if got := a.apply(Entry{Op: OpExec, Args: args}).Reply; !reflect.DeepEqual(got, reply.Error(unknown(args))) {
			t.Errorf("%q at version 1 = %+v, want %q", args, got, unknown(args))
		}
		if len(args) < 2 {
			continue
		}
		if got := a.apply(Entry{Op: OpExec, Args: script(args)}).Reply; !reflect.DeepEqual(got, nope) {
			t.Errorf("%q in a script at version 1 = %+v, want %+v", args, got, nope)
		}
	}
	for _, args := range [][]string{{"EXPIRETIME", "k"}, {"PEXPIRETIME", "k"}} {
		if got := a.apply(Entry{Op: OpExec, Args: script(args)}).Reply; !reflect.DeepEqual(got, nope) {
			t.Errorf("%q in a script at version 1 = %+v, want %+v", args, got, nope)
		}
		// Served directly, a read needs no gate: it touches no log.
		if got := a.s.Exec(args, 1000); !reflect.DeepEqual(got, reply.Int(-2)) {
			t.Errorf("Exec(%q) at version 1 = %+v", args, got)
		}
	}
	if a.s.Hash() != before {
		t.Fatal("refused commands changed the state")
	}

	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	for _, args := range versionTwoCalls {
		got := a.apply(Entry{Op: OpExec, Args: args}).Reply
		if len(args) < 3 && args[0] != "DECR" {
			if want := "ERR wrong number of arguments for '" + strings.ToLower(args[0]) + "' command"; !reflect.DeepEqual(got, reply.Error(want)) {
				t.Errorf("%q at version 2 = %+v, want %q", args, got, want)
			}
			continue
		}
		if got.IsError() {
			t.Errorf("%q at version 2 = %+v", args, got)
		}
	}
	if got := a.apply(Entry{Op: OpExec, Args: script([]string{"SETNX", "fresh", "v"})}).Reply; !reflect.DeepEqual(got, reply.Int(1)) {
		t.Errorf("SETNX in a script at version 2 = %+v", got)
	}
	if a.s.Hash() == before {
		t.Fatal("the commands at version 2 changed nothing")
	}
}

// LPOP with more after its count was a syntax error at version 1 and is
// Redis's arity error from 2 on: a script's pcall can store the text, so
// each replica answers as the cluster's version says, not its binary.
func TestVersionLpopExtraArgs(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	lpop := Entry{Op: OpExec, Args: []string{"LPOP", "l", "1", "2"}}
	if got := a.apply(lpop).Reply; !reflect.DeepEqual(got, reply.Error("ERR syntax error")) {
		t.Errorf("at version 1: %+v, want the syntax error", got)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	if got, want := a.apply(lpop).Reply, reply.Error("ERR wrong number of arguments for 'lpop' command"); !reflect.DeepEqual(got, want) {
		t.Errorf("at version 2: %+v, want %+v", got, want)
	}
}

// Transactions come with cluster version 3: below it an OpMulti answers as
// a binary without EXEC would, a script's MULTI or WATCH is unknown, and no
// key carries a mod index nor a deletion a tombstone, so the records (and
// RAFT.HASH) are those of a binary without them; from 3 they run and the
// mods are kept.
func TestVersionGatesTransactions(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	const pcall = "return redis.pcall(ARGV[1], KEYS[1])"
	nope := a.apply(Entry{Op: OpExec, Args: []string{"EVAL", pcall, "1", "k", "NOPE"}}).Reply
	tx := Entry{Op: OpMulti, Watches: []Watch{{Key: "k", Index: 1}}, Cmds: [][]string{{"SET", "k", "v"}, {"GET", "k"}}}
	before := a.s.Hash()
	if got, want := a.apply(tx).Reply, reply.Error("ERR unknown command 'exec', with args beginning with: "); !reflect.DeepEqual(got, want) {
		t.Errorf("OpMulti at version 2 = %+v, want %+v", got, want)
	}
	for _, name := range []string{"MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH"} {
		if got := a.apply(Entry{Op: OpExec, Args: []string{"EVAL", pcall, "1", "k", name}}).Reply; !reflect.DeepEqual(got, nope) {
			t.Errorf("%s in a script at version 2 = %+v, want %+v", name, got, nope)
		}
	}
	if a.s.Hash() != before {
		t.Fatal("a refused transaction changed the state")
	}
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "1"}})
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "gone", "1"}})
	a.apply(Entry{Op: OpExec, Args: []string{"DEL", "gone"}})
	if k := a.s.kv["k"]; k.mod != 0 || a.s.TombstoneCount() != 0 {
		t.Fatalf("at version 2: mod %d, %d tombstones", k.mod, a.s.TombstoneCount())
	}

	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	if got, want := a.apply(tx).Reply, reply.Array(reply.OK(), reply.BulkString("v")); !reflect.DeepEqual(got, want) {
		t.Errorf("OpMulti at version 3 = %+v, want %+v", got, want)
	}
	idx := a.index
	if k := a.s.kv["k"]; k.mod != idx {
		t.Errorf("at version 3 the transaction's write left mod %d, want %d", k.mod, idx)
	}
	// A key last written before version 3 has no mod: a watch of it from
	// any index at 3 holds, until it changes.
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "old", "1"}}) // at 3: mod
	if got := a.apply(Entry{Op: OpMulti, Watches: []Watch{{Key: "k", Index: idx}}, Cmds: [][]string{{"GET", "k"}}}).Reply; got.Kind != reply.KindArray {
		t.Errorf("an unchanged watch failed: %+v", got)
	}
	if got := a.apply(Entry{Op: OpExec, Args: []string{"EVAL", pcall, "1", "k", "MULTI"}}).Reply; reflect.DeepEqual(got, nope) || !got.IsError() {
		t.Errorf("MULTI in a script at version 3 = %+v, want the not-allowed error", got)
	}
}

// pcallARGV is a script that calls the command its arguments name.
const pcallARGV = "return redis.pcall(unpack(ARGV))"

// unknownCommand is what a binary without the command answers for args:
// Redis's unknown-command error, with the arguments it quotes.
func unknownCommand(args []string) reply.Value {
	var b strings.Builder
	for _, x := range args[1:] {
		b.WriteString("'" + x + "' ")
	}
	return reply.Error("ERR unknown command '" + args[0] + "', with args beginning with: " + b.String())
}

// expectUnknownBelow3 applies each of calls at cluster versions 1 and then
// 2 (a's version is raised on the way), from OpExec and through a
// script's pcall: each must be answered as unknown, the script's call as a
// call of a command no binary knows, and nothing may change. at, if set,
// runs at each version after the calls.
func expectUnknownBelow3(t *testing.T, a *applier, calls [][]string, at func(v int64)) {
	t.Helper()
	nope := a.apply(Entry{Op: OpExec, Args: []string{"EVAL", pcallARGV, "0", "NOPE"}}).Reply
	if !nope.IsError() {
		t.Fatalf("a script calling NOPE: %+v", nope)
	}
	for _, v := range []int64{1, 2} {
		if v == 2 {
			a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
		}
		before := a.s.Hash()
		for _, args := range calls {
			if got, want := a.apply(Entry{Op: OpExec, Args: args}).Reply, unknownCommand(args); !reflect.DeepEqual(got, want) {
				t.Errorf("%q at version %d = %+v, want %+v", args, v, got, want)
			}
			in := append([]string{"EVAL", pcallARGV, "0"}, args...)
			if got := a.apply(Entry{Op: OpExec, Args: in}).Reply; !reflect.DeepEqual(got, nope) {
				t.Errorf("%q in a script at version %d = %+v, want %+v", args, v, got, nope)
			}
		}
		if a.s.Hash() != before {
			t.Fatalf("refused commands changed the state at version %d", v)
		}
		if at != nil {
			at(v)
		}
	}
}
