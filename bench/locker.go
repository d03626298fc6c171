package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

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

// isReplyError reports an error the server answered (-TRYAGAIN, -ERR ...),
// as opposed to a broken or refused connection.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !isRedisNil(err)
}

// fencedLock is fenced's native path: a session, FLOCK (with WAIT when
// contended) and FUNLOCK. It knows every node's address: when the
// connection breaks (its node was killed) it moves to the next node, as a
// client given the cluster's endpoints would, keeping its session, which
// lives in the cluster, not in a node.
type fencedLock struct {
	addrs   []string
	cur     int
	readTO  time.Duration
	rdb     *redis.Client
	session string
	flock   []any
	funlock []any
}

// fencedNative returns the factory of the native path on a cluster whose
// nodes are addrs: worker i starts on node i mod len(addrs). waitMs > 0
// makes Acquire a FLOCK ... WAIT waitMs that queues on the server.
func fencedNative(addrs []string, waitMs int) lockerFactory {
	return func(ctx context.Context, i int, key string) (locker, error) {
		// A waiting FLOCK may block for waitMs, so the read timeout must
		// outlast it or go-redis would cut the wait short.
		l := &fencedLock{addrs: addrs, cur: i % len(addrs), readTO: opTimeout + time.Duration(waitMs)*time.Millisecond}
		l.rdb = newClient(addrs[l.cur], 1, l.readTO)
		id, err := l.rdb.Do(ctx, "SESSION.OPEN", "TTL", sessionTTL, "NAME", fmt.Sprintf("bench-%d", i)).Text()
		if err != nil {
			l.rdb.Close()
			return nil, fmt.Errorf("SESSION.OPEN: %w", err)
		}
		l.session = id
		l.flock = []any{"FLOCK", key, id}
		if waitMs > 0 {
			l.flock = append(l.flock, "WAIT", waitMs)
		}
		l.funlock = []any{"FUNLOCK", key, id}
		return l, nil
	}
}

func (l *fencedLock) Acquire(ctx context.Context) (int64, error) {
	tok, err := l.rdb.Do(ctx, l.flock...).Int64()
	switch {
	case isRedisNil(err):
		return 0, errNotGranted // held by another, or the WAIT ran out
	case err != nil:
		l.failover(err)
		return 0, fmt.Errorf("FLOCK: %w", err)
	case tok <= 0:
		return 0, fmt.Errorf("FLOCK: token %d, want > 0", tok)
	}
	return tok, nil
}

// Release is FUNLOCK. A reply above 0 means the lock was granted twice to
// this owner (reentrant), which happens only when an earlier FLOCK's answer
// was lost in a failover and the retry took it again: it is released until
// free, so the next cycle starts clean, and reported.
func (l *fencedLock) Release(ctx context.Context) error {
	left, err := l.rdb.Do(ctx, l.funlock...).Int64()
	if err != nil {
		l.failover(err)
		return fmt.Errorf("FUNLOCK: %w", err)
	}
	if left == 0 {
		return nil
	}
	extra := left
	for range 100 {
		if left, err = l.rdb.Do(ctx, l.funlock...).Int64(); err != nil {
			l.failover(err)
			return fmt.Errorf("FUNLOCK: %w", err)
		}
		if left == 0 {
			return fmt.Errorf("FUNLOCK: hold count %d left, want 0 (released the extra holds)", extra)
		}
	}
	return fmt.Errorf("FUNLOCK: hold count %d does not reach 0", left)
}

// failover moves to the next node when the connection itself failed; a
// reply error (-TRYAGAIN while a new leader is elected) keeps the node.
func (l *fencedLock) failover(err error) {
	if isReplyError(err) || len(l.addrs) < 2 || errors.Is(err, context.Canceled) {
		return
	}
	l.rdb.Close()
	l.cur = (l.cur + 1) % len(l.addrs)
	l.rdb = newClient(l.addrs[l.cur], 1, l.readTO)
}

func (l *fencedLock) Close() error {
	// A fresh context: the session must go even if the run was interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n, err := l.rdb.Do(ctx, "SESSION.KILL", l.session).Int64()
	l.rdb.Close()
	switch {
	case err != nil:
		return fmt.Errorf("SESSION.KILL: %w", err)
	case n != 1:
		return fmt.Errorf("SESSION.KILL: session %s was no longer open (expired during the step)", l.session)
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
