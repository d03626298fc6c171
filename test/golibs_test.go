package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// The Go lock libraries, unmodified, against a 3-node cluster:
// go-redsync/redsync (the latest the module proxy serves) and
// bsm/redislock v0.10.0 here; bsm/redislock v0.9.4, the version the proxy
// lists as latest, in the module test/compat/redislock094, run by
// TestGoRedislock094. Each is pointed at the leader and at a follower:
// acquire, extend, release, then 8 goroutines contend on one lock around a
// shared counter.

// goLib is one library's lock: obtain (retrying until it gets it), extend,
// release.
type goLib struct {
	name    string
	obtain  func(ctx context.Context, key string, ttl time.Duration) (goHeld, error)
	tryOnce func(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

type goHeld interface {
	extend(ctx context.Context, ttl time.Duration) error
	release(ctx context.Context) error
}

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) extend(ctx context.Context, _ time.Duration) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: extend failed")
	}
	return err
}

func (h redsyncHeld) release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock failed")
	}
	return err
}

type redislockHeld struct{ l *redislock.Lock }

func (h redislockHeld) extend(ctx context.Context, ttl time.Duration) error {
	return h.l.Refresh(ctx, ttl, nil)
}
func (h redislockHeld) release(ctx context.Context) error { return h.l.Release(ctx) }

func goLibs(c *redis.Client) []goLib {
	rs := redsync.New(goredis.NewPool(c))
	rl := redislock.New(c)
	return []goLib{
		{
			name: "redsync",
			obtain: func(ctx context.Context, key string, ttl time.Duration) (goHeld, error) {
				m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1000), redsync.WithRetryDelay(5*time.Millisecond))
				return redsyncHeld{m}, m.LockContext(ctx)
			},
			tryOnce: func(ctx context.Context, key string, ttl time.Duration) (bool, error) {
				err := rs.NewMutex(key, redsync.WithExpiry(ttl)).TryLockContext(ctx)
				var taken *redsync.ErrTaken
				if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
					return false, nil
				}
				return err == nil, err
			},
		},
		{
			name: "redislock-v0.10.0",
			obtain: func(ctx context.Context, key string, ttl time.Duration) (goHeld, error) {
				l, err := rl.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)})
				return redislockHeld{l}, err
			},
			tryOnce: func(ctx context.Context, key string, ttl time.Duration) (bool, error) {
				_, err := rl.Obtain(ctx, key, ttl, nil)
				if errors.Is(err, redislock.ErrNotObtained) {
					return false, nil
				}
				return err == nil, err
			},
		},
	}
}

func TestGoLockLibraries(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	for _, ep := range []struct {
		name string
		n    *node
	}{{"leader", leader}, {"follower", c.followers(leader)[0]}} {
		cl := ep.n.client(t)
		check := ep.n.client(t)
		for _, lib := range goLibs(cl) {
			t.Run(lib.name+"/"+ep.name, func(t *testing.T) {
				ctx := tctx(t)
				key := "go:" + lib.name + ":" + ep.name
				// A TTL no starved machine outlasts between the obtain and
				// the extend (2 s did once, beside make test: redsync's
				// extend found the key gone, "lock already taken").
				held, err := lib.obtain(ctx, key, 10*time.Second)
				if err != nil {
					t.Fatalf("obtain: %v", err)
				}
				tok1 := mustInt(t, check, "FENCE", key)
				if ok, err := lib.tryOnce(ctx, key, time.Second); ok || err != nil {
					t.Fatalf("a second obtain of a held lock: %v, %v", ok, err)
				}
				time.Sleep(time.Second)
				before := mustInt(t, check, "PTTL", key)
				if before <= 0 || before > 9000 {
					t.Fatalf("PTTL before extend = %d, want 1 to 9000", before)
				}
				// redsync extends to the mutex's expiry (10 s), redislock to
				// the TTL given (20 s): either way past what was left.
				if err := held.extend(ctx, 20*time.Second); err != nil {
					t.Fatalf("extend: %v", err)
				}
				if ms := mustInt(t, check, "PTTL", key); ms <= before {
					t.Fatalf("PTTL after extend = %d, want more than the %d before", ms, before)
				}
				if tok := mustInt(t, check, "FENCE", key); tok != tok1 {
					t.Fatalf("FENCE changed from %d to %d by extend", tok1, tok)
				}
				if err := held.release(ctx); err != nil {
					t.Fatalf("release: %v", err)
				}
				if n := mustInt(t, check, "EXISTS", key); n != 0 {
					t.Fatalf("the key still exists after release")
				}
				if err := held.release(ctx); err == nil {
					t.Fatalf("a second release succeeded")
				}
				contend(t, func(ctx context.Context) (goHeld, error) { return lib.obtain(ctx, key, 5*time.Second) }, check, key, 8, 12)
			})
		}
	}
}

