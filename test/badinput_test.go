// The hostile-input suite. This file holds the protocol and flag attacks;
// the resource attacks, each with its liveness and memory checks, sit
// beside the limit they attack:
//
//   - replicated state without bound: TestStateBomb, TestMaxMemory
//     (maxmemory_test.go), TestLabelBombRefused, TestNameCaps
//     (caps_test.go); lockstate's TestSessionsPerUserCap, TestRecordCap
//     and TestMaxMemoryRefusesGrowthOnly
//   - a record a snapshot could not carry: TestBigRecordRefusedAtWrite,
//     TestInstallPeakRSS (records_test.go)
//   - KEYS holding up writes: raftstore's TestKeysDoesNotHoldUpApply; SCAN
//     instead, scan_test.go; the lock latency during KEYS is make bench-keys
//   - slow and idle clients: TestSlowSubscriberOutputLimit and the rest of
//     connlimits_test.go
//   - huge, many and slow-to-match patterns, malformed notify-keyspace-events:
//     TestBadPatternInput (badpubsub_test.go)
//   - a full or failing disk, a corrupt log tail: disk_test.go
//   - CLIENT TRACKING's prefixes, cap and redirects: TestBadTracking
//     (badinput_tracking_test.go); CLIENT REPLY's arguments and thousands
//     of silenced commands: TestBadClientReply (badinput_clientreply_test.go)
//   - RAFT.BACKUP by a non-admin or with arguments, a corrupt snapshot
//     file, a restore into a non-empty directory: TestSnapshotRefusals
//     (backup_test.go)
package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance i (server side): hostile or over-limit input, each on its own
// raw connection, is answered "-ERR Protocol error..." or the connection is
// closed; the process stays alive; and a go-redis client doing PING and
// FLOCK/FUNLOCK on another connection keeps being served throughout. A bulk
// of exactly 512 KiB is accepted (ECHO returns it); one byte more is not.
func TestBadInputKeepsServing(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})

	// The canary: PING, FLOCK, FUNLOCK in a loop on its own connection.
	cc := n.soloClient(t)
	cs := openSession(t, cc, 600000, "canary")
	var ops atomic.Int64
	var errMu sync.Mutex
	var canaryErr error
	canaryFailed := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return canaryErr
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopCanary := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopCanary()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := cc.Ping(ctx).Err()
			var tok, left any
			if err == nil {
				tok, err = cc.Do(ctx, "FLOCK", "canary", cs).Result()
			}
			if err == nil {
				left, err = cc.Do(ctx, "FUNLOCK", "canary", cs).Result()
			}
			cancel()
			if err == nil {
				if t, ok := tok.(int64); !ok || t <= 0 || left != int64(0) {
					err = fmt.Errorf("FLOCK %v, FUNLOCK %v", tok, left)
				}
			}
			if err != nil {
				errMu.Lock()
				canaryErr = err
				errMu.Unlock()
				return
			}
			ops.Add(1)
		}
	}()

	const maxBulk = 512 << 10
	big := strings.Repeat("x", maxBulk)
	type outcome int
	const (
		errOrClose outcome = iota // "-ERR Protocol error..." or closed
		echoBig                   // the 512 KiB bulk echoed back
		answered                  // a reply of any kind (SCAN: an answer or its error), not a close
	)
	// SCAN with hostile arguments, over a few keys the canary's lock joins.
	for i := range 200 {
		if err := cc.Set(tctx(t), fmt.Sprintf("scan:%d", i), strings.Repeat("a", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	resp := func(args ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		return b.String()
	}
	starry := strings.Repeat("*a", 200<<10) // a 400 KiB pattern of stars

	cases := []struct {
		name    string
		payload string
		want    outcome
	}{
		{"huge bulk length", "*1\r\n$9223372036854775807\r\nabc\r\n", errOrClose},
		{"huge multibulk count", "*9223372036854775807\r\n", errOrClose},
		{"10 MiB inline line", strings.Repeat("a", 10<<20) + "\r\n", errOrClose},
		{"10000-deep nesting", strings.Repeat("*1\r\n", 10000), errOrClose},
		{"bulk of exactly 512 KiB", "*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(maxBulk) + "\r\n" + big + "\r\n", echoBig},
		{"bulk of 512 KiB + 1", "*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(maxBulk+1) + "\r\n" + big + "x\r\n", errOrClose},
		{"negative bulk length", "*1\r\n$-5\r\n", errOrClose},
		{"bulk length not a number", "*1\r\n$abc\r\n", errOrClose},
		{"SCAN huge COUNT", resp("SCAN", "0", "COUNT", "9223372036854775807"), answered},
		{"SCAN huge cursor", resp("SCAN", "18446744073709551615", "COUNT", "9223372036854775807"), answered},
		{"SCAN cursor past 2^64", resp("SCAN", "99999999999999999999999999999"), answered},
		{"SCAN 400 KiB pattern of stars", resp("SCAN", "0", "MATCH", starry, "COUNT", "1000"), answered},
		{"SCAN pattern of brackets", resp("SCAN", "0", "MATCH", strings.Repeat("[", 100000), "TYPE", strings.Repeat("t", 100000)), answered},
		{"SCAN every option twice", resp("SCAN", "0", "MATCH", "s*", "MATCH", "\\", "COUNT", "1", "COUNT", "5", "TYPE", "string", "TYPE", "x"), answered},
		{"KEYS 400 KiB pattern of stars", resp("KEYS", starry), answered},
		// Sets: counts at the edges, a member of 400 KiB.
		{"SRANDMEMBER count of -2^63", resp("SRANDMEMBER", "set:x", "-9223372036854775808"), answered},
		{"SRANDMEMBER count past the bound", resp("SRANDMEMBER", "set:x", "-1048577"), answered},
		{"SPOP count of 2^63-1", resp("SPOP", "set:x", "9223372036854775807"), answered},
		{"SADD 400 KiB member", resp("SADD", "set:x", starry), answered},
		{"SRANDMEMBER -1048576 of a 400 KiB member", resp("SRANDMEMBER", "set:x", "-1048576"), answered},
		// SORT of the set with a 400 KiB member: LIMIT at the edges, a
		// 400 KiB pattern, 2,000 GETs of 400 KiB keys (a bounded reply).
		{"SORT LIMIT at the int64 edges", resp("SORT", "set:x", "LIMIT", "-9223372036854775808", "9223372036854775807"), answered},
		{"SORT BY 400 KiB pattern", resp("SORT", "set:x", "BY", starry), answered},
		{"SORT 2000 GETs", resp(append([]string{"SORT", "set:x"}, strings.Split(strings.Repeat("GET #:*->f ", 2000), " ")[:4000]...)...), answered},
		{"SORT STORE 400 KiB key", resp("SORT", "set:x", "STORE", starry), answered},
		{"SORT 2000 GETs of the member itself", resp(append([]string{"SORT", "set:x", "BY", "nosort"}, strings.Split(strings.Repeat("GET # ", 2000), " ")[:4000]...)...), answered},
		// SHUTDOWN with any bad argument must answer and leave the node up.
		{"SHUTDOWN 400 KiB argument", resp("SHUTDOWN", starry), answered},
		{"SHUTDOWN SAVE NOSAVE", resp("SHUTDOWN", "SAVE", "NOSAVE"), answered},
		{"SHUTDOWN ABORT FORCE", resp("SHUTDOWN", "ABORT", "FORCE"), answered},
		{"SHUTDOWN NOW twice then junk", resp("SHUTDOWN", "NOW", "NOW", "\x00"), answered},
		{"BGSAVE 400 KiB argument", resp("BGSAVE", starry), answered},
		{"SAVE with an argument", resp("SAVE", "x"), answered},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ops.Load()
			rc := dialRaw(t, n.addr)
			werr := make(chan error, 1)
			go func() {
				rc.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				_, err := io.WriteString(rc.nc, tc.payload)
				werr <- err
			}()
			v, err := rc.tryRead(30 * time.Second)
			t.Logf("outcome: reply %v, read error %v", v, err)
			switch tc.want {
			case echoBig:
				if err != nil || v.kind != '$' || v.str != big {
					t.Errorf("ECHO of a %d-byte bulk: %v %v, want it echoed", maxBulk, v, err)
				}
			case answered:
				if err != nil || v.kind == 0 {
					t.Errorf("no reply: %v %v", v, err)
				}
			case errOrClose:
				switch {
				case err == nil:
					if v.kind != '-' || !strings.HasPrefix(v.str, "ERR Protocol error") {
						t.Errorf("reply %v, want -ERR Protocol error...", v)
					}
				case isClosed(err):
				default:
					t.Errorf("neither an error reply nor a close: %v", err)
				}
			}
			if err := <-werr; err != nil && !isClosed(err) {
				t.Errorf("writing the payload: %v", err)
			}
			if !n.alive() {
				t.Fatalf("server died on %s", tc.name)
			}
			// The canary is served during and after each case.
			eventually(t, 10*time.Second, "the canary to make progress", func() bool {
				return ops.Load() > before+2 || canaryFailed() != nil
			})
		})
	}
	stopCanary()
	if err := canaryFailed(); err != nil {
		t.Fatalf("the canary client failed: %v", err)
	}
	if ops.Load() == 0 {
		t.Fatal("the canary never completed a cycle")
	}
	// And a fresh client is served normally.
	c := n.client(t)
	if s := mustStr(t, c, "PING"); s != "PONG" {
		t.Fatalf("PING = %q", s)
	}
}

// isClosed reports whether err means the peer closed or reset the
// connection (not a timeout).
func isClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// Acceptance i: commands pipelined on one raw connection, more than the
// server reads ahead, are all answered, in order.
func TestPipelinedInOrder(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	s := openSession(t, c, 60000, "pipeline")

	type exp struct {
		args  []string
		check func(v rv) bool
		desc  string
	}
	var tok int64
	echo := func(i int) exp {
		m := fmt.Sprintf("m%d", i)
		return exp{[]string{"ECHO", m}, func(v rv) bool { return v.kind == '$' && v.str == m }, "$" + m}
	}
	intIs := func(want int64) func(rv) bool {
		return func(v rv) bool { return v.kind == ':' && v.num == want }
	}
	isTok := func(v rv) bool {
		if v.kind != ':' || v.num <= 0 {
			return false
		}
		if tok == 0 {
			tok = v.num
		}
		return v.num == tok
	}
	var cmds []exp
	for i := range 300 {
		cmds = append(cmds, echo(i))
		switch i {
		case 10:
			cmds = append(cmds, exp{[]string{"FLOCK", "pipe", s}, isTok, ":token"})
		case 20:
			cmds = append(cmds, exp{[]string{"FLOCK", "pipe", s}, isTok, ":token (reentrant)"})
		case 30:
			cmds = append(cmds, exp{[]string{"FENCE", "pipe"}, isTok, ":token (FENCE)"})
		case 40:
			cmds = append(cmds, exp{[]string{"FUNLOCK", "pipe", s}, intIs(1), ":1"})
		case 150:
			cmds = append(cmds, exp{[]string{"FUNLOCK", "pipe", s}, intIs(0), ":0"})
		case 151:
			cmds = append(cmds, exp{[]string{"FUNLOCK", "pipe", s}, func(v rv) bool {
				return v.kind == '-' && strings.HasPrefix(v.str, "NOTOWNER")
			}, "-NOTOWNER"})
		case 152:
			cmds = append(cmds, exp{[]string{"FENCE", "pipe"}, func(v rv) bool { return v.null }, "null"})
		case 200:
			cmds = append(cmds, exp{[]string{"PING"}, func(v rv) bool { return v.kind == '+' && v.str == "PONG" }, "+PONG"})
		case 250:
			cmds = append(cmds, exp{[]string{"NOSUCHCOMMAND"}, func(v rv) bool {
				return v.kind == '-' && strings.HasPrefix(v.str, "ERR")
			}, "-ERR unknown command"})
		}
	}
	var b strings.Builder
	for _, e := range cmds {
		b.WriteString(encode(e.args...))
	}
	rc := dialRaw(t, n.addr)
	rc.write(b.String())
	for i, e := range cmds {
		v := rc.read()
		if !e.check(v) {
			t.Fatalf("reply %d to %v = %v, want %s", i, e.args, v, e.desc)
		}
	}
}

// Acceptance i: a blocking FLOCK ... WAIT on one connection does not hold
// up other connections (PING and lock commands on another connection are
// answered while it waits), and a command pipelined behind the blocking one
// on its own connection is answered after it, in order.
func TestBlockingWaitDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	holder := openSession(t, c, 60000, "holder")
	w := openSession(t, c, 60000, "waiter")
	tok := mustInt(t, c, "FLOCK", "blocked", holder)

	rc := dialRaw(t, n.addr)
	rc.write(encode("FLOCK", "blocked", w, "WAIT", "0") + encode("PING", "after"))
	replies := make(chan rv, 2)
	go func() {
		defer close(replies)
		for range 2 {
			v, err := rc.tryRead(60 * time.Second)
			if err != nil {
				return
			}
			replies <- v
		}
	}()
	waitQueued(t, c, "blocked", w)

	other := n.soloClient(t)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := other.Ping(ctx).Err(); err != nil {
			cancel()
			t.Fatalf("PING %d on another connection while a FLOCK waits: %v", i, err)
		}
		v, err := other.Do(ctx, "FLOCK", "free-lock", holder).Result()
		if err != nil || v.(int64) <= 0 {
			cancel()
			t.Fatalf("FLOCK on another connection while a FLOCK waits: %v %v", v, err)
		}
		if _, err := other.Do(ctx, "FUNLOCK", "free-lock", holder).Result(); err != nil {
			cancel()
			t.Fatalf("FUNLOCK on another connection: %v", err)
		}
		cancel()
	}
	select {
	case v := <-replies:
		t.Fatalf("the waiting connection was answered %v before the release", v)
	default:
	}
	mustInt(t, c, "FUNLOCK", "blocked", holder)
	var got []rv
	for v := range replies {
		got = append(got, v)
	}
	if len(got) != 2 || got[0].kind != ':' || got[0].num <= tok || got[1].kind != '$' || got[1].str != "after" {
		t.Fatalf("replies on the waiting connection: %v, want [:token>%d $after]", got, tok)
	}
}

