package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidis v1.0.79 and its rueidislock, unchanged, with client-side caching
// on (RESP3, CLIENT TRACKING ... OPTIN or OPTOUT at connect): rueidislock
// waits for a held lock by the invalidation of its keys (it polls only
// when caching is off), so without CLIENT TRACKING its waiters would never
// wake.

// rueidisClient is a rueidis client of one node with caching on.
func rueidisClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
	if err != nil {
		t.Fatalf("rueidis at %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRueidisLockCluster: lockers on all three nodes (caching on; with
// and without NOLOOP) take and release one lock from several goroutines
// each. The history of acquisitions and releases, on one monotonic clock,
// is checked by the fault tests' SET NX lock model (keyLockModel): an
// acquisition only while the lock is free; besides, no two holders are
// ever inside at once and every acquisition is counted once.
func TestRueidisLockCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	c.leader(10 * time.Second)
	// Longer than tctx's minute: a starved wait takes its 30 s and the
	// rounds after it go on.
	ctx, cancelAll := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancelAll()
	h := newHistory()
	const name = "job"
	var (
		inside, overlaps, held, starved, lost, starvedPlain atomic.Int32
		wg                                                  sync.WaitGroup
		seq                                                 atomic.Int64
	)
	const perLocker, rounds = 2, 6
	for i, n := range c.nodes {
		for _, noloop := range []bool{false, true} {
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{
				ClientOption:   rueidis.ClientOption{InitAddress: []string{n.addr}},
				KeyValidity:    3 * time.Second,
				NoLoopTracking: noloop,
			})
			if err != nil {
				t.Fatalf("locker on node %d: %v", i, err)
			}
			t.Cleanup(l.Close)
			for g := range perLocker {
				client := int(seq.Add(1))
				wg.Go(func() {
					for r := range rounds {
						val := fmt.Sprintf("c%d-r%d", client, r)
						call := h.now()
						// The wait is bounded by cancelling, not by a deadline:
						// rueidislock shortens a lease to the deadline of the
						// context it acquires with, and ends the lease when
						// that context ends. Both made the holder's lock end
						// under it (an overlap in CI, 2026-11-27, with a lease
						// cut short near the 30 s deadline), so the wait's
						// context lives until the release.
						wctx, cancelWait := context.WithCancel(ctx)
						timer := time.AfterFunc(30*time.Second, cancelWait)
						lctx, cancel, err := l.WithContext(wctx, name)
						timedOut := !timer.Stop()
						ret := h.now()
						if err != nil {
							cancelWait()
							h.add(histOp{Client: client, Kind: "set", Lock: name, Session: val, TTL: 3000, Err: err.Error(), Outcome: outFail, Call: call, Return: ret})
							if timedOut {
								// Starved for 30 s: twelve goroutines race for
								// one lock with no queue (rueidislock is not
								// fair), and a NOLOOP locker wakes only for
								// another connection's change. Seen in CI under
								// load (6 of 72, all NOLOOP, with 30 s waits;
								// NOLOOP and not, with 10 s waits) and against
								// redis-server 7.0.15 alike (2 of 72 NOLOOP
								// beside four CPU hogs); counted, not failed.
								starved.Add(1)
								if !noloop {
									starvedPlain.Add(1)
								}
								t.Logf("node %d locker %d (noloop %v) round %d: no turn within 30 s", i, g, noloop, r)
								continue
							}
							t.Errorf("node %d locker %d (noloop %v) round %d: %v", i, g, noloop, r, err)
							return
						}
						h.add(histOp{Client: client, Kind: "set", Lock: name, Session: val, TTL: 3000, Outcome: outOK, Call: call, Return: ret})
						if !inside.CompareAndSwap(0, 1) {
							overlaps.Add(1)
						}
						held.Add(1)
						time.Sleep(2 * time.Millisecond)
						inside.Store(0)
						// A lease that ended under the holder (its extension
						// failed: rueidislock cancels lctx) is not a lock
						// held to its release: counted, and its release's
						// outcome left open for the checker.
						outcome := outOK
						if lctx.Err() != nil {
							lost.Add(1)
							outcome = outUnknown
						}
						call = h.now()
						cancel() // releases: waits for the keys' deletion
						cancelWait()
						h.add(histOp{Client: client, Kind: "unset", Lock: name, Session: val, Count: 1, Outcome: outcome, Call: call, Return: h.now()})
					}
				})
			}
		}
	}
	wg.Wait()
	if n := overlaps.Load(); n > lost.Load() {
		t.Errorf("%d times two holders were inside at once, %d leases lost under their holder", n, lost.Load())
	}
	want := int32(len(c.nodes) * 2 * perLocker * rounds)
	if got := held.Load(); got+starved.Load() != want || got < want/2 {
		t.Errorf("%d acquisitions and %d waits starved, want %d in all, at least half of them acquisitions", got, starved.Load(), want)
	}
	ops := h.ops
	model := keyLockModel(newKeyBounds(ops))
	for lock, pops := range keyOperations(ops) {
		if res := porcupine.CheckOperationsTimeout(model, pops, time.Minute); res != porcupine.Ok {
			t.Errorf("lock %s: the history of %d operations is not linearizable (%v)", lock, len(pops), res)
		}
	}
	t.Logf("%s; starved %d (%d without NOLOOP); leases lost under their holder %d", summarize(ops), starved.Load(), starvedPlain.Load(), lost.Load())
}

// TestRueidisCacheOnFollower: a value cached by DoCache on a follower is
// served from the cache until a write through the leader is applied on
// the follower, whose invalidation drops it; the next DoCache reads the
// new value. Both of rueidis's wire forms: CLIENT CACHING YES + GET
// (ToStaticTTL), and CLIENT CACHING YES + MULTI PTTL GET EXEC (the
// default, which needs MULTI).
func TestRueidisCacheOnFollower(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	f := c.followers(leader)[0]
	ctx := tctx(t)
	lc, fc := rueidisClient(t, leader.addr), rueidisClient(t, f.addr)
	for _, form := range []string{"static", "multi"} {
		t.Run(form, func(t *testing.T) {
			key := "cached:" + form
			if err := lc.Do(ctx, lc.B().Set().Key(key).Value("v1").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			get := func() (string, bool) {
				cmd := fc.B().Get().Key(key).Cache()
				if form == "static" {
					cmd = cmd.ToStaticTTL()
				}
				r := fc.DoCache(ctx, cmd, time.Minute)
				v, err := r.ToString()
				if err != nil {
					t.Fatal(err)
				}
				return v, r.IsCacheHit()
			}
			if v, _ := get(); v != "v1" {
				t.Fatalf("first read %q", v)
			}
			if v, hit := get(); v != "v1" || !hit {
				t.Fatalf("second read %q, cache hit %v: want v1 from the cache", v, hit)
			}
			if err := lc.Do(ctx, lc.B().Set().Key(key).Value("v2").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			// The follower applies the write, then sends the invalidation.
			deadline := time.Now().Add(10 * time.Second)
			for {
				v, hit := get()
				if v == "v2" && !hit {
					break
				}
				if v != "v1" || !hit || time.Now().After(deadline) {
					t.Fatalf("after the write through the leader: %q (cache hit %v)", v, hit)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if v, hit := get(); v != "v2" || !hit {
				t.Fatalf("after the invalidation: %q, cache hit %v; want v2 cached again", v, hit)
			}
		})
	}
}
