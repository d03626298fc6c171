package test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// invalidated reads the next frame of c, which must be an invalidation
// push, and returns its keys.
func invalidated(t *testing.T, c *rawConn, what string) []string {
	t.Helper()
	v := c.read()
	if v.kind != '>' || len(v.elems) != 2 || v.elems[0].str != "invalidate" {
		t.Fatalf("%s: got %s, want an invalidation", what, v)
	}
	var keys []string
	for _, k := range v.elems[1].elems {
		keys = append(keys, k.str)
	}
	return keys
}

// TestTrackingCluster: a tracking connection on a follower hears of the
// writes made through the leader, through the other follower, by a script
// and by expiry, in log order; BCAST connections on all three nodes hear
// the same keys in the same order while four writers write through
// different nodes at once.
func TestTrackingCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)

	tc := dialRaw(t, fs[0].addr)
	for _, args := range [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "ON"}} {
		tc.send(args...)
		tc.read()
	}
	if err := leader.client(t).Set(ctx, "e", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The follower has applied it before the reads: else its apply,
	// after the reads are tracked, invalidates e once more (an extra
	// invalidation, which a cache tolerates, but not this test's order).
	applied := mustRaftStatus(t, leader).int(t, "applied_index")
	for mustRaftStatus(t, fs[0]).int(t, "applied_index") < applied {
		time.Sleep(10 * time.Millisecond)
	}
	for _, k := range []string{"a", "b", "c", "e"} {
		tc.send("GET", k)
		tc.read()
	}
	lc, f2 := leader.client(t), fs[1].client(t)
	if err := lc.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f2.Set(ctx, "b", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := lc.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{"c"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f2.PExpire(ctx, "e", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, what := range []string{"leader's SET", "other follower's SET", "script", "PEXPIRE"} {
		got = append(got, invalidated(t, tc, what)...)
	}
	if want := []string{"a", "b", "c", "e"}; !slices.Equal(got, want) {
		t.Fatalf("invalidations %q, want %q (log order)", got, want)
	}
	// e was forgotten at its PEXPIRE: read again, its expiry (a tick
	// entry) invalidates it.
	tc.send("GET", "e")
	if v := tc.read(); v.kind != '$' {
		t.Fatalf("GET e: %s", v)
	}
	start := time.Now()
	if keys := invalidated(t, tc, "expiry"); !slices.Equal(keys, []string{"e"}) {
		t.Fatalf("expiry invalidated %q", keys)
	}
	t.Logf("expiry heard %v after the read", time.Since(start))

	// Every node sends its BCAST clients the keys in log order.
	var bc []*rawConn
	for _, n := range c.nodes {
		r := dialRaw(t, n.addr)
		for _, args := range [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "o:"}} {
			r.send(args...)
			r.read()
		}
		bc = append(bc, r)
	}
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for g := range writers {
		cl := c.nodes[g%3].client(t)
		wg.Go(func() {
			for i := range each {
				if err := cl.Set(ctx, fmt.Sprintf("o:%d:%02d", g, i), "v", 0).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var seqs [][]string
	for i, r := range bc {
		var seq []string
		for range writers * each {
			seq = append(seq, invalidated(t, r, fmt.Sprintf("BCAST on node %d", i))...)
		}
		seqs = append(seqs, seq)
	}
	for i := 1; i < len(seqs); i++ {
		if !slices.Equal(seqs[i], seqs[0]) {
			t.Fatalf("node %d heard %q\nnode 0 heard %q", i, seqs[i], seqs[0])
		}
	}
	// Each writer's keys in its own order, all of them once.
	for g := range writers {
		var mine []string
		for _, k := range seqs[0] {
			if k[:4] == fmt.Sprintf("o:%d:", g) {
				mine = append(mine, k)
			}
		}
		if len(mine) != each || !slices.IsSorted(mine) {
			t.Errorf("writer %d: heard %q", g, mine)
		}
	}
}
