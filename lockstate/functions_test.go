package lockstate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"

	"github.com/fenced/fenced/reply"
)

// Redis 7's Functions in the state machine (functions.go). The replies'
// texts are checked against redis-server by test/diff_functions_test.go;
// these tests check what only the state shows: records, reloads, memory,
// determinism, and RESTORE's untrusted payloads.

const fnLib1 = "#!lua name=lib1\nlocal function add1(a) return a + 1 end\n" +
	"redis.register_function('f1', function(keys, args) return add1(1) end)\n" +
	"redis.register_function{function_name='get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}\n" +
	"redis.register_function('set', function(keys, args) return redis.call('set', keys[1], args[1]) end)"

const fnLib2 = "#!lua name=lib2\nredis.register_function('f2', function() return math.random(1000) .. tostring({}) end)"

// libraries is every library's name, code and functions as FUNCTION LIST
// WITHCODE answers them.
func libraries(s *State) string {
	return fmt.Sprint(s.FunctionRead([]string{"FUNCTION", "LIST", "WITHCODE"}))
}

// A dump restores to the same libraries, on the same state after FLUSH and
// on another state; the records it makes are the ones LOAD made.
func TestFunctionDumpRestore(t *testing.T) {
	a := newExecCheckAt(3)
	wantReply(t, "load 1", a.exec(t, "FUNCTION", "LOAD", fnLib1), reply.BulkString("lib1"))
	wantReply(t, "load 2", a.exec(t, "FUNCTION", "LOAD", fnLib2), reply.BulkString("lib2"))
	dump := a.s.FunctionRead([]string{"FUNCTION", "DUMP"})
	if dump.Kind != reply.KindBulk {
		t.Fatalf("DUMP = %v", dump)
	}
	list := libraries(a.s)

	b := newExecCheckAt(3)
	wantReply(t, "restore", b.exec(t, "FUNCTION", "RESTORE", dump.Str), reply.OK())
	if got := libraries(b.s); got != list {
		t.Errorf("restored libraries\n %s\nwant %s", got, list)
	}
	wantReply(t, "restore again", b.exec(t, "FUNCTION", "RESTORE", dump.Str), reply.Error("ERR Library lib1 already exists"))
	wantReply(t, "restore replace", b.exec(t, "FUNCTION", "RESTORE", dump.Str, "REPLACE"), reply.OK())
	wantReply(t, "fcall after restore", b.exec(t, "FCALL", "f1", "0"), reply.Int(2))

	wantReply(t, "flush", a.exec(t, "FUNCTION", "FLUSH"), reply.OK())
	if len(a.s.libs) != 0 || len(a.s.fnIndex) != 0 {
		t.Errorf("after FLUSH: %s", libraries(a.s))
	}
	wantReply(t, "restore flush", a.exec(t, "FUNCTION", "RESTORE", dump.Str, "FLUSH"), reply.OK())
	var ra, rb []string
	for _, c := range []struct {
		s   *State
		out *[]string
	}{{a.s, &ra}, {b.s, &rb}} {
		_ = c.s.Records(func(k, v []byte) error {
			if bytes.HasPrefix(k, []byte(prefixLibrary)) {
				*c.out = append(*c.out, fmt.Sprintf("%q=%x", k, v))
			}
			return nil
		})
	}
	if len(ra) != 2 || !slices.Equal(ra, rb) {
		t.Errorf("library records differ:\n %q\n %q", ra, rb)
	}
}