// TestBadConnLimitFlags: bad values of the connection-limit flags refuse
// to start, naming the flag, and serve nothing.
func TestBadConnLimitFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args []string }{
		{[]string{"--timeout", "-1"}},
		{[]string{"--timeout", "abc"}},
		{[]string{"--timeout", "1.5"}},
		{[]string{"--write-timeout", "-1s"}},
		{[]string{"--write-timeout", "soon"}},
		{[]string{"--client-output-buffer-limit", "pubsub 32mb 8mb"}},
		{[]string{"--client-output-buffer-limit", "bogus 1 1 1"}},
		{[]string{"--client-output-buffer-limit", "pubsub -1 0 0"}},
		{[]string{"--client-output-buffer-limit", "pubsub 32xb 8mb 60"}},
		{[]string{"--client-output-buffer-limit", "normal 0 0 -5"}},
		{[]string{"--client-output-buffer-limit", "pubsub 99999999999gb 0 0"}},
		{[]string{"--client-output-buffer-limit", ""}},
		{[]string{"--maxmemory", "-1"}},
		{[]string{"--maxmemory", "lots"}},
		{[]string{"--maxmemory", "1.5gb"}},
		{[]string{"--maxmemory", "99999999999gb"}},
		{[]string{"--maxmemory", ""}},
	} {
		args := append(tc.args, "--listen", "127.0.0.1:0", "--raft-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		out, err := runFenced(t, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || strings.Contains(out, "fenced serving") {
			t.Errorf("%q: exit %v, want a refusal to start\n%s", tc.args, err, out)
		}
		if !strings.Contains(out, strings.TrimPrefix(tc.args[0], "-")) {
			t.Errorf("%q: the message does not name the flag:\n%s", tc.args, out)
		}
	}
}

