package test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ---------------------------------------------------------------------------
// Helpers of this file and cluster_uncertain_test.go. Their names start with
// fo so that they cannot clash with the helpers of other test files.

// foNotSent reports a connection error that happened before anything was
// sent: the dial failed, so the command certainly was not applied.
func foNotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// foRetryable reports the errors that are safe to retry: nothing was
// applied (see DESIGN.md, Error replies).
func foRetryable(err error) bool {
	return isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN") || isCode(err, "LOADING")
}

// foLogTime returns the time of the first line of n's stderr at or after
// t0 that contains substr, for reports (the server and raft log with
// millisecond timestamps).
func foLogTime(n *node, t0 time.Time, substr string) (time.Time, bool) {
	for _, line := range strings.Split(n.stderr(), "\n") {
		if !strings.Contains(line, substr) {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil && !at.Before(t0.Truncate(time.Millisecond)) {
			return at, true
		}
	}
	return time.Time{}, false
}

// foMedian is the median of ds (the upper one of an even count).
func foMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// ---------------------------------------------------------------------------
// Acceptance a: leader kill under load.

const (
	foWorkers     = 16
	foSharedLocks = 4
	foKills       = 3
	foSessionTTL  = 30000 // ms
	foCmdTimeout  = 30 * time.Second
	// foFailoverBound is the acceptance bound on the median time from the
	// kill of the leader to the first granted FLOCK.
	foFailoverBound = 2 * time.Second
)

// foCounter is the fenced resource of one lock, as a storage system would
// keep it: a write carries the writer's token and is accepted only if the
// token is at least the highest accepted so far.
type foCounter struct {
	mu       sync.Mutex
	highest  int64
	accepted []int64 // tokens of accepted writes, in acceptance order
	rejected int
}

// write reports whether the write was accepted, and the highest token
// accepted before it.
func (c *foCounter) write(token int64) (bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.highest
	if token < c.highest {
		c.rejected++
		return false, prev
	}
	c.highest = token
	c.accepted = append(c.accepted, token)
	return true, prev
}

// foGrant is one grant of a lock that a worker learned of: acknowledged
// (FLOCK answered its token) or resolved (the FLOCK's outcome was unknown
// and FENCE lock session showed the worker holds it).
type foGrant struct {
	worker   int
	token    int64
	resolved bool
	epoch    int // kills before it
}

// foLock is one lock of the run with the test's view of it.
type foLock struct {
	name    string
	counter foCounter

	mu      sync.Mutex
	holder  int       // worker that believes it holds the lock, -1 none
	history []foGrant // grants in the order the workers learned of them
}

// foRun is the shared state of TestClusterLeaderKill's workers.
type foRun struct {
	t      *testing.T
	locks  []*foLock // the own lock of worker i is locks[i]; shared ones follow
	stop   chan struct{}
	failed atomic.Bool
	epoch  atomic.Int64

	mu     sync.Mutex
	flocks []foFlock // decided FLOCK answers

	grants, resolvedGrants, nulls, releases  atomic.Int64
	retries, unknowns, connErrs, notSentErrs atomic.Int64
	resolvedNotHeld, unknownReleases         atomic.Int64
	readConnErrs                             atomic.Int64
}

// foFlock is one decided FLOCK answer: granted or null.
type foFlock struct {
	sent, done time.Time
	granted    bool
}

func (r *foRun) fail(format string, args ...any) {
	r.failed.Store(true)
	r.t.Errorf(format, args...)
}

// firstFlockAfter returns the first decided FLOCK (a grant if grant is set)
// sent at or after t0, and whether there is one.
func (r *foRun) firstFlockAfter(t0 time.Time, grant bool) (foFlock, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best foFlock
	found := false
	for _, f := range r.flocks {
		if f.sent.Before(t0) || (grant && !f.granted) {
			continue
		}
		if !found || f.done.Before(best.done) {
			best, found = f, true
		}
	}
	return best, found
}

// enter records that worker w learned it holds l with token tok. No other
// worker may believe it holds l (mutual exclusion: the other one stopped
// believing it before it sent its release), and the token must be above
// every earlier grant of l.
func (l *foLock) enter(r *foRun, w int, tok int64, resolved bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != -1 {
		r.fail("lock %s: worker %d was granted token %d while worker %d still holds it", l.name, w, tok, l.holder)
	}
	if n := len(l.history); n > 0 && tok <= l.history[n-1].token {
		p := l.history[n-1]
		r.fail("lock %s: worker %d got token %d (resolved %v, after %d kills), not above the previous grant %d to worker %d (resolved %v, after %d kills)",
			l.name, w, tok, resolved, r.epoch.Load(), p.token, p.worker, p.resolved, p.epoch)
	}
	l.holder = w
	l.history = append(l.history, foGrant{worker: w, token: tok, resolved: resolved, epoch: int(r.epoch.Load())})
}

func (l *foLock) exit(w int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == w {
		l.holder = -1
	}
}

// foWorker is one client goroutine: it has its own session and one client
// per node, starting every cycle on its own node and moving to the next
// node when a node cannot be reached.
type foWorker struct {
	r       *foRun
	id      int
	sess    string
	clients []*redis.Client // clients[0] is the worker's own node
	rng     *rand.Rand

	held    *foLock // the lock held when the worker stopped
	heldTok int64
}

// outcome of one write.
type foOutcome int

const (
	foDecided foOutcome = iota
	foUnknown
	foGaveUp
)

// write sends a write until it is decided or its outcome is unknown.
// -TRYAGAIN, -CLUSTERDOWN and failed dials are retried (nothing was
// applied); -UNCERTAIN and a connection broken after sending are unknown.
func (w *foWorker) write(args ...any) (any, foOutcome, error) {
	start := time.Now()
	node := 0
	for {
		if time.Since(start) > 60*time.Second {
			w.r.fail("worker %d: %v: no decided answer within 60s", w.id, args)
			return nil, foGaveUp, nil
		}
		sent := time.Now()
		v, err := doWithin(w.clients[node], foCmdTimeout, args...)
		done := time.Now()
		switch {
		case err == nil || errors.Is(err, redis.Nil):
			if args[0] == "FLOCK" {
				w.r.mu.Lock()
				w.r.flocks = append(w.r.flocks, foFlock{sent: sent, done: done, granted: err == nil})
				w.r.mu.Unlock()
			}
			return v, foDecided, err
		case foRetryable(err):
			w.r.retries.Add(1)
			time.Sleep(10 * time.Millisecond)
		case isCode(err, "UNCERTAIN"):
			w.r.unknowns.Add(1)
			return nil, foUnknown, err
		case isReplyErr(err):
			return v, foDecided, err
		case foNotSent(err):
			w.r.notSentErrs.Add(1)
			node = (node + 1) % len(w.clients)
			time.Sleep(10 * time.Millisecond)
		case errors.Is(err, context.DeadlineExceeded):
			w.r.fail("worker %d: %v: no answer within %v", w.id, args, foCmdTimeout)
			return nil, foGaveUp, err
		default: // the connection broke, maybe after sending
			w.r.connErrs.Add(1)
			return nil, foUnknown, err
		}
	}
}

// read sends a read until it is answered: a failed read applied nothing.
func (w *foWorker) read(args ...any) (any, bool, error) {
	start := time.Now()
	node := 0
	for {
		if time.Since(start) > 60*time.Second {
			w.r.fail("worker %d: %v: no answer within 60s", w.id, args)
			return nil, false, nil
		}
		v, err := doWithin(w.clients[node], foCmdTimeout, args...)
		switch {
		case err == nil || errors.Is(err, redis.Nil):
			return v, true, err
		case isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN") || isCode(err, "LOADING") || isCode(err, "UNCERTAIN"):
			w.r.retries.Add(1)
			time.Sleep(10 * time.Millisecond)
		case isReplyErr(err):
			return v, true, err
		default:
			w.r.readConnErrs.Add(1)
			node = (node + 1) % len(w.clients)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// holds resolves whether the worker's session holds l now: its token, or
// 0 when it does not. Writes of this worker whose outcome was unknown were
// decided by the time a linearizable read is answered: a leader serves
// reads only after committing an entry of its own term.
func (w *foWorker) holds(l *foLock) (int64, bool) {
	v, ok, err := w.read("FENCE", l.name, w.sess)
	switch {
	case !ok:
		return 0, false
	case isCode(err, "NOTOWNER"):
		return 0, true
	case err != nil:
		w.r.fail("worker %d: FENCE %s %s: %v, want a token or -NOTOWNER", w.id, l.name, w.sess, err)
		return 0, false
	}
	tok, isInt := v.(int64)
	if !isInt || tok <= 0 {
		w.r.fail("worker %d: FENCE %s %s = %T %v, want a token > 0", w.id, l.name, w.sess, v, v)
		return 0, false
	}
	return tok, true
}

func (w *foWorker) stopping() bool {
	select {
	case <-w.r.stop:
		return true
	default:
		return false
	}
}

func (w *foWorker) pick() *foLock {
	if w.rng.IntN(2) == 0 {
		return w.r.locks[w.id]
	}
	return w.r.locks[foWorkers+w.rng.IntN(foSharedLocks)]
}

// run cycles FLOCK (no WAIT), a fenced write, FUNLOCK FENCE until stopped;
// even-numbered workers then stop only once they hold a lock, and keep it.
func (w *foWorker) run() {
	r := w.r
	for !r.failed.Load() {
		l := w.pick()
		if w.stopping() {
			if w.id%2 == 1 {
				return
			}
			l = r.locks[w.id] // its own lock: granted at once
		}
		v, out, err := w.write("FLOCK", l.name, w.sess)
		var tok int64
		resolved := false
		switch {
		case out == foGaveUp:
			return
		case out == foUnknown:
			t, ok := w.holds(l)
			if !ok {
				return
			}
			if t == 0 {
				r.resolvedNotHeld.Add(1)
				continue
			}
			tok, resolved = t, true
			r.resolvedGrants.Add(1)
		case errors.Is(err, redis.Nil):
			r.nulls.Add(1)
			continue
		case err != nil:
			r.fail("worker %d: FLOCK %s %s: %v", w.id, l.name, w.sess, err)
			return
		default:
			t, ok := v.(int64)
			if !ok || t <= 0 {
				r.fail("worker %d: FLOCK %s = %T %v, want a token > 0", w.id, l.name, v, v)
				return
			}
			tok = t
			r.grants.Add(1)
		}
		l.enter(r, w.id, tok, resolved)
		// The holder's fenced write must be accepted: no higher token can
		// have written while this ownership is current.
		if ok, highest := l.counter.write(tok); !ok {
			r.fail("worker %d: the fenced write to %s with its current token %d was rejected (highest accepted %d)",
				w.id, l.name, tok, highest)
		}
		if w.stopping() && w.id%2 == 0 {
			w.held, w.heldTok = l, tok
			return
		}
		l.exit(w.id)
		if !w.release(l, tok) {
			return
		}
	}
}

// release sends FUNLOCK ... FENCE tok until the lock is known to be free
// of this session.
func (w *foWorker) release(l *foLock, tok int64) bool {
	r := w.r
	for {
		v, out, err := w.write("FUNLOCK", l.name, w.sess, "FENCE", tok)
		switch out {
		case foGaveUp:
			return false
		case foDecided:
			if err != nil {
				r.fail("worker %d: FUNLOCK %s FENCE %d: %v, want 0", w.id, l.name, tok, err)
				return false
			}
			if n, ok := v.(int64); !ok || n != 0 {
				r.fail("worker %d: FUNLOCK %s FENCE %d = %v, want 0", w.id, l.name, tok, v)
				return false
			}
			r.releases.Add(1)
			return true
		}
		cur, ok := w.holds(l)
		if !ok {
			return false
		}
		if cur == 0 {
			r.unknownReleases.Add(1)
			return true
		}
		if cur != tok {
			r.fail("worker %d: after an unknown FUNLOCK of %s (token %d) it holds it with token %d", w.id, l.name, tok, cur)
			return false
		}
		// Still held: the release was not applied; send it again.
	}
}

// TestClusterLeaderKill is acceptance a: 16 clients spread over a 3-node
// cluster take and release locks while the leader is killed -9 three
// times (each time the current leader, restarted afterwards as the member
// it was). Every acknowledged grant and release must hold, tokens of each
// lock must strictly increase over the whole run, a fenced resource must
// never reject the current holder, and the median time from a kill to the
// first granted FLOCK must stay within 2 s.
// TestClusterLeaderKill is not parallel: it bounds the median time from a
// kill to the next grant, which a busy machine stretches.
func TestClusterLeaderKill(t *testing.T) {
	start := time.Now()
	c := startCluster(t, 3)
	ids := map[*node]string{}
	for _, n := range c.nodes {
		ids[n] = c.id(n)
	}
	r := &foRun{t: t, stop: make(chan struct{})}
	for i := range foWorkers {
		r.locks = append(r.locks, &foLock{name: fmt.Sprintf("own-%d", i), holder: -1})
	}
	for i := range foSharedLocks {
		r.locks = append(r.locks, &foLock{name: fmt.Sprintf("shared-%d", i), holder: -1})
	}

	workers := make([]*foWorker, foWorkers)
	for i := range workers {
		w := &foWorker{r: r, id: i, rng: rand.New(rand.NewPCG(uint64(i), 42))}
		for k := range c.nodes {
			o := c.nodes[(i+k)%len(c.nodes)].options(3)
			o.DialerRetries = 1 // a node that is down is skipped at once
			cl := redis.NewClient(o)
			t.Cleanup(func() { cl.Close() })
			w.clients = append(w.clients, cl)
		}
		w.sess = openSession(t, w.clients[0], foSessionTTL, fmt.Sprintf("worker-%d", i))
		workers[i] = w
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	stopWorkers := func() {
		select {
		case <-r.stop:
			return
		default:
		}
		close(r.stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			t.Fatal("workers did not stop within 90s of being told to")
		}
	}
	defer stopWorkers()

	// waitProgress waits until n more grants were acknowledged.
	waitProgress := func(n int64, what string) {
		from := r.grants.Load() + r.resolvedGrants.Load()
		eventually(t, 30*time.Second, what, func() bool {
			if r.failed.Load() {
				t.Fatal("a worker failed")
			}
			return r.grants.Load()+r.resolvedGrants.Load() >= from+n
		})
	}

	var failovers, firstDecided []time.Duration
	for rep := range foKills {
		waitProgress(200, "load before the kill")
		leader := c.leader(20 * time.Second)
		before := mustRaftStatus(t, leader)
		t0 := time.Now()
		leader.kill()
		r.epoch.Add(1)
		var first foFlock
		eventually(t, 30*time.Second, "a granted FLOCK after the kill", func() bool {
			if r.failed.Load() {
				t.Fatal("a worker failed")
			}
			var ok bool
			first, ok = r.firstFlockAfter(t0, true)
			return ok
		})
		d := first.done.Sub(t0)
		failovers = append(failovers, d)
		dec, _ := r.firstFlockAfter(t0, false)
		firstDecided = append(firstDecided, dec.done.Sub(t0))
		newLeader := c.leader(20 * time.Second)
		after := mustRaftStatus(t, newLeader)
		// Where the time went, from the servers' logs.
		phases := ""
		for _, n := range c.followers(leader) {
			if at, ok := foLogTime(n, t0, "starting election"); ok {
				phases += fmt.Sprintf("; %s started an election at +%v", ids[n], at.Sub(t0).Round(time.Millisecond))
			}
		}
		if at, ok := foLogTime(newLeader, t0, fmt.Sprintf(`msg="leader ready" term=%s`, after.fields["term"])); ok {
			phases += fmt.Sprintf("; %s leader ready at +%v", ids[newLeader], at.Sub(t0).Round(time.Millisecond))
		}
		t.Logf("kill %d: leader %s (term %s) killed; first granted FLOCK %v after the kill (first decided FLOCK %v); new leader %s, term %s%s",
			rep+1, ids[leader], before.fields["term"], d.Round(time.Millisecond), dec.done.Sub(t0).Round(time.Millisecond),
			ids[newLeader], after.fields["term"], phases)

		// The killed node restarts on its data and rejoins as the member
		// it was.
		rs := time.Now()
		leader.restart()
		eventually(t, 30*time.Second, "the restarted node to follow the new leader", func() bool {
			st, err := raftStatusOf(leader, 3*time.Second)
			return err == nil && st.fields["role"] == "follower" && st.fields["leader_id"] != "" &&
				st.fields["node_id"] == ids[leader] && st.fields["voters"] == "3"
		})
		// The member table is replicated state: the restarted node has it
		// once it has applied the log up to the leader's commit index,
		// which may come a moment after it first hears from the leader.
		var st raftStatus
		applied := time.Now()
		eventually(t, 10*time.Second, "the restarted node to see the members as before", func() bool {
			st = mustRaftStatus(t, leader)
			return slices.Equal(st.members(), before.members())
		})
		t.Logf("kill %d: the member table %v after following", rep+1, time.Since(applied).Round(time.Millisecond))
		t.Logf("kill %d: %s restarted and follows %s in %v", rep+1, ids[leader], st.fields["leader_id"], time.Since(rs).Round(time.Millisecond))
	}
	waitProgress(200, "load after the last restart")
	stopWorkers()
	if t.Failed() {
		return
	}

	med := foMedian(failovers)
	t.Logf("kill -> first granted FLOCK: %v, median %v (bound %v); kill -> first decided FLOCK: %v",
		failovers, med.Round(time.Millisecond), foFailoverBound, firstDecided)
	t.Logf("grants acknowledged %d, resolved after an unknown outcome %d; nulls %d; releases acknowledged %d, resolved %d; "+
		"retried -TRYAGAIN/-CLUSTERDOWN %d, failed dials %d, reads retried after a connection error %d; "+
		"writes of unknown outcome %d (-UNCERTAIN) + %d (connection broken after sending), of which FLOCKs found not applied %d",
		r.grants.Load(), r.resolvedGrants.Load(), r.nulls.Load(), r.releases.Load(), r.unknownReleases.Load(),
		r.retries.Load(), r.notSentErrs.Load(), r.readConnErrs.Load(), r.unknowns.Load(), r.connErrs.Load(), r.resolvedNotHeld.Load())
	if med > foFailoverBound {
		t.Errorf("median time from a leader kill to the first granted FLOCK is %v, want at most %v (all: %v)", med, foFailoverBound, failovers)
	}

	// The final state matches what the workers were told.
	holderOf := map[*foLock]*foWorker{}
	for _, w := range workers {
		if w.held != nil {
			holderOf[w.held] = w
		}
	}
	cl := c.leader(20 * time.Second).client(t)
	perEpoch := make([]int, foKills+1)
	for _, l := range r.locks {
		// Tokens strictly increase over the lock's whole history, and the
		// fenced resource accepted only non-decreasing tokens, each one a
		// grant.
		granted := map[int64]bool{}
		for i, g := range l.history {
			perEpoch[g.epoch]++
			granted[g.token] = true
			if i > 0 && g.token <= l.history[i-1].token {
				t.Errorf("lock %s: grant %d has token %d, not above the previous %d", l.name, i, g.token, l.history[i-1].token)
			}
		}
		for i, tok := range l.counter.accepted {
			if i > 0 && tok < l.counter.accepted[i-1] {
				t.Errorf("lock %s: the fenced resource accepted token %d after %d", l.name, tok, l.counter.accepted[i-1])
			}
			if !granted[tok] {
				t.Errorf("lock %s: the fenced resource accepted token %d, which was never granted", l.name, tok)
			}
		}
		if l.counter.rejected > 0 {
			t.Errorf("lock %s: the fenced resource rejected %d writes of current holders", l.name, l.counter.rejected)
		}

		li := getLockInfo(t, cl, l.name)
		if w := holderOf[l]; w != nil {
			if !li.Held || li.Holder != w.sess || li.Owner != "" || li.Count != 1 || li.Token != w.heldTok || len(li.Waiters) != 0 {
				t.Errorf("LOCK.INFO %s = %+v, want held once by worker %d's session %s with token %d", l.name, li, w.id, w.sess, w.heldTok)
			}
			if f := mustInt(t, cl, "FENCE", l.name); f != w.heldTok {
				t.Errorf("FENCE %s = %d, want %d", l.name, f, w.heldTok)
			}
			if last := l.history[len(l.history)-1].token; last != w.heldTok {
				t.Errorf("lock %s: the last grant has token %d, the final holder %d", l.name, last, w.heldTok)
			}
		} else if li.Held || len(li.Waiters) != 0 {
			t.Errorf("LOCK.INFO %s = %+v, want free: every grant of it was released", l.name, li)
		}
	}
	for _, w := range workers {
		si := getSessionInfo(t, cl, w.sess)
		want := []string{}
		if w.held != nil {
			want = []string{w.held.name}
		}
		if !slices.Equal(si.Locks, want) || len(si.Waiting) != 0 {
			t.Errorf("SESSION.INFO of worker %d = locks %v waiting %v, want locks %v and no waits", w.id, si.Locks, si.Waiting, want)
		}
	}
	var shared []string
	for _, l := range r.locks[foWorkers:] {
		shared = append(shared, fmt.Sprintf("%s:%d", l.name, len(l.history)))
	}
	t.Logf("grants per epoch (between kills) %v; grants of the shared locks %s; %d locks held at the end; total %v",
		perEpoch, strings.Join(shared, " "), len(holderOf), time.Since(start).Round(time.Millisecond))
}

// ---------------------------------------------------------------------------
// Acceptance f: kill -9 of every node.

// TestClusterRestartAll builds state on a 3-node cluster (sessions, held
// locks with reentrant counts, owner tags and limits, released locks, a
// killed session, a snapshot on one node), kills all three nodes with
// SIGKILL, restarts them and checks that the cluster serves the same
// state, that no node's applied index went back, and that a new grant gets
// a token above every token and index seen before the crash.
func TestClusterRestartAll(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	fol := c.followers(leader)[0]
	lc, fc := leader.client(t), fol.client(t)

	var maxTok int64
	flock := func(cl *redis.Client, args ...any) int64 {
		t.Helper()
		tok := mustInt(t, cl, append([]any{"FLOCK"}, args...)...)
		maxTok = max(maxTok, tok)
		return tok
	}
	s1 := openSession(t, lc, 120000, "alpha")
	s2 := openSession(t, fc, 90000, "beta")
	s3 := openSession(t, lc, 60000, "")
	s4 := openSession(t, fc, 60000, "doomed")

	// a: held three times by s1 (reentrant), the last two through a follower.
	ta := flock(lc, "a", s1)
	for range 2 {
		if got := flock(fc, "a", s1); got != ta {
			t.Fatalf("reentrant FLOCK a = %d, want %d", got, ta)
		}
	}
	// b: held twice by s2 with owner tag t1 and limit 2.
	tb := flock(fc, "b", s2, "OWNER", "t1", "LIMIT", 2)
	if got := flock(lc, "b", s2, "OWNER", "t1"); got != tb {
		t.Fatalf("reentrant FLOCK b = %d, want %d", got, tb)
	}
	mustErr(t, lc, "LIMIT", "FLOCK", "b", s2, "OWNER", "t1")
	mustNil(t, lc, "FLOCK", "b", s3) // held by another owner

	// A snapshot on the follower: it restarts from the snapshot and the
	// log entries after it.
	if v := mustStr(t, fc, "RAFT.SNAPSHOT"); v != "OK" {
		t.Fatalf("RAFT.SNAPSHOT = %q", v)
	}

	// c: held once by s1, not reentrant.
	flock(lc, "c", s1, "LIMIT", 1)
	// d: taken and released by s3, then held by s2 with a newer token.
	td1 := flock(lc, "d", s3)
	if n := mustInt(t, fc, "FUNLOCK", "d", s3); n != 0 {
		t.Fatalf("FUNLOCK d = %d, want 0", n)
	}
	if td2 := flock(fc, "d", s2); td2 <= td1 {
		t.Fatalf("FLOCK d = %d after %d", td2, td1)
	}
	// e: taken and released: free.
	flock(fc, "e", s3)
	if n := mustInt(t, lc, "FUNLOCK", "e", s3); n != 0 {
		t.Fatalf("FUNLOCK e = %d, want 0", n)
	}
	// k: held by s4, released by killing s4.
	flock(lc, "k", s4, "OWNER", "x")
	if n := mustInt(t, fc, "SESSION.KILL", s4); n != 1 {
		t.Fatalf("SESSION.KILL = %d, want 1", n)
	}

	locks := []string{"a", "b", "c", "d", "e", "k"}
	sessions := []string{s1, s2, s3}
	type snapshot struct {
		locks    map[string]lockInfo
		fences   map[string]any
		sessions map[string]sessionInfo
		list     []string
	}
	capture := func(cl *redis.Client) snapshot {
		t.Helper()
		s := snapshot{locks: map[string]lockInfo{}, fences: map[string]any{}, sessions: map[string]sessionInfo{}}
		for _, l := range locks {
			s.locks[l] = getLockInfo(t, cl, l)
			v, err := do(tctx(t), cl, "FENCE", l)
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("FENCE %s: %v", l, err)
			}
			s.fences[l] = v
		}
		for _, id := range sessions {
			s.sessions[id] = getSessionInfo(t, cl, id)
		}
		s.list = sessionList(t, cl)
		mustErr(t, cl, "NOSESSION", "SESSION.INFO", s4)
		return s
	}
	before := capture(lc)
	// The expected state, spelled out, so that a state that was already
	// wrong before the crash does not pass.
	want := map[string]lockInfo{
		"a": {Held: true, Holder: s1, Count: 3, Token: ta},
		"b": {Held: true, Holder: s2, Owner: "t1", Count: 2, Limit: 2, Token: tb},
		"c": {Held: true, Holder: s1, Count: 1, Limit: 1, Token: before.locks["c"].Token},
		"d": {Held: true, Holder: s2, Count: 1, Token: before.locks["d"].Token},
		"e": {}, "k": {},
	}
	for _, l := range locks {
		if !reflect.DeepEqual(before.locks[l], want[l]) {
			t.Fatalf("LOCK.INFO %s before the crash = %+v, want %+v", l, before.locks[l], want[l])
		}
	}
	if !slices.Equal(before.sessions[s1].Locks, []string{"a", "c"}) || !slices.Equal(before.sessions[s2].Locks, []string{"b", "d"}) ||
		len(before.sessions[s3].Locks) != 0 {
		t.Fatalf("SESSION.INFO before the crash: %+v", before.sessions)
	}

	// An entry after the reads above, so that the cluster time the state
	// restarts from is not earlier than the time of those reads, and the
	// remaining times after the restart can only be lower. It changes
	// nothing (the lock is free) and renews no session.
	mustErr(t, lc, "STALEFENCE", "LOCK.FORCEUNLOCK", "never-taken", 1)

	// Every node's applied index before the crash (each at least the
	// leader's index of the entry above, once it has applied it).
	leaderApplied := mustRaftStatus(t, leader).int(t, "applied_index")
	appliedBefore := map[*node]int64{}
	var maxApplied int64
	for _, n := range c.nodes {
		eventually(t, 10*time.Second, "every node to apply the last entry", func() bool {
			st, err := raftStatusOf(n, 3*time.Second)
			return err == nil && st.int(t, "applied_index") >= leaderApplied
		})
		st := mustRaftStatus(t, n)
		appliedBefore[n] = st.int(t, "applied_index")
		maxApplied = max(maxApplied, appliedBefore[n])
	}
	membersBefore := mustRaftStatus(t, leader).members()

	for _, n := range c.nodes {
		n.kill()
	}
	crashed := time.Now()
	// No node can serve alone: start all three without waiting for each.
	for _, n := range c.nodes {
		n.startNoWait()
	}
	newLeader := c.leader(30 * time.Second)
	for _, n := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := n.waitReady(ctx)
		cancel()
		if err != nil {
			t.Fatalf("node %s after the restart: %v", c.id(n), err)
		}
	}
	t.Logf("all three killed and restarted; leader %s serves every node %v after the crash", c.id(newLeader), time.Since(crashed).Round(time.Millisecond))

	// A follower serves through the leader as soon as it knows it; its own
	// state catches up once the leader's appends reach it, which after a
	// crash hashicorp/raft retries with a backoff.
	for _, n := range c.nodes {
		var st raftStatus
		start := time.Now()
		ok := waitFor(20*time.Second, func() bool {
			st = mustRaftStatus(t, n)
			return st.int(t, "applied_index") >= appliedBefore[n] && st.fields["voters"] == "3" && slices.Equal(st.members(), membersBefore)
		})
		if !ok {
			t.Errorf("node %s after the restart: applied_index %s (%d before), voters %s, members %v; want 3 and %v",
				c.id(n), st.fields["applied_index"], appliedBefore[n], st.fields["voters"], st.members(), membersBefore)
		}
		t.Logf("node %s caught up %v after it served", c.id(n), time.Since(start).Round(time.Millisecond))
	}

	// The same state through the leader and through a follower.
	for _, n := range []*node{newLeader, c.followers(newLeader)[0]} {
		after := capture(n.client(t))
		for _, l := range locks {
			if !reflect.DeepEqual(after.locks[l], before.locks[l]) {
				t.Errorf("through %s: LOCK.INFO %s = %+v after the restart, %+v before", c.id(n), l, after.locks[l], before.locks[l])
			}
			if !reflect.DeepEqual(after.fences[l], before.fences[l]) {
				t.Errorf("through %s: FENCE %s = %v after the restart, %v before", c.id(n), l, after.fences[l], before.fences[l])
			}
		}
		for _, id := range sessions {
			a, b := after.sessions[id], before.sessions[id]
			if a.Remaining > b.Remaining || a.Remaining <= 0 {
				t.Errorf("through %s: session %s remaining %d ms after the restart, %d before", c.id(n), id, a.Remaining, b.Remaining)
			}
			a.Remaining, b.Remaining = 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Errorf("through %s: SESSION.INFO %s = %+v after the restart, %+v before", c.id(n), id, a, b)
			}
		}
		if !slices.Equal(after.list, before.list) {
			t.Errorf("through %s: SESSION.LIST = %v after the restart, %v before", c.id(n), after.list, before.list)
		}
	}

	// Release and reacquire c: the new token is above every token and every
	// log index seen before the crash.
	nc := c.followers(newLeader)[0].client(t)
	if n := mustInt(t, nc, "FUNLOCK", "c", s1); n != 0 {
		t.Fatalf("FUNLOCK c after the restart = %d, want 0", n)
	}
	tok := mustInt(t, nc, "FLOCK", "c", s1)
	if tok <= maxTok || tok <= maxApplied {
		t.Errorf("FLOCK c after the restart = %d, want above every token (%d) and applied index (%d) before the crash", tok, maxTok, maxApplied)
	}
	if f := mustInt(t, newLeader.client(t), "FENCE", "c"); f != tok {
		t.Errorf("FENCE c = %d, want %d", f, tok)
	}
	t.Logf("tokens before the crash up to %d, applied index up to %d; new token %d; total %v", maxTok, maxApplied, tok, time.Since(start).Round(time.Millisecond))
}
