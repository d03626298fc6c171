package test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Transactions on a 3-node cluster, black box: a WATCH taken on one node is
// broken by a write through another node, by a script and by expiry; an
// EXEC through a follower commits once, atomically on every replica (equal
// RAFT.HASH, and no reader through another node ever sees half of it); and
// a WATCH survives a leader change, still telling a changed key from an
// unchanged one.
func TestMultiCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	l := c.leader(20 * time.Second)
	fs := c.followers(l)
	f1, f2 := fs[0], fs[1]
	ctx := tctx(t)
	lc, c1, c2 := l.client(t), f1.soloClient(t), f2.client(t)

	// watchExec runs WATCH key on cl's one connection, then during (another
	// client's doing), then MULTI INCR key EXEC, and reports whether the
	// transaction ran.
	watchExec := func(cl *redis.Client, key string, during func()) bool {
		t.Helper()
		err := cl.Watch(ctx, func(tx *redis.Tx) error {
			during()
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, key)
				return nil
			})
			return err
		}, key)
		switch {
		case errors.Is(err, redis.TxFailedErr):
			return false
		case err != nil:
			t.Fatalf("transaction on %s: %v", key, err)
		}
		return true
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	must(lc.Set(ctx, "w", "1", 0).Err())
	if !watchExec(c1, "w", func() {}) {
		t.Error("an unchanged watched key failed the EXEC through a follower")
	}
	if watchExec(c1, "w", func() { must(c2.Set(ctx, "w", "5", 0).Err()) }) {
		t.Error("a write through another follower did not break the WATCH")
	}
	if watchExec(c1, "w", func() { must(lc.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"w"}).Err()) }) {
		t.Error("a script did not break the WATCH")
	}
	if watchExec(c1, "absent", func() { must(c2.Set(ctx, "absent", "1", 0).Err()) }) {
		t.Error("creating a key watched absent did not break the WATCH")
	}
	must(lc.Set(ctx, "e", "1", 300*time.Millisecond).Err())
	if watchExec(c1, "e", func() { time.Sleep(700 * time.Millisecond) }) {
		t.Error("the key's expiry did not break the WATCH")
	}
	if v, err := lc.Get(ctx, "w").Result(); err != nil || v != "6" {
		t.Errorf("w = %q, %v; want 6 (1, +1 by the first EXEC, set to 5, +1 by the script)", v, err)
	}

	// Atomicity: a writer's transactions through a follower set a and b
	// together; readers through the other nodes must never see them apart.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var torn atomic.Int64
	var reads atomic.Int64
	for _, n := range []*node{l, f2} {
		rc := n.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				v, err := rc.MGet(ctx, "ta", "tb").Result()
				if err != nil {
					continue
				}
				reads.Add(1)
				if !reflect.DeepEqual(v[0], v[1]) {
					torn.Add(1)
					t.Errorf("read %v: half a transaction", v)
				}
			}
		}()
	}
	for i := range 100 {
		_, err := c1.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "ta", i, 0)
			p.Set(ctx, "tb", i, 0)
			return nil
		})
		must(err)
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no read completed: atomicity was not observed")
	}
	sameHashes(t, c)

	// A leader change between WATCH and EXEC: the index WATCH recorded
	// means the same to the new leader.
	for _, changed := range []bool{false, true} {
		cl := f1.soloClient(t)
		ran := watchExec(cl, "w", func() {
			l := c.leader(20 * time.Second)
			var next *node
			for _, n := range c.followers(l) {
				next = n
			}
			transferLeadership(t, c, next)
			if changed {
				must(next.client(t).Incr(ctx, "w").Err())
			}
		})
		if ran == changed {
			t.Errorf("after a leader change, key changed %v: the EXEC ran %v", changed, ran)
		}
	}
	sameHashes(t, c)
}

// sameHashes waits until every node reports the same applied index and
// state hash (RAFT.HASH).
func sameHashes(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var hs []string
		for _, n := range c.nodes {
			v, err := doWithin(n.client(t), 5*time.Second, "RAFT.HASH")
			if err != nil {
				t.Fatalf("RAFT.HASH: %v", err)
			}
			hs = append(hs, fmt.Sprint(v))
		}
		if hs[0] == hs[1] && hs[1] == hs[2] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RAFT.HASH differs: %v", hs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// go-redis's optimistic locking, from its documentation: each goroutine
// increments one counter with WATCH, GET, MULTI SET EXEC, retrying when the
// EXEC fails. With clients on every node of a cluster, the counter ends at
// exactly the number of transactions that succeeded.
func TestMultiGoRedisWatchCounter(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	ctx := tctx(t)
	const key, workers, each = "counter", 6, 20
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		cl := c.nodes[w%len(c.nodes)].client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for try := 0; try < 1000; try++ {
					err := cl.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, key).Int()
						if err != nil && err != redis.Nil {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, key, n+1, 0)
							return nil
						})
						return err
					}, key)
					if err == nil {
						ok.Add(1)
						break
					}
					if !errors.Is(err, redis.TxFailedErr) {
						t.Errorf("transaction: %v", err)
						return
					}
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	n, err := c.nodes[0].client(t).Get(context.Background(), key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if n != ok.Load() || n != workers*each {
		t.Fatalf("counter %d, %d transactions succeeded (want %d)", n, ok.Load(), workers*each)
	}
	t.Logf("%d transactions, %d EXECs failed on a changed key and were retried", ok.Load(), failed.Load())
	if failed.Load() == 0 {
		t.Log("no conflict happened: the WATCH was not exercised by this run")
	}
}