// TestBadClientKill: garbage CLIENT KILL arguments are answered with
// Redis's errors, kill nobody, and the connection stays usable.
func TestBadClientKill(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := dialRaw(t, n.addr)
	other := dialRaw(t, n.addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "KILL"}, "ERR wrong number of arguments for 'client|kill' command"},
		{[]string{"CLIENT", "KILL", "nosuch:1"}, "ERR No such client"},
		{[]string{"CLIENT", "KILL", "ID"}, "ERR No such client"},
		{[]string{"CLIENT", "KILL", "ID", "x"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "0"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "-3"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "99999999999999999999"}, "ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "1", "ADDR"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "FOO", "bar"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "ERR syntax error"},
		{[]string{"CLIENT", "KILL", "USER", "nosuch"}, "ERR No such user 'nosuch'"},
		{[]string{"CLIENT", "KILL", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'"},
		{[]string{"CLIENT", "KILL", "ADDR", strings.Repeat("a", 100000)}, ""},
		{[]string{"CLIENT", "KILL", "ADDR", "\x00\r\n"}, ""},
	} {
		c.send(tc.args...)
		v := c.read()
		if tc.want == "" {
			if v.kind != ':' || v.num != 0 {
				t.Errorf("%.60q: %v, want :0", tc.args, v)
			}
			continue
		}
		if v.kind != '-' || v.str != tc.want {
			t.Errorf("%.60q: %v, want -%s", tc.args, v, tc.want)
		}
	}
	for _, cc := range []*rawConn{c, other} {
		cc.send("PING")
		if v := cc.read(); v.str != "PONG" {
			t.Errorf("PING after the bad CLIENT KILLs: %v", v)
		}
	}
}

// TestBadDiskReserveFlag: a --disk-reserve that is not a size refuses to
// start, naming the flag, and serves nothing.
func TestBadDiskReserveFlag(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"-1", "abc", "64xb", "1.5gb", "99999999999gb", ""} {
		args := []string{"--disk-reserve", v, "--listen", "127.0.0.1:0", "--raft-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		out, err := runFenced(t, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || strings.Contains(out, "fenced serving") {
			t.Errorf("--disk-reserve %q: exit %v, want a refusal to start\n%s", v, err, out)
		}
		if !strings.Contains(out, "disk-reserve") {
			t.Errorf("--disk-reserve %q: the message does not name the flag:\n%s", v, out)
		}
	}
}

