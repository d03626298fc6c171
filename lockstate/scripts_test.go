package lockstate

import (
	"fmt"
	"github.com/fenced/fenced/resp"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// exec applies one OpExec entry at the checker's time and returns its reply.
func (c *execCheck) exec(t *testing.T, args ...string) reply.Value {
	t.Helper()
	r, err := c.apply(Entry{Op: OpExec, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return r.Reply
}

func wantReply(t *testing.T, what string, got, want reply.Value) {
	t.Helper()
	if resp.FromReply(got).String() != resp.FromReply(want).String() {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

const setNX = "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"

func TestScriptCache(t *testing.T) {
	c := newExecCheck()
	sha := script.SHA1(setNX)
	wantReply(t, "EVALSHA unknown", c.exec(t, "EVALSHA", sha, "1", "k", "v", "1000"),
		reply.Error("NOSCRIPT No matching script. Please use EVAL."))
	wantReply(t, "EVAL", c.exec(t, "EVAL", setNX, "1", "k", "v", "1000"), reply.OK())
	// EVAL cached it: EVALSHA finds it, in any case of the hex digits.
	wantReply(t, "EVALSHA", c.exec(t, "EVALSHA", strings.ToUpper(sha), "1", "k", "w", "1000"), reply.Null())
	wantReply(t, "SCRIPT EXISTS", c.exec(t, "SCRIPT", "EXISTS", sha, "0000"),
		reply.Array(reply.Int(1), reply.Int(0)))
	other := "return 2"
	wantReply(t, "SCRIPT LOAD", c.exec(t, "SCRIPT", "LOAD", other), reply.BulkString(script.SHA1(other)))
	wantReply(t, "SCRIPT LOAD bad", c.exec(t, "SCRIPT", "LOAD", "return ("),
		reply.Error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"))
	if n := len(c.s.scripts); n != 2 {
		t.Errorf("%d scripts cached, want 2 (a script that does not compile is not kept)", n)
	}
	// The cache is replicated state: it survives a reload.
	r, err := reload(c.s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.scripts) != 2 || len(r.evalOrder) != 1 {
		t.Errorf("reloaded %d scripts, %d by EVAL", len(r.scripts), len(r.evalOrder))
	}
	wantReply(t, "SCRIPT FLUSH", c.exec(t, "SCRIPT", "FLUSH"), reply.OK())
	wantReply(t, "EVALSHA after FLUSH", c.exec(t, "EVALSHA", sha, "1", "k", "v", "1000"),
		reply.Error("NOSCRIPT No matching script. Please use EVAL."))
	wantReply(t, "SCRIPT KILL", c.exec(t, "SCRIPT", "KILL"), reply.Error("NOTBUSY No scripts in execution right now."))
	wantReply(t, "SCRIPT FLUSH bad", c.exec(t, "SCRIPT", "FLUSH", "NOW"), reply.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"))
	wantReply(t, "numkeys", c.exec(t, "EVAL", "return 1", "2", "k"), reply.Error("ERR Number of keys can't be greater than number of args"))
	wantReply(t, "numkeys", c.exec(t, "EVAL", "return 1", "-1"), reply.Error("ERR Number of keys can't be negative"))
	wantReply(t, "numkeys", c.exec(t, "EVAL", "return 1", "x"), reply.Error("ERR value is not an integer or out of range"))
}

// TestEvalCacheBound: scripts cached by EVAL are at most maxEvalScripts, the
// oldest evicted, in the same order after a reload; LOADed ones stay.
func TestEvalCacheBound(t *testing.T) {
	c := newExecCheck()
	c.exec(t, "SCRIPT", "LOAD", "return 'kept'")
	for i := range maxEvalScripts + 10 {
		c.exec(t, "EVAL", fmt.Sprintf("return %d", i), "0")
		if i == maxEvalScripts/2 {
			r, err := reload(c.s)
			if err != nil {
				t.Fatal(err)
			}
			c.s = r // go on with the reloaded state: its eviction order must match
		}
	}
	if len(c.s.evalOrder) != maxEvalScripts || len(c.s.scripts) != maxEvalScripts+1 {
		t.Fatalf("%d scripts by EVAL, %d in all", len(c.s.evalOrder), len(c.s.scripts))
	}
	exists := func(src string) int64 {
		return c.exec(t, "SCRIPT", "EXISTS", script.SHA1(src)).Elems[0].Int
	}
	if exists("return 9") != 0 || exists("return 10") != 1 || exists("return 'kept'") != 1 {
		t.Errorf("evicted the wrong scripts: 'return 9' %d, 'return 10' %d, LOADed %d",
			exists("return 9"), exists("return 10"), exists("return 'kept'"))
	}
}

// TestScriptSeesFrozenTimeAndIndexSeed: redis.call('TIME') is the entry's
// time however long the script runs, and math.random is seeded by the
// entry's index, so a replica applying the same entry gets the same reply.
func TestScriptSeesFrozenTimeAndIndexSeed(t *testing.T) {
	src := `local a = redis.call('TIME')
local n = 0 for i = 1, 100000 do n = n + i end
local b = redis.call('TIME')
return {a[1], a[2], b[1], b[2], math.random(1000000)}`
	run := func() (reply.Value, [32]byte) {
		c := newExecCheck()
		c.time = 1_234_567
		v := c.exec(t, "EVAL", src, "0")
		return v, c.s.Hash()
	}
	v1, h1 := run()
	v2, h2 := run()
	want := reply.Array(reply.BulkString("1234"), reply.BulkString("567000"), reply.BulkString("1234"), reply.BulkString("567000"), v1.Elems[4])
	wantReply(t, "frozen time", v1, want)
	wantReply(t, "second replica", v2, v1)
	if h1 != h2 {
		t.Error("two replicas of the same entries hash differently")
	}
	c := newExecCheck()
	c.exec(t, "SET", "x", "1") // one more entry: another index, another seed
	c.time = 1_234_567
	if v3 := c.exec(t, "EVAL", src, "0"); v3.Elems[4].Int == v1.Elems[4].Int {
		t.Errorf("math.random gave %d at two different indexes", v3.Elems[4].Int)
	}
}

// TestScriptLimits: a runaway script ends with the same error at every
// replica and changes nothing after its limit; the state goes on.
func TestScriptLimits(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"while true do end", script.ErrWorkLimit},
		{"for i = 1, 1000000 do redis.call('incr', KEYS[1]) end", script.ErrCallLimit},
		{"return loadstring('return 1')", "ERR user_script:1: Script attempted to access nonexistent global variable 'loadstring'"},
		{"return os.time()", "ERR user_script:1: Script attempted to access nonexistent global variable 'os'"},
		{"return io", "ERR user_script:1: Script attempted to access nonexistent global variable 'io'"},
		{"return require('x')", "ERR user_script:1: Script attempted to access nonexistent global variable 'require'"},
	} {
		var hashes [][32]byte
		for range 2 {
			c := newExecCheck()
			v := c.exec(t, "EVAL", tc.src, "1", "n")
			if v.Kind != reply.KindError || !strings.HasPrefix(v.Str, tc.want) {
				t.Errorf("%s: %v, want an error starting %q", tc.src, v, tc.want)
			}
			wantReply(t, "after", c.exec(t, "SET", "x", "1"), reply.OK())
			hashes = append(hashes, c.s.Hash())
		}
		if hashes[0] != hashes[1] {
			t.Errorf("%s: replicas differ", tc.src)
		}
	}
}

// TestScriptCommands: what a script may call, and Redis's errors for the
// rest; a push and a publish made by a script are reported like a
// client's.
func TestScriptCommands(t *testing.T) {
	c := newExecCheck()
	wantReply(t, "eval in eval", c.exec(t, "EVAL", "return redis.pcall('eval', 'return 1', '0')", "0"),
		reply.Error(script.ErrNotAllowed))
	wantReply(t, "flock", c.exec(t, "EVAL", "return redis.pcall('flock', 's', 'a')", "0"),
		reply.Error(script.ErrNotAllowed))
	wantReply(t, "unknown", c.exec(t, "EVAL", "return redis.pcall('nope')", "0"),
		reply.Error(script.ErrUnknownCommand))
	wantReply(t, "arity", c.exec(t, "EVAL", "return redis.pcall('get')", "0"),
		reply.Error(script.ErrWrongArity))
	// BLPOP is noscript in Redis 7, also on a list it need not wait for.
	c.exec(t, "RPUSH", "q0", "a")
	wantReply(t, "blpop", c.exec(t, "EVAL", "return redis.pcall('blpop', 'q0', 0)", "0"), reply.Error(script.ErrNotAllowed))
	wantReply(t, "fence none", c.exec(t, "EVAL", "return redis.call('FENCE', KEYS[1])", "1", "fk"), reply.Null())
	c.exec(t, "SET", "fk", "v")
	created := c.index
	wantReply(t, "fence", c.exec(t, "EVAL", "return redis.call('FENCE', KEYS[1])", "1", "fk"), reply.Int(int64(created)))
	wantReply(t, "fence session form", c.exec(t, "EVAL", "return redis.pcall('FENCE', KEYS[1], 's')", "1", "fk"),
		reply.Error(script.ErrNotAllowed))

	r, err := c.apply(Entry{Op: OpExec, Args: []string{"EVAL",
		"redis.call('rpush', KEYS[1], 'a') redis.call('publish', 'ch', 'm') return redis.call('publish', 'ch', 'n')", "1", "q"}})
	if err != nil {
		t.Fatal(err)
	}
	wantReply(t, "publish", r.Reply, reply.Int(0))
	if fmt.Sprint(r.Pushed) != "[q]" || fmt.Sprint(r.Messages) != "[{ch m} {ch n}]" {
		t.Errorf("Pushed %v, Messages %v", r.Pushed, r.Messages)
	}
	wantReply(t, "blpop", c.exec(t, "BLPOP", "none", "q", "0"), reply.Array(reply.BulkString("q"), reply.BulkString("a")))
	wantReply(t, "blpop empty", c.exec(t, "BLPOP", "q", "1.5"), reply.NullArray())
	c.exec(t, "SET", "s", "x")
	wantReply(t, "blpop wrong type", c.exec(t, "BLPOP", "s", "q", "0"), errWrongType)
	wantReply(t, "blpop timeout", c.exec(t, "BLPOP", "q", "-1"), reply.Error("ERR timeout is negative"))
}

// TestScriptDeepReply: a reply nested deeper than a Result can carry is cut
// with Redis's error element, so it can still be forwarded.
func TestScriptDeepReply(t *testing.T) {
	c := newExecCheck()
	r, err := c.apply(Entry{Op: OpExec, Args: []string{"EVAL", "local t = {} local x = t for i = 1, 200 do x[1] = {} x = x[1] end return t", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeResult(r.Encode(nil))
	if err != nil {
		t.Fatalf("a script's reply does not decode: %v", err)
	}
	depth, v := 0, dec.Reply
	for v.Kind == reply.KindArray {
		depth++
		v = v.Elems[0]
	}
	if depth != MaxReplyDepth || v.Kind != reply.KindError {
		t.Errorf("depth %d ending in %v, want %d ending in an error", depth, v, MaxReplyDepth)
	}
}
