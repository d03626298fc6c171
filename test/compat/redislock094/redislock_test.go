// Package redislock094 runs bsm/redislock v0.9.4, the version the module
// proxy lists as the latest, against a fenced cluster whose leader and
// follower addresses the main test suite passes in FENCED_LEADER and
// FENCED_FOLLOWER (test/golibs_test.go, TestGoRedislock094). It is a module
// of its own because v0.10.0 is in the main module.
package redislock094

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

func TestRedislock094(t *testing.T) {
	for _, env := range []string{"FENCED_LEADER", "FENCED_FOLLOWER"} {
		addr := os.Getenv(env)
		if addr == "" {
			t.Skipf("%s is not set: run through TestGoRedislock094 of the main module", env)
		}
		t.Run(env, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer c.Close()
			locker := redislock.New(c)
			key := "go094:" + env

			l, err := locker.Obtain(ctx, key, 2*time.Second, nil)
			if err != nil {
				t.Fatalf("obtain: %v", err)
			}
			tok, err := c.Do(ctx, "FENCE", key).Int64()
			if err != nil || tok <= 0 {
				t.Fatalf("FENCE = %d, %v", tok, err)
			}
			if _, err := locker.Obtain(ctx, key, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("second obtain: %v, want ErrNotObtained", err)
			}
			if err := l.Refresh(ctx, 20*time.Second, nil); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if ttl, err := l.TTL(ctx); err != nil || ttl < 10*time.Second {
				t.Fatalf("TTL after refresh = %v, %v", ttl, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := l.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("second release: %v, want ErrLockNotHeld", err)
			}

			// 8 goroutines around a shared counter; FENCE strictly increases
			// from one holder to the next.
			var (
				inside, overlaps atomic.Int32
				counter, n       int
				last             int64
				backwards        int
				mu               sync.Mutex
				wg               sync.WaitGroup
			)
			opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)}
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 10 {
						l, err := locker.Obtain(ctx, key, 5*time.Second, opt)
						if err != nil {
							t.Errorf("obtain: %v", err)
							return
						}
						if !inside.CompareAndSwap(0, 1) {
							overlaps.Add(1)
						}
						tok, err := c.Do(ctx, "FENCE", key).Int64()
						v := counter
						time.Sleep(time.Millisecond)
						counter = v + 1
						mu.Lock()
						n++
						if tok <= last || err != nil {
							backwards++
						}
						last = tok
						mu.Unlock()
						inside.Store(0)
						if err := l.Release(ctx); err != nil {
							t.Errorf("release: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if overlaps.Load() != 0 || counter != n || n != 80 || backwards != 0 {
				t.Fatalf("overlaps %d, counter %d, acquisitions %d (want 80), FENCE not increasing %d times",
					overlaps.Load(), counter, n, backwards)
			}
		})
	}
}