// TestBadCommandDocs: COMMAND DOCS with names that are no command, halves
// of a subcommand's name, control bytes, a 400 KiB name, and 65,000
// repeats of one name answers a map of just the documented ones, each
// once (the reply is bounded by the docs, not by the request); COMMAND's
// other subcommands refuse extra or unknown words; and the connection and
// the server go on serving.
func TestBadCommandDocs(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := dialRaw(t, n.addr)
	c.send("HELLO", "3")
	c.read()
	keys := func(v rv) []string {
		t.Helper()
		if v.kind != '%' {
			t.Fatalf("reply %v, want a map", v)
		}
		var out []string
		for i := 0; i < len(v.elems); i += 2 {
			out = append(out, v.elems[i].str)
		}
		return out
	}
	repeats := make([]string, 65000)
	for i := range repeats {
		repeats[i] = "set"
	}
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"not commands", []string{"nope", "", " ", "*", "?", "set ", " set"}, nil},
		{"halves of a subcommand", []string{"|", "config|", "|get", "config||get", "config|get|x", "set|x", "|config|get"}, nil},
		{"control bytes", []string{"\x00", "set\x00", "\r\n", "config|\r\nget", "\xff\xfe"}, nil},
		{"400 KiB name", []string{strings.Repeat("s", 400<<10), strings.Repeat("config|", 50000)}, nil},
		{"the real ones among them", []string{"nope", "CONFIG|GET", "Flock", "config|nope"}, []string{"config|get", "flock"}},
		{"65,000 repeats", repeats, []string{"set"}},
	} {
		c.send(append([]string{"COMMAND", "DOCS"}, tc.names...)...)
		if got := keys(c.read()); !slices.Equal(got, tc.want) {
			t.Errorf("COMMAND DOCS %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"COMMAND", "COUNT", "x"}, "ERR wrong number of arguments for 'command|count' command"},
		{[]string{"COMMAND", "HELP", "x"}, "ERR wrong number of arguments for 'command|help' command"},
		{[]string{"COMMAND", "GETKEYS", "nope", "k", "v"}, "ERR Invalid command specified"},
		{[]string{"COMMAND", "GETKEYS", "set"}, "ERR wrong number of arguments for 'command|getkeys' command"},
		{[]string{"COMMAND", "GETKEYS", "set", "k"}, "ERR Invalid number of arguments specified for command"},
		{[]string{"COMMAND", "GETKEYS", "ping", "x"}, "ERR The command has no key arguments"},
		{[]string{"COMMAND", "GETKEYSANDFLAGS", "set", "k", "v"}, "ERR unknown subcommand 'GETKEYSANDFLAGS'. Try COMMAND HELP."},
		{[]string{"COMMAND", "DOCS|SET"}, "ERR unknown subcommand 'DOCS|SET'. Try COMMAND HELP."},
		{[]string{"COMMAND", "\x00\r\n"}, "ERR unknown subcommand '   '. Try COMMAND HELP."},
	} {
		c.send(tc.args...)
		if v := c.read(); v.kind != '-' || v.str != tc.want {
			t.Errorf("%.60q: %v, want -%s", tc.args, v, tc.want)
		}
	}
	c.send("PING")
	if v := c.read(); v.str != "PONG" {
		t.Errorf("PING after the bad COMMAND DOCS: %v", v)
	}
	if !n.alive() {
		t.Fatal("the server died")
	}
}

// wrongType is Redis's answer to a command on a key of another type, as
// heldLockNode's expect writes an error.
const wrongType = "error: WRONGTYPE Operation against a key holding the wrong kind of value"

// heldLockNode starts a node with args and holds the lock "held" on it, in
// a session labelled label, for the attack tests to aim keyspace commands
// at. It returns the node, a client, the test's context, the lock's token
// and expect, which fails the test unless the command answers want (an
// error as "error: " and its text).
func heldLockNode(t *testing.T, label string, args ...string) (*node, *redis.Client, context.Context, any, func(want string, args ...any)) {
	t.Helper()
	n := startNode(t, nodeOpts{args: args})
	c := n.soloClient(t)
	ctx := tctx(t)
	sess := openSession(t, c, 600000, label)
	tok, err := do(ctx, c, "FLOCK", "held", sess)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want string, args ...any) {
		t.Helper()
		got, err := do(ctx, c, args...)
		if err != nil {
			got = "error: " + err.Error()
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%.80v = %.200v, want %.200s", args, got, want)
		}
	}
	return n, c, ctx, tok, expect
}

