package raftstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/raftstore/raftstoretest"
)

// The multi-node behaviour of raftstore on in-process clusters
// (raftstoretest): what a cluster must keep across failover, partitions,
// restarts and membership changes.

const leaderWait = 10 * time.Second

func sessionID(i int) string { return fmt.Sprintf("%032x", i+1) }

// grants is what a test saw acknowledged: lock -> token.
type grants map[string]int64

// openSessions opens sessions 0..n-1, each with an hour's TTL (the test
// clusters run no ticker, so nothing expires anyway).
func openSessions(t *testing.T, c *raftstoretest.Cluster, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		res := c.Propose(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(i), TTL: 3_600_000})
		if res.Err != nil || res.Str != sessionID(i) {
			t.Fatalf("open session %d: %+v", i, res)
		}
	}
}

// lockAll takes each lock prefix0..prefix(n-1) with session 0 and records
// the tokens, which must increase.
func lockAll(t *testing.T, c *raftstoretest.Cluster, prefix string, n int, g grants) {
	t.Helper()
	var prev int64
	for i := 0; i < n; i++ {
		lock := fmt.Sprint(prefix, i)
		// A request id lets Propose retry an uncertain outcome.
		res := c.Propose(lockstate.Entry{Op: lockstate.OpFlock, Lock: lock, Session: sessionID(0), Wait: lockstate.NoWait, Req: "lockall-" + lock})
		if res.Err != nil || res.Int <= prev {
			t.Fatalf("flock %s: %+v, want a token above %d", lock, res, prev)
		}
		g[lock], prev = res.Int, res.Int
	}
}

// checkGrants reads every granted lock through n (a linearizable read) and
// checks that it is held by session 0 with the token the grant answered.
func checkGrants(t *testing.T, n *raftstore.Node, g grants) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), leaderWait)
	defer cancel()
	err := n.Read(ctx, func(st *lockstate.State, now int64) {
		for lock, tok := range g {
			if info := st.LockInfo(lock, now); info.Holder != sessionID(0) || info.Token != tok {
				t.Errorf("acknowledged grant of %s (token %d) lost: lock is %+v", lock, tok, info)
			}
		}
	})
	if err != nil {
		t.Fatalf("read on the leader: %v", err)
	}
}

func maxToken(g grants) (m int64) {
	for _, tok := range g {
		m = max(m, tok)
	}
	return m
}

// hasSession reports whether node i's applied state holds session id.
func hasSession(c *raftstoretest.Cluster, i int, id string) (ok bool) {
	c.Node(i).Local(func(st *lockstate.State) { ok = slices.Contains(st.Sessions(), id) })
	return ok
}

