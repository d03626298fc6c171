package lockstate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// newMemTestAt is newMemTest at cluster version v.
func newMemTestAt(t *testing.T, v int64) *memTest {
	m := newMemTest(t)
	m.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	if v > 1 {
		m.apply(Entry{Op: OpSetVersion, Version: v})
	}
	return m
}

// isScriptOOM: a script stopped by -OOM (its error carries the script's
// position after Redis's text).
func isScriptOOM(v reply.Value) bool {
	return v.Kind == reply.KindError && strings.HasPrefix(v.Str, "OOM command not allowed when used memory > 'maxmemory'.")
}

const (
	allowOOMSet = "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], ARGV[1])"
	plainSet    = "return redis.call('SET', KEYS[1], ARGV[1])"
)

// TestAllowOOMHeadroomAtTheLimit: an allow-oom script's write whose growth
// lands exactly on MaxMemory + AllowOOMHeadroom is applied; one byte more
// and it is refused, changing nothing. At either limit, the same write from
// a script without the flag, or sent alone, is refused: the headroom is
// the flag's.
func TestAllowOOMHeadroomAtTheLimit(t *testing.T) {
	m := newMemTestAt(t, 3)
	// Over the headroom already, so that a limit below Used is positive.
	m.exec("SET", "fill", strings.Repeat("f", 2*AllowOOMHeadroom))
	sha := m.exec("SCRIPT", "LOAD", allowOOMSet).Str
	plain := m.exec("SCRIPT", "LOAD", plainSet).Str
	value := strings.Repeat("v", 1000)
	// What the script's SET is charged: its arguments, and a record.
	need := int64(32+len("key")+16+len(value)+16) + recordOverhead
	if got := argBytes([][]byte{[]byte("SET"), []byte("key"), []byte(value)}) + recordOverhead; got != need {
		t.Fatalf("the test's charge %d is not the state's %d", need, got)
	}

	m.limit = m.s.Used() + need - AllowOOMHeadroom - 1
	before := m.records()
	if v := m.exec("EVALSHA", sha, "1", "key", value); !isScriptOOM(v) {
		t.Fatalf("one byte past the headroom: %+v", v)
	}
	if m.records() != before {
		t.Fatal("a refused allow-oom write changed the records")
	}
	m.limit++
	for _, args := range [][]string{{"EVALSHA", plain, "1", "key", value}, {"SET", "key", value}} {
		if v := m.exec(args...); !isScriptOOM(v) {
			t.Fatalf("%s without allow-oom, past maxmemory: %+v", args[0], v)
		}
	}
	if m.records() != before {
		t.Fatal("a refused write changed the records")
	}
	if v := m.exec("EVALSHA", sha, "1", "key", value); v.Kind != reply.KindSimpleString || v.Str != "OK" {
		t.Fatalf("at the headroom's end: %+v", v)
	}
	if m.s.Used() <= m.limit || m.s.Used() > m.limit+AllowOOMHeadroom {
		t.Fatalf("used %d, want past maxmemory %d and within its headroom", m.s.Used(), m.limit)
	}
}

// TestAllowOOMHeadroomBounds: scripts and functions with allow-oom write
// past a full state until the headroom is spent, and never past it; a
// no-writes script and a script without a shebang still read; a script
// with flags but neither allow-oom nor no-writes does not run at all.
func TestAllowOOMHeadroomBounds(t *testing.T) {
	m := newMemTestAt(t, 3)
	sha := m.exec("SCRIPT", "LOAD", allowOOMSet).Str
	lib := "#!lua name=oom\nredis.register_function{function_name='fset', flags={'allow-oom'}, callback=function(keys, args) return redis.call('SET', keys[1], args[1]) end}"
	if v := m.exec("FUNCTION", "LOAD", lib); v.Str != "oom" {
		t.Fatal(v)
	}
	flagged := "#!lua\nreturn 1"
	m.exec("SCRIPT", "LOAD", flagged)
	m.exec("SET", "x", "123")
	m.limit = m.s.Used()

	value := strings.Repeat("v", 100_000)
	written := 0
	for i := 0; ; i++ {
		args := []string{"EVALSHA", sha, "1", fmt.Sprint("k", i), value}
		if i%2 == 1 {
			args = []string{"FCALL", "fset", "1", fmt.Sprint("k", i), value}
		}
		before := m.records()
		v := m.exec(args...)
		if isScriptOOM(v) {
			if m.records() != before {
				t.Fatal("a refused write changed the records")
			}
			break
		}
		if v.Kind != reply.KindSimpleString || v.Str != "OK" {
			t.Fatalf("%s: %+v", args[0], v)
		}
		written++
		if m.s.Used() > m.limit+AllowOOMHeadroom {
			t.Fatalf("used %d past maxmemory %d + the headroom", m.s.Used(), m.limit)
		}
	}
	// 1 MiB holds ten writes of 100 KB, not eleven.
	if written != 10 {
		t.Fatalf("%d writes of 100 KB admitted into 1 MiB of headroom, want 10", written)
	}
	if v := m.s.Exec([]string{"GET", "x"}, 10); v.Str != "123" {
		t.Fatal(v)
	}
	for _, src := range []string{"#!lua flags=no-writes\nreturn redis.call('GET', 'x')", "return redis.call('GET', 'x')"} {
		if v := m.exec("EVAL", src, "0"); v.Str != "123" {
			t.Fatalf("%q on a full state: %+v", src, v)
		}
	}
	if v := m.exec("EVALSHA", script.SHA1(flagged), "0"); !isOOM(v) {
		t.Fatalf("flags without allow-oom on a full state: %+v", v)
	}
}

// TestEvalCachesInHeadroom: EVAL caches a new script on a full state
// (Redis's EVAL is not denyoom), within the headroom only; SCRIPT LOAD
// does not take the headroom; before cluster version 3 neither does EVAL.
func TestEvalCachesInHeadroom(t *testing.T) {
	m := newMemTestAt(t, 3)
	m.exec("SET", "fill", strings.Repeat("f", 2*AllowOOMHeadroom))
	m.exec("SET", "x", "1")
	m.limit = m.s.Used()
	if v := m.exec("EVAL", "return redis.call('GET', 'x')", "0"); v.Str != "1" {
		t.Fatalf("a new read script on a full state: %+v", v)
	}
	if v := m.exec("SCRIPT", "LOAD", "return 2"); !isOOM(v) {
		t.Fatalf("SCRIPT LOAD on a full state: %+v", v)
	}
	// The headroom spent: a new script is refused, a cached one runs.
	m.limit = m.s.Used() - AllowOOMHeadroom
	if v := m.exec("EVAL", "return redis.call('GET', 'x')", "0"); v.Str != "1" {
		t.Fatalf("a cached read script past the headroom: %+v", v)
	}
	big := "return 3"
	if v := m.exec("EVAL", big, "0"); !isOOM(v) {
		t.Fatalf("a new script past the headroom: %+v", v)
	}
	if m.s.scripts[script.SHA1(big)] != nil {
		t.Fatal("a refused EVAL cached its script")
	}

	old := newMemTestAt(t, 2)
	old.exec("SET", "x", "1")
	old.limit = old.s.Used()
	if v := old.exec("EVAL", "return redis.call('GET', 'x')", "0"); !isOOM(v) {
		t.Fatalf("a new script on a full state at version 2: %+v", v)
	}
}