// A payload is checked whole before anything changes: its magic, version,
// checksum, lengths, and then every library as LOAD checks it.
func TestFunctionRestoreRefuses(t *testing.T) {
	c := newExecCheckAt(3)
	c.exec(t, "FUNCTION", "LOAD", fnLib1)
	before := libraries(c.s)
	good := []byte(c.s.FunctionRead([]string{"FUNCTION", "DUMP"}).Str)
	payload := func(codes ...string) string {
		b := append([]byte(dumpMagic), dumpVersion)
		b = binary.AppendUvarint(b, uint64(len(codes)))
		for _, code := range codes {
			b = binary.AppendUvarint(b, uint64(len(code)))
			b = append(b, code...)
		}
		return string(binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable)))
	}
	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 1
	for _, c2 := range []struct{ payload, want string }{
		{"", "ERR DUMP payload version or checksum are wrong"},
		{string(flip), "ERR DUMP payload version or checksum are wrong"},
		{string(good[:len(good)-1]), "ERR DUMP payload version or checksum are wrong"},
		{"FNCD\x02" + string(good[5:]), "ERR DUMP payload version or checksum are wrong"},
		{payload("#!lua name=x\nredis.register_function('g', function() end)") + "x", "ERR DUMP payload version or checksum are wrong"},
		{payload("return 1"), "ERR Missing library metadata"},
		{payload("#!lua name=x\nlocal a = 1"), "ERR No functions registered"},
		{payload("#!lua name=x\nwhile 1 do end"), "ERR Error registering functions: ERR FUNCTION LOAD timeout"},
		{payload("#!lua name=x\nredis.register_function('g', function() end)", "#!lua name=x\nredis.register_function('h', function() end)"), "ERR Library 'x' already exists"},
		{payload("#!lua name=x\nredis.register_function('g', function() end)", "#!lua name=y\nredis.register_function('G', function() end)"), "ERR Function G already exists"},
		{payload("#!lua name=x\nredis.register_function('f1', function() end)"), "ERR Function f1 already exists"},
		// Ten libraries that each loop for a third of the budget: together
		// past the one budget a RESTORE has.
		{payload(loopers(10)...), "ERR Error registering functions: ERR FUNCTION LOAD timeout"},
	} {
		wantReply(t, fmt.Sprintf("RESTORE %q", c2.payload[:min(len(c2.payload), 40)]), c.exec(t, "FUNCTION", "RESTORE", c2.payload), reply.Error(c2.want))
	}
	if got := libraries(c.s); got != before {
		t.Errorf("a refused RESTORE changed the libraries: %s", got)
	}
	wantReply(t, "one looper", c.exec(t, "FUNCTION", "RESTORE", payload(loopers(1)...)), reply.OK())
}

func loopers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("#!lua name=loop%d\nfor i = 1, 1500000 do end\nredis.register_function('loop%d', function() return 1 end)", i, i)
	}
	return out
}

// Libraries are counted by --maxmemory's accounting: a full state refuses
// LOAD and RESTORE and writing functions, but runs no-writes and
// allow-oom ones, and DELETE and FLUSH make room.
func TestFunctionsMaxMemory(t *testing.T) {
	m := newMemTest(t)
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	m.apply(Entry{Op: OpSetVersion, Version: 3})
	used := m.s.Used()
	if v := m.exec("FUNCTION", "LOAD", fnLib1); v.Str != "lib1" {
		t.Fatalf("LOAD = %v", v)
	}
	grown := m.s.Used() - used
	if grown < int64(len(fnLib1)) || grown > int64(len(fnLib1))+300 {
		t.Errorf("a library of %d bytes grew Used by %d", len(fnLib1), grown)
	}
	m.exec("SET", "k", "v")
	m.limit = m.s.Used()
	before := m.records()
	for _, args := range [][]string{
		{"FUNCTION", "LOAD", fnLib2},
		{"FUNCTION", "LOAD", "REPLACE", fnLib1},
		{"FUNCTION", "RESTORE", "whatever"},
		{"FCALL", "set", "1", "k", "w"},
		{"FCALL", "f1", "0"}, // writes nothing, but says it may
	} {
		if v := m.exec(args...); !isOOM(v) {
			t.Errorf("%q at maxmemory = %v, want OOM", args[:2], v)
		}
	}
	if m.records() != before {
		t.Error("refused commands changed the records")
	}
	if v := m.exec("FCALL", "get", "1", "k"); v.Str != "v" {
		t.Errorf("a no-writes function at maxmemory = %v", v)
	}
	if v := m.exec("FUNCTION", "DELETE", "lib1"); v.Kind != reply.KindSimpleString {
		t.Errorf("DELETE at maxmemory = %v", v)
	}
	if m.s.Used() > m.limit-grown+100 {
		t.Errorf("DELETE left Used at %d (limit %d, the library counted %d)", m.s.Used(), m.limit, grown)
	}
}

