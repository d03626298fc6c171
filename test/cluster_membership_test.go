package test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ---------------------------------------------------------------------------
// Helpers shared by the cluster tests of this file, cluster_reads_test.go,
// cluster_clock_test.go, cluster_failover_test.go and cluster_uncertain_test.go.

// notServing reports the errors of a node that cannot serve right now
// (see DESIGN.md, Error replies): -TRYAGAIN and -CLUSTERDOWN (nothing
// applied) and -UNCERTAIN (outcome unknown).
func notServing(err error) bool {
	return isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN") || isCode(err, "LOADING") || isCode(err, "UNCERTAIN")
}

// isReplyErr reports whether err is an error reply of the server (as
// opposed to a connection error or a timeout of the client).
func isReplyErr(err error) bool {
	var re redis.Error
	return err != nil && !errors.Is(err, redis.Nil) && errors.As(err, &re)
}

// withClient runs fn with a temporary client of n.
func withClient(n *node, fn func(c *redis.Client)) {
	c := redis.NewClient(n.options(3))
	defer c.Close()
	fn(c)
}

// transferLeadership makes target the leader with RAFT.TRANSFER id, sent
// to a node that is not the leader (so it is forwarded), and waits until
// target is the ready leader.
func transferLeadership(t testing.TB, c *cluster, target *node) {
	t.Helper()
	id := c.id(target)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("leadership never moved to %s", id)
		}
		l := c.leader(20 * time.Second)
		if l == target {
			t.Logf("leadership moved to %s in %v (%d RAFT.TRANSFERs)", id, time.Since(start).Round(time.Millisecond), attempt)
			return
		}
		via := l
		if attempt%2 == 0 { // through a follower: forwarded to the leader
			for _, n := range c.followers(l) {
				if !n.paused() {
					via = n
					break
				}
			}
		}
		var err error
		withClient(via, func(cl *redis.Client) { _, err = doWithin(cl, 20*time.Second, "RAFT.TRANSFER", id) })
		if err != nil && !notServing(err) && isReplyErr(err) {
			t.Fatalf("RAFT.TRANSFER %s: %v", id, err)
		}
		if err != nil {
			t.Logf("RAFT.TRANSFER %s: %v (retrying)", id, err)
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// ---------------------------------------------------------------------------
// Load with a checker

// clientSet is the set of nodes the load's clients may use; a node about
// to be removed is taken out of it first, so its clients move on.
type clientSet struct {
	mu      sync.Mutex
	nodes   []*node
	clients []*redis.Client
}

func (s *clientSet) add(n *node, c *redis.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = append(s.nodes, n)
	s.clients = append(s.clients, c)
}

func (s *clientSet) remove(n *node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.nodes, n); i >= 0 {
		s.nodes = slices.Delete(s.nodes, i, i+1)
		s.clients = slices.Delete(s.clients, i, i+1)
	}
}

func (s *clientSet) pick(i int) *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[i%len(s.clients)]
}

type loadCounts struct {
	ok      atomic.Int64 // decided answers
	retry   atomic.Int64 // -TRYAGAIN / -CLUSTERDOWN: not applied, retried
	unknown atomic.Int64 // -UNCERTAIN or a broken connection: retried with the same REQ
	cycles  atomic.Int64
	maxWait atomic.Int64 // longest time to a decided answer, in ns
}

func (lc *loadCounts) decided(start time.Time) {
	d := int64(time.Since(start))
	for {
		cur := lc.maxWait.Load()
		if d <= cur || lc.maxWait.CompareAndSwap(cur, d) {
			return
		}
	}
}

// grant is one acknowledged FLOCK of the shared lock.
type grant struct {
	worker     int
	token      int64
	sent, done time.Time
}

type loadWorker struct {
	t      *testing.T
	id     int
	set    *clientSet
	counts *loadCounts
	sess   string
	own    string
	req    int

	lastOwn int64
	grants  []grant
	failed  bool
}

