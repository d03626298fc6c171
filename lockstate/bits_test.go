package lockstate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// bitsCalls are a call of each command of bits.go, lcs.go and
// listpops.go's RPOP, and HMSET (cluster version 3), writes and reads.
var bitsCalls = [][]string{
	{"SETBIT", "k", "2", "1"}, {"RPOP", "l"}, {"HMSET", "h", "f", "v"},
	{"GETBIT", "k", "1"}, {"BITCOUNT", "k"}, {"BITPOS", "k", "1"}, {"LCS", "k", "k"},
	{"SETBIT", "k"}, // a wrong arity is unknown too
}

// Below cluster version 3 each command is answered as by a binary that
// lacks it, from OpExec and from a script alike, and changes nothing; at
// 3 the writes run and the reads are refused in the log as every read is.
// Served directly (Exec), the reads need no gate.
func TestVersionGatesBitCommands(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "@"}})
	a.apply(Entry{Op: OpExec, Args: []string{"RPUSH", "l", "a", "b"}})
	expectUnknownBelow3(t, a, bitsCalls, func(v int64) {
		// Served directly (Exec), the reads need no gate.
		for args, want := range map[string]reply.Value{"GETBIT k 1": reply.Int(1), "BITCOUNT k": reply.Int(1),
			"BITPOS k 1": reply.Int(1), "LCS k k": reply.BulkString("@")} {
			if got := a.s.Exec(strings.Fields(args), 1000); !reflect.DeepEqual(got, want) {
				t.Errorf("Exec(%s) at version %d = %+v, want %+v", args, v, got, want)
			}
		}
	})
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	read := func(name string) reply.Value {
		return reply.Error("ERR '" + name + "' is a read command: it is not applied through the log")
	}
	want := []reply.Value{reply.Int(0), reply.BulkString("b"), reply.OK(), read("getbit"), read("bitcount"), read("bitpos"),
		read("lcs"), reply.Error("ERR wrong number of arguments for 'setbit' command")}
	for i, args := range bitsCalls {
		if got := a.apply(Entry{Op: OpExec, Args: args}).Reply; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%q at version 3 = %+v, want %+v", args, got, want[i])
		}
	}
	// Inside a script at version 3 they all run: "@", 01000000, with bit
	// 2 set is "`", 01100000.
	for _, c := range []struct {
		args string
		want reply.Value
	}{{"GETBIT k 2", reply.Int(1)}, {"BITCOUNT k", reply.Int(2)}, {"BITPOS k 1", reply.Int(1)}, {"LCS k k", reply.BulkString("`")},
		{"RPOP l", reply.BulkString("a")}, {"SETBIT k 1 0", reply.Int(1)}, {"GETBIT k 1", reply.Int(0)}} {
		in := append([]string{"EVAL", pcallARGV, "0"}, strings.Fields(c.args)...)
		if got := a.apply(Entry{Op: OpExec, Args: in}).Reply; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s in a script at version 3 = %+v, want %+v", c.args, got, c.want)
		}
	}
}