// TestFunctionsDeterminism: two fresh States applying the same entries
// (loads, calls that draw math.random, name tables, write, fail, delete,
// restore) answer, write and hash alike, and a third rebuilt from the
// first's records midway keeps in step.
func TestFunctionsDeterminism(t *testing.T) {
	seq := [][]string{
		{"FUNCTION", "LOAD", fnLib1}, {"FUNCTION", "LOAD", fnLib2},
		{"FCALL", "f2", "0"}, {"FCALL", "set", "1", "k", "v"}, {"FCALL", "get", "1", "k"},
		{"FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('t', function() local t = {} for i = 1, 100 do t['k' .. i] = i end local o = {} for k in pairs(t) do o[#o + 1] = k end return o end)"},
		{"FCALL", "t", "0"}, {"FCALL", "f2", "0"}, {"FCALL", "nope", "0"},
		{"FUNCTION", "LOAD", "#!lua name=bad\nwhile 1 do end"},
		{"FUNCTION", "DELETE", "lib2"}, {"FCALL", "f2", "0"},
		{"FUNCTION", "LOAD", fnLib2}, {"FCALL", "f2", "0"}, {"FUNCTION", "FLUSH"}, {"FCALL", "f1", "0"},
	}
	a, b := newExecCheckAt(3), newExecCheckAt(3)
	var c *execCheck
	for i, args := range seq {
		ra, rb := a.exec(t, args...), b.exec(t, args...)
		if !reflect.DeepEqual(ra, rb) || a.s.Hash() != b.s.Hash() || !reflect.DeepEqual(a.w.m, b.w.m) {
			t.Fatalf("step %d %q: %v vs %v", i, args, ra, rb)
		}
		if c != nil {
			if rc := c.exec(t, args...); !reflect.DeepEqual(ra, rc) || c.s.Hash() != a.s.Hash() {
				t.Fatalf("step %d %q: reloaded state answers %v, want %v", i, args, rc, ra)
			}
		}
		if i == 6 {
			s, err := reload(a.s)
			if err != nil {
				t.Fatal(err)
			}
			w := newMemWriter()
			for k, v := range a.w.m {
				w.m[k] = bytes.Clone(v)
			}
			c = &execCheck{s: s, w: w, index: a.index, time: a.time}
			if s.Hash() != a.s.Hash() {
				t.Fatal("the reloaded state hashes differently")
			}
		}
	}
}