// TestClusterFailoverKeepsAcknowledged: when the leader dies, the new
// leader has every entry the old one acknowledged, also those acknowledged
// while it was being killed with writes in flight; writes the old leader
// said were not applied are not; tokens keep increasing; and every replica,
// the restarted old leader included, ends with the same state.
func TestClusterFailoverKeepsAcknowledged(t *testing.T) {
	c := raftstoretest.New(t, 3, nil)
	openSessions(t, c, 2)
	g := grants{}
	lockAll(t, c, "before", 30, g)

	// Writes in flight when the leader dies: a writer pipelines FLOCKs
	// (Enqueue), up to 256 unanswered, and stops once 20 are acknowledged;
	// the leader is killed then, with some entries committed and answered,
	// some committed but not yet answered, some not committed. Each answer
	// is acknowledged, not applied, or uncertain.
	//
	// Some waits may never return: hashicorp/raft v1.7.3 answers nothing
	// still queued for its leader loop or its FSM goroutine when it shuts
	// down (those futures have no shutdown channel). The kill therefore
	// waits until the leader has taken every write into its log, which
	// empties the first queue, and the answers are collected for a bounded
	// time; an entry without one counts as uncertain.
	old := c.Leader(leaderWait)
	leader := c.Node(old) // c is the test goroutine's; Kill changes it
	type outcome struct {
		lock string
		res  lockstate.Result
		err  error
	}
	type pending struct {
		lock string
		wait func() (lockstate.Result, error)
	}
	var (
		acks, enqueued, answers atomic.Int64
		stop                    atomic.Bool
		mu                      sync.Mutex
		results                 []outcome
	)
	record := func(o outcome) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, o)
	}
	window := make(chan struct{}, 256)
	queue := make(chan pending, cap(window)) // in enqueue order
	lastBefore := leader.Status().LastIndex
	written := make(chan struct{})
	go func() { // the writer
		defer close(written)
		defer close(queue)
		for i := 0; !stop.Load(); i++ {
			window <- struct{}{}
			lock := fmt.Sprint("inflight", i)
			wait, err := leader.Enqueue(lockstate.Entry{Op: lockstate.OpFlock, Lock: lock, Session: sessionID(0), Wait: lockstate.NoWait})
			if err != nil {
				record(outcome{lock: lock, err: err})
				return
			}
			enqueued.Add(1)
			queue <- pending{lock, wait}
		}
	}()
	answered := make(chan struct{})
	go func() { // the writer's reader: answers in order
		defer close(answered)
		for p := range queue {
			o := outcome{lock: p.lock}
			if o.res, o.err = p.wait(); o.err == nil {
				acks.Add(1)
			}
			record(o)
			answers.Add(1)
			<-window
		}
	}()
	c.WaitFor("20 pipelined writes acknowledged", func() bool { return acks.Load() >= 20 })
	stop.Store(true)
	<-written
	c.WaitFor("the leader to take every write into its log", func() bool {
		return leader.Status().LastIndex >= lastBefore+uint64(enqueued.Load())
	})
	c.Kill(old)
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
	}
	mu.Lock()
	got := slices.Clone(results)
	mu.Unlock()
	unanswered := enqueued.Load() - answers.Load()
	notApplied := map[string]bool{}
	var acked, uncertain int
	for _, o := range got {
		switch {
		case o.err == nil && o.res.Err == nil && o.res.Int > 0:
			g[o.lock] = o.res.Int
			acked++
		case raftstoretest.NotApplied(o.err):
			notApplied[o.lock] = true
		case errors.Is(o.err, raftstore.ErrUncertain):
			uncertain++
		default:
			t.Fatalf("in-flight flock %s: %+v, %v", o.lock, o.res, o.err)
		}
	}
	t.Logf("in flight at the kill: %d acknowledged, %d not applied, %d uncertain, %d never answered", acked, len(notApplied), uncertain, unanswered)

	l := c.Leader(leaderWait)
	if l == old {
		t.Fatalf("the killed node %d is the leader", old)
	}
	checkGrants(t, c.Node(l), g)
	c.Node(l).Local(func(st *lockstate.State) {
		for lock := range notApplied {
			if info := st.LockInfo(lock, 0); info.Holder != "" {
				t.Errorf("%s was answered not applied, but is held: %+v", lock, info)
			}
		}
	})

	// The new leader grants tokens above every earlier one.
	after := grants{}
	lockAll(t, c, "after", 5, after)
	if lowest := slices.Min(mapValues(after)); lowest <= maxToken(g) {
		t.Fatalf("token %d after failover, not above the earlier %d", lowest, maxToken(g))
	}
	applied, hash := c.SameState()

	// The old leader comes back with whatever it had not committed in its
	// log; it must end with exactly the survivors' state, and the restart
	// itself applies nothing.
	c.Restart(old)
	if a, h := c.SameState(); a != applied || h != hash {
		t.Fatalf("after the old leader rejoined: index %d state %x, want %d %x", a, h, applied, hash)
	}
	if a, h := c.Node(old).StateHash(); a != applied || h != hash {
		t.Fatalf("rejoined old leader at index %d state %x, want %d %x", a, h, applied, hash)
	}
}

func mapValues(g grants) []int64 {
	var out []int64
	for _, v := range g {
		out = append(out, v)
	}
	return out
}

