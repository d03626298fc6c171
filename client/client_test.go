package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/client"
	"github.com/redis/go-redis/v9"
)

// raw is a plain go-redis client to the test node, for what a test does
// around the client package: killing sessions, forcing unlocks, looking.
func raw(t testing.TB) *redis.Client {
	r := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	if t != nil {
		t.Cleanup(func() { r.Close() })
	}
	return r
}

func killSession(ctx context.Context, id string) error {
	r := raw(nil)
	defer r.Close()
	return r.Do(ctx, "SESSION.KILL", id).Err()
}

func dial(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.Dial(t.Context(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func session(t *testing.T, c *client.Client, opts ...client.SessionOption) *client.Session {
	t.Helper()
	s, err := c.NewSession(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// lockName is a lock name no other test uses.
func lockName(t *testing.T) string { return "client-test/" + t.Name() }

// wantErr checks that err is target and carries the server's own words
// (so it came from a reply, not from a check in the client).
func wantErr(t *testing.T, what string, err, target error, serverWords string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
	if serverWords != "" && !strings.Contains(err.Error(), serverWords) {
		t.Fatalf("%s: error %q lacks the server's words %q", what, err, serverWords)
	}
}

// Every typed error, each produced by a real server reply.
func TestTypedErrorsFromServer(t *testing.T) {
	ctx := t.Context()
	c := dial(t)
	r := raw(t)

	t.Run("NotObtained", func(t *testing.T) {
		a, b := session(t, c), session(t, c)
		if _, err := a.Mutex(lockName(t)).TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := b.Mutex(lockName(t)).TryLock(ctx)
		wantErr(t, "TryLock of a held lock", err, client.ErrNotObtained, "")
	})
	t.Run("SessionLost", func(t *testing.T) {
		s := session(t, c)
		if err := r.Do(ctx, "SESSION.KILL", s.ID()).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Mutex(lockName(t)).TryLock(ctx)
		wantErr(t, "TryLock on a killed session", err, client.ErrSessionLost, "session expired")
		wantErr(t, "Session.Err", s.Err(), client.ErrSessionLost, "")
	})
	t.Run("NotOwner", func(t *testing.T) {
		m := session(t, c).Mutex(lockName(t))
		tok, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Do(ctx, "LOCK.FORCEUNLOCK", lockName(t), tok).Err(); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "Unlock after a forced unlock", m.Unlock(ctx), client.ErrNotOwner, "not the owner")
		if m.Token() != 0 {
			t.Fatalf("Token() = %d after NOTOWNER, want 0", m.Token())
		}
	})
	t.Run("StaleFence", func(t *testing.T) {
		s := session(t, c)
		old := s.Mutex(lockName(t), client.WithOwner("w"))
		tok, err := old.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Do(ctx, "LOCK.FORCEUNLOCK", lockName(t), tok).Err(); err != nil {
			t.Fatal(err)
		}
		again := s.Mutex(lockName(t), client.WithOwner("w"))
		tok2, err := again.Lock(ctx)
		if err != nil || tok2 <= tok {
			t.Fatalf("relock: %d, %v; want a token above %d", tok2, err, tok)
		}
		wantErr(t, "Unlock of the older ownership", old.Unlock(ctx), client.ErrStaleFence, "fencing token")
		if err := again.Unlock(ctx); err != nil {
			t.Fatalf("the newer ownership's Unlock: %v", err)
		}
	})
	t.Run("Limit", func(t *testing.T) {
		m := session(t, c).Mutex(lockName(t), client.WithLimit(1))
		if _, err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := m.Lock(ctx)
		wantErr(t, "second Lock with limit 1", err, client.ErrLimit, "reentrancy limit")
	})
	t.Run("Cancelled", func(t *testing.T) {
		holder, s := session(t, c), session(t, c)
		if _, err := holder.Mutex(lockName(t)).Lock(ctx); err != nil {
			t.Fatal(err)
		}
		first := s.Mutex(lockName(t), client.WithOwner("x"))
		errc := make(chan error, 1)
		go func() { _, err := first.Lock(ctx); errc <- err }()
		waitWaiters(t, r, lockName(t), 1)
		// The same owner asks again: the server cancels the first wait.
		_, err := s.Mutex(lockName(t), client.WithOwner("x")).TryLock(ctx)
		wantErr(t, "the newer TryLock", err, client.ErrNotObtained, "")
		wantErr(t, "the replaced Lock", <-errc, client.ErrCancelled, "wait cancelled")
	})
}

// waitWaiters waits until lock has n waiters in its queue.
func waitWaiters(t *testing.T, r *redis.Client, lock string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := waiters(t, r, lock); got == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: no %d waiters within 10 s", lock, n)
}

// lockInfo is LOCK.INFO's map (nil if the lock is free: no holder).
func lockInfo(t *testing.T, r *redis.Client, lock string) map[any]any {
	t.Helper()
	v, err := r.Do(t.Context(), "LOCK.INFO", lock).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatalf("LOCK.INFO %s: %v", lock, err)
	}
	out, ok := v.(map[any]any)
	if !ok {
		l, _ := v.([]any)
		out = map[any]any{}
		for i := 0; i+1 < len(l); i += 2 {
			out[l[i]] = l[i+1]
		}
	}
	if out["holder"] == nil && len(out) > 0 {
		if w, _ := out["waiters"].([]any); len(w) == 0 {
			return nil
		}
	}
	return out
}

func waiters(t *testing.T, r *redis.Client, lock string) int {
	info := lockInfo(t, r, lock)
	if info == nil {
		return 0
	}
	w, _ := info["waiters"].([]any)
	return len(w)
}

// Reentrant holds share one token; the lock is free, and Context
// cancelled, only after the last Unlock.
func TestReentrantHolds(t *testing.T) {
	ctx := t.Context()
	r := raw(t)
	m := session(t, dial(t)).Mutex(lockName(t))
	t1, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := m.TryLock(ctx)
	if err != nil || t2 != t1 {
		t.Fatalf("second hold: %d, %v; want token %d", t2, err, t1)
	}
	work := m.Context(ctx)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if work.Err() != nil || lockInfo(t, r, lockName(t)) == nil {
		t.Fatalf("after one of two Unlocks: context %v, LOCK.INFO %v; want held", work.Err(), lockInfo(t, r, lockName(t)))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	<-work.Done()
	if info := lockInfo(t, r, lockName(t)); info != nil {
		t.Fatalf("after the last Unlock: LOCK.INFO %v, want free", info)
	}
	wantErr(t, "a third Unlock", m.Unlock(ctx), client.ErrNotOwner, "")
}

// A Lock whose context is cancelled, with or without a deadline, leaves
// the queue at once and holds nothing afterwards, even if the lock is
// freed meanwhile.
func TestLockCancelLeavesQueue(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		t.Run(fmt.Sprintf("deadline=%v", deadline), func(t *testing.T) {
			ctx := t.Context()
			r := raw(t)
			c := dial(t)
			holder := session(t, c).Mutex(lockName(t))
			if _, err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			m := session(t, c).Mutex(lockName(t))
			lctx, cancel := context.WithCancel(ctx)
			if deadline {
				lctx, cancel = context.WithTimeout(ctx, time.Minute)
			}
			errc := make(chan error, 1)
			go func() { _, err := m.Lock(lctx); errc <- err }()
			waitWaiters(t, r, lockName(t), 1)
			start := time.Now()
			cancel()
			err := <-errc
			if !errors.Is(err, client.ErrNotObtained) || !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Lock: %v, want ErrNotObtained and context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the cancelled Lock returned after %v", d)
			}
			if n := waiters(t, r, lockName(t)); n != 0 {
				t.Fatalf("%d waiters after the cancelled Lock, want 0", n)
			}
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if info := lockInfo(t, r, lockName(t)); info != nil {
				t.Fatalf("LOCK.INFO %v after the holder's release, want free (the cancelled Lock must not take it)", info)
			}
			if m.Token() != 0 {
				t.Fatalf("cancelled Mutex has token %d", m.Token())
			}
		})
	}
}

// The Locker is the Mutex: Lock takes it, Unlock frees it; it panics on a
// lost session rather than pretending.
func TestLocker(t *testing.T) {
	r := raw(t)
	s := session(t, dial(t))
	l := s.Mutex(lockName(t)).Locker()
	l.Lock()
	if lockInfo(t, r, lockName(t)) == nil {
		t.Fatal("Locker.Lock did not take the lock")
	}
	l.Unlock()
	if lockInfo(t, r, lockName(t)) != nil {
		t.Fatal("Locker.Unlock did not free the lock")
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p == nil || !errors.Is(p.(error), client.ErrSessionLost) {
			t.Fatalf("Locker.Lock on a closed session: panic %v, want ErrSessionLost", p)
		}
	}()
	l.Lock()
}

// Bad input is refused before anything is sent.
func TestBadArguments(t *testing.T) {
	if _, err := client.Dial(t.Context(), " , ", nil); err == nil {
		t.Fatal("Dial with no address succeeded")
	}
	if _, err := dial(t).NewSession(t.Context(), client.WithTTL(0)); err == nil {
		t.Fatal("a zero TTL was accepted")
	}
	_, err := dial(t).NewSession(t.Context(), client.WithTTL(time.Hour*24*365))
	if err == nil || !strings.Contains(fmt.Sprint(err), "TTL") {
		t.Fatalf("a one-year TTL: %v, want the server's range error", err)
	}
}
