package test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/fencing"
	"github.com/fenced/fenced/internal/pgtest"
	_ "github.com/lib/pq" // the tests' PostgreSQL driver
	"github.com/redis/go-redis/v9"
)

// The resource side of a token, end to end. A lock
// on a fenced cluster guards rows in a real PostgreSQL through
// fencing.Guard; a holder whose lock moved on while it was paused has its
// write refused, and a counter incremented under the lock while nodes die
// loses no increment.

// ---------------------------------------------------------------------------
// The lock side, in raw commands and in one place, so that the client
// package can take its place.

// errLockLost: the session ended (-NOSESSION), or the lock is no longer
// the caller's (-NOTOWNER, -STALEFENCE): what it did under it is fenced.
var errLockLost = errors.New("lock lost")

// fenceLocker is one client of the cluster: a session, kept alive by
// heartbeats unless paused, FLOCK and FUNLOCK with request ids, retried
// with the same id on the errors that leave an outcome open (-TRYAGAIN,
// -CLUSTERDOWN, -UNCERTAIN, a broken or refused connection), on the next
// node each time.
type fenceLocker struct {
	clients []*redis.Client // one per node
	name    string
	ttl     int // ms
	paused  atomic.Bool

	mu      sync.Mutex
	session string
	next    int // the client tried first
	reqs    int

	step atomic.Pointer[fenceStep] // what the client does now (doing)
}

// fenceStep is what a fenceLocker's client is doing, since when.
type fenceStep struct {
	what  string
	since time.Time
}

// at records what the client does from now on, for the report of a
// stall.
func (l *fenceLocker) at(format string, args ...any) {
	l.step.Store(&fenceStep{fmt.Sprintf(format, args...), time.Now()})
}

// doing says what the client has been doing, and for how long.
func (l *fenceLocker) doing() string {
	s := l.step.Load()
	if s == nil {
		return "nothing yet"
	}
	return fmt.Sprintf("%s for %v", s.what, time.Since(s.since).Round(time.Millisecond))
}

func newFenceLocker(t testing.TB, c *cluster, name string, ttl int) *fenceLocker {
	l := &fenceLocker{name: name, ttl: ttl}
	for _, n := range c.nodes {
		o := n.options(3) // MaxRetries -1: a resend is ours, with the same REQ
		o.DialerRetries = 1
		o.ReadTimeout = 30 * time.Second // above any WAIT of these tests
		cl := redis.NewClient(o)
		t.Cleanup(func() { cl.Close() })
		l.clients = append(l.clients, cl)
	}
	return l
}

// do runs one command until it has a decided answer (a value, null or a
// server error that is not retryable) or ctx ends.
func (l *fenceLocker) do(ctx context.Context, args ...any) (any, error) {
	for {
		l.mu.Lock()
		c, node := l.clients[l.next], l.next+1 // clients[i] is n(i+1)'s
		l.mu.Unlock()
		// Heartbeats run beside the client's own step.
		if args[0] != "SESSION.HEARTBEAT" {
			l.at("%v on n%d", args[0], node)
		}
		v, err := c.Do(ctx, args...).Result()
		var re redis.Error
		switch {
		case err == nil, errors.Is(err, redis.Nil):
			return v, err
		case ctx.Err() != nil:
			return nil, err
		case errors.As(err, &re) && !isCode(err, "TRYAGAIN") && !isCode(err, "CLUSTERDOWN") && !isCode(err, "LOADING") && !isCode(err, "UNCERTAIN"):
			return nil, err
		}
		// Not decided: try the next node after a moment.
		l.mu.Lock()
		l.next = (l.next + 1) % len(l.clients)
		l.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *fenceLocker) req() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs++
	return fmt.Sprintf("%s-%d", l.name, l.reqs)
}

func (l *fenceLocker) sess() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session
}

// open starts a new session (a retried SESSION.OPEN may leave an unused
// one behind, which expires).
func (l *fenceLocker) open(ctx context.Context) error {
	v, err := l.do(ctx, "SESSION.OPEN", "TTL", l.ttl, "NAME", l.name)
	if err != nil {
		return fmt.Errorf("SESSION.OPEN: %w", err)
	}
	id, ok := v.(string)
	if !ok {
		return fmt.Errorf("SESSION.OPEN answered %T %v", v, v)
	}
	l.mu.Lock()
	l.session = id
	l.mu.Unlock()
	return nil
}

