package test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// blockedClients reads INFO clients' blocked_clients of c's node.
func blockedClients(t *testing.T, c *redis.Client) string {
	t.Helper()
	info, err := c.Info(tctx(t), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			return v
		}
	}
	t.Fatalf("no blocked_clients in %q", info)
	return ""
}

// waitBlocked waits until c's node counts n blocked clients.
func waitBlocked(t *testing.T, c *redis.Client, n string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for blockedClients(t, c) != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients stayed %s, want %s", blockedClients(t, c), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBlmoveOnCluster: BLMOVE and BRPOPLPUSH wait on a follower, counted in
// its blocked_clients, and are woken by a push made through another node,
// an LMOVE's into their source too; the element lands in the destination
// on every node. A timeout answers nil; a destination of another type,
// found once woken, is WRONGTYPE with the element left in the source.
func TestBlmoveOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)
	waiter, pusher, lc := fs[0].client(t), fs[1].client(t), leader.client(t)

	type moved struct {
		v   string
		err error
	}
	wait := func(args ...any) chan moved {
		ch := make(chan moved, 1)
		go func() {
			v, err := waiter.Do(ctx, args...).Text()
			ch <- moved{v, err}
		}()
		return ch
	}
	for i, tc := range []struct {
		block []any
		push  []any
		src   string
		dst   string
		want  string
	}{
		{[]any{"BLMOVE", "m1", "m2", "LEFT", "RIGHT", "0"}, []any{"RPUSH", "m1", "x"}, "m1", "m2", "[x]"},
		// m2 holds x: an LMOVE through another node pushes it into m3.
		{[]any{"BRPOPLPUSH", "m3", "m4", "0"}, []any{"LMOVE", "m2", "m3", "LEFT", "LEFT"}, "m3", "m4", "[x]"},
	} {
		got := wait(tc.block...)
		waitBlocked(t, waiter, "1")
		select {
		case m := <-got:
			t.Fatalf("case %d: %v with timeout 0 returned before any push: %v %v", i, tc.block[0], m.v, m.err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := pusher.Do(ctx, tc.push...).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			if m.err != nil || m.v != "x" {
				t.Fatalf("case %d: %v = %q, %v; want x", i, tc.block[0], m.v, m.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("case %d: %v not woken by a push through another node", i, tc.block[0])
		}
		waitBlocked(t, waiter, "0")
		if got := lc.LRange(ctx, tc.dst, 0, -1).Val(); strings.Join(got, " ") != strings.Trim(tc.want, "[]") {
			t.Fatalf("case %d: %s = %q, want %s", i, tc.dst, got, tc.want)
		}
		if n := mustInt(t, lc, "EXISTS", tc.src); n != 0 {
			t.Fatalf("case %d: the emptied source %s still exists", i, tc.src)
		}
	}

	start := time.Now()
	if _, err := waiter.Do(ctx, "BLMOVE", "none", "m9", "RIGHT", "LEFT", "0.2").Result(); err != redis.Nil {
		t.Fatalf("BLMOVE timed out = %v, want nil", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("BLMOVE 0.2 returned after %v", d)
	}
	if n := mustInt(t, lc, "EXISTS", "m9"); n != 0 {
		t.Fatal("a timed-out BLMOVE created its destination")
	}

	// Blocked with a string as its destination (Redis does not look at it
	// before it waits): woken, WRONGTYPE, and the element stays.
	if err := lc.Set(ctx, "str", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got := wait("BLMOVE", "m5", "str", "LEFT", "LEFT", "0")
	waitBlocked(t, waiter, "1")
	if err := lc.RPush(ctx, "m5", "y").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.err == nil || !strings.HasPrefix(m.err.Error(), "WRONGTYPE") {
			t.Fatalf("BLMOVE into a string, woken: %q %v, want WRONGTYPE", m.v, m.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("BLMOVE into a string not woken")
	}
	if got := lc.LRange(ctx, "m5", 0, -1).Val(); strings.Join(got, " ") != "y" {
		t.Fatalf("m5 after the refused move: %q", got)
	}
	checkSameState(t, c.nodes)
}

// TestBlmoveTrackingOrder is Redis 7.0's tracking.tcl "Unblocked BLMOVE gets
// notification after response": a RESP3 tracking client that read list2
// blocks in BLMOVE list1 list2; a push to list1 unblocks it, and it reads
// the moved element first, then the invalidation of list2 (its own move's).
func TestBlmoveTrackingOrder(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	ctx := tctx(t)
	if err := c.RPush(ctx, "list2{t}", "a").Err(); err != nil {
		t.Fatal(err)
	}
	rd := dialRaw(t, n.addr)
	for _, args := range [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "on"}} {
		rd.send(args...)
		rd.read()
	}
	rd.send("LRANGE", "list2{t}", "0", "-1")
	if got := rd.read().String(); got != `*[$"a"]` {
		t.Fatalf("LRANGE = %s", got)
	}
	rd.send("BLMOVE", "list1{t}", "list2{t}", "left", "left", "0")
	waitBlocked(t, c, "1")
	if err := c.RPush(ctx, "list1{t}", "foo").Err(); err != nil {
		t.Fatal(err)
	}
	if got := rd.read().String(); got != `$"foo"` {
		t.Fatalf("BLMOVE = %s, want foo before any push", got)
	}
	if keys := invalidated(t, rd, "after BLMOVE"); strings.Join(keys, " ") != "list2{t}" {
		t.Fatalf("invalidated %q, want list2{t}", keys)
	}
}