// TestBadStringInput: the string commands of cluster version 2 under
// hostile input. A held lock's name is never written (WRONGTYPE, the lock
// and its token unchanged); APPEND and SETRANGE stop at fenced's 4 MiB
// string, past which Redis would go on to 512 MiB, and a SETRANGE offset
// is charged against --maxmemory before it runs; INCRBYFLOAT's numbers of
// thousands of digits or of huge exponents are refused or computed without
// holding the node up; and the node serves on. Each refusal changes
// nothing.
func TestBadStringInput(t *testing.T) {
	t.Parallel()
	_, c, ctx, tok, expect := heldLockNode(t, "strings", "--maxmemory", "16mb")
	for _, args := range [][]any{{"SETNX", "held", "v"}, {"SETEX", "held", "10", "v"}, {"PSETEX", "held", "10", "v"},
		{"GETSET", "held", "v"}, {"GETEX", "held", "PERSIST"}, {"GETEX", "held"}, {"APPEND", "held", "v"},
		{"SETRANGE", "held", "0", "v"}, {"INCRBY", "held", "1"}, {"INCRBYFLOAT", "held", "1"}, {"DECR", "held"},
		{"DECRBY", "held", "1"}, {"EVAL", "return redis.call('SETNX', KEYS[1], 'v')", "1", "held"}} {
		want := wrongType
		if args[0] == "EVAL" {
			want = "error: WRONGTYPE Operation against a key holding the wrong kind of value script: " // then its id
			got, err := do(ctx, c, args...)
			if err == nil || !strings.HasPrefix("error: "+err.Error(), want) {
				t.Errorf("%v = %v %v, want %s...", args, got, err, want)
			}
			continue
		}
		expect(want, args...)
	}
	expect("-1", "EXPIRETIME", "held")
	expect("-1", "PEXPIRETIME", "held")
	expect("fencedlock", "TYPE", "held")
	expect(fmt.Sprint(tok), "FENCE", "held")

	// 4 MiB and not a byte more, by SETRANGE and by APPEND.
	const tooLarge = "error: ERR the string would grow past 4 MiB, the largest APPEND or SETRANGE may make"
	expect(tooLarge, "SETRANGE", "big", strconv.Itoa(4<<20), "x")
	expect("0", "EXISTS", "big")
	expect(strconv.Itoa(4<<20), "SETRANGE", "big", strconv.Itoa(4<<20-1), "x")
	expect(tooLarge, "APPEND", "big", "x")
	expect(tooLarge, "SETRANGE", "big", strconv.Itoa(4<<20-1), "xy")
	expect(strconv.Itoa(4<<20), "STRLEN", "big")
	expect("1", "DEL", "big")
	chunk := strings.Repeat("a", 512<<10-64)
	for i := range 9 {
		got, err := do(ctx, c, "APPEND", "grown", chunk)
		if i < 8 && (err != nil || got != int64((i+1)*len(chunk))) {
			t.Fatalf("APPEND %d: %v %v", i, got, err)
		}
		if i == 8 && (err == nil || "error: "+err.Error() != tooLarge) {
			t.Fatalf("APPEND past 4 MiB: %v %v", got, err)
		}
	}
	expect(strconv.Itoa(8*len(chunk)), "STRLEN", "grown")
	expect("error: ERR string exceeds maximum allowed size (proto-max-bulk-len)", "SETRANGE", "big", "9223372036854775807", "x")
	expect("error: ERR offset is out of range", "SETRANGE", "big", "-9223372036854775808", "x")

	// Filling the state up to --maxmemory (16 MB) with SETRANGEs of a few
	// bytes of arguments each: the one whose offset would pad the state
	// past it is refused as OOM before it runs, while a small SET still
	// fits, and everything can be deleted.
	oom := -1
	for i := range 6 {
		got, err := do(ctx, c, "SETRANGE", fmt.Sprintf("fill%d", i), strconv.Itoa(4<<20-1), "x")
		if err != nil {
			if "error: "+err.Error() != "error: "+oomReply {
				t.Fatalf("SETRANGE fill%d: %v", i, err)
			}
			oom = i
			break
		}
		if got != int64(4<<20) {
			t.Fatalf("SETRANGE fill%d = %v", i, got)
		}
	}
	if oom < 1 {
		t.Fatalf("SETRANGE refused at fill%d; want some to fit, then an OOM", oom)
	}
	expect("0", "EXISTS", fmt.Sprintf("fill%d", oom))
	expect("OK", "SET", "small", "x")
	for i := range oom {
		expect("1", "DEL", fmt.Sprintf("fill%d", i))
	}

	// Floats: the longest text a long double may have and one byte more,
	// exponents far out of range, and hex digits by the thousand.
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "1"+strings.Repeat("0", 5120))
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "1e99999999999999999999")
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "1e-99999999999999999999")
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "0x1p99999999999999999999")
	expect("0", "EXISTS", "f")
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "0."+strings.Repeat("0", 5000)+"1") // underflows
	expect("error: ERR value is not a valid float", "INCRBYFLOAT", "f", "1.2e4932")                         // overflows
	expect("0", "EXISTS", "f")
	expect("1", "INCRBYFLOAT", "f", "0x1"+strings.Repeat("0", 1000)+"p-4000")
	big, err := do(ctx, c, "INCRBYFLOAT", "big", "1e4932")
	if s, _ := big.(string); err != nil || len(s) != 4933 {
		t.Fatalf("INCRBYFLOAT big 1e4932 = %.40v... %v", big, err)
	}
	expect("error: ERR increment would produce NaN or Infinity", "INCRBYFLOAT", "big", "1e4932")
	expect(fmt.Sprint(big), "GET", "big")
	expect("PONG", "PING")
}

