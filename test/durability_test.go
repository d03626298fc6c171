package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// streamer is one client of the durability stream: its own session, its
// own lock and connection, and strictly sequential FLOCK/FUNLOCK (a random
// walk of the reentrant count), so that after a crash its lock must show
// the last acknowledged state or the one of the single op in flight.
type streamer struct {
	id      int
	c       *redis.Client
	session string
	lock    string
	rng     *rand.Rand

	count    int64  // acknowledged hold count
	token    int64  // acknowledged token while count > 0
	maxTok   int64  // largest token this lock ever had, as far as we know
	inflight string // the op sent but not acknowledged when the stream broke
	acked    int    // ops acknowledged in the current round
	flocks   int    // acknowledged FLOCKs, all rounds
	funlocks int    // acknowledged FUNLOCKs, all rounds
	err      error  // the first contract violation seen by the stream
}

// run sends ops until stop closes or an op fails (the server died). A
// failed op is left in inflight.
func (s *streamer) run(stop <-chan struct{}, floor int64, ackCh chan<- int) {
	s.inflight, s.acked = "", 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		op := "FUNLOCK"
		if s.count == 0 || (s.count < 4 && s.rng.IntN(2) == 0) {
			op = "FLOCK"
		}
		s.inflight = op
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := s.c.Do(ctx, op, s.lock, s.session).Result()
		cancel()
		if err != nil {
			return // the server is gone (or the op failed): op stays in flight
		}
		s.inflight = ""
		got, ok := v.(int64)
		if !ok {
			s.fail("%s answered %T %v", op, v, v)
			return
		}
		if op == "FLOCK" {
			switch {
			case s.count > 0 && got != s.token:
				s.fail("reentrant FLOCK token %d, want %d", got, s.token)
			case s.count == 0 && got <= s.maxTok:
				s.fail("new FLOCK token %d, want > %d (this lock's previous tokens)", got, s.maxTok)
			case s.count == 0 && got <= floor:
				s.fail("new FLOCK token %d, want > %d (every token seen before the restart)", got, floor)
			}
			s.count++
			s.token, s.maxTok = got, max(s.maxTok, got)
			s.flocks++
		} else {
			if got != s.count-1 {
				s.fail("FUNLOCK answered %d, want %d", got, s.count-1)
			}
			s.count--
			s.funlocks++
		}
		if s.err != nil {
			return
		}
		s.acked++
		select {
		case ackCh <- s.id:
		default:
		}
	}
}

func (s *streamer) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("client %d: "+format, append([]any{s.id}, args...)...)
	}
}

// reconcile checks the lock after a restart against the acknowledged state
// and the op in flight, then adopts what the server has.
func (s *streamer) reconcile(t *testing.T, li lockInfo) {
	t.Helper()
	ok := func(count int64) bool {
		if li.Count != count {
			return false
		}
		if count == 0 {
			return !li.Held && li.Token == 0
		}
		if !li.Held || li.Holder != s.session || li.Owner != "" {
			return false
		}
		if s.count > 0 {
			return li.Token == s.token // the same ownership throughout
		}
		return li.Token > s.maxTok // the in-flight FLOCK took the free lock
	}
	alts := []int64{s.count}
	switch s.inflight {
	case "FLOCK":
		alts = append(alts, s.count+1)
	case "FUNLOCK":
		alts = append(alts, s.count-1)
	}
	if !slices.ContainsFunc(alts, ok) {
		t.Errorf("client %d lock %s after restart: %+v; acknowledged count %d token %d, in flight %q (allowed counts %v)",
			s.id, s.lock, li, s.count, s.token, s.inflight, alts)
	}
	// Applied exactly once: the count is the acknowledged FLOCKs minus
	// FUNLOCKs, plus or minus the op in flight.
	net := int64(s.flocks - s.funlocks)
	if d := li.Count - net; d != 0 && !(d == 1 && s.inflight == "FLOCK") && !(d == -1 && s.inflight == "FUNLOCK") {
		t.Errorf("client %d: count %d after restart, but %d FLOCKs - %d FUNLOCKs were acknowledged (in flight %q)",
			s.id, li.Count, s.flocks, s.funlocks, s.inflight)
	}
	// Adopt the server's state: the in-flight op is now known.
	if li.Count == net+1 {
		s.flocks++
	} else if li.Count == net-1 {
		s.funlocks++
	}
	s.count, s.inflight = li.Count, ""
	if li.Held {
		s.token, s.maxTok = li.Token, max(s.maxTok, li.Token)
	}
}

