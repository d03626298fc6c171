package lockstate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// Redis 7's script libraries, shebang flags and EVAL_RO/EVALSHA_RO, which
// cluster version 3 brings.

// newExecCheckAt is newExecCheck at cluster version v.
func newExecCheckAt(v int64) *execCheck {
	c := &execCheck{s: New(Config{}), w: newMemWriter()}
	c.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	if v > 1 {
		c.apply(Entry{Op: OpSetVersion, Version: v})
	}
	return c
}

func errSuffix(src, line string) string {
	return " script: " + script.SHA1(src) + ", on @user_script:" + line + "."
}

// At versions 1 and 2 a script sees exactly the environment of the
// releases before: no libraries, the old shebang check, flags that mean
// nothing, no EVAL_RO; at 3 all of them. A replica on an older binary
// answers the first way, so the switch must happen at one log index.
func TestScriptLibsVersionGate(t *testing.T) {
	const (
		libs     = "return {type(cjson), type(cmsgpack), type(bit), type(struct)}"
		noWrites = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')"
		quoted   = "#!lua flags=\"no-writes\"\nreturn 1"
		roWrite  = "return redis.call('set', KEYS[1], 'v')"
	)
	missing := reply.Error("ERR user_script:1: Script attempted to access nonexistent global variable 'cjson'" + errSuffix(libs, "1"))
	for _, v := range []int64{1, 2} {
		c := newExecCheckAt(v)
		wantReply(t, "libs", c.exec(t, "EVAL", libs, "0"), missing)
		wantReply(t, "no-writes", c.exec(t, "EVAL", noWrites, "1", "k"), reply.OK())
		wantReply(t, "quoted flag", c.exec(t, "EVAL", quoted, "0"), reply.Error(`ERR Unexpected flag in script shebang: "no-writes"`))
		wantReply(t, "EVAL_RO", c.exec(t, "EVAL_RO", roWrite, "1", "k"),
			reply.Error("ERR unknown command 'EVAL_RO', with args beginning with: '"+roWrite+"' '1' 'k' "))
		if got, ok := c.s.EvalRO([]string{"EVALSHA_RO", script.SHA1(libs), "0"}, "", 1); !ok || !got.IsError() || !strings.HasPrefix(got.Str, "ERR unknown command 'EVALSHA_RO'") {
			t.Errorf("v%d EvalRO = %v %v", v, got, ok)
		}
	}
	c := newExecCheckAt(3)
	t4 := reply.BulkString("table")
	wantReply(t, "libs at 3", c.exec(t, "EVAL", libs, "0"), reply.Array(t4, t4, t4, t4))
	wantReply(t, "no-writes at 3", c.exec(t, "EVAL", noWrites, "1", "k2"),
		reply.Error("ERR Write commands are not allowed from read-only scripts."+errSuffix(noWrites, "2")))
	wantReply(t, "quoted flag at 3", c.exec(t, "EVAL", quoted, "0"), reply.Int(1))
	wantReply(t, "EVAL_RO at 3", c.exec(t, "EVAL_RO", roWrite, "1", "k"),
		reply.Error("ERR Write commands are not allowed from read-only scripts."+errSuffix(roWrite, "1")))
	if got := c.s.Exec([]string{"EXISTS", "k2"}, 1); !reflect.DeepEqual(got, reply.Int(0)) {
		t.Errorf("the refused write happened: EXISTS k2 = %v", got)
	}
}