// TestBadLuaLibraries attacks Redis 7's script libraries (cluster version
// 3, which a new node raises before it serves): nesting past every limit,
// numbers past every range, bytes that are not UTF-8, NaN and Inf, and
// inputs that promise more than they hold. Each answers Redis's error or
// a value, within the step budget, and the node keeps serving.
func TestBadLuaLibraries(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.soloClient(t)
	ctx := tctx(t)
	eval := func(src string, args ...any) (any, error) {
		return do(ctx, c, append([]any{"EVAL", src, "0"}, args...)...)
	}
	for _, tc := range []struct {
		src   string
		arg   string
		want  string // a prefix of the reply or of the error
		isErr bool
	}{
		{"return cjson.decode(ARGV[1])", strings.Repeat("[", 100000), "ERR user_script:1: Found too many nested data structures (1001) at character 1001", true},
		{"cjson.decode_max_depth(2^31-1) return cjson.decode(ARGV[1])", strings.Repeat("[", 100000), "ERR user_script:1: Found too many nested data structures (7999)", true},
		{"cjson.decode_max_depth(2^31-1) return cjson.decode(ARGV[1])", strings.Repeat(`{"a":`, 100000), "ERR user_script:1: Found too many nested data structures (4000)", true},
		{"local t = {} t[1] = t return cjson.encode(t)", "", "ERR user_script:1: Cannot serialise, excessive nesting (1001)", true},
		{"cjson.encode_max_depth(2^31-1) local t = {} t[1] = t return cjson.encode(t)", "", "ERR user_script:1: Cannot serialise, excessive nesting (7998)", true},
		{"return tostring(cjson.decode(ARGV[1]))", "1e99999999999999999999", "inf", false},
		{"return tostring(cjson.decode(ARGV[1]))", "-" + strings.Repeat("9", 100000), "-inf", false},
		{"return cjson.encode(cjson.decode(ARGV[1]))", "\"\xff\xfe\xc3\x28\"", "\"\xff\xfe\xc3(\"", false},
		{"return cjson.encode(0/0)", "", "ERR user_script:1: Cannot serialise number: must not be NaN or Inf", true},
		{"return cjson.encode({1/0})", "", "ERR user_script:1: Cannot serialise number: must not be NaN or Inf", true},
		{"local t = {} t[2^40] = 1 return cjson.encode(t)", "", "{\"1099511627776\":1}", false},
		{"return cmsgpack.unpack(ARGV[1])", strings.Repeat("\x91", 100000), "ERR user_script:1: stack overflow (in function mp_decode_to_lua_array)", true},
		{"return #{cmsgpack.unpack(ARGV[1])}", strings.Repeat("\x01", 100000), "ERR user_script:1: stack overflow (too many return values", true},
		{"return cmsgpack.unpack(ARGV[1])", "\xdd\xff\xff\xff\xff", "ERR user_script:1: Missing bytes in input.", true},
		{"return cmsgpack.unpack(ARGV[1])", "\xdb\xff\xff\xff\xffab", "ERR user_script:1: Missing bytes in input.", true},
		{"return cmsgpack.unpack(ARGV[1])", "\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01", "ERR table index is NaN", true},
		{"return #cmsgpack.unpack(ARGV[1])", "\x81\xcb\x41\x8f\xff\xff\xfc\x00\x00\x00\x01", "0", false}, // t[67108863] = 1: no array padded to it
		{"return cjson.encode(string.rep('\\1', 2^24))", "", "ERR script exceeded its work limit", true},
		{"local s = string.rep('[', 3e5) return cjson.decode(s)", "", "ERR user_script:1: Found too many nested data structures (1001)", true},
		{"return struct.pack(ARGV[1], 1)", "i99999999999", "ERR user_script:1: integral size overflow", true},
		{"return struct.pack('c' .. 2^30, 'x')", "", "ERR user_script:1: bad argument #3 to 'pack' (string too short)", true},
		{"return struct.unpack('c0', ARGV[1])", "\x05", "ERR user_script:1: format 'c0' needs a previous size", true},
		{"return struct.unpack('bc0', ARGV[1])", "\x7f", "ERR user_script:1: bad argument #2 to 'unpack' (data string too short)", true},
		{"return {bit.tobit(0/0), bit.tobit(1/0), bit.tobit(2^64), bit.tohex(1, -2^31)}", "", "[0 0 0 00000001]", false},
		{"return redis.call('blpop', 'l', 0)", "", "ERR This Redis command is not allowed from script script:", true},
	} {
		got, err := eval(tc.src, tc.arg)
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if (err != nil) != tc.isErr || !strings.HasPrefix(s, tc.want) {
			t.Errorf("%.60q on %.40q = %.200q, want %q", tc.src, tc.arg, s, tc.want)
		}
	}
	if got, err := do(ctx, c, "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING after the attacks: %v %v", got, err)
	}
}

// Transactions under attack: a queue past one entry's bound (a forwarded
// entry is one RAFT.PROPOSE argument, proto-max-bulk-len) is refused
// with an error and the transaction aborted, keeping nothing more; the
// same for WATCH of too many keys; the native lock commands are refused
// when queued (a FLOCK that waits would hold the state machine); EXEC and
// DISCARD without MULTI, nested MULTI, and hostile watch lists change
// nothing and leave the node serving, its memory bounded.
func TestBadTransactions(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	ctx := tctx(t)
	c := dialRaw(t, n.addr)
	expect := func(want string, args ...string) {
		t.Helper()
		c.send(args...)
		if got := c.read().String(); got != want {
			t.Errorf("%q = %s, want %s", args, got, want)
		}
	}
	expect(`-"ERR EXEC without MULTI"`, "EXEC")
	expect(`-"ERR DISCARD without MULTI"`, "DISCARD")
	expect(`+"OK"`, "MULTI")
	expect(`-"ERR MULTI calls can not be nested"`, "MULTI")
	for _, args := range [][]string{{"SESSION.OPEN"}, {"FLOCK", "l", "s", "WAIT", "0"}, {"FUNLOCK", "l", "s"}, {"FENCE", "l"},
		{"LOCK.INFO", "l"}, {"SESSION.KILL", "s"}, {"RAFT.TRANSFER"}} {
		expect(`-"ERR Command not allowed inside a transaction"`, args...)
	}
	expect(`-"EXECABORT Transaction discarded because of previous errors."`, "EXEC")

	// 600 queued SETs of 1 KiB: past 512 KiB the queue is refused, once,
	// and every command after is still answered QUEUED but not kept.
	big := strings.Repeat("v", 1024)
	expect(`+"OK"`, "MULTI")
	refused := 0
	for i := range 600 {
		c.send("SET", fmt.Sprintf("k%d", i), big)
		v := c.read()
		if v.kind == '-' {
			refused++
			if !strings.HasPrefix(v.str, "ERR transaction too large") {
				t.Fatalf("SET %d in MULTI: %s", i, v)
			}
		}
	}
	if refused != 1 {
		t.Errorf("%d SETs refused while queueing, want 1 (then nothing more is kept)", refused)
	}
	expect(`-"EXECABORT Transaction discarded because of previous errors."`, "EXEC")
	expect(`:0`, "EXISTS", "k0")

	// WATCH of more keys than one entry carries: refused, nothing watched.
	keys := []string{"WATCH"}
	for i := range 40000 {
		keys = append(keys, fmt.Sprintf("watched-key-%d", i))
	}
	c.send(keys...)
	if v := c.read(); v.kind != '-' || !strings.HasPrefix(v.str, "ERR transaction too large") {
		t.Errorf("WATCH of 40000 keys: %s", v)
	}
	// Many keys within the bound, the same key many times, then EXEC.
	expect(`+"OK"`, append([]string{"WATCH"}, keys[1:5000]...)...)
	dup := []string{"WATCH"}
	for range 10000 {
		dup = append(dup, "same")
	}
	expect(`+"OK"`, dup...)
	expect(`+"OK"`, "MULTI")
	expect(`+"QUEUED"`, "SET", "k", "v")
	expect(`*[+"OK"]`, "EXEC")

	// A pipelined flood of MULTI/EXEC pairs and stray EXECs.
	var b strings.Builder
	for range 2000 {
		b.WriteString(encode("MULTI") + encode("INCR", "n") + encode("EXEC") + encode("EXEC") + encode("DISCARD"))
	}
	c.write(b.String())
	for i := range 2000 {
		for j, want := range []string{`+"OK"`, `+"QUEUED"`, `*[:` + fmt.Sprint(i+1) + `]`, `-"ERR EXEC without MULTI"`, `-"ERR DISCARD without MULTI"`} {
			if got := c.read().String(); got != want {
				t.Fatalf("pair %d, reply %d: %s, want %s", i, j, got, want)
			}
		}
	}
	if err := n.client(t).Ping(ctx).Err(); err != nil {
		t.Fatalf("the node stopped serving: %v", err)
	}
	if rss := n.rssBytes(t); rss > 512<<20 {
		t.Errorf("RSS %d MiB after the attacks", rss>>20)
	}
}

