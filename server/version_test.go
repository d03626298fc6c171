package server

import (
	"context"
	"github.com/redis/go-redis/v9"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/script"
)

// A new node moves to the newest cluster version before it settles, so
// that its first client command already has the version's commands: no
// test and no client races the gate's poll.
func TestVersionRaisedBeforeSettled(t *testing.T) {
	s := startServer(t) // returns once the node is a settled leader
	var v int64
	s.node.Local(func(st *lockstate.State) { v = st.Version() })
	if v != lockstate.MaxVersion {
		t.Fatalf("a settled new node is at cluster version %d, want %d", v, lockstate.MaxVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := newClient(t, s, 3).SetNX(ctx, "k", "v", 0).Result(); err != nil || !n {
		t.Fatalf("SETNX on a new node: %v %v", n, err)
	}
}

// In a cluster held at version 1 (here: a replica that knows no newer
// version, as a member on an old binary holds it), the server refuses the
// commands of version 2 before proposing them, in the words of a binary
// without them (arity unchecked), and a script's redis.call gets what it
// gets from any unknown command; reads need no gate.
func TestVersionOneRefusedUpFront(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.State.MaxVersion = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	// Nothing else proposes on this idle node (no deadlines to tick, no
	// version to raise), so the applied index shows whether the refused
	// commands were proposed.
	before, _ := s.node.StateHash()
	for _, args := range [][]any{{"SETNX", "k", "v"}, {"setnx", "k"}, {"INCRBYFLOAT", "k", "1.5"}, {"GETEX", "k", "PERSIST"},
		{"FLUSHALL"}, {"RENAME", "k", "x"}, {"COPY", "k", "x", "REPLACE"},
		{"SETBIT", "k", "1", "1"}, {"RPOP", "k", "2"}, {"HMSET", "h", "f", "v"}, {"setbit", "k"},
		{"LMOVE", "k", "x", "LEFT", "LEFT"}, {"RPOPLPUSH", "k", "x"}, {"BLMOVE", "k", "x", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "k", "x", "0"}, {"blmove", "k"}} {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString("'" + a.(string) + "' ")
		}
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: " + b.String()
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v at version 1: %v, want %q", args, err, want)
		}
	}
	if after, _ := s.node.StateHash(); after != before {
		t.Errorf("the applied index moved from %d to %d: a refused command was proposed", before, after)
	}
	src := "return redis.pcall(ARGV[1], KEYS[1], 'v')"
	unknown := c.Do(ctx, "EVAL", src, "1", "k", "NOPE").Err()
	if unknown == nil {
		t.Fatal("a script calling NOPE did not fail")
	}
	if err := c.Do(ctx, "EVAL", src, "1", "k", "SETNX").Err(); err == nil || err.Error() != unknown.Error() {
		t.Errorf("SETNX in a script at version 1: %v, want %v", err, unknown)
	}
	if n, err := c.Do(ctx, "EXPIRETIME", "k").Int64(); err != nil || n != -2 {
		t.Errorf("EXPIRETIME at version 1: %v %v", n, err)
	}
	// The reads of version 3 alike: served directly, unknown in a script.
	if n, err := c.Do(ctx, "BITPOS", "k", "1").Int64(); err != nil || n != -1 {
		t.Errorf("BITPOS at version 1: %v %v", n, err)
	}
	if s, err := c.Do(ctx, "LCS", "k", "h").Text(); err != nil || s != "" {
		t.Errorf("LCS at version 1: %q %v", s, err)
	}
	if err := c.Do(ctx, "EVAL", src, "1", "k", "GETBIT").Err(); err == nil || err.Error() != unknown.Error() {
		t.Errorf("GETBIT in a script at version 1: %v, want %v", err, unknown)
	}
	// The state machine refuses them too, should one reach it (a script
	// here, above, and a follower's view behind the leader's).
	if err := c.Do(ctx, "SET", "k", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.node.StateHash(); after == before {
		t.Error("the applied index did not move for a SET: the check above proves nothing")
	}
}

// At cluster version 2 (a member on a binary without version 3) EVAL_RO
// and EVALSHA_RO are unknown, before anything runs, and a script sees no
// cjson; a node that raises the version to 3 serves them.
func TestVersionTwoNoLuaLibraries(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.State.MaxVersion = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	for _, args := range [][]any{{"EVAL_RO", "return 1", "0"}, {"evalsha_ro", "abc", "0"}} {
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: '" + args[1].(string) + "' '0' "
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v at version 2: %v, want %q", args, err, want)
		}
	}
	src := "return type(cjson)"
	want := "ERR user_script:1: Script attempted to access nonexistent global variable 'cjson' script: " + script.SHA1(src) + ", on @user_script:1."
	if err := c.Do(ctx, "EVAL", src, "0").Err(); err == nil || err.Error() != want {
		t.Errorf("cjson at version 2: %v, want %q", err, want)
	}

	s3 := startServerWith(t, nil)
	c3 := newClient(t, s3, 3)
	if got, err := c3.Do(ctx, "EVAL_RO", src, "0").Text(); err != nil || got != "table" {
		t.Errorf("EVAL_RO at version 3: %v %v", got, err)
	}
	if got, err := c3.Do(ctx, "EVALSHA_RO", script.SHA1(src), "0").Text(); err != nil || got != "table" {
		t.Errorf("EVALSHA_RO at version 3: %v %v", got, err)
	}
}