// contend runs workers goroutines that each take the lock rounds times
// around a read-increment-write of a shared counter, and checks that no
// two were ever inside at once, that the counter equals the acquisitions,
// and that FENCE key strictly increases from one holder to the next.
func contend(t *testing.T, obtain func(context.Context) (goHeld, error), check *redis.Client, key string, workers, rounds int) {
	t.Helper()
	ctx := tctx(t)
	var (
		inside, overlaps atomic.Int32
		counter          int
		acquisitions     int
		tokens           []int64
		mu               sync.Mutex // guards tokens and acquisitions (also under the lock)
		wg               sync.WaitGroup
		errs             = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				held, err := obtain(ctx)
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: obtain: %w", w, r, err)
					return
				}
				if !inside.CompareAndSwap(0, 1) {
					overlaps.Add(1)
				}
				v := counter
				tok, err := readThroughElection(ctx, check, "FENCE", key)
				time.Sleep(time.Millisecond)
				counter = v + 1
				mu.Lock()
				acquisitions++
				tokens = append(tokens, tok)
				mu.Unlock()
				inside.Store(0)
				if err != nil {
					errs <- fmt.Errorf("FENCE: %w", err)
					return
				}
				if err := held.release(ctx); err != nil {
					errs <- fmt.Errorf("worker %d round %d: release: %w", w, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if overlaps.Load() != 0 {
		t.Errorf("%d times two holders were inside at once", overlaps.Load())
	}
	if counter != acquisitions || acquisitions != workers*rounds {
		t.Errorf("counter %d, acquisitions %d, want %d", counter, acquisitions, workers*rounds)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("FENCE went from %d to %d between holders %d and %d", tokens[i-1], tokens[i], i-1, i)
			break
		}
	}
}

// TestGoRedislock094 runs the module test/compat/redislock094 (bsm/redislock
// v0.9.4, which cannot share this module with v0.10.0) against a cluster.
func TestGoRedislock094(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	cmd := exec.Command("go", "test", "-count=1", "-v", "./...")
	cmd.Dir = "compat/redislock094"
	cmd.Env = append(os.Environ(), "FENCED_LEADER="+leader.addr, "FENCED_FOLLOWER="+c.followers(leader)[0].addr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRedislock094/FENCED_LEADER") ||
		!strings.Contains(string(out), "--- PASS: TestRedislock094/FENCED_FOLLOWER") {
		t.Fatalf("go test in %s: %v\n%s", cmd.Dir, err, out)
	}
}

// readThroughElection runs a read until it is answered, waiting out an
// election: -CLUSTERDOWN and -TRYAGAIN mean nothing was done, and go-redis
// retries them only three times in about a second, less than an election
// takes on two loaded cores (a leader that missed its heartbeats stepped
// down under make test's load, and the check of a holder's token failed).
func readThroughElection(ctx context.Context, c *redis.Client, args ...any) (int64, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := c.Do(ctx, args...).Int64()
		if (isCode(err, "CLUSTERDOWN") || isCode(err, "TRYAGAIN")) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return v, err
	}
}
