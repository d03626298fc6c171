package lockstate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// memTest applies entries to a State with a fixed time, so that a refused
// entry leaves every record as it was (the time record included).
type memTest struct {
	t     *testing.T
	s     *State
	w     *memWriter
	index uint64
	limit int64 // MaxMemory of the entries applied
}

func newMemTest(t *testing.T) *memTest {
	return &memTest{t: t, s: New(Config{}), w: newMemWriter()}
}

func (m *memTest) apply(e Entry) Result {
	m.t.Helper()
	m.index++
	e.Time, e.MaxMemory = 10, m.limit
	r, err := m.s.Apply(m.index, e, m.w)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := checkInvariants(m.s); err != nil {
		m.t.Fatalf("entry %d %+v: %v", m.index, e, err)
	}
	return r
}

func (m *memTest) exec(args ...string) reply.Value {
	m.t.Helper()
	return m.apply(Entry{Op: OpExec, Args: args}).Reply
}

// records is every record, to compare before and after a refusal.
func (m *memTest) records() string {
	var b strings.Builder
	_ = m.s.Records(func(k, v []byte) error {
		fmt.Fprintf(&b, "%q=%x\n", k, v)
		return nil
	})
	return b.String()
}

func isOOM(v reply.Value) bool {
	return v.Kind == reply.KindError && v.Str == "OOM command not allowed when used memory > 'maxmemory'."
}

// TestMaxMemoryAtTheLimit: a write whose estimated growth lands exactly on
// MaxMemory is applied; with MaxMemory one byte lower it answers Redis's
// -OOM and changes nothing.
func TestMaxMemoryAtTheLimit(t *testing.T) {
	m := newMemTest(t)
	m.exec("SET", "a", "1")
	args := [][]byte{[]byte("SET"), []byte("key"), bytes.Repeat([]byte("v"), 100)}
	need := m.s.Used() + argBytes(args) + recordOverhead

	m.limit = need - 1
	before := m.records()
	if v := m.exec("SET", "key", string(args[2])); !isOOM(v) {
		t.Fatalf("one byte past the limit: %+v", v)
	}
	if m.records() != before {
		t.Fatal("a refused SET changed the records")
	}
	m.limit = need
	if v := m.exec("SET", "key", string(args[2])); v.Kind == reply.KindError {
		t.Fatalf("at the limit: %+v", v)
	}
	if m.s.Used() > m.limit {
		t.Fatalf("used %d after a write admitted within %d", m.s.Used(), m.limit)
	}
}

// TestMaxMemoryRefusesGrowthOnly fills the state with every kind of growth
// until each is refused, then checks that what shrinks or keeps the state
// still works under the limit and makes room, and that the count survives
// a reload.
func TestMaxMemoryRefusesGrowthOnly(t *testing.T) {
	m := newMemTest(t)
	held := m.apply(Entry{Op: OpSessionOpen, Session: "held", TTL: 1000})
	if held.Err != nil {
		t.Fatal(held.Err)
	}
	if r := m.apply(Entry{Op: OpFlock, Session: "held", Lock: "L", Wait: NoWait}); r.Err != nil || r.Int == 0 {
		t.Fatalf("flock: %+v", r)
	}
	m.exec("SET", "ttl", "x", "PX", "50")
	m.limit = m.s.Used() + 40_000

	// Each kind of growth, until refused. The refusal changes nothing.
	value := strings.Repeat("v", 200)
	grow := []struct {
		name string
		do   func(i int) bool // reports whether it was refused
	}{
		{"SET", func(i int) bool { return isOOM(m.exec("SET", fmt.Sprint("k", i), value)) }},
		{"RPUSH", func(i int) bool { return isOOM(m.exec("RPUSH", "list", value)) }},
		{"HSET", func(i int) bool { return isOOM(m.exec("HSET", "hash", fmt.Sprint("f", i), value)) }},
		{"INCR", func(i int) bool { return isOOM(m.exec("INCR", fmt.Sprint("n", i))) }},
		{"EVAL SET", func(i int) bool {
			v := m.exec("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", fmt.Sprint("e", i), value)
			return v.Kind == reply.KindError && strings.Contains(v.Str, "OOM command not allowed")
		}},
		{"SCRIPT LOAD", func(i int) bool { return isOOM(m.exec("SCRIPT", "LOAD", fmt.Sprintf("return %d -- %s", i, value))) }},
		{"SESSION.OPEN", func(i int) bool {
			r := m.apply(Entry{Op: OpSessionOpen, Session: fmt.Sprintf("%032d", i), TTL: 1000, Name: value})
			return r.Err == ErrOOM
		}},
		{"FLOCK", func(i int) bool {
			r := m.apply(Entry{Op: OpFlock, Session: "held", Lock: fmt.Sprint("lock", i), Wait: NoWait})
			return r.Err == ErrOOM
		}},
	}
	for _, g := range grow {
		refused := false
		for i := 0; i < 1000 && !refused; i++ {
			before := m.records()
			if refused = g.do(i); refused && m.records() != before {
				t.Fatalf("%s: the refused write changed the records", g.name)
			}
		}
		if !refused {
			t.Fatalf("%s: never refused", g.name)
		}
		if m.s.Used() > m.limit {
			t.Fatalf("%s: used %d past the limit %d", g.name, m.s.Used(), m.limit)
		}
		// Deleting makes room for it again (the keys written last by
		// SET, or the list itself).
		used := m.s.Used()
		if v := m.exec("DEL", "k0", "k1", "list", "hash"); v.Kind == reply.KindError {
			t.Fatalf("DEL under the limit: %+v", v)
		}
		if m.s.Used() >= used && g.name == "SET" {
			t.Fatalf("DEL freed nothing: %d then %d", used, m.s.Used())
		}
		m.limit = m.s.Used() + 2_000 // the next kind starts nearly full
	}

	// What never grows the state works at the limit.
	m.limit = m.s.Used() - 1
	if v := m.s.Exec([]string{"GET", "k2"}, 10); v.Kind == reply.KindError {
		t.Fatalf("GET: %+v", v)
	}
	if r := m.apply(Entry{Op: OpFlock, Session: "held", Lock: "L", Wait: NoWait}); r.Err != nil || r.Int == 0 {
		t.Fatalf("a reentrant FLOCK refused: %+v", r)
	}
	for _, e := range []Entry{
		{Op: OpFunlock, Session: "held", Lock: "L"},
		{Op: OpFunlock, Session: "held", Lock: "L", Req: "r1"},
		{Op: OpSessionHeartbeat, Session: "held"},
	} {
		if r := m.apply(e); r.Err != nil && r.Err != ErrNotOwner {
			t.Fatalf("%+v under the limit: %v", e, r.Err)
		}
	}
	for _, args := range [][]string{{"LPOP", "list"}, {"HDEL", "hash", "f1"}, {"EXPIRE", "k3", "100"}, {"PERSIST", "k3"},
		{"GETDEL", "k4"}, {"EVAL", "return redis.call('DEL', KEYS[1])", "1", "k5"}, {"SCRIPT", "FLUSH"}} {
		if v := m.exec(args...); v.Kind == reply.KindError {
			t.Fatalf("%v under the limit: %+v", args, v)
		}
	}
	// Expiry frees room: the key set with PX 50 goes at time 61.
	used := m.s.Used()
	m.index++
	if _, err := m.s.Apply(m.index, Entry{Op: OpTick, Time: 61, MaxMemory: m.limit}, m.w); err != nil {
		t.Fatal(err)
	}
	if m.s.Used() >= used {
		t.Fatalf("expiry freed nothing: %d then %d", used, m.s.Used())
	}
	used = m.s.Used()
	if r := m.apply(Entry{Op: OpSessionKill, Session: "held"}); r.Err != nil {
		t.Fatalf("SESSION.KILL under the limit: %v", r.Err)
	}
	if m.s.Used() >= used {
		t.Fatalf("SESSION.KILL freed nothing: %d then %d", used, m.s.Used())
	}
	if err := sameRecords(m.s, m.w); err != nil {
		t.Fatal(err)
	}
	if _, err := reload(m.s); err != nil { // compares Used too
		t.Fatal(err)
	}
}