func (w *loadWorker) fail(format string, args ...any) {
	w.failed = true
	w.t.Errorf("worker %d: "+format, append([]any{w.id}, args...)...)
}

func (w *loadWorker) nextReq() string {
	w.req++
	return fmt.Sprintf("w%d-%d", w.id, w.req)
}

// call runs a command until it gets a decided answer: a value, null or a
// lock/session error. Retryable errors are retried (a write keeps its REQ,
// so a retry after an unknown outcome takes effect at most once), each time
// through the next node of the set.
func (w *loadWorker) call(args ...any) (any, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if time.Since(start) > 60*time.Second {
			return nil, fmt.Errorf("no decided answer to %v within 60s", args)
		}
		v, err := doWithin(w.set.pick(w.id+attempt), 10*time.Second, args...)
		switch {
		case err == nil || errors.Is(err, redis.Nil):
			w.counts.ok.Add(1)
			w.counts.decided(start)
			return v, err
		case isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN") || isCode(err, "LOADING"):
			w.counts.retry.Add(1)
			time.Sleep(20 * time.Millisecond)
		case isCode(err, "UNCERTAIN"):
			w.counts.unknown.Add(1)
			time.Sleep(20 * time.Millisecond)
		case isReplyErr(err):
			w.counts.ok.Add(1)
			w.counts.decided(start)
			return nil, err // decided
		default: // connection broken or timed out: maybe applied
			w.counts.unknown.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (w *loadWorker) callInt(args ...any) (int64, bool) {
	v, err := w.call(args...)
	if err != nil {
		w.fail("%v: %v, want an integer", args, err)
		return 0, false
	}
	i, ok := v.(int64)
	if !ok {
		w.fail("%v: %T %v, want an integer", args, v, v)
	}
	return i, ok
}

// run cycles its own lock (FLOCK, FENCE, FUNLOCK FENCE) and tries the
// shared lock, checking every acknowledged answer against the previous ones.
func (w *loadWorker) run(stop <-chan struct{}) {
	for !w.failed {
		select {
		case <-stop:
			return
		default:
		}
		tok, ok := w.callInt("FLOCK", w.own, w.sess, "REQ", w.nextReq())
		if !ok {
			return
		}
		if tok <= w.lastOwn {
			w.fail("FLOCK %s granted token %d, not above the previous acknowledged grant %d (a release or grant was lost)", w.own, tok, w.lastOwn)
			return
		}
		w.lastOwn = tok
		if f, ok := w.callInt("FENCE", w.own, w.sess); !ok || f != tok {
			if ok {
				w.fail("FENCE %s right after its acknowledged FLOCK = %d, want %d", w.own, f, tok)
			}
			return
		}
		if n, ok := w.callInt("FUNLOCK", w.own, w.sess, "FENCE", tok, "REQ", w.nextReq()); !ok || n != 0 {
			if ok {
				w.fail("FUNLOCK %s = %d, want 0", w.own, n)
			}
			return
		}

		sent := time.Now()
		v, err := w.call("FLOCK", "shared", w.sess, "REQ", w.nextReq())
		done := time.Now()
		switch {
		case errors.Is(err, redis.Nil):
			// held by another worker
		case err != nil:
			w.fail("FLOCK shared: %v", err)
			return
		default:
			st, ok := v.(int64)
			if !ok {
				w.fail("FLOCK shared: %T %v", v, v)
				return
			}
			w.grants = append(w.grants, grant{worker: w.id, token: st, sent: sent, done: done})
			// Another owner must not have got it meanwhile: our release
			// with our token succeeds.
			if n, ok := w.callInt("FUNLOCK", "shared", w.sess, "FENCE", st, "REQ", w.nextReq()); !ok || n != 0 {
				if ok {
					w.fail("FUNLOCK shared FENCE %d = %d, want 0", st, n)
				}
				return
			}
		}
		w.counts.cycles.Add(1)
	}
}

// checkGrants checks the acknowledged grants of the shared lock: tokens are
// unique, and a grant acknowledged before another was sent has a lower
// token (linearizability of the token order).
func checkGrants(t *testing.T, gs []grant) {
	t.Helper()
	seen := map[int64]grant{}
	for _, g := range gs {
		if o, dup := seen[g.token]; dup {
			t.Errorf("shared lock token %d granted twice: to worker %d and worker %d", g.token, o.worker, g.worker)
		}
		seen[g.token] = g
	}
	byDone := slices.Clone(gs)
	sort.Slice(byDone, func(i, j int) bool { return byDone[i].done.Before(byDone[j].done) })
	bySent := slices.Clone(gs)
	sort.Slice(bySent, func(i, j int) bool { return bySent[i].sent.Before(bySent[j].sent) })
	var maxDone int64
	var maxG grant
	k := 0
	for _, g := range bySent {
		for k < len(byDone) && byDone[k].done.Before(g.sent) {
			if byDone[k].token > maxDone {
				maxDone, maxG = byDone[k].token, byDone[k]
			}
			k++
		}
		if g.token <= maxDone {
			t.Errorf("shared lock: worker %d's grant %d sent after worker %d's grant %d was acknowledged, but its token is not higher",
				g.worker, g.token, maxG.worker, maxG.token)
		}
	}
}

// removeMember sends RAFT.REMOVE id to the current leader until it is
// decided, then stops the removed node. The id of the leader itself may be
// given.
func removeMember(t *testing.T, c *cluster, victim *node) {
	t.Helper()
	id := c.id(victim)
	start := time.Now()
	for {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("RAFT.REMOVE %s never succeeded", id)
		}
		l := c.leader(20 * time.Second)
		var v any
		var err error
		withClient(l, func(cl *redis.Client) { v, err = doWithin(cl, 20*time.Second, "RAFT.REMOVE", id) })
		if err == nil {
			if v != "OK" {
				t.Fatalf("RAFT.REMOVE %s = %v, want OK", id, v)
			}
			t.Logf("RAFT.REMOVE %s (sent to %s, the leader) answered OK after %v", id, c.id(l), time.Since(start).Round(time.Millisecond))
			break
		}
		if !notServing(err) && isReplyErr(err) {
			t.Fatalf("RAFT.REMOVE %s: %v", id, err)
		}
		t.Logf("RAFT.REMOVE %s: %v (retrying)", id, err)
		time.Sleep(200 * time.Millisecond)
	}
	// Every other live node drops it from its configuration.
	for _, n := range c.nodes {
		if n == victim || !n.alive() {
			continue
		}
		eventually(t, 20*time.Second, fmt.Sprintf("%s to leave the configuration seen by %s", id, c.id(n)), func() bool {
			st, err := raftStatusOf(n, 3*time.Second)
			return err == nil && !slices.Contains(st.memberIDs(), id)
		})
	}
	victim.term()
}

// Acceptance e: nodes join and leave, the leader included, while clients
// lock and unlock through every node; no acknowledged operation is lost or
// contradicted, and a removed id cannot come back.
func TestClusterMembershipUnderLoad(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := startCluster(t, 3)
	set := &clientSet{}
	for _, n := range c.nodes {
		set.add(n, n.client(t))
	}

	counts := &loadCounts{}
	const workers = 4
	var ws []*loadWorker
	for i := range workers {
		cl := c.nodes[i%3].client(t)
		ws = append(ws, &loadWorker{
			t: t, id: i, set: set, counts: counts,
			sess: openSession(t, cl, 60000, fmt.Sprintf("load-%d", i)),
			own:  fmt.Sprintf("own-%d", i),
		})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop) }()
	}
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer stopLoad()
	progress := func(what string) {
		t.Logf("%-28s cycles=%d ok=%d retry=%d unknown=%d longest-to-decided=%v", what, counts.cycles.Load(), counts.ok.Load(),
			counts.retry.Load(), counts.unknown.Load(), time.Duration(counts.maxWait.Load()).Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	progress("3 nodes:")

	// Two nodes join under load and become voters.
	n4 := c.add("n4")
	set.add(n4, n4.client(t))
	n5 := c.add("n5")
	set.add(n5, n5.client(t))
	c.waitVoters(5)
	progress("5 voters:")
	time.Sleep(500 * time.Millisecond)

	// Remove the leader (an original node: move leadership there first if
	// it went to a newcomer).
	originals := c.nodes[:3]
	l := c.leader(20 * time.Second)
	if !slices.Contains(originals, l) {
		transferLeadership(t, c, originals[0])
		l = c.leader(20 * time.Second)
	}
	removedLeader := c.id(l)
	set.remove(l)
	removeMember(t, c, l)
	c.waitVoters(4)
	progress("leader " + removedLeader + " removed:")
	time.Sleep(500 * time.Millisecond)

	// Then an original follower.
	l = c.leader(20 * time.Second)
	var victim *node
	for _, n := range originals {
		if n != l && n.alive() {
			victim = n
			break
		}
	}
	removedFollower := c.id(victim)
	set.remove(victim)
	removeMember(t, c, victim)
	c.waitVoters(3)
	progress("follower " + removedFollower + " removed:")
	before := counts.cycles.Load()
	time.Sleep(time.Second)
	stopLoad()
	progress("load stopped:")
	if counts.cycles.Load() == before {
		t.Errorf("no load cycle completed after the membership changes")
	}

	// Every acknowledged operation holds: the shared lock's grants are
	// consistent and every worker's locks are free, as its last
	// acknowledged FUNLOCKs left them, through every remaining node.
	var all []grant
	for _, w := range ws {
		all = append(all, w.grants...)
	}
	checkGrants(t, all)
	t.Logf("shared lock: %d acknowledged grants", len(all))
	live := []*node{}
	for _, n := range c.nodes {
		if n.alive() {
			live = append(live, n)
		}
	}
	if len(live) != 3 {
		t.Fatalf("%d live nodes, want 3", len(live))
	}
	for _, n := range live {
		cl := n.client(t)
		mustNil(t, cl, "FENCE", "shared")
		for _, w := range ws {
			if w.failed {
				continue
			}
			mustNil(t, cl, "FENCE", w.own)
			si := getSessionInfo(t, cl, w.sess)
			if len(si.Locks) != 0 || len(si.Waiting) != 0 {
				t.Errorf("session of worker %d through %s: %+v, want no locks", w.id, c.id(n), si)
			}
			// Tokens go on increasing after the membership changes.
			tok := mustInt(t, cl, "FLOCK", w.own, w.sess)
			if tok <= w.lastOwn {
				t.Errorf("worker %d: new token %d, want > %d", w.id, tok, w.lastOwn)
			}
			w.lastOwn = tok
			mustInt(t, cl, "FUNLOCK", w.own, w.sess)
		}
		st := mustRaftStatus(t, n)
		want := slices.DeleteFunc([]string{"n1", "n2", "n3", "n4", "n5"}, func(id string) bool { return id == removedLeader || id == removedFollower })
		if ids := st.memberIDs(); !slices.Equal(ids, want) {
			t.Errorf("RAFT.STATUS of %s lists %v, want %v", c.id(n), ids, want)
		}
		for _, m := range st.nodes {
			if m.Suffrage != "voter" {
				t.Errorf("RAFT.STATUS of %s: %+v, want every member a voter", c.id(n), m)
			}
		}
	}

	// A removed id can't come back, even at a fresh address, through the
	// leader or a follower.
	l = c.leader(20 * time.Second)
	for i, id := range []string{removedLeader, removedFollower} {
		via := l
		if i == 1 {
			via = c.followers(l)[0]
		}
		raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var err error
		eventually(t, 20*time.Second, "a decided answer to RAFT.JOIN "+id, func() bool {
			withClient(via, func(cl *redis.Client) { _, err = doWithin(cl, 20*time.Second, "RAFT.JOIN", id, raftAddr, addr) })
			return !notServing(err)
		})
		if err == nil || !isReplyErr(err) {
			t.Errorf("RAFT.JOIN of the removed id %s at a fresh address (via %s): %v, want an error", id, c.id(via), err)
		} else {
			t.Logf("RAFT.JOIN of the removed id %s: %v", id, err)
		}
		if ids := mustRaftStatus(t, l).memberIDs(); slices.Contains(ids, id) {
			t.Errorf("after RAFT.JOIN of the removed id %s the configuration is %v", id, ids)
		}
	}
	c.waitVoters(3)
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// Acceptance e, second half: a node whose data is wiped is replaced by a
// new node (new id, empty directory), which can only catch up by a
// snapshot install because the leader's log was truncated; it then leads
// and serves the same state.
func TestClusterWipedNodeRejoinsBySnapshot(t *testing.T) {
	t.Parallel()
	start := time.Now()
	flags := []string{"--snapshot-threshold", "64", "--trailing-logs", "16"}
	c := startCluster(t, 3, flags, flags, flags)
	leader := c.leader(20 * time.Second)
	lc := leader.client(t)

	// State that must survive: a reentrant hold, a tagged hold with a
	// limit, a released lock, and the sessions.
	keeper := openSession(t, lc, 600000, "keeper")
	other := openSession(t, lc, 600000, "other")
	tokKeep := mustInt(t, lc, "FLOCK", "keep", keeper)
	mustInt(t, lc, "FLOCK", "keep", keeper)
	mustInt(t, lc, "FLOCK", "keep", keeper)
	tokTagged := mustInt(t, lc, "FLOCK", "tagged", other, "OWNER", "task-7", "LIMIT", 2)
	mustInt(t, lc, "FLOCK", "gone", other)
	mustInt(t, lc, "FUNLOCK", "gone", other)

	victim := c.followers(leader)[0]
	victimID := c.id(victim)
	victim.kill()
	if err := os.RemoveAll(victim.dataDir); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s and wiped %s", victimID, victim.dataDir)

	// Enough entries for the leader to snapshot and truncate its log.
	churn := openSession(t, lc, 600000, "churn")
	var maxTok int64
	for i := range 250 {
		lock := fmt.Sprintf("cycle-%d", i%10)
		tok := mustInt(t, lc, "FLOCK", lock, churn)
		if tok <= maxTok {
			t.Fatalf("token %d after %d", tok, maxTok)
		}
		maxTok = tok
		mustInt(t, lc, "FUNLOCK", lock, churn, "FENCE", tok)
	}
	st := mustRaftStatus(t, leader)
	t.Logf("after 500 writes, leader %s: %v", c.id(leader), st)
	// --snapshot-threshold 64: raft checks it every 1–2 s and compacts.
	eventually(t, 15*time.Second, "the leader to snapshot and truncate its log by itself", func() bool {
		st = mustRaftStatus(t, leader)
		return st.int(t, "first_index") > 1
	})

	removeMemberDead(t, c, victimID)
	c.waitVoters(2)

	// The log is truncated now: a newcomer can't replay it from index 1.
	st = mustRaftStatus(t, leader)
	if st.int(t, "first_index") <= 1 {
		t.Fatalf("leader's first_index is %s before the join, want > 1 (log truncated)", st.fields["first_index"])
	}
	commitAtJoin := st.int(t, "commit_index")
	t.Logf("before the join, leader: %v", st)

	joinStart := time.Now()
	n4 := c.add("n4", flags...)
	c.waitVoters(3)
	var ns raftStatus
	eventually(t, 30*time.Second, "n4 to apply the leader's commit index at join time", func() bool {
		s, err := raftStatusOf(n4, 3*time.Second)
		ns = s
		return err == nil && s.int(t, "applied_index") >= commitAtJoin
	})
	t.Logf("n4 caught up and voter %v after starting: %v", time.Since(joinStart).Round(time.Millisecond), ns)
	if fi := ns.int(t, "first_index"); fi == 1 {
		t.Errorf("n4's log starts at index 1: it replayed the log instead of installing a snapshot (leader first_index %s)", st.fields["first_index"])
	}
	for _, line := range strings.Split(n4.stderr(), "\n") {
		if strings.Contains(strings.ToLower(line), "snapshot") {
			t.Logf("n4: %s", line)
		}
	}

	// n4 leads and serves the same state.
	transferLeadership(t, c, n4)
	c4 := n4.client(t)
	want := map[string]lockInfo{
		"keep":   {Held: true, Holder: keeper, Count: 3, Token: tokKeep},
		"tagged": {Held: true, Holder: other, Owner: "task-7", Count: 1, Limit: 2, Token: tokTagged},
	}
	for lock, w := range want {
		if li := getLockInfo(t, c4, lock); !equalLockInfo(li, w) {
			t.Errorf("LOCK.INFO %s on the new leader: %+v, want %+v", lock, li, w)
		}
	}
	if li := getLockInfo(t, c4, "gone"); li.Held || li.Count != 0 || len(li.Waiters) != 0 {
		t.Errorf("LOCK.INFO gone on the new leader: %+v, want free", li)
	}
	if f := mustInt(t, c4, "FENCE", "keep"); f != tokKeep {
		t.Errorf("FENCE keep = %d, want %d", f, tokKeep)
	}
	if f := mustInt(t, c4, "FENCE", "tagged", other, "OWNER", "task-7"); f != tokTagged {
		t.Errorf("FENCE tagged = %d, want %d", f, tokTagged)
	}
	mustNil(t, c4, "FENCE", "gone")
	for i := range 10 {
		mustNil(t, c4, "FENCE", fmt.Sprintf("cycle-%d", i))
	}
	if si := getSessionInfo(t, c4, keeper); !slices.Equal(si.Locks, []string{"keep"}) || si.Name != "keeper" {
		t.Errorf("SESSION.INFO keeper on the new leader: %+v", si)
	}
	if si := getSessionInfo(t, c4, other); !slices.Equal(si.Locks, []string{"tagged"}) {
		t.Errorf("SESSION.INFO other on the new leader: %+v", si)
	}
	// The limit survived too: a second hold is allowed, a third is not.
	if tok := mustInt(t, c4, "FLOCK", "tagged", other, "OWNER", "task-7"); tok != tokTagged {
		t.Errorf("reentrant FLOCK tagged = %d, want %d", tok, tokTagged)
	}
	mustErr(t, c4, "LIMIT", "FLOCK", "tagged", other, "OWNER", "task-7")
	if tok := mustInt(t, c4, "FLOCK", "cycle-0", churn); tok <= maxTok {
		t.Errorf("first grant on the new leader: token %d, want > %d", tok, maxTok)
	}
	// The followers agree.
	for _, n := range c.followers(n4) {
		if li := getLockInfo(t, n.client(t), "keep"); !equalLockInfo(li, want["keep"]) {
			t.Errorf("LOCK.INFO keep through %s: %+v", c.id(n), li)
		}
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// removeMemberDead removes the id of a node that is down.
func removeMemberDead(t *testing.T, c *cluster, id string) {
	t.Helper()
	eventually(t, 30*time.Second, "RAFT.REMOVE "+id, func() bool {
		l := c.leader(20 * time.Second)
		var err error
		withClient(l, func(cl *redis.Client) { _, err = doWithin(cl, 20*time.Second, "RAFT.REMOVE", id) })
		if err != nil && !notServing(err) {
			t.Fatalf("RAFT.REMOVE %s: %v", id, err)
		}
		return err == nil
	})
}
