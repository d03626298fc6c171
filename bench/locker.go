package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced/client"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// locker is one client's hold on one lock through one way of locking (a
// "path"): fenced's FLOCK, the redsync recipe, etcd's Mutex. Workloads only
// see this, so each measures every path the same way.
type locker interface {
	// Acquire returns once the lock is held, with the fencing token where
	// the path has one (0 otherwise). A path built to wait (contended)
	// waits or retries until granted; one that does not returns
	// errNotGranted when the lock is held by someone else.
	Acquire(ctx context.Context) (int64, error)
	// Release gives the lock back.
	Release(ctx context.Context) error
	// Close ends the client's session and connection.
	Close() error
}

// lockerFactory makes worker i's locker on lock key, with its own
// connection (and session, where the path has one).
type lockerFactory func(ctx context.Context, i int, key string) (locker, error)

var errNotGranted = errors.New("not granted: the lock is held by another client")

// sessionTTL is long enough that no session expires during a step even if a
// worker stalls; every FLOCK/FUNLOCK renews it anyway.
const sessionTTL = 30000

// opTimeout bounds one non-waiting command; a hung server shows up as an error.
const opTimeout = 5 * time.Second

// newClient is the one place go-redis options are set, so every workload
// runs with the same settings: no retries (a retry would hide an error and
// skew latency), context deadlines honoured, and no connect-time extras
// (CLIENT SETINFO, maintenance notifications) that fenced need not support.
// An addr of the form rediss://user:pass@host:port?ca=FILE connects over
// TLS and authenticates (fenced-3-secure, secure.go).
func newClient(addr string, poolSize int, readTimeout time.Duration) *redis.Client {
	o := &redis.Options{Addr: addr}
	if strings.HasPrefix(addr, "rediss://") {
		var err error
		if o, err = secureOptions(addr); err != nil {
			// A client that fails every command says so in the step's errors.
			o = &redis.Options{Addr: "invalid:0"}
		}
	}
	o.PoolSize, o.MaxRetries, o.ContextTimeoutEnabled = poolSize, -1, true
	o.ReadTimeout, o.WriteTimeout, o.DialTimeout = readTimeout, 5*time.Second, 2*time.Second
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(o)
}

// isRedisNil reports a null reply.
func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }

// fencedLock is fenced's native path through the client package, as a
// Go user takes it: a session, Mutex.TryLock or Mutex.Lock (FLOCK, with
// WAIT when contended) and Unlock (FUNLOCK ... FENCE). The client knows
// every node's address, starting at worker i's node i mod n: when its
// connection breaks (its node was killed) it moves to the next, keeping
// its session, which lives in the cluster, not in a node.
type fencedLock struct {
	c    *client.Client
	s    *client.Session
	m    *client.Mutex
	wait time.Duration // 0: TryLock
}

// fencedNative returns the factory of the native path on a cluster whose
// nodes are addrs. waitMs > 0 makes Acquire a Lock that queues on the
// server for up to waitMs.
func fencedNative(addrs []string, waitMs int) lockerFactory {
	return func(ctx context.Context, i int, key string) (locker, error) {
		// Worker i starts at node i mod n; the rest follow in order.
		order := append(slices.Clone(addrs[i%len(addrs):]), addrs[:i%len(addrs)]...)
		opts, hosts, err := clientOptions(order)
		if err != nil {
			return nil, err
		}
		c, err := client.Dial(ctx, strings.Join(hosts, ","), opts)
		if err != nil {
			return nil, err
		}
		s, err := c.NewSession(ctx, client.WithTTL(sessionTTL*time.Millisecond), client.WithName(fmt.Sprintf("bench-%d", i)))
		if err != nil {
			c.Close()
			return nil, err
		}
		return &fencedLock{c: c, s: s, m: s.Mutex(key), wait: time.Duration(waitMs) * time.Millisecond}, nil
	}
}

