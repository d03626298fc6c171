package test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Time at the edges against real nodes.

// termBound is how long SIGTERM may take to stop a node, whatever its state
// holds (README: Flags).
const termBound = 10 * time.Second

// idleGrowth is how many entries n applies in d with no client traffic.
func idleGrowth(t testing.TB, n *node, d time.Duration) int64 {
	t.Helper()
	c := n.client(t)
	before := appliedIndex(t, c)
	time.Sleep(d)
	return appliedIndex(t, c) - before
}

// TestFarFutureTTLs: TTLs that Redis accepts, up to the end of the int64
// range, are accepted and kept; they make no ticks (before the fix, SET k v
// EX 10000000000 made the leader commit thousands of ticks a second and
// SIGTERM never returned), and they survive a restart.
func TestFarFutureTTLs(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	ctx := tctx(t)
	now := time.Now().UnixMilli()
	cmds := [][]any{
		{"SET", "ex", "v", "EX", "10000000000"},
		{"SET", "pxat", "v", "PXAT", "9223372036854775807"},
		{"SET", "exat", "v", "EXAT", "9223372036854775"},
		{"SET", "px", "v", "PX", "9000000000000000000"},
		{"SET", "e1", "v"}, {"EXPIRE", "e1", "9000000000000000"},
		{"SET", "e2", "v"}, {"PEXPIREAT", "e2", "9223372036854775807"},
		{"SET", "e3", "v"}, {"EXPIREAT", "e3", "9223372036854775"},
		{"RPUSH", "l", "x"}, {"BLPOP", "l", "9000000000000000"},
		{"EVAL", "return redis.call('SET', 'script', 'v', 'EX', '10000000000')", "0"},
	}
	for _, cmd := range cmds {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	// What each PTTL must be about: the deadline minus now, in Unix ms.
	want := map[string]int64{
		"ex": 10_000_000_000_000, "pxat": 9223372036854775807 - now, "exat": 9223372036854775000 - now,
		"px": 9_000_000_000_000_000_000, "e1": 9_000_000_000_000_000_000, "e2": 9223372036854775807 - now,
		"e3": 9223372036854775000 - now, "script": 10_000_000_000_000,
	}
	checkTTLs := func(when string) {
		t.Helper()
		for k, w := range want {
			// The raw reply: go-redis's PTTL makes a Duration of it.
			raw, err := c.Do(ctx, "PTTL", k).Int64()
			if err != nil {
				t.Fatalf("%s: PTTL %s: %v", when, k, err)
			}
			if raw > w || raw < w-5*60*1000 {
				t.Errorf("%s: PTTL %s = %d, want about %d", when, k, raw, w)
			}
		}
	}
	checkTTLs("at once")
	if g := idleGrowth(t, n, 3*time.Second); g > 3 {
		t.Fatalf("the applied index grew by %d entries in 3 s of idleness, want at most 3", g)
	}

	start := time.Now()
	n.signalAndWait(syscall.SIGTERM, termBound)
	t.Logf("SIGTERM stopped the node in %v", time.Since(start).Round(time.Millisecond))

	n.restart()
	if g := idleGrowth(t, n, 3*time.Second); g > 3 {
		t.Fatalf("after a restart the applied index grew by %d entries in 3 s of idleness, want at most 3", g)
	}
	c = n.client(t)
	checkTTLs("after a restart")
	start = time.Now()
	n.term()
	if d := time.Since(start); d > termBound {
		t.Fatalf("SIGTERM took %v", d)
	}
}

// scriptTime is a script's TIME on cl, in Unix ms.
func scriptTime(t testing.TB, cl *redis.Client) int64 {
	t.Helper()
	v, err := cl.Eval(tctx(t), "return redis.call('TIME')", nil).StringSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("EVAL TIME = %v, %v", v, err)
	}
	s, err1 := strconv.ParseInt(v[0], 10, 64)
	us, err2 := strconv.ParseInt(v[1], 10, 64)
	if err1 != nil || err2 != nil || us < 0 || us >= 1_000_000 {
		t.Fatalf("EVAL TIME = %q", v)
	}
	return s*1000 + us/1000
}

// TestScriptTimeIsUnixTime: redis.call('TIME') answers Unix time, on a fresh
// node and after a leader change, the same on every replica (their state
// hashes agree); and it never goes backwards, even when the new leader's
// wall clock is a minute behind.
func TestScriptTimeIsUnixTime(t *testing.T) {
	t.Parallel()
	near := func(what string, got int64) {
		t.Helper()
		if d := got - time.Now().UnixMilli(); d < -1000 || d > 1000 {
			t.Fatalf("%s: script TIME is %d ms from the machine's Unix time", what, d)
		}
	}
	n := startNode(t, nodeOpts{})
	near("fresh node", scriptTime(t, n.client(t)))

	// n2's wall clock is a minute behind; n3's is right.
	c := startCluster(t, 3, nil, []string{"--clock-offset", "-1m"})
	l := c.leader(10 * time.Second)
	if l == c.nodes[1] {
		transferLeadership(t, c, c.nodes[0])
		l = c.nodes[0]
	}
	first := scriptTime(t, l.client(t))
	near("leader", first)
	checkSameState(t, c.nodes)

	transferLeadership(t, c, c.nodes[2])
	second := scriptTime(t, c.nodes[0].client(t)) // through a follower
	near("after a leader change", second)
	if second < first {
		t.Fatalf("script TIME went back from %d to %d", first, second)
	}
	checkSameState(t, c.nodes)

	transferLeadership(t, c, c.nodes[1]) // the late clock
	third := scriptTime(t, c.nodes[1].client(t))
	if third < second {
		t.Fatalf("script TIME went back from %d to %d after the leader with the late clock took over", second, third)
	}
	checkSameState(t, c.nodes)
	if !strings.Contains(c.id(c.nodes[1]), "n2") {
		t.Fatalf("node order: %v", c.ids)
	}
}