// heartbeats renews the session every TTL/3 until ctx ends, except while
// the client is paused.
func (l *fenceLocker) heartbeats(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(l.ttl/3) * time.Millisecond):
		}
		if !l.paused.Load() {
			hctx, cancel := context.WithTimeout(ctx, time.Duration(l.ttl)*time.Millisecond)
			l.do(hctx, "SESSION.HEARTBEAT", l.sess()) // -NOSESSION: the next FLOCK says so
			cancel()
		}
	}
}

// lock takes the lock, waiting up to wait each time, and returns its
// token. errLockLost means the session has ended: open a new one.
func (l *fenceLocker) lock(ctx context.Context, lock string, wait time.Duration) (int64, error) {
	for {
		v, err := l.do(ctx, "FLOCK", lock, l.sess(), "WAIT", wait.Milliseconds(), "REQ", l.req())
		switch {
		case isCode(err, "NOSESSION"):
			return 0, fmt.Errorf("FLOCK %s: %w", lock, errLockLost)
		case isCode(err, "CANCELLED"), errors.Is(err, redis.Nil):
			// A wait cancelled by an uncertain first attempt, or timed out:
			// ask again, as a new request.
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			continue
		case err != nil:
			return 0, fmt.Errorf("FLOCK %s: %w", lock, err)
		}
		tok, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("FLOCK %s answered %T %v", lock, v, v)
		}
		return tok, nil
	}
}

// unlock releases the grant of token tok (FENCE: never a newer one).
func (l *fenceLocker) unlock(ctx context.Context, lock string, tok int64) error {
	_, err := l.do(ctx, "FUNLOCK", lock, l.sess(), "FENCE", tok, "REQ", l.req())
	if isCode(err, "NOSESSION") || isCode(err, "NOTOWNER") || isCode(err, "STALEFENCE") {
		return fmt.Errorf("FUNLOCK %s: %v: %w", lock, err, errLockLost)
	}
	return err
}

// ---------------------------------------------------------------------------
// The resource side: PostgreSQL and the guard.