// TestClusterPartitionedLeader: a leader cut off with a minority (here with
// one follower out of five) commits nothing and, once the majority has
// elected a new leader and committed an entry, answers no read that misses
// it; the new leader is on the majority side; after the partition heals,
// the old leader's uncommitted entry is gone everywhere.
func TestClusterPartitionedLeader(t *testing.T) {
	c := raftstoretest.New(t, 5, nil)
	openSessions(t, c, 1)
	old := c.Leader(leaderWait)
	follower := c.Followers()[0]
	minority := []int{old, follower}
	kept := sessionID(101) // committed by the majority while cut off

	c.Partition(minority...)
	// Reads on the old leader from the moment of the cut. Straight after
	// it, the old leader may still confirm a read with replies already on
	// their way (it is then still the only leader, and the read is right);
	// a read that starts after the majority committed an entry must fail
	// or see it, and a cut-off leader cannot see it.
	type read struct {
		start  time.Time
		err    error
		sawNew bool
	}
	var reads []read
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := read{start: time.Now()}
			ctx, cancel := context.WithTimeout(context.Background(), leaderWait)
			r.err = c.Node(old).Read(ctx, func(st *lockstate.State, _ int64) { r.sawNew = slices.Contains(st.Sessions(), kept) })
			cancel()
			reads = append(reads, r)
			time.Sleep(time.Millisecond)
		}
	}()

	// A write on the old leader after the cut cannot be acknowledged: only
	// one other node can take it.
	lost := sessionID(100)
	wait, err := c.Node(old).Enqueue(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: lost, TTL: 3_600_000})
	if err == nil {
		res, werr := wait()
		if werr == nil {
			t.Fatalf("a minority leader committed an entry: %+v", res)
		}
		if !errors.Is(werr, raftstore.ErrUncertain) && !raftstoretest.NotApplied(werr) {
			t.Fatalf("proposal on a minority leader: %v", werr)
		}
		t.Logf("proposal on the cut-off leader: %v", werr)
	} else if !raftstoretest.NotApplied(err) {
		t.Fatalf("enqueue on a minority leader: %v", err)
	}

	l := c.Leader(leaderWait)
	if slices.Contains(minority, l) {
		t.Fatalf("leader %s is on the minority side", c.ID(l))
	}
	if res := c.Propose(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: kept, TTL: 3_600_000}); res.Err != nil {
		t.Fatalf("open on the majority: %+v", res)
	}
	acked := time.Now()
	// Let the reader try a while after the acknowledgement.
	time.Sleep(4 * raftstoretest.ElectionTimeout)
	close(stop)
	<-stopped
	var answered, after int
	for _, r := range reads {
		if r.err == nil {
			answered++
		} else if !raftstoretest.NotApplied(r.err) {
			t.Fatalf("read on a minority leader: %v, want a not-ready error", r.err)
		}
		if r.start.After(acked) {
			after++
			if r.err == nil && !r.sawNew {
				t.Fatalf("a cut-off leader answered a read started after the majority committed an entry, without it")
			}
		}
	}
	if after == 0 {
		t.Fatal("no read started on the old leader after the majority's commit")
	}
	t.Logf("reads on the cut-off leader: %d, %d answered, %d started after the majority's commit", len(reads), answered, after)
	for _, i := range minority {
		if c.Node(i).CanPropose() {
			t.Fatalf("%s on the minority side can propose", c.ID(i))
		}
		if hasSession(c, i, kept) {
			t.Fatalf("%s on the minority side applied the majority's entry while cut off", c.ID(i))
		}
	}

	c.Heal()
	c.SameState()
	for i := 0; i < c.N(); i++ {
		if hasSession(c, i, lost) {
			t.Errorf("%s applied the cut-off leader's uncommitted entry", c.ID(i))
		}
		if !hasSession(c, i, kept) {
			t.Errorf("%s lacks the majority's committed entry", c.ID(i))
		}
	}
}

// TestClusterRestartedFollowerCatchesUp: a follower that was down catches
// up from the leader's log when the log still reaches back to it, and by
// an installed snapshot when the leader compacted past it; either way it
// ends with the leader's state and goes on applying.
func TestClusterRestartedFollowerCatchesUp(t *testing.T) {
	c := raftstoretest.New(t, 3, &raftstoretest.Options{Config: func(_ int, cfg *raftstore.Config) {
		cfg.TrailingLogs = 10 // a snapshot leaves little log behind
	}})
	openSessions(t, c, 2)
	g := grants{}
	lockAll(t, c, "a", 20, g)

	f := c.Followers()[0]
	c.Kill(f)
	lockAll(t, c, "b", 20, g)
	c.Restart(f)
	_, hash := c.SameState()
	if _, h := c.Node(f).StateHash(); h != hash {
		t.Fatalf("restarted follower's state %x, want %x", h, hash)
	}
	if n := c.SnapshotsInstalled(f); n != 0 {
		t.Fatalf("%d snapshots installed, want the log replicated (it was not compacted)", n)
	}

	stopped := c.Node(f).Status().LastIndex
	c.Kill(f)
	lockAll(t, c, "c", 40, g)
	// Every live node compacts, not only the leader: under load the
	// leadership may move before the follower returns (CI, 2026-11-27: no
	// snapshot installed, the other node's full log caught it up), and the
	// test is of the follower behind every log.
	for i := 0; i < c.N(); i++ {
		if i == f {
			continue
		}
		if err := c.Node(i).Snapshot(); err != nil {
			t.Fatal(err)
		}
		if first := c.Node(i).Status().FirstIndex; first <= stopped+1 {
			t.Fatalf("%s's log starts at %d, want compacted past the follower's %d", c.ID(i), first, stopped)
		}
	}
	c.Restart(f)
	_, hash = c.SameState()
	if n := c.SnapshotsInstalled(f); n < 1 {
		t.Fatal("no snapshot installed: the follower cannot have caught up from a log compacted past it")
	}
	if _, h := c.Node(f).StateHash(); h != hash {
		t.Fatalf("follower's state after the snapshot %x, want %x", h, hash)
	}
	// It applies what follows the snapshot, and answers as a leader would.
	lockAll(t, c, "d", 5, g)
	c.SameState()
	if err := c.Node(c.Leader(leaderWait)).Transfer(c.ID(f)); err != nil {
		t.Fatalf("transfer to the restored follower: %v", err)
	}
	if l := c.Leader(leaderWait); l != f {
		t.Fatalf("leader %s after the transfer, want %s", c.ID(l), c.ID(f))
	}
	checkGrants(t, c.Node(f), g)
}

