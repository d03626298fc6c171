package lockstate

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// notifyRig applies entries to a State at cluster version 3, with time
// moving 10 ms an entry and a wall clock, as a cluster does.
type notifyRig struct {
	t     *testing.T
	s     *State
	index uint64
	time  int64
	wall  int64
}

const rigWall = 1_700_000_000_000

func newNotifyRig(t *testing.T, flags string) *notifyRig {
	t.Helper()
	r := &notifyRig{t: t, s: New(Config{}), time: 1000, wall: rigWall}
	r.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	if got := r.apply(Entry{Op: OpSetVersion, Version: 3}); got.Int != 3 {
		t.Fatalf("raising to version 3: %+v", got)
	}
	if flags != "" {
		if got := r.exec("CONFIG", "SET", "notify-keyspace-events", flags); !reflect.DeepEqual(got.Reply, reply.OK()) {
			t.Fatalf("CONFIG SET notify-keyspace-events %q: %+v", flags, got.Reply)
		}
	}
	return r
}

func (r *notifyRig) apply(e Entry) Result {
	r.t.Helper()
	r.index++
	r.time += 10
	r.wall += 10
	e.Time, e.Wall = r.time, r.wall
	res, err := r.s.Apply(r.index, e, newMemWriter())
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

func (r *notifyRig) exec(args ...string) Result {
	r.t.Helper()
	return r.apply(Entry{Op: OpExec, Args: args})
}

// events writes "event:key ..." out as the messages Redis sends for them
// with K and E on: for each, the keyspace message, then the keyevent one;
// "pub:channel:payload" is a PUBLISH.
func events(list string) []Message {
	var out []Message
	for _, ev := range strings.Fields(list) {
		name, key, _ := strings.Cut(ev, ":")
		if name == "pub" {
			ch, payload, _ := strings.Cut(key, ":")
			out = append(out, Message{Channel: ch, Payload: payload})
			continue
		}
		out = append(out, Message{Channel: "__keyspace@0__:" + key, Payload: name},
			Message{Channel: "__keyevent@0__:" + name, Payload: key})
	}
	return out
}

// past is an absolute Unix time, in seconds and ms, before every entry.
var pastS, pastMS = strconv.Itoa(rigWall/1000 - 100), strconv.Itoa(rigWall - 100_000)

// notifyCases is what each command raises, read off Redis 7.0.15's source
// (the notifyKeyspaceEvent calls of t_string.c, expire.c, db.c, t_hash.c
// and t_list.c, and dbAdd's "new"), with all classes and n on: the table
// the state machine is checked against. setup runs with events on too,
// but its messages are not looked at.
var notifyCases = []struct {
	setup [][]string
	cmd   []string
	want  string
}{
	{nil, []string{"SET", "k", "v"}, "new:k set:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"SET", "k", "w"}, "set:k"},
	{nil, []string{"SET", "k", "v", "EX", "100"}, "new:k set:k expire:k"},
	{[][]string{{"SET", "k", "v", "EX", "100"}}, []string{"SET", "k", "v", "KEEPTTL"}, "set:k"},
	{[][]string{{"SET", "k", "v", "EX", "100"}}, []string{"SET", "k", "v"}, "set:k"}, // the TTL goes without persist
	// Redis sets the past deadline and says expired when the key is next
	// looked at; fenced deletes it in the same entry.
	{nil, []string{"SET", "k", "v", "PXAT", pastMS}, "new:k set:k expire:k expired:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"SET", "k", "v", "NX"}, ""},
	{nil, []string{"SET", "k", "v", "XX"}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"SET", "k", "w", "GET"}, "set:k"},
	{[][]string{{"LPUSH", "k", "a"}}, []string{"SET", "k", "w"}, "set:k"},
	{[][]string{{"LPUSH", "k", "a"}}, []string{"SET", "k", "w", "GET"}, ""}, // WRONGTYPE
	{nil, []string{"SETNX", "k", "v"}, "new:k set:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"SETNX", "k", "v"}, ""},
	{nil, []string{"SETEX", "k", "10", "v"}, "new:k set:k expire:k"},
	{nil, []string{"PSETEX", "k", "10000", "v"}, "new:k set:k expire:k"},
	{nil, []string{"SETEX", "k", "0", "v"}, ""}, // invalid expire time
	{[][]string{{"SET", "k", "v"}}, []string{"GETSET", "k", "w"}, "set:k"},
	{nil, []string{"GETSET", "k", "w"}, "new:k set:k"},
	{[][]string{{"SET", "a", "v"}}, []string{"MSET", "a", "1", "b", "2"}, "set:a new:b set:b"},
	{nil, []string{"MSETNX", "a", "1", "b", "2"}, "new:a set:a new:b set:b"},
	{[][]string{{"SET", "b", "v"}}, []string{"MSETNX", "a", "1", "b", "2"}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"GETEX", "k", "EX", "100"}, "expire:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"GETEX", "k", "PXAT", pastMS}, "del:k"},
	{[][]string{{"SET", "k", "v", "EX", "100"}}, []string{"GETEX", "k", "PERSIST"}, "persist:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"GETEX", "k", "PERSIST"}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"GETEX", "k"}, ""},
	{nil, []string{"GETEX", "k", "EX", "100"}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"GETDEL", "k"}, "del:k"},
	{[][]string{{"SET", "a", "v"}}, []string{"RENAME", "a", "b"}, "new:b rename_from:a rename_to:b"},
	{[][]string{{"SET", "a", "v"}, {"SET", "b", "w"}}, []string{"RENAME", "a", "b"}, "new:b rename_from:a rename_to:b"},
	{[][]string{{"SET", "a", "v"}, {"SET", "b", "w"}}, []string{"RENAMENX", "a", "b"}, ""},
	{[][]string{{"SET", "a", "v"}}, []string{"RENAME", "a", "a"}, ""},
	{[][]string{{"SET", "a", "v", "EX", "100"}}, []string{"COPY", "a", "b"}, "new:b copy_to:b"},
	{[][]string{{"SET", "a", "v"}, {"SET", "b", "w"}}, []string{"COPY", "a", "b"}, ""},
	{[][]string{{"SET", "a", "v"}}, []string{"FLUSHALL"}, ""},
	{nil, []string{"GETDEL", "k"}, ""},
	{nil, []string{"APPEND", "k", "x"}, "new:k append:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"APPEND", "k", "x"}, "append:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"APPEND", "k", ""}, "append:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"SETRANGE", "k", "3", "x"}, "setrange:k"},
	{nil, []string{"SETRANGE", "k", "2", "x"}, "new:k setrange:k"},
	{nil, []string{"SETRANGE", "k", "2", ""}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"SETRANGE", "k", "2", ""}, ""},
	{nil, []string{"INCR", "n"}, "new:n incrby:n"},
	{[][]string{{"SET", "n", "1"}}, []string{"INCRBY", "n", "5"}, "incrby:n"},
	{[][]string{{"SET", "n", "1"}}, []string{"DECR", "n"}, "incrby:n"},
	{[][]string{{"SET", "n", "1"}}, []string{"DECRBY", "n", "3"}, "incrby:n"},
	{[][]string{{"SET", "n", "x"}}, []string{"INCR", "n"}, ""},
	{[][]string{{"SET", "n", "9223372036854775807"}}, []string{"INCR", "n"}, ""},
	{nil, []string{"INCRBYFLOAT", "f", "1.5"}, "new:f incrbyfloat:f"},
	{[][]string{{"SET", "f", "x"}}, []string{"INCRBYFLOAT", "f", "1.5"}, ""},
	{[][]string{{"SET", "a", "1"}, {"SET", "b", "2"}}, []string{"DEL", "a", "x", "b"}, "del:a del:b"},
	{[][]string{{"SET", "a", "1"}}, []string{"UNLINK", "a"}, "del:a"},
	{[][]string{{"SET", "k", "v"}}, []string{"EXPIRE", "k", "100"}, "expire:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"EXPIRE", "k", "-1"}, "del:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"PEXPIRE", "k", "0"}, "del:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"EXPIREAT", "k", pastS}, "del:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"PEXPIREAT", "k", strconv.Itoa(rigWall + 1_000_000)}, "expire:k"},
	{nil, []string{"EXPIRE", "k", "100"}, ""},
	{[][]string{{"SET", "k", "v", "EX", "100"}}, []string{"EXPIRE", "k", "200", "NX"}, ""},
	{[][]string{{"SET", "k", "v", "EX", "100"}}, []string{"PERSIST", "k"}, "persist:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"PERSIST", "k"}, ""},
	{nil, []string{"HSET", "h", "a", "1", "b", "2"}, "new:h hset:h"},
	{[][]string{{"HSET", "h", "a", "1"}}, []string{"HSET", "h", "a", "1"}, "hset:h"},
	{[][]string{{"SET", "h", "v"}}, []string{"HSET", "h", "a", "1"}, ""},
	{[][]string{{"HSET", "h", "a", "1"}}, []string{"HINCRBY", "h", "a", "2"}, "hincrby:h"},
	{nil, []string{"HINCRBY", "h", "a", "2"}, "new:h hincrby:h"},
	{[][]string{{"HSET", "h", "a", "x"}}, []string{"HINCRBY", "h", "a", "2"}, ""},
	{[][]string{{"HSET", "h", "a", "1", "b", "2"}}, []string{"HDEL", "h", "a", "z"}, "hdel:h"},
	{[][]string{{"HSET", "h", "a", "1", "b", "2"}}, []string{"HDEL", "h", "a", "b"}, "hdel:h del:h"},
	{[][]string{{"HSET", "h", "a", "1"}}, []string{"HDEL", "h", "z"}, ""},
	{nil, []string{"LPUSH", "l", "a", "b"}, "new:l lpush:l"},
	{[][]string{{"LPUSH", "l", "a"}}, []string{"RPUSH", "l", "b"}, "rpush:l"},
	{[][]string{{"RPUSH", "l", "a", "b"}}, []string{"LPOP", "l"}, "lpop:l"},
	{[][]string{{"RPUSH", "l", "a"}}, []string{"LPOP", "l"}, "lpop:l del:l"},
	{[][]string{{"RPUSH", "l", "a"}}, []string{"LPOP", "l", "0"}, ""},
	{[][]string{{"RPUSH", "l", "a", "b"}}, []string{"LPOP", "l", "5"}, "lpop:l del:l"},
	{nil, []string{"LPOP", "l"}, ""},
	{[][]string{{"RPUSH", "l2", "a"}}, []string{"BLPOP", "l1", "l2", "0"}, "lpop:l2 del:l2"},
	{[][]string{{"RPUSH", "l2", "a", "b"}}, []string{"BLPOP", "l1", "l2", "0"}, "lpop:l2"},
	{[][]string{{"SET", "k", "v"}}, []string{"DELEX", "k"}, "del:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"DELEX", "k", "IFEQ", "v"}, "del:k"},
	{[][]string{{"SET", "k", "v"}}, []string{"DELEX", "k", "IFEQ", "w"}, ""},
	{[][]string{{"SET", "k", "v"}}, []string{"DELIFEQ", "k", "v"}, "del:k"},
	// Scripts: each redis.call raises its events as it runs, among the
	// script's PUBLISHes, in order.
	{nil, []string{"EVAL", "redis.call('set', KEYS[1], 'x') redis.call('publish', 'ch', 'm') return redis.call('del', KEYS[1])", "1", "k"},
		"new:k set:k pub:ch:m del:k"},
	{nil, []string{"EVAL", "redis.call('incr', KEYS[1]) return redis.pcall('hset', KEYS[1], 'f', 'v')", "1", "n"}, "new:n incrby:n"},
	{nil, []string{"EVAL", "return redis.pcall('config', 'set', 'notify-keyspace-events', '')", "0"}, ""},
	{nil, []string{"PUBLISH", "ch", "m"}, "pub:ch:m"},
}

func TestNotifyEventsPerCommand(t *testing.T) {
	for _, tc := range notifyCases {
		r := newNotifyRig(t, "AKEn")
		for _, args := range tc.setup {
			r.exec(args...)
		}
		got := r.exec(tc.cmd...)
		if want := events(tc.want); !reflect.DeepEqual(got.Messages, want) {
			t.Errorf("%q after %q (reply %v):\n got  %v\n want %v", tc.cmd, tc.setup, got.Reply, got.Messages, want)
		}
	}
	// A script's CONFIG is refused as Redis refuses it (noscript): the
	// flags stay.
	r := newNotifyRig(t, "KEA")
	got := r.exec("EVAL", "return redis.pcall('config', 'set', 'notify-keyspace-events', '')", "0")
	if !got.Reply.IsError() || !strings.Contains(got.Reply.Str, "not allowed") || r.s.NotifyKeyspaceEvents() != "AKE" {
		t.Errorf("CONFIG from a script: %+v, flags now %q", got.Reply, r.s.NotifyKeyspaceEvents())
	}
}

// A key's deadline raises expired from the entry in which it passes, a
// tick or any other, before that entry's own events; keys due at the same
// instant go in name order.
func TestNotifyExpired(t *testing.T) {
	r := newNotifyRig(t, "KEA")
	r.exec("SET", "k2", "v", "PX", "110")
	r.exec("SET", "k1", "v", "PX", "100") // 10 ms later: due at the same instant
	r.exec("SET", "later", "v", "PX", "5000")
	if got := r.apply(Entry{Op: OpTick}); got.Messages != nil {
		t.Fatalf("a tick before the deadlines: %v", got.Messages)
	}
	r.time += 200
	got := r.exec("SET", "x", "1")
	if want := events("expired:k1 expired:k2 set:x"); !reflect.DeepEqual(got.Messages, want) {
		t.Fatalf("got %v, want %v", got.Messages, want)
	}
	r.time += 5000
	if got, want := r.apply(Entry{Op: OpTick}).Messages, events("expired:later"); !reflect.DeepEqual(got, want) {
		t.Fatalf("tick: got %v, want %v", got, want)
	}
}

// The flags gate each class and each kind of message; "A" does not hold
// n, m, K or E.
func TestNotifyFlagsGate(t *testing.T) {
	// What the entries raise, with the class letter of each.
	all := []struct{ class, event, key string }{
		{"n", "new", "k"}, {"$", "set", "k"}, {"g", "expire", "k"}, {"n", "new", "l"}, {"l", "lpush", "l"},
		{"n", "new", "h"}, {"h", "hset", "h"}, {"g", "del", "k"}, {"x", "expired", "e"},
	}
	run := func(r *notifyRig) []Message {
		var out []Message
		r.exec("SET", "e", "v", "PX", "20")
		r.time += 100
		for _, args := range [][]string{{"SET", "k", "v", "EX", "10"}, {"LPUSH", "l", "a"}, {"HSET", "h", "f", "v"}, {"DEL", "k"}} {
			out = append(out, r.exec(args...).Messages...)
		}
		return out
	}
	for _, flags := range []string{"", "K", "E", "A", "KA", "EA", "KEA", "KEAn", "Kg", "E$", "Kx", "En", "KEl", "Eh", "Kgx$", "Km", "KEstzed"} {
		r := newNotifyRig(t, flags)
		var want []Message
		on := func(c string) bool {
			return strings.Contains(flags, c) || strings.Contains("g$lshzxetd", c) && strings.Contains(flags, "A")
		}
		// The expired event comes first: the tick's deadline passes at the
		// start of the first entry after it.
		order := append(all[8:], all[:8]...)
		for _, ev := range order {
			if !on(ev.class) {
				continue
			}
			if on("K") {
				want = append(want, Message{"__keyspace@0__:" + ev.key, ev.event})
			}
			if on("E") {
				want = append(want, Message{"__keyevent@0__:" + ev.event, ev.key})
			}
		}
		if got := run(r); !reflect.DeepEqual(got, want) {
			t.Errorf("flags %q:\n got  %v\n want %v", flags, got, want)
		}
	}
}

// CONFIG GET's form is Redis's keyspaceEventsFlagsToString, as Redis's own
// test asserts it, and drops n beside A; the entry's spelling keeps every
// class. Malformed strings are refused and change nothing.
func TestNotifyConfig(t *testing.T) {
	for in, want := range map[string]string{
		"gKE": "gKE", "$lshzxeKE": "$lshzxeKE", "KA": "AK", "EA": "AE", "KEAn": "AKE", "AA$$": "A",
		"g$lshzxetd": "A", "mn": "nm", "": "", "Kzs": "szK", "dte": "etd", "AKEm": "AKEm",
		"\x00": "", "K\x00q": "K", // a C string: the NUL ends it
	} {
		r := newNotifyRig(t, "")
		if got := r.exec("config", "set", "Notify-Keyspace-Events", in).Reply; !reflect.DeepEqual(got, reply.OK()) {
			t.Fatalf("CONFIG SET %q: %+v", in, got)
		}
		if got := r.s.NotifyKeyspaceEvents(); got != want {
			t.Errorf("%q reads back as %q, want %q", in, got, want)
		}
		v, ok := NotifyValue(in)
		if f, _ := parseNotify(in); !ok || notifyFlagsOf(t, v) != f || strings.Contains(v, "A") {
			t.Errorf("NotifyValue(%q) = %q, %v: not the same classes", in, v, ok)
		}
	}
	r := newNotifyRig(t, "KEA")
	before := recordsBut(r.s, timeKey)
	bad := "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	for _, in := range []string{"KEq", "K E", "k", "a", "q\x00", "KEA\n", strings.Repeat("K", 1000) + "?"} {
		if got := r.exec("CONFIG", "SET", "notify-keyspace-events", in).Reply; !reflect.DeepEqual(got, reply.Error(bad)) {
			t.Errorf("CONFIG SET %q: %+v", in, got)
		}
		if _, ok := NotifyValue(in); ok {
			t.Errorf("NotifyValue(%q) accepted it", in)
		}
	}
	for _, args := range [][]string{{"CONFIG", "GET", "x"}, {"CONFIG", "SET", "maxmemory", "1"}, {"CONFIG", "SET", "notify-keyspace-events"}} {
		if got := r.exec(args...).Reply; !got.IsError() {
			t.Errorf("%q through the log: %+v", args, got)
		}
	}
	if recordsBut(r.s, timeKey) != before {
		t.Fatal("refused CONFIG SETs changed the state")
	}
}

// recordsBut is the state's records, but the one at skip, as text.
func recordsBut(s *State, skip string) string {
	var b strings.Builder
	_ = s.Records(func(k, v []byte) error {
		if string(k) != skip {
			fmt.Fprintf(&b, "%q=%x ", k, v)
		}
		return nil
	})
	return b.String()
}

func notifyFlagsOf(t *testing.T, v string) int {
	f, ok := parseNotify(v)
	if !ok {
		t.Fatalf("%q does not parse", v)
	}
	return f
}

// The flags are replicated state: a reload (restart, snapshot) keeps them,
// with the same hash, and a state that never set them has no record.
func TestNotifySurvivesReload(t *testing.T) {
	r := newNotifyRig(t, "")
	var keys []string
	_ = r.s.Records(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	if fmt.Sprint(keys) != "[m/time m/version n/n1]" {
		t.Fatalf("records without flags: %v", keys)
	}
	r.exec("CONFIG", "SET", "notify-keyspace-events", "KEAn")
	s, err := reload(r.s)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.NotifyKeyspaceEvents(); got != "AKE" {
		t.Fatalf("reloaded flags %q", got)
	}
	r.s = s
	if got, want := r.exec("SET", "k", "v").Messages, events("new:k set:k"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reload: %v, want %v", got, want)
	}
	// Turned off, the record goes.
	r.exec("CONFIG", "SET", "notify-keyspace-events", "")
	keys = nil
	_ = r.s.Records(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	if strings.Contains(fmt.Sprint(keys), notifyKey) {
		t.Fatalf("flags off, records %v", keys)
	}
	for _, bad := range [][]byte{{1, 0}, {1, 0xff, 0xff, 0x03}, {1, 2, 0}, {2, 2}} {
		if err := New(Config{}).Load([]byte(notifyKey), bad); err == nil {
			t.Errorf("notify record %x loaded", bad)
		}
	}
}

// Below cluster version 3 CONFIG through the log answers what a binary
// without it answers, changes nothing and raises nothing; events need the
// flags, which only version 3 can set.
func TestNotifyVersionGate(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	cfg := Entry{Op: OpExec, Args: []string{"CONFIG", "SET", "notify-keyspace-events", "KEA"}}
	a.expect(cfg, Result{Reply: reply.Error("ERR 'config' is not a keyspace command")})
	if got := a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "v", "EX", "1"}}); got.Messages != nil {
		t.Fatalf("events at version 2: %v", got.Messages)
	}
	if got := a.s.NotifyKeyspaceEvents(); got != "" {
		t.Fatalf("flags %q at version 2", got)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	a.expect(cfg, Result{Reply: reply.OK()}, "set m/notify")
	if got, want := a.apply(Entry{Op: OpExec, Args: []string{"DEL", "k"}}).Messages, events("del:k"); !reflect.DeepEqual(got, want) {
		t.Fatalf("at version 3: %v, want %v", got, want)
	}
}

// fenced's native locks and sessions are not Redis keys: with every class
// on they raise nothing, taken, released, expired or killed.
func TestNotifyNativeLocksSilent(t *testing.T) {
	r := newNotifyRig(t, "KEAnm")
	var msgs []Message
	for _, e := range []Entry{
		{Op: OpSessionOpen, Session: "s1", TTL: 1000},
		{Op: OpSessionOpen, Session: "s2", TTL: 50},
		{Op: OpFlock, Session: "s1", Lock: "L", Wait: NoWait},
		{Op: OpFlock, Session: "s2", Lock: "L", Wait: 0, WaitID: 7},
		{Op: OpFlock, Session: "s2", Lock: "M", Wait: NoWait},
		{Op: OpFunlock, Session: "s1", Lock: "L"},
		{Op: OpTick, Time: 0},
	} {
		msgs = append(msgs, r.apply(e).Messages...)
	}
	r.time += 1000 // s2 expires, releasing M and L
	msgs = append(msgs, r.apply(Entry{Op: OpTick}).Messages...)
	msgs = append(msgs, r.apply(Entry{Op: OpSessionKill, Session: "s1"}).Messages...)
	if msgs != nil {
		t.Fatalf("native locks raised %v", msgs)
	}
	if got := r.s.KeyType("M", r.time); got != "none" {
		t.Fatalf("M is %q after its session expired: the test expired nothing", got)
	}
}