// Transactions come with cluster version 3: below it MULTI, EXEC,
// DISCARD, WATCH and UNWATCH are unknown, in a binary's words without
// them, and nothing is queued; at 3 they run.
func TestVersionTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	old := startServerWith(t, func(c *Config) { c.State.MaxVersion = 2 })
	c := newClient(t, old, 2)
	for _, args := range [][]any{{"MULTI"}, {"EXEC"}, {"DISCARD"}, {"WATCH", "k"}, {"UNWATCH"}, {"multi", "x"}} {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString("'" + a.(string) + "' ")
		}
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: " + b.String()
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v at version 2: %v, want %q", args, err, want)
		}
	}
	// Not in MULTI: a SET after the refused MULTI runs at once.
	if v, err := c.Do(ctx, "SET", "k", "v").Result(); err != nil || v != "OK" {
		t.Errorf("SET after a refused MULTI: %v %v", v, err)
	}

	s := startServer(t)
	c = newClient(t, s, 2)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "1", 0)
		p.Append(ctx, "k", "2") // not INCR, which the fencednext build changes
		return nil
	})
	if err != nil || len(cmds) != 2 || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("a transaction at version 3: %v %v", cmds, err)
	}
}

// TestVersionFunctionsRefusedUpFront: below cluster version 3 FUNCTION,
// FCALL and FCALL_RO are unknown, in the words of a binary without them,
// and nothing is proposed; FUNCTION FLUSH, which Redis's test files start
// with, included.
func TestVersionFunctionsRefusedUpFront(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.State.MaxVersion = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	before, _ := s.node.StateHash()
	for _, args := range [][]any{{"FUNCTION", "FLUSH"}, {"FUNCTION", "LIST"}, {"function", "load", "code"},
		{"FCALL", "f", "0"}, {"FCALL_RO", "f", "0"}, {"FUNCTION"}} {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString("'" + a.(string) + "' ")
		}
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: " + b.String()
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%q at version 2: %v, want %q", args, err, want)
		}
	}
	if after, _ := s.node.StateHash(); after != before {
		t.Errorf("the applied index moved from %d to %d: a refused command was proposed", before, after)
	}
	if err := c.Do(ctx, "EVAL", "return redis.call('fcall', 'f', '0')", "0").Err(); err == nil || !strings.Contains(err.Error(), "Unknown Redis command called from script") {
		t.Errorf("FCALL in a script at version 2: %v", err)
	}
}

// TestFunctionsServed: at version 3 a library loaded through the log is
// listed, dumped and called on the read path (FCALL_RO) and through the
// log (FCALL).
func TestFunctionsServed(t *testing.T) {
	s := startServerWith(t, func(c *Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	code := "#!lua name=lib\nredis.register_function{function_name='ro', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function('rw', function(k, a) return redis.call('set', k[1], a[1]) end)"
	if v, err := c.Do(ctx, "FUNCTION", "FLUSH").Text(); err != nil || v != "OK" {
		t.Fatalf("FUNCTION FLUSH on an empty state: %q %v", v, err)
	}
	if v, err := c.Do(ctx, "FUNCTION", "LOAD", code).Text(); err != nil || v != "lib" {
		t.Fatalf("LOAD: %q %v", v, err)
	}
	if v, err := c.Do(ctx, "FCALL", "rw", "1", "k", "v").Text(); err != nil || v != "OK" {
		t.Fatalf("FCALL: %q %v", v, err)
	}
	if v, err := c.Do(ctx, "FCALL_RO", "ro", "1", "k").Text(); err != nil || v != "v" {
		t.Fatalf("FCALL_RO: %q %v", v, err)
	}
	before, _ := s.node.StateHash()
	if v, err := c.Do(ctx, "FUNCTION", "LIST").Slice(); err != nil || len(v) != 1 {
		t.Fatalf("LIST: %v %v", v, err)
	}
	if _, err := c.Do(ctx, "FUNCTION", "DUMP").Text(); err != nil {
		t.Fatalf("DUMP: %v", err)
	}
	if after, _ := s.node.StateHash(); after != before {
		t.Errorf("LIST, DUMP and FCALL_RO went through the log: applied %d -> %d", before, after)
	}
}
