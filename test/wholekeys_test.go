package test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFlushAllOnCluster: FLUSHALL, sent to a follower, is one entry that
// every replica applies alike (RAFT.HASH equal); the keyspace goes, SET NX
// locks included, while a native FLOCK survives with its holder, waiter
// and token, and the tokens taken after it, of the lock and of a SET NX
// lock, are larger than those before. RENAME and COPY through a follower
// keep the replicas equal too, and a 1 MiB value sent to a follower under
// a raised proto-max-bulk-len travels to the leader.
func TestFlushAllOnCluster(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(20 * time.Second)
	f := cl.followers(leader)[0]
	c := f.client(t)
	ctx := tctx(t)

	s1 := mustStr(t, c, "SESSION.OPEN", "TTL", "60000")
	s2 := mustStr(t, c, "SESSION.OPEN", "TTL", "60000")
	tok, err := c.Do(ctx, "FLOCK", "orders", s1).Int64()
	if err != nil || tok <= 0 {
		t.Fatalf("FLOCK: %v %v", tok, err)
	}
	// s2 waits in line, on the follower's connection.
	waiter := f.client(t)
	got := make(chan int64, 1)
	go func() {
		n, _ := waiter.Do(ctx, "FLOCK", "orders", s2, "WAIT", "0").Int64()
		got <- n
	}()
	eventually(t, 10*time.Second, "s2 queued", func() bool {
		v, err := do(ctx, c, "LOCK.INFO", "orders")
		return err == nil && strings.Contains(fmt.Sprint(v), s2)
	})
	mustStr(t, c, "SET", "nx", "me", "NX", "PX", "60000")
	nxTok, err := c.Do(ctx, "FENCE", "nx", "IFEQ", "me").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	mustStr(t, c, "RENAME", "h", "h2")
	if n, err := c.Do(ctx, "COPY", "h2", "h3").Int64(); err != nil || n != 1 {
		t.Fatalf("COPY through a follower: %v %v", n, err)
	}
	checkSameState(t, cl.nodes)

	if got := mustStr(t, c, "FLUSHALL"); got != "OK" {
		t.Fatalf("FLUSHALL: %q", got)
	}
	checkSameState(t, cl.nodes)
	for _, n := range cl.nodes {
		nc := n.client(t)
		if size, err := nc.DBSize(ctx).Result(); err != nil || size != 1 {
			t.Errorf("DBSIZE on %s after FLUSHALL: %v %v, want 1 (the held lock)", n.addr, size, err)
		}
		if typ, err := nc.Type(ctx, "orders").Result(); err != nil || typ != "fencedlock" {
			t.Errorf("TYPE orders on %s after FLUSHALL: %v %v", n.addr, typ, err)
		}
	}
	if now, err := c.Do(ctx, "FENCE", "orders").Int64(); err != nil || now != tok {
		t.Fatalf("FENCE orders after FLUSHALL: %v %v, want %d", now, err, tok)
	}
	if n, err := c.Do(ctx, "FUNLOCK", "orders", s1).Int64(); err != nil || n != 0 {
		t.Fatalf("FUNLOCK after FLUSHALL: %v %v", n, err)
	}
	select {
	case t2 := <-got:
		if t2 <= tok {
			t.Fatalf("the waiter's token after FLUSHALL is %d, not above %d", t2, tok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not granted the lock")
	}
	mustStr(t, c, "SET", "nx", "you", "NX", "PX", "60000")
	if again, err := c.Do(ctx, "FENCE", "nx", "IFEQ", "you").Int64(); err != nil || again <= nxTok {
		t.Fatalf("a SET NX lock retaken after FLUSHALL: token %v %v, want above %d", again, err, nxTok)
	}

	// A raised proto-max-bulk-len on the follower: its client's 1 MiB
	// value reaches the leader inside RAFT.PROPOSE.
	mustStr(t, c, "CONFIG", "SET", "proto-max-bulk-len", "2mb")
	big := strings.Repeat("b", 1<<20)
	if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatalf("SET of 1 MiB through a follower: %v", err)
	}
	if n, err := leader.client(t).StrLen(ctx, "big").Result(); err != nil || n != 1<<20 {
		t.Fatalf("STRLEN big on the leader: %v %v", n, err)
	}
	checkSameState(t, cl.nodes)
}

// TestProtoMaxBulkLen: CONFIG SET proto-max-bulk-len takes Redis's units,
// refuses a value outside fenced's range in Redis's words and changes
// nothing then, and applies to the next command of connections already
// open as well as to new ones.
func TestProtoMaxBulkLen(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--proto-max-bulk-len", "1mb"}})
	c := n.client(t)
	ctx := tctx(t)
	get := func() string {
		t.Helper()
		m, err := c.ConfigGet(ctx, "proto-max-bulk-len").Result()
		if err != nil {
			t.Fatal(err)
		}
		return m["proto-max-bulk-len"]
	}
	if v := get(); v != "1048576" {
		t.Fatalf("CONFIG GET proto-max-bulk-len with --proto-max-bulk-len 1mb = %q", v)
	}
	old := dialRaw(t, n.addr) // open before the change
	const rangeErr = "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 524288 and 4194304 inclusive"
	const memErr = "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be a memory value"
	for _, tc := range []struct{ v, want string }{
		{"1000", rangeErr}, {"0", rangeErr}, {"524287", rangeErr}, {"4194305", rangeErr}, {"512mb", rangeErr},
		{"9223372036854775807", rangeErr}, {"-1", memErr}, {"abc", memErr}, {"", memErr}, {"1.5mb", memErr},
		{"99999999999999999999", memErr}, {"9223372036854775807gb", memErr}, {strings.Repeat("9", 100000), memErr},
	} {
		if _, err := do(ctx, c, "CONFIG", "SET", "proto-max-bulk-len", tc.v); err == nil || err.Error() != tc.want {
			t.Errorf("CONFIG SET proto-max-bulk-len %.20q: %v, want %q", tc.v, err, tc.want)
		}
	}
	if v := get(); v != "1048576" {
		t.Fatalf("refused CONFIG SETs left proto-max-bulk-len at %q", v)
	}

	// 2 MiB is over the limit: the connection that sends it is closed
	// with Redis's protocol error.
	big := strings.Repeat("x", 2<<20)
	probe := dialRaw(t, n.addr)
	probe.sendRefused("SET", "big", big)
	if v, err := probe.tryRead(5 * time.Second); err == nil && (v.kind != '-' || !strings.Contains(v.str, "Protocol error")) {
		t.Fatalf("a 2 MiB argument under 1mb: %v", v)
	}

	mustStr(t, c, "CONFIG", "SET", "proto-max-bulk-len", "4MB")
	if v := get(); v != "4194304" {
		t.Fatalf("CONFIG SET proto-max-bulk-len 4MB: %q", v)
	}
	for name, conn := range map[string]*rawConn{"an open connection": old, "a new one": dialRaw(t, n.addr)} {
		conn.send("SET", "big", big)
		if v := conn.read(); v.str != "OK" {
			t.Fatalf("%s, 2 MiB after raising the limit: %v", name, v)
		}
		conn.send("STRLEN", "big")
		if v := conn.read(); v.kind != ':' || v.num != 2<<20 {
			t.Fatalf("%s: STRLEN %v", name, v)
		}
	}
	// Lowered, it holds from the next command the connection starts to
	// read: the one its reader already waits for (PING here) was begun
	// under the old limit.
	mustStr(t, c, "CONFIG", "SET", "proto-max-bulk-len", "512kb")
	old.send("PING")
	if v := old.read(); v.str != "PONG" {
		t.Fatalf("PING: %v", v)
	}
	old.sendRefused("SET", "big", big)
	if v, err := old.tryRead(5 * time.Second); err == nil && (v.kind != '-' || !strings.Contains(v.str, "Protocol error")) {
		t.Fatalf("2 MiB after lowering the limit again: %v", v)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBadProtoMaxBulkLenFlag: a --proto-max-bulk-len out of range or not
// a size refuses to start, naming the flag.
func TestBadProtoMaxBulkLenFlag(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"-1", "abc", "1kb", "524287", "5mb", "512mb", "99999999999gb", "1.5mb", ""} {
		args := []string{"--proto-max-bulk-len", v, "--listen", "127.0.0.1:0", "--raft-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		out, err := runFenced(t, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || strings.Contains(out, "fenced serving") {
			t.Errorf("--proto-max-bulk-len %q: exit %v, want a refusal to start\n%s", v, err, out)
		}
		if !strings.Contains(out, "proto-max-bulk-len") {
			t.Errorf("--proto-max-bulk-len %q: the message does not name the flag:\n%s", v, out)
		}
	}
}

// TestBadWholeKeyInput: hostile arguments to the whole-key commands (huge
// and malformed indexes, endless options, a 100,000-key TOUCH, names with
// control bytes, long subcommands) are answered with Redis's errors or
// plain answers, change nothing they should not, and the server goes on.
func TestBadWholeKeyInput(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	ctx := tctx(t)
	mustStr(t, c, "SET", "k", "v")
	if err := c.RPush(ctx, "l", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	// What the keyspace holds: every refused command below goes through
	// the log (the state machine parses it), so RAFT.HASH moves with the
	// entries' times; the keys must not.
	keyspace := func() string {
		t.Helper()
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		g, _ := c.Get(ctx, "k").Result()
		l, _ := c.LLen(ctx, "l").Result()
		return fmt.Sprint(keys, g, l)
	}
	before := keyspace()
	long := strings.Repeat("z", 400<<10)
	many := func(word string, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = word
		}
		return out
	}
	for _, tc := range []struct {
		args []any
		want string // "" for a non-error reply
	}{
		{[]any{"COPY", "k", "k2", "DB", "99999999999999999999"}, "ERR value is not an integer or out of range"},
		{[]any{"COPY", "k", "k2", "DB", "-2147483649"}, "ERR value is out of range, value must between -2147483648 and 2147483647"},
		{[]any{"COPY", "k", "k2", "DB", "-1"}, "ERR DB index is out of range"},
		{[]any{"COPY", "k", "k2", "DB", "\x00\r\n"}, "ERR value is not an integer or out of range"},
		{append([]any{"COPY", "k", "k"}, many("REPLACE", 60000)...), "ERR source and destination objects are the same"},
		{append(append([]any{"COPY", "k", "k2"}, many("REPLACE", 1000)...), "DB", "7"), "ERR DB index is out of range"},
		{append([]any{"COPY", "k", "k2", "DB", "0"}, many("DB", 1001)...), "ERR value is not an integer or out of range"},
		{append([]any{"COPY", "k", "k2", "DB", "0"}, many("NOPE", 1001)...), "ERR syntax error"},
		{[]any{"COPY", long, long}, "ERR source and destination objects are the same"},
		{[]any{"MOVE", "k", "99999999999999999999"}, "ERR value is not an integer or out of range"},
		{[]any{"MOVE", "k", long}, "ERR value is not an integer or out of range"},
		{[]any{"SWAPDB", "0", "-0"}, "ERR invalid second DB index"},
		{[]any{"SWAPDB", long, "0"}, "ERR invalid first DB index"},
		{[]any{"SWAPDB", "2147483647", "0"}, "ERR DB index is out of range"},
		{[]any{"FLUSHALL", long}, "ERR syntax error"},
		{append([]any{"FLUSHDB"}, many("ASYNC", 1000)...), "ERR syntax error"},
		{[]any{"RENAME", long, "x"}, "ERR no such key"},
		{[]any{"RENAMENX", "\x00\r\n", "\x00"}, "ERR no such key"},
		{[]any{"OBJECT", long, "k"}, "ERR unknown subcommand '" + strings.Repeat("z", 64) + "'. Try OBJECT HELP."},
		{[]any{"OBJECT", "ENCODING\x00", "k"}, "ERR unknown subcommand 'ENCODING '. Try OBJECT HELP."},
		{append([]any{"OBJECT", "ENCODING"}, many("k", 1000)...), "ERR wrong number of arguments for 'object|encoding' command"},
		{[]any{"OBJECT", "ENCODING", long}, "redis: nil"},
		{append([]any{"TOUCH"}, many("k", 60000)...), ""},
		{[]any{"RANDOMKEY", "x"}, "ERR wrong number of arguments for 'randomkey' command"},
	} {
		v, err := do(ctx, c, tc.args...)
		what := fmt.Sprintf("%.80q (%d args)", fmt.Sprint(tc.args[:min(3, len(tc.args))]), len(tc.args))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", what, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v %v, want %q", what, v, err, tc.want)
		}
	}
	if n, err := c.Do(ctx, "TOUCH", "k", "k", "nokey").Int64(); err != nil || n != 2 {
		t.Errorf("TOUCH k k nokey: %v %v", n, err)
	}
	if after := keyspace(); after != before {
		t.Errorf("refused whole-key commands changed the state: %s, then %s", before, after)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k after the attack: %v %v", v, err)
	}
}