// SETBIT's bounds: Redis's offset limit (512 MiB of string) first, as its
// error; then fenced's, a string of at most MaxRecord bytes, which refuses
// a growth past it and changes nothing, while a bit inside a string that
// long is still set.
func TestSetBitBounds(t *testing.T) {
	a := v3(t)
	for _, off := range []string{"4294967296", "-1", "x", "9223372036854775807"} {
		if got := a.exec("SETBIT", "k", off, "1").Reply; got.Str != "ERR bit offset is not an integer or out of range" {
			t.Errorf("SETBIT k %s 1 = %+v", off, got)
		}
	}
	before := a.s.Hash()
	for _, off := range []string{"4294967295", "33554432"} { // the 512 MiB's last bit; MaxRecord's first byte past it
		if got := a.exec("SETBIT", "k", off, "1").Reply; !reflect.DeepEqual(got, errBitsLarge) {
			t.Errorf("SETBIT k %s 1 = %+v, want %+v", off, got, errBitsLarge)
		}
	}
	if a.s.Hash() != before {
		t.Fatal("a refused SETBIT changed the state")
	}
	// The last bit a string may hold: MaxRecord bytes, the bit set at its end.
	if got := a.exec("SETBIT", "k", "33554431", "1").Reply; !reflect.DeepEqual(got, reply.Int(0)) {
		t.Fatalf("SETBIT at MaxRecord's last bit = %+v", got)
	}
	if got := a.s.Exec([]string{"STRLEN", "k"}, 1000); !reflect.DeepEqual(got, reply.Int(MaxRecord)) {
		t.Errorf("STRLEN after it = %+v, want %d", got, MaxRecord)
	}
	if got := a.s.Exec([]string{"BITCOUNT", "k"}, 1000); !reflect.DeepEqual(got, reply.Int(1)) {
		t.Errorf("BITCOUNT after it = %+v", got)
	}
	if got := a.s.Exec([]string{"BITPOS", "k", "1"}, 1000); !reflect.DeepEqual(got, reply.Int(33554431)) {
		t.Errorf("BITPOS k 1 after it = %+v", got)
	}
	if got := a.exec("SETBIT", "k", "8", "1").Reply; !reflect.DeepEqual(got, reply.Int(0)) {
		t.Errorf("SETBIT inside a MaxRecord string = %+v", got)
	}
	if got := a.exec("SETBIT", "k", "33554432", "0").Reply; !reflect.DeepEqual(got, errBitsLarge) {
		t.Errorf("SETBIT past a MaxRecord string = %+v", got)
	}
}

// At MaxMemory a SETBIT is charged for the string its offset may grow
// to: a large offset is refused with -OOM and changes nothing, while the
// pops and reads still run.
func TestSetBitRefusedAtMaxMemory(t *testing.T) {
	m := newMemTest(t)
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3})
	m.apply(Entry{Op: OpSetVersion, Version: 3})
	m.exec("RPUSH", "l", "a", "b")
	m.limit = m.s.Used() + 4096
	before := m.s.Hash()
	if got := m.exec("SETBIT", "k", "8000000", "1"); !reflect.DeepEqual(got, errOOM) {
		t.Fatalf("SETBIT of a 1 MB string at MaxMemory = %+v", got)
	}
	if got := m.exec("HMSET", "h", "f", strings.Repeat("v", 8192)); !reflect.DeepEqual(got, errOOM) {
		t.Fatalf("HMSET of 8 KB at MaxMemory = %+v", got)
	}
	if m.s.Hash() != before {
		t.Fatal("refused commands changed the state")
	}
	if got := m.exec("SETBIT", "k", "80", "1"); !reflect.DeepEqual(got, reply.Int(0)) {
		t.Errorf("a small SETBIT = %+v", got)
	}
	if got := m.exec("RPOP", "l", "5"); !reflect.DeepEqual(got, reply.Array(reply.BulkString("b"), reply.BulkString("a"))) {
		t.Errorf("RPOP l 5 = %+v", got)
	}
}

// A SETBIT that sets a bit to what it is, inside the string, changes
// nothing, as in Redis: no event, no tracking change, and a WATCH of the
// key still holds; one that flips it, or grows the string, changes it.
func TestSetBitUnchanged(t *testing.T) {
	r := newNotifyRig(t, "AKEn")
	r.exec("SET", "k", "@") // 01000000
	watch := Watch{Key: "k", Index: r.s.WatchIndex()}
	got := r.exec("SETBIT", "k", "1", "1")
	if !reflect.DeepEqual(got.Reply, reply.Int(1)) || len(got.Messages) != 0 || got.Changes == nil || len(got.Changes.Keys) != 0 {
		t.Errorf("SETBIT to the bit's value: %+v, messages %v, changes %+v", got.Reply, got.Messages, got.Changes)
	}
	multi := func() reply.Value {
		return r.apply(Entry{Op: OpMulti, Watches: []Watch{watch}, Cmds: [][]string{{"GET", "k"}}}).Reply
	}
	if got := multi(); got.Kind != reply.KindArray {
		t.Errorf("EXEC watching k after a SETBIT that changed nothing = %+v", got)
	}
	got = r.exec("SETBIT", "k", "2", "1")
	if !reflect.DeepEqual(got.Reply, reply.Int(0)) || !reflect.DeepEqual(got.Messages, events("setbit:k")) ||
		got.Changes == nil || !reflect.DeepEqual(got.Changes.Keys, []string{"k"}) {
		t.Errorf("SETBIT that flips: %+v, messages %v, changes %+v", got.Reply, got.Messages, got.Changes)
	}
	if got := multi(); got.Kind != reply.KindNullArray {
		t.Errorf("EXEC watching k after a SETBIT that changed it = %+v", got)
	}
	// Setting a 0 past the end grows the string: a change.
	if got := r.exec("SETBIT", "k", "100", "0"); !reflect.DeepEqual(got.Messages, events("setbit:k")) {
		t.Errorf("SETBIT 0 past the end: messages %v", got.Messages)
	}
}