// The flags at version 3, as Redis 7 applies them.
func TestScriptFlags(t *testing.T) {
	c := newExecCheckAt(3)
	get := "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
	wantReply(t, "set", c.exec(t, "SET", "k", "v"), reply.OK())
	wantReply(t, "no-writes read", c.exec(t, "EVAL", get, "1", "k"), reply.BulkString("v"))
	pcall := "#!lua flags=no-writes\nreturn redis.pcall('del', KEYS[1])"
	wantReply(t, "no-writes pcall", c.exec(t, "EVAL", pcall, "1", "k"), reply.Error("ERR Write commands are not allowed from read-only scripts."))
	pub := "#!lua flags=no-writes\nreturn redis.pcall('publish', 'ch', 'm')"
	wantReply(t, "no-writes publish", c.exec(t, "EVAL", pub, "0"), reply.Error("ERR Write commands are not allowed from read-only scripts."))
	// Without a shebang a script may write (legacy EVAL).
	wantReply(t, "legacy", c.exec(t, "EVAL", "return redis.call('set', KEYS[1], 'w')", "1", "k"), reply.OK())
	// EVAL_RO refuses a shebang without no-writes before running it.
	wr := "#!lua\nreturn 1"
	wantReply(t, "ro write flag", c.exec(t, "EVAL_RO", wr, "0"), reply.Error("ERR Can not execute a script with write flag using *_ro command."))
	wantReply(t, "ro no-writes", c.exec(t, "EVAL_RO", "#!lua flags=no-writes\nreturn 2", "0"), reply.Int(2))
	for src, want := range map[string]string{
		"#!lua name=x\nreturn 1":            "ERR Unknown lua shebang option: name=x",
		"#!lua flags=no-writes,bad\nreturn": "ERR Unexpected flag in script shebang: bad",
		"#!py\nreturn 1":                    "ERR Unexpected engine in script shebang: #!py",
		"#!lua flags=\"x\nreturn 1":         "ERR Invalid engine in script shebang",
		"#!lua":                             "ERR Invalid script shebang",
	} {
		wantReply(t, src, c.exec(t, "EVAL", src, "0"), reply.Error(want))
		wantReply(t, src+" LOAD", c.exec(t, "SCRIPT", "LOAD", src), reply.Error(want))
	}
	// Blocking commands are refused inside a script, as Redis 7 does.
	wantReply(t, "blpop", c.exec(t, "EVAL", "return redis.pcall('blpop', 'l', '0')", "0"), reply.Error(script.ErrNotAllowed))
	wantReply(t, "flock", c.exec(t, "EVAL", "return redis.pcall('flock', 'l', 's', 'WAIT', '0')", "0"), reply.Error(script.ErrNotAllowed))
	wantReply(t, "eval_ro inside", c.exec(t, "EVAL", "return redis.pcall('eval_ro', 'return 1', '0')", "0"), reply.Error(script.ErrNotAllowed))
}

// A script that declares flags without allow-oom does not run while the
// state is full (Redis's denyoom for it); no-writes or allow-oom, or no
// shebang at all, run.
func TestScriptFlagsOOM(t *testing.T) {
	c := newExecCheckAt(3)
	big := strings.Repeat("x", 4000)
	r, err := c.apply(Entry{Op: OpExec, Args: []string{"SET", "big", big}, MaxMemory: 1 << 20})
	if err != nil || !reflect.DeepEqual(r.Reply, reply.OK()) {
		t.Fatal(r, err)
	}
	full := c.s.used // a maxmemory the state is already at
	ev := func(src string) reply.Value {
		r, err := c.apply(Entry{Op: OpExec, Args: []string{"EVAL", src, "0"}, MaxMemory: full})
		if err != nil {
			t.Fatal(err)
		}
		return r.Reply
	}
	// Cache them first (caching takes room).
	srcs := []string{"#!lua\nreturn 1", "#!lua flags=allow-oom\nreturn 2", "#!lua flags=no-writes\nreturn 3", "return 4"}
	for _, s := range srcs {
		wantReply(t, "LOAD", c.exec(t, "SCRIPT", "LOAD", s), reply.BulkString(script.SHA1(s)))
	}
	wantReply(t, "shebang, full", ev(srcs[0]), errOOM)
	wantReply(t, "allow-oom, full", ev(srcs[1]), reply.Int(2))
	wantReply(t, "no-writes, full", ev(srcs[2]), reply.Int(3))
	wantReply(t, "legacy, full", ev(srcs[3]), reply.Int(4))
}