// TestClusterRemoveLeaderStepsDown: a leader that removes itself gets an
// answer, steps down and stays up without a vote (it starts no elections),
// and the remaining voter takes over with the state intact. The second
// node joins as a deployment's does: added as a non-voter, promoted once
// caught up.
func TestClusterRemoveLeaderStepsDown(t *testing.T) {
	c := raftstoretest.New(t, 1, nil)
	openSessions(t, c, 1)
	g := grants{}
	lockAll(t, c, "l", 20, g)
	n1 := c.Node(0)

	i2 := c.Add()
	n2 := c.Node(i2)
	if err := n1.AddNonvoter(c.ID(i2), n2.RaftAddr()); err != nil {
		t.Fatalf("add %s: %v", c.ID(i2), err)
	}
	c.WaitFor("n2 to catch up", func() bool {
		applied, _ := n2.CaughtUp()
		done, _ := n1.CaughtUp()
		return applied >= done
	})
	if err := n1.Promote(c.ID(i2)); err != nil {
		t.Fatalf("promote n2: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- n1.Remove(c.ID(0)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("leader removing itself: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a leader removing itself got no answer in 30 s")
	}

	if l := c.Leader(leaderWait); l != i2 {
		t.Fatalf("leader %s, want %s", c.ID(l), c.ID(i2))
	}
	checkGrants(t, n2, g)
	res := c.Propose(lockstate.Entry{Op: lockstate.OpFlock, Lock: "after", Session: sessionID(0), Wait: lockstate.NoWait})
	if res.Err != nil || res.Int <= maxToken(g) {
		t.Fatalf("FLOCK on the new leader = %+v, want a token above %d", res, maxToken(g))
	}
	// Several election timeouts later the removed node is still up, a
	// follower in the term it left: it has not campaigned. (Waiting is the
	// only way to see that something does not happen.)
	term := n1.Status().Term
	time.Sleep(10 * raftstoretest.ElectionTimeout)
	if st := n1.Status(); st.State != "Follower" || st.Term != term {
		t.Fatalf("removed leader is %s in term %d, want Follower in term %d: it campaigned", st.State, st.Term, term)
	}
	if n1.CanPropose() {
		t.Fatal("removed leader still accepts proposals")
	}
	if servers, err := n2.Servers(); err != nil || len(servers) != 1 || servers[0].ID != c.ID(i2) {
		t.Fatalf("configuration after the removal = %+v, %v; want n2 alone", servers, err)
	}
}

// TestFollowerProgressIsTheLeadersView: the leader learns each follower's
// log from its own appends; a follower cut off falls behind while the
// other keeps up, and only the leader of the current term has a view.
func TestFollowerProgressIsTheLeadersView(t *testing.T) {
	c := raftstoretest.New(t, 3, nil)
	openSessions(t, c, 1)
	li := c.Leader(leaderWait)
	leader := c.Node(li)
	fs := c.Followers()
	for _, f := range fs {
		if _, ok := c.Node(f).FollowerProgress(c.ID(li)); ok {
			t.Errorf("follower %s has a view of the leader's progress", c.ID(f))
		}
	}
	// keptUp waits for follower f's match to reach the commit index (one
	// follower's answer is enough to commit, so the other's may come a
	// moment later).
	keptUp := func(f int) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			pr, ok := leader.FollowerProgress(c.ID(f))
			if ok && pr.Match >= leader.Status().CommitIndex && time.Since(pr.At) < time.Second {
				return true
			}
		}
		return false
	}
	for _, f := range fs {
		if !keptUp(f) {
			pr, ok := leader.FollowerProgress(c.ID(f))
			t.Errorf("leader's view of %s: %+v, %v; want the commit index %d, fresh", c.ID(f), pr, ok, leader.Status().CommitIndex)
		}
	}
	// Cut one follower off and write on: its match stays where it was.
	cut := fs[0]
	c.Partition(cut)
	before, _ := leader.FollowerProgress(c.ID(cut))
	for i := range 20 {
		if res := c.Propose(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: fmt.Sprintf("p%d", i), TTL: 3_600_000}); res.Err != nil {
			t.Fatalf("open p%d: %+v", i, res)
		}
	}
	after, _ := leader.FollowerProgress(c.ID(cut))
	if after.Match != before.Match || after.Match >= leader.Status().CommitIndex {
		t.Errorf("the cut-off follower's match went from %d to %d (commit index %d); want it left behind", before.Match, after.Match, leader.Status().CommitIndex)
	}
	if !keptUp(fs[1]) {
		t.Errorf("the connected follower %s did not keep up", c.ID(fs[1]))
	}
}