// TestUsedFollowsEveryRecord: the count equals the recount from the records
// after entries that replace, delete and recreate records within one
// entry, hand locks off, and evict memos and scripts (checkInvariants
// recounts after each).
func TestUsedFollowsEveryRecord(t *testing.T) {
	m := newMemTest(t)
	for _, id := range []string{"s1", "s2"} {
		m.apply(Entry{Op: OpSessionOpen, Session: id, TTL: 1000, Name: "n-" + id})
	}
	m.apply(Entry{Op: OpFlock, Session: "s1", Lock: "a", Wait: NoWait, Req: "q1"})
	m.apply(Entry{Op: OpFlock, Session: "s2", Lock: "a", Wait: 0, WaitID: 7, Req: "q2"})
	m.apply(Entry{Op: OpFlock, Session: "s2", Lock: "a", Wait: 0, WaitID: 8, Req: "q2"}) // a retry binds another id
	m.apply(Entry{Op: OpFunlock, Session: "s1", Lock: "a", Req: "q3"})                   // hands off to s2
	for i := range 1005 {                                                                // past ReqMemory: memos evicted
		m.apply(Entry{Op: OpFunlock, Session: "s1", Lock: "none", Req: fmt.Sprint("r", i)})
	}
	m.exec("SET", "k", "short")
	m.exec("EVAL", "redis.call('DEL', KEYS[1]); redis.call('RPUSH', KEYS[1], 'a', 'b'); return redis.call('SET', KEYS[2], 'much longer than before')", "2", "k", "j")
	m.exec("EVAL", "redis.call('DEL', KEYS[1]); return redis.call('HSET', KEYS[1], 'f', 'v')", "1", "j")
	m.exec("SET", "k", "x", "PX", "5")
	m.exec("HSET", "k2", "f", "1")
	m.exec("HINCRBY", "k2", "f", "123456789")
	m.exec("SCRIPT", "LOAD", "return 1")
	m.apply(Entry{Op: OpACLSetUser, Name: "u", Args: []string{"on", ">pw", "~*"}})
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "c:1"})
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "c:22"})
	m.apply(Entry{Op: OpNodeRemove, Node: "n1"})
	m.apply(Entry{Op: OpACLDelUser, Args: []string{"u"}})
	m.exec("SCRIPT", "FLUSH")
	m.apply(Entry{Op: OpSessionKill, Session: "s2"})
	m.index++
	if _, err := m.s.Apply(m.index, Entry{Op: OpTick, Time: 5000}, m.w); err != nil { // everything expires
		t.Fatal(err)
	}
	if err := checkInvariants(m.s); err != nil {
		t.Fatal(err)
	}
	if err := sameRecords(m.s, m.w); err != nil {
		t.Fatal(err)
	}
	if m.s.Used() != recount(m.s) || m.s.Used() == 0 {
		t.Fatalf("used %d, recount %d", m.s.Used(), recount(m.s))
	}
}
