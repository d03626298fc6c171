package lockstate

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// versionThreeCalls are a call of each whole-key command of cluster
// version 3, writes and reads alike (a read is gated inside the log only).
var versionThreeCalls = [][]string{
	{"RENAME", "k", "k2"}, {"RENAMENX", "k", "k3"}, {"COPY", "k", "k4"}, {"FLUSHALL"}, {"FLUSHDB", "SYNC"},
	{"MOVE", "k", "1"}, {"SWAPDB", "0", "0"}, {"TOUCH", "k"}, {"RANDOMKEY"}, {"OBJECT", "ENCODING", "k"},
	{"RENAME", "k"}, // a wrong arity is unknown too
}

// Below cluster version 3 each whole-key command is answered as by a
// binary that lacks it, from OpExec and from a script alike, and changes
// nothing, at version 1 and at 2; at 3 they run. Served directly (Exec),
// the reads need no gate.
func TestVersionGatesWholeKeyCommands(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "v"}})
	const pcall = pcallARGV
	expectUnknownBelow3(t, a, versionThreeCalls, func(v int64) {
		for args, want := range map[string]reply.Value{"TOUCH k nokey": reply.Int(1), "OBJECT ENCODING k": reply.BulkString("embstr"), "RANDOMKEY": reply.BulkString("k")} {
			if got := a.s.Exec(strings.Fields(args), 1000); !reflect.DeepEqual(got, want) {
				t.Errorf("Exec(%s) at version %d = %+v, want %+v", args, v, got, want)
			}
		}
	})
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	// Past the gate: the writes run (k is k2 after the first), the reads
	// are refused as every read is in an entry of its own.
	read := func(name string) reply.Value {
		return reply.Error("ERR '" + name + "' is a read command: it is not applied through the log")
	}
	want := []reply.Value{reply.OK(), reply.Error("ERR no such key"), reply.Int(0), reply.OK(), reply.OK(),
		reply.Error("ERR DB index is out of range"), reply.OK(), read("touch"), read("randomkey"), read("object"),
		reply.Error("ERR wrong number of arguments for 'rename' command")}
	for i, args := range versionThreeCalls {
		if got := a.apply(Entry{Op: OpExec, Args: args}).Reply; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%q at version 3 = %+v, want %+v", args, got, want[i])
		}
	}
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "v"}})
	if got := a.apply(Entry{Op: OpExec, Args: []string{"EVAL", pcall, "0", "RENAME", "k", "k9"}}).Reply; !reflect.DeepEqual(got, reply.OK()) {
		t.Errorf("RENAME in a script at version 3 = %+v", got)
	}
}

// v3 is an applier at cluster version 3.
func v3(t *testing.T) *applier {
	a := newApplier(t)
	a.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3})
	a.apply(Entry{Op: OpSetVersion, Version: 3})
	return a
}

func (a *applier) exec(args ...string) Result {
	a.t.Helper()
	return a.apply(Entry{Op: OpExec, Args: args})
}

// A list that RENAME or COPY creates wakes the BLPOPs waiting on its new
// name, as a push does (Redis's dbAdd signals the key ready).
func TestWholeKeyListWakesBlpop(t *testing.T) {
	a := v3(t)
	a.exec("RPUSH", "l", "x")
	if r := a.exec("RENAME", "l", "m"); !slices.Equal(r.Pushed, []string{"m"}) {
		t.Errorf("RENAME of a list: pushed %q, want [m]", r.Pushed)
	}
	if r := a.exec("COPY", "m", "n"); !slices.Equal(r.Pushed, []string{"n"}) {
		t.Errorf("COPY of a list: pushed %q, want [n]", r.Pushed)
	}
	a.exec("SET", "s", "v")
	if r := a.exec("RENAME", "s", "t"); len(r.Pushed) != 0 {
		t.Errorf("RENAME of a string: pushed %q", r.Pushed)
	}
}

// COPY grows the state by a whole key its arguments do not show: at
// MaxMemory it is refused with -OOM and changes nothing, while RENAME,
// which only moves, still runs.
func TestCopyRefusedAtMaxMemory(t *testing.T) {
	m := newMemTest(t)
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3})
	m.apply(Entry{Op: OpSetVersion, Version: 3})
	m.exec("SET", "big", strings.Repeat("x", 100_000))
	m.limit = m.s.Used() + 50_000
	before := m.records()
	if got := m.exec("COPY", "big", "big2"); !isOOM(got) {
		t.Fatalf("COPY past maxmemory = %+v", got)
	}
	if m.records() != before {
		t.Fatal("a refused COPY changed the records")
	}
	if got := m.exec("RENAME", "big", "moved"); !reflect.DeepEqual(got, reply.OK()) {
		t.Fatalf("RENAME at maxmemory = %+v", got)
	}
	m.limit = 0
	used := m.s.Used()
	if got := m.exec("COPY", "moved", "copy"); !reflect.DeepEqual(got, reply.Int(1)) {
		t.Fatalf("COPY without a limit = %+v", got)
	}
	// The copy counts what its original does, less the name's difference.
	if grew := m.s.Used() - used; grew < 100_000 || grew > 100_000+200 {
		t.Errorf("COPY of 100,000 bytes grew Used by %d", grew)
	}
	m.exec("FLUSHALL")
	if got := m.s.Used(); got > 1000 {
		t.Errorf("Used after FLUSHALL = %d", got)
	}
}