// TestBadFunctionInput: Redis 7's Functions under hostile input. Libraries
// past fenced's bounds (4,096 functions, 1 MiB of names and descriptions;
// the engine's 1 MiB of code is past what an argument may be) are refused; a library that loops or recurses at load stops
// at the step limit, and a function that does at its call; RESTORE of
// garbage, of a huge payload and of many libraries that each load slowly
// (one step budget for them all) is refused; a pathological LIBRARYNAME
// pattern is bounded. Each refusal changes nothing, each answer comes
// within seconds, and the node serves on.
func TestBadFunctionInput(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.soloClient(t)
	expect := func(want string, args ...any) {
		t.Helper()
		start := time.Now()
		got, err := do(tctx(t), c, args...)
		if err != nil {
			got = "error: " + err.Error()
		}
		if s := fmt.Sprint(got); !strings.Contains(s, want) {
			t.Errorf("%.60q = %.200s, want %s", args, s, want)
		}
		// A step budget is a second or two, ten and more under -race.
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%.60q took %v", args, took)
		}
	}
	expect("lib", "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('ok', function() return 1 end)")
	// As large as an argument may be (512 KiB): loaded, counted, deleted.
	expect("big", "FUNCTION", "LOAD", "#!lua name=big\nredis.register_function('big', function() return 1 end)\n--"+strings.Repeat("-", 500<<10))
	expect("OK", "FUNCTION", "DELETE", "big")
	expect("error: ERR Error registering functions: ERR a library may register at most 4096 functions",
		"FUNCTION", "LOAD", "#!lua name=many\nlocal r = redis.register_function\nfor i = 1, 100000 do r('f' .. i, function() end) end")
	expect("error: ERR Error registering functions: ERR a library's function names and descriptions may take at most 1 MiB",
		"FUNCTION", "LOAD", "#!lua name=wide\nlocal d = 'x'\nfor i = 1, 20 do d = d .. d end\nfor i = 1, 4000 do redis.register_function{function_name='f' .. i, callback=function() end, description=d} end")
	expect("error: ERR Error registering functions: ERR FUNCTION LOAD timeout", "FUNCTION", "LOAD", "#!lua name=loop\nwhile 1 do end")
	expect("error: ERR Error registering functions: ERR user_function:2: stack overflow",
		"FUNCTION", "LOAD", "#!lua name=deep\nlocal function r(n) return r(n + 1) + 1 end\nr(1)")
	expect("rec", "FUNCTION", "LOAD", "#!lua name=rec\nlocal function r(n) return r(n + 1) + 1 end\n"+
		"redis.register_function('rec', function() return r(1) end)\nredis.register_function('spin', function() while true do end end)\n"+
		"redis.register_function('grow', function() local s = 'x' while true do s = s .. s end end)")
	expect("stack overflow", "FCALL", "rec", "0")
	expect("error: ERR script exceeded its work limit", "FCALL", "spin", "0")
	expect("error: ERR script exceeded its work limit", "FCALL", "grow", "0")

	const badPayload = "error: ERR DUMP payload version or checksum are wrong"
	expect(badPayload, "FUNCTION", "RESTORE", "garbage")
	expect(badPayload, "FUNCTION", "RESTORE", strings.Repeat("\xff", 500<<10))
	expect(badPayload, "FUNCTION", "RESTORE", "FNCD\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00")
	// Four libraries that each spend over a third of the step budget at
	// load: loaded one by one, each is fine; restored together they are
	// not.
	for i := range 4 {
		code := fmt.Sprintf("#!lua name=slow%d\nfor i = 1, 1800000 do end\nredis.register_function('slow%d', function() return %d end)", i, i, i)
		expect(fmt.Sprintf("slow%d", i), "FUNCTION", "LOAD", code)
	}
	dump, err := c.Do(tctx(t), "FUNCTION", "DUMP").Text()
	if err != nil {
		t.Fatal(err)
	}
	expect("OK", "FUNCTION", "FLUSH")
	expect("error: ERR Error registering functions: ERR FUNCTION LOAD timeout", "FUNCTION", "RESTORE", dump)
	expect("[]", "FUNCTION", "LIST")
	expect("[]", "FUNCTION", "LIST", "LIBRARYNAME", strings.Repeat("*a", 2000)+"b")
	if v, err := do(tctx(t), c, "PING"); err != nil || v != "PONG" {
		t.Fatalf("PING after the hostile functions: %v %v", v, err)
	}
	if !n.alive() {
		t.Fatal("the server died")
	}
}