// clientOptions splits the targets' addresses (host:port, or the rediss://
// URLs of fenced-3-secure) into the options they share and their hosts.
func clientOptions(addrs []string) (*redis.Options, []string, error) {
	opts := &redis.Options{PoolSize: 1, DialTimeout: 2 * time.Second, WriteTimeout: 5 * time.Second}
	hosts := make([]string, len(addrs))
	for i, a := range addrs {
		hosts[i] = a
		if !strings.HasPrefix(a, "rediss://") {
			continue
		}
		o, err := secureOptions(a)
		if err != nil {
			return nil, nil, err
		}
		hosts[i] = o.Addr
		o.PoolSize, o.DialTimeout, o.WriteTimeout = opts.PoolSize, opts.DialTimeout, opts.WriteTimeout
		opts = o
	}
	return opts, hosts, nil
}

func (l *fencedLock) Acquire(ctx context.Context) (int64, error) {
	var tok int64
	var err error
	if l.wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, l.wait)
		tok, err = l.m.Lock(wctx)
		cancel()
	} else {
		tok, err = l.m.TryLock(ctx)
	}
	if errors.Is(err, client.ErrNotObtained) && ctx.Err() == nil {
		return 0, errNotGranted // held by another, or the wait ran out
	}
	return tok, err
}

func (l *fencedLock) Release(ctx context.Context) error { return l.m.Unlock(ctx) }

func (l *fencedLock) Close() error {
	// A fresh context: the session must go even if the run was interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	lost := l.s.Err()
	err := l.s.Close(ctx)
	l.c.Close()
	switch {
	case lost != nil:
		return fmt.Errorf("session lost during the step: %w", lost)
	case err != nil:
		return err
	}
	return nil
}

// releaseScript is the compare-and-delete release of the Redis lock recipe
// (redsync, redislock and most others): delete only if the value is ours.
const releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// redsyncLock is the Redis recipe that works on both redis-server and
// fenced: SET key <random> NX PX 10000, released by EVALSHA of the
// compare-and-delete script loaded once with SCRIPT LOAD.
type redsyncLock struct {
	rdb   *redis.Client
	key   string
	sha   string
	spin  bool // contended: retry SET NX at once until it succeeds
	rng   *rand.ChaCha8
	value string
}

// redsyncPath returns the factory of the redsync path against addrs
// (worker i uses addrs[i mod len]). spin makes Acquire the usual retry loop
// with no backoff ("hammering"), the way Redis lock clients wait.
func redsyncPath(addrs []string, spin bool) lockerFactory {
	return func(ctx context.Context, i int, key string) (locker, error) {
		rdb := newClient(addrs[i%len(addrs)], 1, opTimeout)
		sha, err := rdb.ScriptLoad(ctx, releaseScript).Result()
		if err != nil {
			rdb.Close()
			return nil, fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		var seed [32]byte
		for j := range seed {
			seed[j] = byte(rand.Uint32())
		}
		return &redsyncLock{rdb: rdb, key: key, sha: sha, spin: spin, rng: rand.NewChaCha8(seed)}, nil
	}
}

func (l *redsyncLock) Acquire(ctx context.Context) (int64, error) {
	// A fresh 128-bit value per acquisition, as the libraries do, so a late
	// release of an earlier holding cannot delete this one.
	var b [16]byte
	_, _ = l.rng.Read(b[:])
	l.value = hex.EncodeToString(b[:])
	for {
		err := l.rdb.Do(ctx, "SET", l.key, l.value, "NX", "PX", 10000).Err()
		switch {
		case err == nil:
			return 0, nil
		case !isRedisNil(err):
			return 0, fmt.Errorf("SET NX: %w", err)
		case !l.spin:
			return 0, errNotGranted
		case ctx.Err() != nil:
			return 0, ctx.Err()
		}
	}
}

func (l *redsyncLock) Release(ctx context.Context) error {
	n, err := l.rdb.EvalSha(ctx, l.sha, []string{l.key}, l.value).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("EVALSHA: %w", err)
	case n != 1:
		return fmt.Errorf("EVALSHA release: deleted %d keys, want 1 (the value was no longer ours)", n)
	}
	return nil
}

func (l *redsyncLock) Close() error { return l.rdb.Close() }