// FLUSHALL drops every key, SET NX locks included, and keeps every fenced
// lock, session, waiter and cached script; the fenced lock's token and a
// SET NX lock's token taken again after it only rise.
func TestFlushAllKeepsFencedState(t *testing.T) {
	a := v3(t)
	a.apply(Entry{Op: OpSessionOpen, Session: "s1", TTL: 100_000})
	a.apply(Entry{Op: OpSessionOpen, Session: "s2", TTL: 100_000})
	lockTok := a.apply(Entry{Op: OpFlock, Session: "s1", Lock: "L", Wait: NoWait}).Int
	a.apply(Entry{Op: OpFlock, Session: "s2", Lock: "L", Wait: 0, WaitID: 7})
	a.exec("SCRIPT", "LOAD", "return 1")
	a.exec("SET", "nx", "me", "NX", "PX", "100000")
	a.exec("HSET", "h", "f", "v")
	a.exec("RPUSH", "l", "e")
	nxTok, _ := a.s.KeyFence("nx", 1000)
	if r := a.exec("FLUSHALL"); !reflect.DeepEqual(r.Reply, reply.OK()) {
		t.Fatalf("FLUSHALL = %+v", r.Reply)
	}
	if n := a.s.KeyCount(1000); n != 1 {
		t.Errorf("DBSIZE after FLUSHALL = %d, want 1 (the held lock)", n)
	}
	for _, name := range []string{"nx", "h", "l"} {
		if typ := a.s.KeyType(name, 1000); typ != "none" {
			t.Errorf("TYPE %s after FLUSHALL = %s", name, typ)
		}
	}
	info := a.s.LockInfo("L", 1000)
	if info.Holder != "s1" || info.Token != lockTok || len(info.Waiters) != 1 || info.Waiters[0].Session != "s2" {
		t.Fatalf("LOCK.INFO after FLUSHALL = %+v", info)
	}
	if got := a.exec("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db").Reply; !reflect.DeepEqual(got, reply.Array(reply.Int(1))) {
		t.Errorf("SCRIPT EXISTS after FLUSHALL = %+v", got)
	}
	// The waiter gets the lock with a larger token once s1 lets go.
	r := a.apply(Entry{Op: OpFunlock, Session: "s1", Lock: "L"})
	if len(r.Wakes) != 1 || r.Wakes[0].Result.Int <= lockTok {
		t.Errorf("handoff after FLUSHALL: %+v, want a token above %d", r.Wakes, lockTok)
	}
	a.exec("SET", "nx", "you", "NX", "PX", "100000")
	if tok, ok := a.s.KeyFence("nx", 1000); !ok || tok <= nxTok {
		t.Errorf("SET NX lock after FLUSHALL: token %d %v, want above %d", tok, ok, nxTok)
	}
}

// RANDOMKEY reaches every live name, key or held lock, never an expired
// key, and answers null on an empty keyspace; in a script its draws are
// the entry's, so two replicas answer alike, and a script's draws differ
// from one another.
func TestRandomKey(t *testing.T) {
	names := map[string]bool{"L": true}
	build := func() *applier {
		a := v3(t)
		if got := a.s.RandomKey(1000, 42); !reflect.DeepEqual(got, reply.Null()) {
			t.Fatalf("RANDOMKEY of nothing = %+v", got)
		}
		for i := range 20 {
			n := "k" + strconv.Itoa(i)
			a.exec("SET", n, "v")
			names[n] = true
		}
		a.apply(Entry{Op: OpSessionOpen, Session: "s", TTL: 100_000})
		a.apply(Entry{Op: OpFlock, Session: "s", Lock: "L", Wait: NoWait})
		a.exec("SET", "gone", "v", "PX", "10")
		return a
	}
	a, b := build(), build()
	seen := map[string]bool{}
	for i := range uint64(5000) {
		v := a.s.RandomKey(2000, randomDraw(i, 0)) // "gone" has expired by 2000
		if v.Kind != reply.KindBulk || !names[v.Str] {
			t.Fatalf("RANDOMKEY = %+v", v)
		}
		seen[v.Str] = true
	}
	if len(seen) != len(names) {
		t.Errorf("RANDOMKEY reached %d of %d names", len(seen), len(names))
	}
	const src = "return {redis.call('RANDOMKEY'), redis.call('RANDOMKEY'), redis.call('RANDOMKEY'), redis.call('RANDOMKEY')}"
	ra, rb := a.exec("EVAL", src, "0").Reply, b.exec("EVAL", src, "0").Reply
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("the same script at the same index on two replicas: %+v and %+v", ra, rb)
	}
	distinct := map[string]bool{}
	for _, e := range ra.Elems {
		distinct[e.Str] = true
	}
	if ra.Kind != reply.KindArray || len(ra.Elems) != 4 || len(distinct) < 2 {
		t.Errorf("four RANDOMKEYs in one script = %+v, want different draws", ra)
	}
}