// TestBadBitInput: the bit commands, LCS, RPOP and HMSET (cluster version
// 3) under hostile input. A held lock's name is never written (WRONGTYPE,
// LCS's own error, the lock and its token unchanged); SETBIT refuses
// Redis's out-of-range offsets and grows a string to fenced's 4 MiB and
// not a bit more, its offset charged against --maxmemory before it runs;
// LCS refuses a table past 4 MiB (two strings of 4 MiB answer at once);
// ranges and counts at the ends of int64 are clipped; and the node serves
// on. Each refusal changes nothing.
func TestBadBitInput(t *testing.T) {
	t.Parallel()
	_, c, ctx, tok, expect := heldLockNode(t, "bits", "--maxmemory", "16mb")
	for _, args := range [][]any{{"SETBIT", "held", "0", "1"}, {"GETBIT", "held", "0"}, {"BITCOUNT", "held"},
		{"BITPOS", "held", "1"}, {"RPOP", "held"}, {"RPOP", "held", "2"}, {"HMSET", "held", "f", "v"}} {
		expect(wrongType, args...)
	}
	const notStrings = "error: ERR The specified keys must contain string values"
	expect(notStrings, "LCS", "held", "x")
	expect(notStrings, "LCS", "x", "held", "IDX")
	expect("fencedlock", "TYPE", "held")
	expect(fmt.Sprint(tok), "FENCE", "held")

	// SETBIT: Redis's offset limit first, then fenced's 4 MiB string.
	const badOffset = "error: ERR bit offset is not an integer or out of range"
	for _, off := range []string{"4294967296", "-1", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e3", " 1"} {
		expect(badOffset, "SETBIT", "big", off, "1")
		expect(badOffset, "GETBIT", "big", off)
	}
	const tooLarge = "error: ERR the string would grow past 4 MiB, the largest SETBIT may make"
	expect(tooLarge, "SETBIT", "big", "4294967295", "1")
	expect(tooLarge, "SETBIT", "big", strconv.Itoa(4<<23), "0")
	expect("0", "EXISTS", "big")
	expect("0", "SETBIT", "big", strconv.Itoa(4<<23-1), "1")
	expect(strconv.Itoa(4<<20), "STRLEN", "big")
	expect(tooLarge, "SETBIT", "big", strconv.Itoa(4<<23), "1")
	expect("1", "GETBIT", "big", strconv.Itoa(4<<23-1))
	expect("0", "GETBIT", "big", "4294967295")
	// Ranges at the ends of int64, in both units, over the 4 MiB string.
	for _, unit := range []string{"BYTE", "BIT"} {
		expect("1", "BITCOUNT", "big", "-9223372036854775808", "9223372036854775807", unit)
		expect("0", "BITCOUNT", "big", "9223372036854775807", "-9223372036854775808", unit)
		expect("-1", "BITPOS", "big", "0", "9223372036854775807", "-9223372036854775808", unit)
	}
	expect(strconv.Itoa(4<<23-1), "BITPOS", "big", "1", "-9223372036854775808", "9223372036854775807", "BIT")
	expect("0", "BITPOS", "big", "0", "-9223372036854775808")

	// LCS: a table past 4 MiB is refused at once, whatever the options;
	// the largest one allowed is computed, in a script too.
	const lcsMemory = "error: ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	expect(lcsMemory, "LCS", "big", "big")
	expect(lcsMemory, "LCS", "big", "big", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "9223372036854775807")
	expect("OK", "SET", "x", strings.Repeat("xy", 511)+"x")
	expect("OK", "SET", "y", strings.Repeat("yx", 511)+"y")
	expect("1022", "LCS", "x", "y", "LEN")
	expect("1022", "EVAL", "local n = 0 for i = 1, 20 do n = redis.call('LCS', KEYS[1], KEYS[2], 'LEN') end return n", "2", "x", "y")
	expect("error: ERR value is not an integer or out of range", "LCS", "x", "y", "MINMATCHLEN", "99999999999999999999")

	// RPOP: counts at the ends, an emptied list is gone.
	expect("error: ERR value is out of range, must be positive", "RPOP", "l", "-9223372036854775808")
	expect("3", "RPUSH", "l", "a", "b", "c")
	expect("[c b a]", "RPOP", "l", "9223372036854775807")
	expect("0", "EXISTS", "l")
	expect("error: ERR wrong number of arguments for 'rpop' command", "RPOP", "l", "1", "2")

	// HMSET: an odd pair is the arity error; a hash stops at 4 MiB.
	expect("error: ERR wrong number of arguments for 'hmset' command", "HMSET", "h", "f", "v", "g")
	expect("0", "EXISTS", "h")
	chunk := strings.Repeat("v", 512<<10-64)
	for i := range 8 {
		expect("OK", "HMSET", "h", fmt.Sprint("f", i), chunk)
	}
	expect("error: ERR the key would grow past 4 MiB, the largest hash, list or set a key may hold", "HMSET", "h", "f8", chunk)
	expect("8", "HLEN", "h")
	expect("1", "DEL", "h")

	// Filling the state up to --maxmemory with SETBITs of a few bytes of
	// arguments each: the one whose offset would pad the state past it is
	// refused as OOM before it runs, and everything can be deleted.
	oom := -1
	for i := range 6 {
		got, err := do(ctx, c, "SETBIT", fmt.Sprintf("fill%d", i), strconv.Itoa(4<<23-1), "1")
		if err != nil {
			if err.Error() != oomReply {
				t.Fatalf("SETBIT fill%d: %v", i, err)
			}
			oom = i
			break
		}
		if got != int64(0) {
			t.Fatalf("SETBIT fill%d = %v", i, got)
		}
	}
	if oom < 1 {
		t.Fatalf("SETBIT refused at fill%d; want some to fit, then an OOM", oom)
	}
	expect("0", "EXISTS", fmt.Sprintf("fill%d", oom))
	expect("OK", "SET", "small", "x")
	for i := range oom {
		expect("1", "DEL", fmt.Sprintf("fill%d", i))
	}
	expect("PONG", "PING")
}