// Acceptance f: a stream of FLOCK/FUNLOCK from several clients, each
// acknowledged result recorded; kill -9 mid-stream at three different
// moments (right after the stream starts, well into it, and shortly after a
// RAFT.SNAPSHOT), restart on the same directory and ports each time, and
// check:
//   - every acknowledged state is there: each lock shows the last
//     acknowledged op's effect, or that of the one op in flight;
//   - no entry was applied twice: the reentrant count equals acknowledged
//     FLOCKs minus FUNLOCKs, plus or minus the op in flight;
//   - tokens keep increasing: a new ownership after the restart gets a
//     token greater than every token seen before;
//   - no session expires early because of the restart: a session with
//     TTL 5 s, heartbeated just before the kill and down ~3 s, is alive
//     right after the restart, with at least the time it had left at the
//     kill, minus the time the node has been up again (downtime does not
//     count).
func TestDurabilityKill9(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const clients = 6
	const leaseTTL = 5000
	lease := openSession(t, c, leaseTTL, "lease")
	ss := make([]*streamer, clients)
	for i := range ss {
		cl := n.soloClient(t)
		ss[i] = &streamer{
			id: i, c: cl, lock: fmt.Sprintf("dur-%d", i),
			session: openSession(t, cl, 600000, fmt.Sprintf("stream-%d", i)),
			rng:     rand.New(rand.NewPCG(uint64(i), 42)),
		}
	}
	// Every token seen so far: new ownerships after a restart must beat it.
	var floor int64

	moments := []struct {
		name string
		wait func(t *testing.T, acks <-chan int)
	}{
		{"right after the stream starts", func(t *testing.T, acks <-chan int) {
			seen := map[int]bool{}
			for len(seen) < clients {
				select {
				case id := <-acks:
					seen[id] = true
				case <-time.After(10 * time.Second):
					t.Fatalf("stream made no progress (%d clients acknowledged)", len(seen))
				}
			}
		}},
		{"well into the stream", func(t *testing.T, acks <-chan int) {
			time.Sleep(400 * time.Millisecond)
		}},
		{"shortly after RAFT.SNAPSHOT", func(t *testing.T, acks <-chan int) {
			time.Sleep(150 * time.Millisecond)
			if s := mustStr(t, c, "RAFT.SNAPSHOT"); s != "OK" {
				t.Fatalf("RAFT.SNAPSHOT = %q, want OK", s)
			}
			time.Sleep(100 * time.Millisecond)
		}},
	}
	for round, m := range moments {
		stop := make(chan struct{})
		acks := make(chan int, 1024)
		var wg sync.WaitGroup
		for _, s := range ss {
			wg.Add(1)
			go func() { defer wg.Done(); s.run(stop, floor, acks) }()
		}
		m.wait(t, acks)

		// The lease's last renewal, just before the crash.
		hbSent := time.Now()
		if got := mustInt(t, c, "SESSION.HEARTBEAT", lease); got != leaseTTL {
			t.Fatalf("SESSION.HEARTBEAT = %d, want %d", got, leaseTTL)
		}
		killed := time.Now()
		n.kill()
		wg.Wait()
		total := 0
		for _, s := range ss {
			if s.err != nil {
				t.Fatalf("round %d: %v", round, s.err)
			}
			total += s.acked
			floor = max(floor, s.maxTok)
		}
		t.Logf("round %d (%s): %d ops acknowledged before the kill", round, m.name, total)

		time.Sleep(3 * time.Second)
		restarted := time.Now()
		n.restart()
		down := restarted.Sub(killed)

		si := getSessionInfo(t, c, lease) // fails the test if it expired
		sinceHB := time.Since(hbSent)
		// Had the downtime counted, remaining would be at most
		// TTL - sinceHB. It must be more than that by (most of) the
		// downtime.
		if atLeast := leaseTTL - sinceHB.Milliseconds() + down.Milliseconds()/2; si.Remaining < atLeast {
			t.Errorf("round %d: lease remaining %d ms right after restart (%v after its heartbeat, %v down), want >= %d: the downtime was counted",
				round, si.Remaining, sinceHB, down, atLeast)
		}
		t.Logf("round %d: lease remaining %d ms, %v after its heartbeat, %v down", round, si.Remaining, sinceHB, down)
		if si.Remaining > leaseTTL {
			t.Errorf("round %d: lease remaining %d > TTL %d", round, si.Remaining, leaseTTL)
		}

		for _, s := range ss {
			s.reconcile(t, getLockInfo(t, c, s.lock))
			floor = max(floor, s.maxTok)
			si := getSessionInfo(t, c, s.session)
			wantLocks := []string{}
			if s.count > 0 {
				wantLocks = []string{s.lock}
			}
			if !slices.Equal(si.Locks, wantLocks) {
				t.Errorf("round %d: session of client %d holds %v, want %v", round, s.id, si.Locks, wantLocks)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	// After the last restart every new ownership beats every token seen.
	// A client whose dials failed while the node was down may answer its
	// last dial error for up to a second after the node is back (go-redis's
	// pool redials once a second once PoolSize dials failed: CI 14:57,
	// FUNLOCK "connection refused" 0.6 s after the node served), so each
	// must answer a PING first.
	for _, s := range ss {
		deadline := time.Now().Add(10 * time.Second)
		for err := s.c.Ping(tctx(t)).Err(); err != nil; err = s.c.Ping(tctx(t)).Err() {
			if time.Now().After(deadline) {
				t.Fatalf("client %d after the last restart: %v", s.id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, s := range ss {
		for s.count > 0 {
			mustInt(t, s.c, "FUNLOCK", s.lock, s.session)
			s.count--
		}
		if tok := mustInt(t, s.c, "FLOCK", s.lock, s.session); tok <= floor {
			t.Errorf("client %d: token %d after restarts, want > %d", s.id, tok, floor)
		}
	}
	// The sessions all survived three crashes.
	list := sessionList(t, c)
	for _, s := range ss {
		if !slices.Contains(list, s.session) {
			t.Errorf("session of client %d lost", s.id)
		}
	}
}

// stateDump is everything LOCK.INFO, SESSION.LIST and SESSION.INFO tell
// about a node, minus the remaining times, which run by themselves.
type stateDump struct {
	locks    map[string]lockInfo
	sessions []string
	infos    map[string]sessionInfo
}

func dumpState(t *testing.T, c *redis.Client, locks []string) stateDump {
	t.Helper()
	d := stateDump{locks: map[string]lockInfo{}, infos: map[string]sessionInfo{}}
	for _, l := range locks {
		d.locks[l] = getLockInfo(t, c, l).withoutRemaining()
	}
	d.sessions = sessionList(t, c)
	for _, s := range d.sessions {
		si := getSessionInfo(t, c, s)
		if si.Remaining <= 0 || si.Remaining > si.TTL {
			t.Errorf("session %s remaining %d, want in (0, %d]", s, si.Remaining, si.TTL)
		}
		si.Remaining = 0
		d.infos[s] = si
	}
	return d
}

func compareStates(t *testing.T, when string, before, after stateDump) {
	t.Helper()
	for l, b := range before.locks {
		if a := after.locks[l]; !equalLockInfo(a, b) {
			t.Errorf("%s: LOCK.INFO %s = %+v, want %+v", when, l, a, b)
		}
	}
	if !slices.Equal(before.sessions, after.sessions) {
		t.Errorf("%s: SESSION.LIST = %v, want %v", when, after.sessions, before.sessions)
	}
	for s, b := range before.infos {
		a := after.infos[s]
		if a.ID != b.ID || a.Name != b.Name || a.TTL != b.TTL || a.Created != b.Created ||
			!slices.Equal(a.Locks, b.Locks) || !slices.Equal(a.Waiting, b.Waiting) {
			t.Errorf("%s: SESSION.INFO %s = %+v, want %+v", when, s, a, b)
		}
	}
}

// Acceptance g: RAFT.SNAPSHOT, then more writes, then a restart: the state
// (LOCK.INFO of every lock, SESSION.LIST, SESSION.INFO of every session) is
// the same, remembered REQ answers still hold, and tokens keep growing.
// Done twice: restart by SIGTERM, then (with a snapshot in between again)
// by SIGKILL.
func TestSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	locks := []string{"g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8"}

	// State before the snapshot.
	s1 := openSession(t, c, 60000, "alpha")
	s2 := openSession(t, c, 120000, "beta")
	s3 := openSession(t, c, 30000, "gamma")
	s4 := openSession(t, c, 45000, "delta")
	tok1 := mustInt(t, c, "FLOCK", "g1", s1, "REQ", "r1")
	mustInt(t, c, "FLOCK", "g1", s1)
	mustInt(t, c, "FLOCK", "g1", s1)
	mustInt(t, c, "FLOCK", "g2", s2, "OWNER", "tag", "LIMIT", 2)
	mustInt(t, c, "FLOCK", "g2", s2, "OWNER", "tag")
	mustInt(t, c, "FLOCK", "g3", s3)
	mustInt(t, c, "FLOCK", "g4", s4)
	mustInt(t, c, "FUNLOCK", "g4", s4)
	mustInt(t, c, "FLOCK", "g5", s4, "OWNER", "x")
	mustErr(t, c, "NOTOWNER", "FUNLOCK", "g3", s1, "REQ", "r2")
	if s := mustStr(t, c, "RAFT.SNAPSHOT"); s != "OK" {
		t.Fatalf("RAFT.SNAPSHOT = %q, want OK", s)
	}

	// More writes after it.
	s5 := openSession(t, c, 90000, "epsilon")
	mustInt(t, c, "FLOCK", "g6", s5, "LIMIT", 1)
	mustInt(t, c, "FUNLOCK", "g1", s1)
	mustInt(t, c, "SESSION.KILL", s4) // frees g5
	mustNil(t, c, "FLOCK", "g3", s1, "WAIT", 50)
	mustInt(t, c, "FLOCK", "g7", s2)
	mustInt(t, c, "FUNLOCK", "g7", s2)
	mustInt(t, c, "FLOCK", "g8", s3, "OWNER", "t8")
	mustInt(t, c, "SESSION.HEARTBEAT", s3)

	before := dumpState(t, c, locks)
	if len(before.sessions) != 4 || before.locks["g1"].Count != 2 || before.locks["g5"].Held {
		t.Fatalf("unexpected state before the restart: %+v", before)
	}
	ri := infoRaft(t, c)
	applied := infoInt(t, ri, "raft_applied_index")
	if first, last := infoInt(t, ri, "raft_first_index"), infoInt(t, ri, "raft_last_index"); first < 1 || first > applied || applied > last {
		t.Errorf("INFO raft: first %d, applied %d, last %d; want 1 <= first <= applied <= last", first, applied, last)
	}
	n.term()
	n.restart()
	after := dumpState(t, c, locks)
	compareStates(t, "after snapshot, writes and SIGTERM", before, after)
	if a := appliedIndex(t, c); a < applied {
		t.Errorf("raft_applied_index %d after restart, want >= %d", a, applied)
	}
	// REQ memories survived: the retry answers the first token and does
	// not count.
	if got := mustInt(t, c, "FLOCK", "g1", s1, "REQ", "r1"); got != tok1 {
		t.Errorf("retry of REQ r1 after restart = %d, want %d", got, tok1)
	}
	mustErr(t, c, "NOTOWNER", "FUNLOCK", "g3", s1, "REQ", "r2")
	if li := getLockInfo(t, c, "g1"); li.Count != 2 {
		t.Errorf("g1 count %d after REQ retry, want 2", li.Count)
	}
	// Tokens keep growing past everything before the restart.
	if tok := mustInt(t, c, "FLOCK", "g7", s5); tok <= applied {
		t.Errorf("new token %d after restart, want > %d (the applied index before)", tok, applied)
	}

	// Second time: writes, snapshot, writes, crash.
	mustInt(t, c, "FLOCK", "g4", s2)
	mustInt(t, c, "FUNLOCK", "g2", s2, "OWNER", "tag")
	if s := mustStr(t, c, "RAFT.SNAPSHOT"); s != "OK" {
		t.Fatalf("RAFT.SNAPSHOT = %q, want OK", s)
	}
	s6 := openSession(t, c, 50000, "zeta")
	mustInt(t, c, "FLOCK", "g5", s6)
	mustInt(t, c, "SESSION.KILL", s3) // frees g3 and g8
	mustInt(t, c, "FUNLOCK", "g7", s5)
	before = dumpState(t, c, locks)
	applied = appliedIndex(t, c)
	n.kill()
	n.restart()
	after = dumpState(t, c, locks)
	compareStates(t, "after snapshot, writes and SIGKILL", before, after)
	if tok := mustInt(t, c, "FLOCK", "g3", s6); tok <= applied {
		t.Errorf("new token %d after crash, want > %d", tok, applied)
	}
}

// Acceptance c, across a restart: a waiting FLOCK whose connection closed
// because the server crashed (kill -9) must not be handed the lock later.
// Its client saw the connection fail and is not waiting any more, but its
// session lives on (the client heartbeats it), so a lock handed to that
// wait would be held by an owner that does not know it, until the whole
// session ends. A waiting FLOCK whose connection closes has its wait
// cancelled (see DESIGN.md, Sessions, waits and handoff).
func TestCrashCancelsOrphanedWaits(t *testing.T) {
	t.Parallel()
	testOrphanedWait(t, (*node).kill)
}

// As TestCrashCancelsOrphanedWaits, with a graceful shutdown (SIGTERM),
// which closes the waiting connection too.
func TestShutdownCancelsOrphanedWaits(t *testing.T) {
	t.Parallel()
	testOrphanedWait(t, (*node).term)
}

func testOrphanedWait(t *testing.T, stop func(*node)) {
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "orphan"
	h := openSession(t, c, 60000, "holder")
	w := openSession(t, c, 60000, "waiter")
	tok := mustInt(t, c, "FLOCK", l, h)
	rc := dialRaw(t, n.addr)
	rc.send("FLOCK", l, w, "WAIT", "0")
	waitQueued(t, c, l, w)

	stop(n)
	// A graceful stop may tell the waiter its wait was cancelled; a crash
	// just closes the connection. Either way it is not granted.
	if v, err := rc.tryRead(5 * time.Second); err == nil {
		if !strings.HasPrefix(fmt.Sprint(v), "-CANCELLED") && !strings.Contains(fmt.Sprint(v), "CANCELLED") {
			t.Fatalf("the waiting connection got %v from a stopping server, want -CANCELLED or closed", v)
		}
	} else if !isClosed(err) {
		t.Fatalf("the waiting connection: %v, want closed", err)
	}
	n.restart()
	t.Logf("after restart: %+v", getLockInfo(t, c, l))

	// The waiter's client is alive and keeps its session, but no longer
	// waits: it saw its FLOCK fail.
	mustInt(t, c, "SESSION.HEARTBEAT", w)
	if got := mustInt(t, c, "FUNLOCK", l, h); got != 0 {
		t.Fatalf("FUNLOCK = %d, want 0", got)
	}
	li := getLockInfo(t, c, l)
	if li.Held && li.Holder == w {
		t.Errorf("after the restart, releasing %s handed it (token %d > %d) to the waiter whose connection closed with the old process: "+
			"its owner never learns it holds the lock, and the lock stays taken as long as the session lives. LOCK.INFO = %+v",
			l, li.Token, tok, li)
	}
}

// A node stopping gracefully tells its waiting FLOCKs CANCELLED only when
// its cancel took the wait out of the queue. Cut off from the quorum it
// cannot, and the wait stays queued, to be granted later: the reply must
// say the outcome is unknown. Found by the rolling-upgrade test
// (TestRollingUpgradePlanted), where a node shut down during a leadership
// transfer answered CANCELLED and the lock went to the waiter afterwards.
func TestShutdownWaitWithoutQuorum(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	f := cl.followers(leader)[0]
	c := leader.client(t)
	const l = "cut-off"
	h := openSession(t, c, 60000, "holder")
	w := openSession(t, c, 60000, "waiter")
	mustInt(t, c, "FLOCK", l, h)
	rc := dialRaw(t, f.addr)
	rc.send("FLOCK", l, w, "WAIT", "0")
	waitQueued(t, c, l, w)

	// Killed, not paused: a paused leader would still read the cancel
	// from its socket once resumed.
	var others []*node
	for _, n := range cl.nodes {
		if n != f {
			n.kill()
			others = append(others, n)
		}
	}
	f.term()
	v, err := rc.tryRead(5 * time.Second)
	if err == nil && strings.Contains(fmt.Sprint(v), "CANCELLED") {
		t.Errorf("a node that could not cancel the wait answered %v", v)
	}
	for _, n := range others {
		n.startNoWait()
	}
	c = cl.leader(30 * time.Second).client(t)
	waitQueued(t, c, l, w) // still queued: CANCELLED would have been false
	if err != nil || !strings.Contains(fmt.Sprint(v), "UNCERTAIN") {
		t.Errorf("the waiting connection got %v, %v; want -UNCERTAIN", v, err)
	}
}

// A node stops within its bound even when its peers stopped answering (a
// paused process, a dead host): an RPC to one would otherwise hold Raft's
// shutdown for the transport's 10 s timeout, and main would stop the
// process with status 1 after ShutdownBound.
func TestShutdownWithPausedPeers(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	f := cl.followers(leader)[0]
	// A FLOCK waiting on f: stopping, f tries to cancel it through the
	// paused leader, which takes its 5 s, before Raft stops.
	c := leader.client(t)
	h := openSession(t, c, 60000, "holder")
	w := openSession(t, c, 60000, "waiter")
	mustInt(t, c, "FLOCK", "paused", h)
	rc := dialRaw(t, f.addr)
	rc.send("FLOCK", "paused", w, "WAIT", "0")
	waitQueued(t, c, "paused", w)
	var others []*node
	for _, n := range cl.nodes {
		if n != f {
			n.pause()
			others = append(others, n)
		}
	}
	defer func() {
		for _, n := range others {
			n.resume()
		}
	}()
	// Long enough for f to start an election, whose vote requests then
	// wait on the paused peers.
	time.Sleep(3 * time.Second)
	f.term() // fails the test unless it exits with status 0
	if v, err := rc.tryRead(5 * time.Second); err == nil && strings.Contains(fmt.Sprint(v), "CANCELLED") {
		t.Errorf("the waiting FLOCK got %v from a node that could not cancel it", v)
	}
	if s := f.stderr(); strings.Contains(s, "shutdown took longer than") {
		t.Errorf("the stop overran its bound:\n%s", s)
	}
}