// EVAL_RO and EVALSHA_RO served outside the log (State.EvalRO): the same
// reply as through the log, nothing changed, the caller's user, and an
// uncached EVAL_RO handed back to go through the log.
func TestEvalROOutsideLog(t *testing.T) {
	c := newExecCheckAt(3)
	wantReply(t, "set", c.exec(t, "SET", "k", "v"), reply.OK())
	src := "return {redis.call('get', KEYS[1]), cjson.encode({ARGV[1]}), redis.pcall('del', KEYS[1])}"
	if _, ok := c.s.EvalRO([]string{"EVAL_RO", src, "1", "k", "a"}, "", 1); ok {
		t.Fatal("an uncached EVAL_RO ran outside the log")
	}
	viaLog := c.exec(t, "EVAL_RO", src, "1", "k", "a")
	want := reply.Array(reply.BulkString("v"), reply.BulkString(`["a"]`), reply.Error("ERR Write commands are not allowed from read-only scripts."))
	wantReply(t, "EVAL_RO via the log", viaLog, want)
	if c.s.scripts[script.SHA1(src)] == nil {
		t.Fatal("EVAL_RO through the log did not cache its script")
	}
	before := c.s.Hash()
	for _, args := range [][]string{{"EVAL_RO", src, "1", "k", "a"}, {"EVALSHA_RO", script.SHA1(src), "1", "k", "a"}, {"evalsha_ro", strings.ToUpper(script.SHA1(src)), "1", "k", "a"}} {
		got, ok := c.s.EvalRO(args, "", c.time)
		if !ok {
			t.Fatalf("%q: not run", args[0])
		}
		wantReply(t, args[0], got, want)
	}
	if c.s.Hash() != before {
		t.Fatal("EvalRO changed the state")
	}
	got, _ := c.s.EvalRO([]string{"EVALSHA_RO", strings.Repeat("0", 40), "0"}, "", 1)
	wantReply(t, "unknown sha", got, errNoScript)
	got, _ = c.s.EvalRO([]string{"EVALSHA_RO", "x", "-1"}, "", 1)
	wantReply(t, "bad numkeys", got, reply.Error("ERR Number of keys can't be negative"))
	// The caller's ACL user, not the last entry's.
	c.apply(Entry{Op: OpACLSetUser, Args: []string{"ro", "on", "nopass", "~*", "+@all", "-get"}})
	got, _ = c.s.EvalRO([]string{"EVALSHA_RO", script.SHA1(src), "1", "k", "a"}, "ro", 1)
	if !got.IsError() || !strings.Contains(got.Str, "NOPERM") {
		t.Errorf("EVALSHA_RO as a user without GET = %v", got)
	}
}

// Two replicas running the same scripts with the new libraries answer and
// change alike, however Go orders its maps.
func TestScriptLibsDeterminism(t *testing.T) {
	srcs := []string{
		"local t = cjson.decode(ARGV[1]) local out = {} for k, v in pairs(t) do out[#out + 1] = k end return out",
		"return cjson.encode(cjson.decode(ARGV[1]))",
		"return cmsgpack.pack(cjson.decode(ARGV[1]))",
		"local t = {} for k, v in pairs(cmsgpack.unpack(cmsgpack.pack(cjson.decode(ARGV[1])))) do t[#t + 1] = tostring(k) end return t",
		"return {bit.bxor(math.random(1000000), 12345), bit.tohex(math.random(1000000))}",
		"return struct.unpack('>d', struct.pack('>d', math.random()))",
		"redis.call('set', KEYS[1], cjson.encode({n = math.random(100), s = ARGV[1]})) return redis.call('get', KEYS[1])",
		"return cjson.encode(string.rep('x', 1e7))",
	}
	arg := `{"a":1,"b":[1,2,{"c":null}],"d":"e","f":true,"g":1.5e300,"h":{"i":{"j":[]}}}`
	a, b := newExecCheckAt(3), newExecCheckAt(3)
	for round := range 3 {
		for _, src := range srcs {
			ra := a.exec(t, "EVAL", src, "1", "k", arg)
			rb := b.exec(t, "EVAL", src, "1", "k", arg)
			if !reflect.DeepEqual(ra, rb) {
				t.Fatalf("round %d %q: %v / %v", round, src, ra, rb)
			}
		}
	}
	if a.s.Hash() != b.s.Hash() {
		t.Fatal("the states differ")
	}
}