// The events of SETBIT, RPOP and HMSET, as Redis 7.0.15 raises them
// (bitops.c, t_list.c's listPopRangeAndReplyWithKey, t_hash.c's
// hsetCommand).
func TestBitsNotifyEvents(t *testing.T) {
	for _, tc := range []struct {
		setup [][]string
		cmd   []string
		want  string
	}{
		{nil, []string{"SETBIT", "k", "7", "1"}, "new:k setbit:k"},
		{nil, []string{"SETBIT", "k", "7", "0"}, "new:k setbit:k"},
		{[][]string{{"SET", "k", "v"}}, []string{"SETBIT", "k", "0", "1"}, "setbit:k"},
		{[][]string{{"RPUSH", "k", "a"}}, []string{"SETBIT", "k", "0", "1"}, ""},
		{[][]string{{"RPUSH", "l", "a", "b"}}, []string{"RPOP", "l"}, "rpop:l"},
		{[][]string{{"RPUSH", "l", "a"}}, []string{"RPOP", "l"}, "rpop:l del:l"},
		{[][]string{{"RPUSH", "l", "a", "b"}}, []string{"RPOP", "l", "5"}, "rpop:l del:l"},
		{[][]string{{"RPUSH", "l", "a"}}, []string{"RPOP", "l", "0"}, ""},
		{nil, []string{"RPOP", "l"}, ""},
		{nil, []string{"HMSET", "h", "a", "1", "b", "2"}, "new:h hset:h"},
		{[][]string{{"HSET", "h", "a", "1"}}, []string{"HMSET", "h", "a", "2"}, "hset:h"},
		{[][]string{{"SET", "h", "v"}}, []string{"HMSET", "h", "a", "1"}, ""},
	} {
		r := newNotifyRig(t, "AKEn")
		for _, args := range tc.setup {
			r.exec(args...)
		}
		got := r.exec(tc.cmd...)
		if want := events(tc.want); !reflect.DeepEqual(got.Messages, want) {
			t.Errorf("%q after %q (reply %v):\n got  %v\n want %v", tc.cmd, tc.setup, got.Reply, got.Messages, want)
		}
	}
}

// LCS's table is bounded: two strings of 1,023 bytes are compared (a
// table of exactly MaxRecord), one more byte on each is refused with
// Redis's error, on every replica alike.
func TestLCSBound(t *testing.T) {
	a := v3(t)
	x, y := strings.Repeat("ab", 511)+"a", strings.Repeat("ba", 511)+"b"
	a.exec("SET", "x", x)
	a.exec("SET", "y", y)
	if got := a.s.Exec([]string{"LCS", "x", "y", "LEN"}, 1000); !reflect.DeepEqual(got, reply.Int(1022)) {
		t.Errorf("LCS of two 1,023-byte strings = %+v, want 1022", got)
	}
	a.exec("APPEND", "x", "a")
	a.exec("APPEND", "y", "a")
	if got := a.s.Exec([]string{"LCS", "x", "y"}, 1000); !reflect.DeepEqual(got, errLCSMemory) {
		t.Errorf("LCS of two 1,024-byte strings = %+v, want %+v", got, errLCSMemory)
	}
	// One long string against a short one fits as long as the table does.
	a.exec("SET", "long", strings.Repeat("z", 100_000))
	a.exec("SET", "short", "az")
	if got := a.s.Exec([]string{"LCS", "long", "short"}, 1000); !reflect.DeepEqual(got, reply.BulkString("z")) {
		t.Errorf("LCS of 100,000 bytes and 2 = %+v", got)
	}
}
