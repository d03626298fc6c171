package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// stateHashes waits until every live node has applied the same index and
// returns their RAFT.HASH (index, hash) replies, by node.
func stateHashes(t testing.TB, nodes []*node) []string {
	t.Helper()
	var out []string
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = n.client(t)
	}
	eventually(t, 10*time.Second, "all nodes at one applied index", func() bool {
		out = out[:0]
		for _, cl := range clients {
			v, err := do(tctx(t), cl, "RAFT.HASH")
			if err != nil {
				return false
			}
			a, ok := v.([]any)
			if !ok || len(a) != 2 {
				t.Fatalf("RAFT.HASH = %#v", v)
			}
			out = append(out, fmt.Sprint(a[0], " ", a[1]))
		}
		for _, h := range out[1:] {
			if strings.Fields(h)[0] != strings.Fields(out[0])[0] {
				return false
			}
		}
		return true
	})
	return out
}

func checkSameState(t testing.TB, nodes []*node) {
	t.Helper()
	hs := stateHashes(t, nodes)
	for i, h := range hs[1:] {
		if h != hs[0] {
			t.Fatalf("replicas differ: node 0 %s, node %d %s", hs[0], i+1, h)
		}
	}
}

// TestScriptsOnCluster: a script loaded through a follower is known to every
// node, and after the leader is killed; a script sees one frozen time;
// runaway scripts stop with the same error on every node, which keep the
// same state and go on serving.
// TestScriptsOnCluster is parallel unless the server is race-built: a
// script that runs to its work limit on a -race server forwarded through a
// follower nears the forwarding timeout when the machine is busy.
func TestScriptsOnCluster(t *testing.T) {
	parallelUnlessRaceServer(t)
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	f0, f1, l := fs[0].client(t), fs[1].client(t), leader.client(t)
	ctx := tctx(t)

	src := "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"
	sha, err := f0.ScriptLoad(ctx, src).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD through a follower: %v", err)
	}
	for i, cl := range []*redis.Client{f0, f1, l} {
		ex, err := cl.ScriptExists(ctx, sha).Result()
		if err != nil || len(ex) != 1 || !ex[0] {
			t.Fatalf("node %d: SCRIPT EXISTS = %v, %v", i, ex, err)
		}
	}
	if v, err := f1.EvalSha(ctx, sha, []string{"lk"}, "a", 60000).Result(); err != nil || v != "OK" {
		t.Fatalf("EVALSHA on the other follower = %v, %v", v, err)
	}
	if _, err := l.EvalSha(ctx, sha, []string{"lk"}, "b", 60000).Result(); err != redis.Nil {
		t.Fatalf("EVALSHA of a held lock = %v, want nil", err)
	}
	if _, err := l.EvalSha(ctx, strings.Repeat("0", 40), nil).Result(); err == nil ||
		err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
		t.Fatalf("EVALSHA unknown = %v", err)
	}

	// Frozen time: TIME twice around a busy loop is the same instant.
	v, err := f0.Eval(ctx, `local a = redis.call('TIME') local n = 0 for i = 1, 300000 do n = n + i end
		local b = redis.call('TIME') return {a[1], a[2], b[1], b[2]}`, nil).StringSlice()
	if err != nil || len(v) != 4 || v[0] != v[2] || v[1] != v[3] {
		t.Fatalf("TIME inside a script = %v, %v: want one frozen instant", v, err)
	}

	// Runaway scripts, through the leader and a follower.
	for _, tc := range []struct {
		cl   *redis.Client
		src  string
		want string
	}{
		{f0, "while true do end", "ERR script exceeded its work limit"},
		{l, "for i = 1, 1000000 do redis.call('incr', KEYS[1]) end return 1", "ERR script exceeded its limit of redis.call"},
		{f1, "local function f() return f() + 1 end return f()", "stack overflow"},
		{l, "return loadstring(string.dump(function() end))", "nonexistent global variable"},
	} {
		_, err := tc.cl.Eval(ctx, tc.src, []string{"n"}).Result()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.src, err, tc.want)
		}
		if v := mustStr(t, tc.cl, "SET", "after", tc.src); v != "OK" {
			t.Fatalf("SET after %q = %q", tc.src, v)
		}
	}
	checkSameState(t, c.nodes)

	// Scripts are replicated state: they outlive the leader.
	leader.kill()
	nl := c.leader(15 * time.Second)
	if v, err := nl.client(t).EvalSha(ctx, sha, []string{"lk2"}, "c", 60000).Result(); err != nil || v != "OK" {
		t.Fatalf("EVALSHA on the new leader = %v, %v", v, err)
	}
}

// TestBlpopOnCluster: BLPOP waits on any node and is woken by a push made
// through another node, also by a script; timeout 0 waits until then, a
// timeout answers a null array.
func TestBlpopOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)

	type popped struct {
		v   []string
		err error
		at  time.Time
	}
	wait := func(cl *redis.Client, timeout time.Duration, keys ...string) chan popped {
		ch := make(chan popped, 1)
		go func() {
			v, err := cl.BLPop(ctx, timeout, keys...).Result()
			ch <- popped{v, err, time.Now()}
		}()
		return ch
	}
	for i, push := range []func(cl *redis.Client) error{
		func(cl *redis.Client) error { return cl.RPush(ctx, "q2", "x").Err() },
		func(cl *redis.Client) error {
			return cl.Eval(ctx, "return redis.call('lpush', KEYS[1], ARGV[1])", []string{"q2"}, "x").Err()
		},
	} {
		got := wait(fs[0].client(t), 0, "q1", "q2")
		time.Sleep(300 * time.Millisecond)
		select {
		case p := <-got:
			t.Fatalf("case %d: BLPOP with timeout 0 returned before any push: %v %v", i, p.v, p.err)
		default:
		}
		pushedAt := time.Now()
		if err := push(fs[1].client(t)); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p.err != nil || fmt.Sprint(p.v) != "[q2 x]" {
				t.Fatalf("case %d: BLPOP = %v, %v", i, p.v, p.err)
			}
			t.Logf("case %d: woken %v after the push", i, p.at.Sub(pushedAt))
		case <-time.After(10 * time.Second):
			t.Fatalf("case %d: BLPOP not woken by a push through another node", i)
		}
	}
	start := time.Now()
	if _, err := leader.client(t).BLPop(ctx, 200*time.Millisecond, "q1").Result(); err != redis.Nil {
		t.Fatalf("BLPOP timed out = %v, want nil", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("BLPOP 0.2 returned after %v", d)
	}
	// Two waiters, two pushes: each element goes to exactly one of them.
	a, b := wait(fs[0].client(t), 5*time.Second, "q3"), wait(leader.client(t), 5*time.Second, "q3")
	time.Sleep(200 * time.Millisecond)
	if err := fs[1].client(t).RPush(ctx, "q3", "e1", "e2").Err(); err != nil {
		t.Fatal(err)
	}
	pa, pb := <-a, <-b
	if pa.err != nil || pb.err != nil || len(pa.v) != 2 || len(pb.v) != 2 || pa.v[1] == pb.v[1] {
		t.Fatalf("two waiters got %v %v / %v %v", pa.v, pa.err, pb.v, pb.err)
	}
	if n := mustInt(t, leader.client(t), "EXISTS", "q3"); n != 0 {
		t.Fatalf("q3 still exists after both elements were popped")
	}
	checkSameState(t, c.nodes)
}