// FuzzFunctionRestore: no payload makes RESTORE panic or change the state
// unless it answers OK; a payload that restores is one a DUMP reproduces.
func FuzzFunctionRestore(f *testing.F) {
	c := newExecCheckAt(3)
	if r, err := c.apply(Entry{Op: OpExec, Args: []string{"FUNCTION", "LOAD", fnLib1}}); err != nil || r.Reply.Kind != reply.KindBulk {
		f.Fatalf("LOAD = %v %v", r.Reply, err)
	}
	good := c.s.FunctionRead([]string{"FUNCTION", "DUMP"}).Str
	f.Add([]byte(good), uint8(0))
	f.Add([]byte("FNCD\x01\x00"), uint8(1))
	f.Add([]byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, payload []byte, policy uint8) {
		s := newExecCheckAt(3)
		s.exec(t, "FUNCTION", "LOAD", "#!lua name=lib0\nredis.register_function('f0', function() return 0 end)")
		before := libraries(s.s)
		args := []string{"FUNCTION", "RESTORE", string(payload)}
		if p := []string{"", "FLUSH", "APPEND", "REPLACE"}[policy%4]; p != "" {
			args = append(args, p)
		}
		v := s.exec(t, args...)
		if v.Kind != reply.KindSimpleString {
			if v.Kind != reply.KindError {
				t.Fatalf("RESTORE answered %v", v)
			}
			if libraries(s.s) != before {
				t.Fatalf("a refused RESTORE (%v) changed the libraries", v)
			}
			return
		}
		// What was restored dumps and restores again to the same.
		dump := s.s.FunctionRead([]string{"FUNCTION", "DUMP"}).Str
		list := libraries(s.s)
		o := newExecCheckAt(3)
		if v := o.exec(t, "FUNCTION", "RESTORE", dump); v.Kind != reply.KindSimpleString {
			t.Fatalf("restoring a dump: %v", v)
		}
		if libraries(o.s) != list {
			t.Fatalf("dump round trip:\n %s\n %s", libraries(o.s), list)
		}
		if _, err := reload(s.s); err != nil {
			t.Fatalf("the restored state does not reload: %v", err)
		}
	})
}

// FuzzFunctionLoad: any code loads or is refused without a panic, the same
// on two States, and a library that loads reloads from its record and
// answers FCALL of each of its functions alike on both.
func FuzzFunctionLoad(f *testing.F) {
	for _, seed := range []string{fnLib1, fnLib2, "#!lua name=x\n", "return 1", "#!lua name=x\nredis.register_function{function_name='a', callback=function(k, a) return {k, a} end, flags={'no-writes'}}",
		"#!lua name=x\nlocal r = redis.register_function\nfor i = 1, 10 do r('f' .. i, function() return i end) end",
		"#!lua name=\"x y\" flags=no-writes\n", "#!lua name=x\nredis.register_function('a', redis.log)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		a, b := newExecCheckAt(3), newExecCheckAt(3)
		ra, rb := a.exec(t, "FUNCTION", "LOAD", code), b.exec(t, "FUNCTION", "LOAD", code)
		if !reflect.DeepEqual(ra, rb) || a.s.Hash() != b.s.Hash() {
			t.Fatalf("two states: %v vs %v", ra, rb)
		}
		if ra.Kind != reply.KindBulk {
			return
		}
		s, err := reload(a.s)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		for _, lib := range s.libs {
			for _, fn := range lib.funcs {
				x, y := a.exec(t, "FCALL", fn.Name, "1", "k", "v"), b.exec(t, "FCALL", fn.Name, "1", "k", "v")
				if !reflect.DeepEqual(x, y) || a.s.Hash() != b.s.Hash() {
					t.Fatalf("FCALL %s: %v vs %v", fn.Name, x, y)
				}
			}
		}
	})
}

// Every command a script may call runs from a function too, RANDOMKEY
// among them (Redis's suite: "Scripts can run non-deterministic
// commands"): a function's environment once lacked RANDOMKEY's draw
// counter, and the FCALL panicked the state machine, on every replica.
func TestFunctionCallsRandomKey(t *testing.T) {
	a := newApplier(t)
	a.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	a.apply(Entry{Op: OpSetVersion, Version: 3})
	a.apply(Entry{Op: OpExec, Args: []string{"SET", "k", "v"}})
	lib := "#!lua name=rk\nredis.register_function('rk', function() redis.pcall('randomkey') return redis.call('randomkey') end)"
	if r := a.apply(Entry{Op: OpExec, Args: []string{"FUNCTION", "LOAD", lib}}); r.Reply.IsError() {
		t.Fatalf("FUNCTION LOAD: %v", r.Reply)
	}
	r := a.apply(Entry{Op: OpExec, Args: []string{"FCALL", "rk", "0"}})
	if r.Reply.Kind != reply.KindBulk || r.Reply.Str != "k" {
		t.Fatalf("FCALL rk = %+v, want the one key", r.Reply)
	}
}