// startPostgres starts a PostgreSQL server of the test's own, skipping the
// test when PostgreSQL is not installed (failing it under
// FENCED_REQUIRE_COMPAT=1), and returns a pool on it with the guard's
// table created.
func startPostgres(t *testing.T) (*sql.DB, *fencing.Guard) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := pgtest.Start(ctx)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		compatSkip(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	db, err := sql.Open("postgres", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	guard, err := fencing.NewGuard(fencing.PostgreSQL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, guard.DDL()); err != nil {
		t.Fatal(err)
	}
	return db, guard
}

// writeDocRow is a holder's fenced write: BEGIN; Check; UPDATE; COMMIT.
func writeDocRow(ctx context.Context, db *sql.DB, guard *fencing.Guard, token int64, body string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := guard.Check(ctx, tx, "doc", token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE docs SET body = $1, token = $2 WHERE id = 'doc'", body, token); err != nil {
		return err
	}
	return tx.Commit()
}

// TestFencingPausedHolderRefused: A holds the lock and writes; A pauses
// (no heartbeat) past its TTL; B, waiting on the server, gets the lock
// with a higher token and writes; A wakes up and writes with its old
// token: PostgreSQL refuses it with ErrStaleToken naming B's token, and
// B's row stands.
func TestFencingPausedHolderRefused(t *testing.T) {
	t.Parallel()
	db, guard := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL, token BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO docs VALUES ('doc', '', 0)"); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 3)
	a := newFenceLocker(t, c, "A", 1000)
	b := newFenceLocker(t, c, "B", 10000)
	for _, l := range []*fenceLocker{a, b} {
		if err := l.open(ctx); err != nil {
			t.Fatal(err)
		}
	}

	tokA, err := a.lock(ctx, "doc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDocRow(ctx, db, guard, tokA, "A, first"); err != nil {
		t.Fatalf("A's write with its current token %d: %v", tokA, err)
	}
	// A pauses now: no heartbeat, no command. B waits on the server until
	// A's session expires and the lock passes to it.
	pausedAt := time.Now()
	tokB, err := b.lock(ctx, "doc", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A's token %d; B's %d, granted %v into A's pause", tokA, tokB, time.Since(pausedAt).Round(time.Millisecond))
	if tokB <= tokA {
		t.Fatalf("B's token %d is not above A's %d", tokB, tokA)
	}
	if err := writeDocRow(ctx, db, guard, tokB, "B"); err != nil {
		t.Fatalf("B's write with token %d: %v", tokB, err)
	}

	// A wakes up believing it still holds the lock.
	err = writeDocRow(ctx, db, guard, tokA, "A, after the pause")
	var stale *fencing.StaleTokenError
	if !errors.Is(err, fencing.ErrStaleToken) || !errors.As(err, &stale) || stale.Highest != tokB {
		t.Fatalf("A's write with its old token %d: %v; want ErrStaleToken with highest %d", tokA, err, tokB)
	}
	t.Logf("A's write refused: %v", err)
	var body string
	var tok int64
	if err := db.QueryRowContext(ctx, "SELECT body, token FROM docs WHERE id = 'doc'").Scan(&body, &tok); err != nil {
		t.Fatal(err)
	}
	if body != "B" || tok != tokB {
		t.Errorf("the row holds %q by token %d, want B's write by %d", body, tok, tokB)
	}
	// The lock service agrees: A's session is gone, B releases its grant.
	if err := a.unlock(ctx, "doc", tokA); !errors.Is(err, errLockLost) {
		t.Errorf("A's FUNLOCK after the pause: %v, want the lock lost", err)
	}
	if err := b.unlock(ctx, "doc", tokB); err != nil {
		t.Errorf("B's FUNLOCK: %v", err)
	}
}

// TestFencingCounterUnderFailover: 8 clients increment one counter row,
// read-modify-write, under one lock (the lock is all that keeps their
// updates apart), while the leader and then a follower are killed and
// restarted; two clients pause while holding the lock, without
// heartbeats, until it has moved on (one before its transaction, one
// inside it). The clients' own tally and the rows the increments logged
// are the model: the counter equals the number of increments whose commit
// succeeded (no lost update), the increments form the sequence 1..n with
// tokens that never go down along it, and each refused write was below a
// token that had committed.
//
// The workload is not given a time of its own to finish in, only the
// test's 3 minutes: it is about 120 transactions one after another behind
// one lock, and a loaded machine makes it slower, not wrong (50 s for it
// ran out on two busy cores with the cluster healthy and 118 increments
// done). What fails it is a stall, no increment committed for fenceStall,
// reported with what each client was doing and the lock's state.
func TestFencingCounterUnderFailover(t *testing.T) {
	t.Parallel()
	db, guard := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ddl := range []string{
		"CREATE TABLE counter (id TEXT PRIMARY KEY, n BIGINT NOT NULL)",
		"INSERT INTO counter VALUES ('c', 0)",
		// No key on seq: a lost update shows as a repeated seq.
		"CREATE TABLE increments (seq BIGINT NOT NULL, token BIGINT NOT NULL, client INT NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	c := startCluster(t, 3)

	const clients, each, ttl = 8, 15, 2000
	type commit struct{ seq, token int64 }
	var (
		mu       sync.Mutex
		commits  []commit
		refused  []*fencing.StaleTokenError
		progress atomic.Int64 // increments committed
		lastAt   atomic.Int64 // when the last one committed (Unix ns)
		granted  atomic.Int64 // the highest token a client was granted
		written  atomic.Int64 // the highest token an increment committed with
		faulted  atomic.Bool  // the nemesis is done
		pauses   atomic.Int64 // the paused clients' pauses still to come
	)
	pauses.Store(2)
	// raise makes a at least v.
	raise := func(a *atomic.Int64, v int64) {
		for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
		}
	}
	// increment is one fenced read-modify-write of the counter.
	increment := func(tok int64, client int, rng *rand.Rand, pauseAfterRead func()) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := guard.Check(ctx, tx, "counter", tok); err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT n FROM counter WHERE id = 'c'").Scan(&n); err != nil {
			return err
		}
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // work
		pauseAfterRead()
		if _, err := tx.ExecContext(ctx, "UPDATE counter SET n = $1 WHERE id = 'c'", n+1); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO increments VALUES ($1, $2, $3)", n+1, tok, client); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		mu.Lock()
		commits = append(commits, commit{n + 1, tok})
		mu.Unlock()
		raise(&written, tok)
		progress.Add(1)
		lastAt.Store(time.Now().UnixNano())
		return nil
	}

	// The clients run until their work is done, or until the watchdog
	// stops them (runCtx's cause is then errFenceStall).
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	stopped := func() bool { return context.Cause(runCtx) == errFenceStall }

	// The nemesis: the leader, then a follower, killed and restarted. The
	// harness's helpers may end the goroutine with t.Fatal: done is closed
	// all the same.
	var nemesisErr error
	nemesisDone := make(chan struct{})
	go func() {
		defer close(nemesisDone)
		defer faulted.Store(true)
		nemesisErr = func() error {
			waitCommits := func(n int64, what string) error {
				if !waitFor(60*time.Second, func() bool { return progress.Load() >= n || runCtx.Err() != nil }) {
					return fmt.Errorf("no progress %s (%d increments)", what, progress.Load())
				}
				return context.Cause(runCtx) // the clients stopped: no more faults
			}
			if err := waitCommits(15, "before the first kill"); err != nil {
				return err
			}
			leader := c.leader(20 * time.Second)
			t.Logf("killing the leader %s at %d increments", c.id(leader), progress.Load())
			leader.kill()
			time.Sleep(time.Second)
			leader.restart()
			if err := waitCommits(progress.Load()+15, "after the leader's restart"); err != nil {
				return err
			}
			follower := c.followers(c.leader(20 * time.Second))[0]
			t.Logf("killing the follower %s at %d increments", c.id(follower), progress.Load())
			follower.kill()
			time.Sleep(500 * time.Millisecond)
			follower.restart()
			return waitCommits(progress.Load()+15, "after the follower's restart")
		}()
	}()

	lockers := make([]*fenceLocker, clients)
	for i := range lockers {
		lockers[i] = newFenceLocker(t, c, fmt.Sprintf("client-%d", i), ttl)
	}
	// Made now: the nemesis may be restarting a node when they are needed.
	var reporters []*redis.Client
	for _, n := range c.nodes {
		o := n.options(3)
		o.ContextTimeoutEnabled = true // a report's deadline bounds the reply too
		cl := redis.NewClient(o)
		t.Cleanup(func() { cl.Close() })
		reporters = append(reporters, cl)
	}
	// The watchdog: a stall is reported once, with what each client was
	// doing and who holds and waits for the lock, and stops the clients.
	lastAt.Store(time.Now().UnixNano())
	clientsDone := make(chan struct{})
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		for {
			select {
			case <-clientsDone:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if since := time.Since(time.Unix(0, lastAt.Load())); since > fenceStall {
				var b strings.Builder
				for i, l := range lockers {
					fmt.Fprintf(&b, "\n  client %d: %s", i, l.doing())
				}
				t.Errorf("stuck: no increment committed for %v (%d in all); the clients were doing:%s\nLOCK.INFO counter: %s",
					since.Round(time.Millisecond), progress.Load(), b.String(), fenceLockReport(reporters, lockers, "counter"))
				stop(errFenceStall)
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() {
			// fail reports an error, unless it comes of the watchdog's stop,
			// which has said what happened.
			fail := func(format string, args ...any) {
				if !stopped() {
					t.Errorf("client %d: "+format, append([]any{i}, args...)...)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(i), 14))
			hbCtx, stopHB := context.WithCancel(runCtx)
			defer stopHB()
			if err := l.open(runCtx); err != nil {
				fail("%v", err)
				return
			}
			go l.heartbeats(hbCtx)
			// Client 0 pauses before its transaction, client 1 after reading
			// the counter, each in the first iteration from the 3rd (the
			// 9th) in which it got the lock: an iteration whose lock was
			// lost to a failover does not count. Everyone goes on until both
			// have paused, so that someone takes the lock from them.
			pauseFrom, pauseDue := 0, false
			switch i {
			case 0:
				pauseFrom, pauseDue = 2, true
			case 1:
				pauseFrom, pauseDue = 8, true
			}
			for it := 0; it < each || !faulted.Load() || pauses.Load() > 0; it++ {
				if runCtx.Err() != nil {
					fail("stopped at iteration %d: %v", it, context.Cause(runCtx))
					return
				}
				l.at("iteration %d", it)
				tok, err := l.lock(runCtx, "counter", 10*time.Second)
				if errors.Is(err, errLockLost) {
					if err := l.open(runCtx); err != nil {
						fail("%v", err)
						return
					}
					continue
				}
				if err != nil {
					fail("%v", err)
					return
				}
				raise(&granted, tok)
				// The paused clients hold the lock without heartbeats until it
				// has moved on, however long that takes on this machine.
				// Client 0 waits until a later holder's increment has
				// committed: its own late write must be refused. Client 1 waits
				// inside its transaction until a later holder has the lock: its
				// Check came first and keeps the row locked, so the next
				// holder's Check waits for its commit and then reads what it
				// wrote.
				pause := func(what string, movedOn func() bool) {
					l.at("paused holding token %d, %s", tok, what)
					l.paused.Store(true)
					for !movedOn() && runCtx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					l.paused.Store(false)
				}
				pauseAfterRead := func() {}
				switch {
				case i == 0 && pauseDue && it >= pauseFrom:
					pause("before its transaction", func() bool { return written.Load() > tok })
					pauseDue = false
					pauses.Add(-1)
				case i == 1 && pauseDue && it >= pauseFrom:
					// Counted once it has happened: a transaction that fails
					// before its read leaves the pause to the next one.
					pauseAfterRead = func() {
						pause("in its transaction", func() bool { return granted.Load() > tok })
						pauseDue = false
						pauses.Add(-1)
					}
				}
				l.at("in its transaction with token %d", tok)
				var stale *fencing.StaleTokenError
				switch err := increment(tok, i, rng, pauseAfterRead); {
				case errors.As(err, &stale):
					mu.Lock()
					refused = append(refused, stale)
					mu.Unlock()
				case err != nil:
					fail("increment with token %d: %v", tok, err)
				}
				if err := l.unlock(runCtx, "counter", tok); errors.Is(err, errLockLost) {
					if err := l.open(runCtx); err != nil {
						fail("%v", err)
						return
					}
				} else if err != nil {
					fail("%v", err)
					return
				}
			}
			l.at("done")
		})
	}
	wg.Wait()
	close(clientsDone)
	<-watchdogDone
	// Clients that ended on errors leave the nemesis nothing to wait for.
	stop(errFenceClientsDone)
	<-nemesisDone
	if stopped() {
		return // reported by the watchdog
	}
	if nemesisErr != nil && !errors.Is(nemesisErr, errFenceClientsDone) {
		t.Fatal(nemesisErr)
	}

	// The model.
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT n FROM counter WHERE id = 'c'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT seq, token FROM increments ORDER BY seq, token")
	if err != nil {
		t.Fatal(err)
	}
	var logged []commit
	for rows.Next() {
		var cm commit
		if err := rows.Scan(&cm.seq, &cm.token); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, cm)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(commits, func(a, b commit) int { return int(a.seq - b.seq) })
	t.Logf("%d increments committed, %d refused as stale; counter %d", len(commits), len(refused), n)
	if n != int64(len(commits)) {
		t.Errorf("the counter is %d after %d committed increments: lost updates", n, len(commits))
	}
	if !slices.Equal(logged, commits) {
		t.Errorf("the increments table %v differs from the committed increments %v", logged, commits)
	}
	committed := map[int64]bool{}
	for i, cm := range commits {
		if cm.seq != int64(i+1) {
			t.Fatalf("increment #%d read the counter as %d: an update was lost", i+1, cm.seq-1)
		}
		if i > 0 && cm.token < commits[i-1].token {
			t.Errorf("increment %d committed with token %d after token %d", cm.seq, cm.token, commits[i-1].token)
		}
		committed[cm.token] = true
	}
	for _, s := range refused {
		if s.Highest <= s.Token || !committed[s.Highest] {
			t.Errorf("token %d refused as below %d, which is not a higher committed token", s.Token, s.Highest)
		}
	}
	if len(refused) == 0 {
		t.Error("no write was refused: the paused clients' late writes went through or never happened")
	}
}

// fenceStall is how long TestFencingCounterUnderFailover's clients may go
// without committing an increment before the test calls the cluster stuck.
// Two FLOCK WAITs: a client waiting for the lock asks again every 10 s.
// The longest gap measured between two increments, on two cores beside
// eight CPU hogs, was 4.5 s (a paused holder's session lapsing).
const fenceStall = 20 * time.Second

// The causes the clients of TestFencingCounterUnderFailover are stopped
// with.
var (
	errFenceStall       = errors.New("stopped: no progress")
	errFenceClientsDone = errors.New("the clients are done")
)

// fenceLockReport is LOCK.INFO of lock from the first node that answers
// (reporters has a client of each), with each session id replaced by the
// name of the client it belongs to, for the report of a stall.
func fenceLockReport(reporters []*redis.Client, lockers []*fenceLocker, lock string) string {
	var names []string
	for _, l := range lockers {
		if id := l.sess(); id != "" {
			names = append(names, id, l.name)
		}
	}
	named := strings.NewReplacer(names...)
	var errs []string
	for i, cl := range reporters {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		v, err := cl.Do(ctx, "LOCK.INFO", lock).Result()
		cancel()
		if err == nil {
			return fmt.Sprintf("%s (n%d's answer)", named.Replace(fmt.Sprint(v)), i+1)
		}
		errs = append(errs, fmt.Sprintf("n%d: %v", i+1, err))
	}
	return "no node answered: " + strings.Join(errs, "; ")
}
