// Package raftstoretest runs clusters of raftstore nodes inside one test
// process, the way hashicorp/raft's MakeCluster tests raft itself: real
// raftstore.Nodes, with Pebble and snapshots in temporary directories,
// whose Raft messages travel over raft.InmemTransport instead of TCP. What
// needs several nodes (failover, partitions, restarts, membership) is then
// tested in milliseconds, with no ports and no processes.
//
// The package owns the cluster's wiring and nothing else: the in-memory
// network and its partitions, each node's data directory and cluster clock
// (a session.Clock, fed by the node's applied entries as the server feeds
// it), starting and stopping nodes, and the waits tests need. What a node
// does is raftstore's; the tests decide what is right.
//
// A Cluster is driven from the test's goroutine: its methods report
// failures with t.Fatalf.
package raftstoretest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/session"
)

// Options configures a Cluster. The zero value is a usable default.
type Options struct {
	// Config adjusts node i's configuration before each time it opens
	// (snapshot thresholds, timing, an Observer). The cluster then sets
	// ID, Dir, Transport, Clock, Bootstrap and BootstrapServers itself,
	// and wraps the Observer to keep the node's clock.
	Config func(i int, cfg *raftstore.Config)
	// Timeout bounds every wait of the cluster's helpers except Leader's,
	// which takes its own; default 10 s, generous for -race on 2 cores.
	Timeout time.Duration
}

// The clusters' Raft timing: elections take a few hundred milliseconds
// instead of seconds. hashicorp/raft's own in-memory tests use 50 ms, but
// its 25 ms leader lease then lapsed whenever make test's other processes
// starved a leader that long on two cores, and leaderships moved in the
// middle of tests that need them to stay (CI 14:35
// TestClusterPartitionedLeader, CI 15:02 TestClusterFailoverKeepsAcknowledged,
// terms 4 and more before any fault). Options.Config may slow a cluster
// down again.
const (
	HeartbeatTimeout = 200 * time.Millisecond
	ElectionTimeout  = 200 * time.Millisecond
)

// poll is how often waits look again: a few times per heartbeat.
const poll = 5 * time.Millisecond

// Cluster is a set of nodes on one in-memory network.
type Cluster struct {
	t       testing.TB
	opts    Options
	members []*member
	// far is the side of the partition the nodes in it are on; nodes not
	// in it are on the other side. Empty: the network is whole.
	far map[int]bool
}

// member is one node's slot: what survives its restarts (identity, data
// directory, counters) and what does not (node, transport, clock).
type member struct {
	id        string
	dir       string
	bootstrap bool // one of the cluster's first nodes, bootstrapped together
	node      *raftstore.Node
	trans     *raft.InmemTransport
	clock     *session.Clock
	restores  atomic.Int64 // snapshots installed, over all its lives
}

// New starts an n-node cluster bootstrapped with every node a voter, and
// waits until it has a ready leader. The nodes are closed at the end of the
// test. opts may be nil.
func New(t testing.TB, n int, opts *Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, far: map[int]bool{}}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Timeout == 0 {
		c.opts.Timeout = 10 * time.Second
	}
	for i := 0; i < n; i++ {
		c.members = append(c.members, &member{id: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), bootstrap: true})
	}
	// After the first TempDir: cleanups run last first, so the nodes are
	// closed before their directories are removed.
	t.Cleanup(c.closeAll)
	for i := range c.members {
		c.start(i)
	}
	c.relink()
	c.Leader(c.opts.Timeout)
	return c
}

// start opens member i's node on its data directory with a new transport
// and clock. The caller links the transport (relink).
func (c *Cluster) start(i int) {
	c.t.Helper()
	m := c.members[i]
	// The address is the id: a restarted node is found where it was.
	_, m.trans = raft.NewInmemTransport(raft.ServerAddress(m.id))
	m.clock = session.NewClock(0)
	cfg := raftstore.Config{HeartbeatTimeout: HeartbeatTimeout, ElectionTimeout: ElectionTimeout}
	if c.opts.Config != nil {
		c.opts.Config(i, &cfg)
	}
	cfg.ID, cfg.Dir, cfg.Transport, cfg.Clock = m.id, m.dir, m.trans, m.clock
	cfg.Observer = clockObserver{clock: m.clock, restores: &m.restores, next: cfg.Observer}
	if m.bootstrap {
		cfg.Bootstrap = true
		for _, o := range c.members {
			if o.bootstrap {
				cfg.BootstrapServers = append(cfg.BootstrapServers, raftstore.Server{ID: o.id, RaftAddr: o.id, Voter: true})
			}
		}
	}
	node, err := raftstore.Open(cfg)
	if err != nil {
		m.trans = nil
		c.t.Fatalf("open %s: %v", m.id, err)
	}
	m.node = node
	// As the server does: the clock goes on from the last applied entry.
	m.clock.Observe(node.LastTime())
}

// clockObserver keeps a node's cluster clock following the entries it
// applies, as the server's Observer does, counts the snapshots it
// installs, and passes everything on to the test's Observer.
type clockObserver struct {
	clock    *session.Clock
	restores *atomic.Int64
	next     raftstore.Observer
}

func (o clockObserver) Applied(t int64, ev lockstate.Events) {
	o.clock.Observe(t)
	if o.next != nil {
		o.next.Applied(t, ev)
	}
}

func (o clockObserver) Restored(applied uint64, read func(fn func(*lockstate.State))) {
	read(func(st *lockstate.State) { o.clock.Observe(st.Time()) })
	o.restores.Add(1)
	if o.next != nil {
		o.next.Restored(applied, read)
	}
}

// relink makes the network what the partition says: two running nodes are
// connected, both ways, if they are on the same side, and not otherwise.
func (c *Cluster) relink() {
	for i, a := range c.members {
		for j, b := range c.members {
			if i == j || a.node == nil || b.node == nil {
				continue
			}
			if c.far[i] == c.far[j] {
				a.trans.Connect(raft.ServerAddress(b.id), b.trans)
			} else {
				a.trans.Disconnect(raft.ServerAddress(b.id))
			}
		}
	}
}

// N is the number of nodes, running or not.
func (c *Cluster) N() int { return len(c.members) }

// Node returns node i, or nil while it is killed.
func (c *Cluster) Node(i int) *raftstore.Node { return c.members[i].node }

// ID is node i's Raft server id (its address too).
func (c *Cluster) ID(i int) string { return c.members[i].id }

// Index returns the index of the node with Raft server id id, or -1.
func (c *Cluster) Index(id string) int {
	for i, m := range c.members {
		if m.id == id {
			return i
		}
	}
	return -1
}

// Running reports whether node i is up (not killed).
func (c *Cluster) Running(i int) bool { return c.members[i].node != nil }

// SnapshotsInstalled is how many snapshots node i has installed from a
// leader (its Observer's Restored calls), over all its restarts.
func (c *Cluster) SnapshotsInstalled(i int) int { return int(c.members[i].restores.Load()) }

// Leader waits up to timeout for the cluster to have one ready leader and
// returns its index: exactly one running node that CanPropose, is a voter
// of its configuration, and is on a side of the network holding a
// majority of those voters. A deposed leader cut off with a minority, or
// one that just removed itself, may still believe it leads for a moment;
// it is not the one a test wants to talk to, so it is not counted.
func (c *Cluster) Leader(timeout time.Duration) int {
	c.t.Helper()
	i, ok := c.leader(time.Now().Add(timeout))
	if !ok {
		c.t.Fatalf("no single ready leader within %v:\n%s", timeout, c.describe())
	}
	return i
}

func (c *Cluster) leader(deadline time.Time) (int, bool) {
	for {
		found, count := -1, 0
		for i, m := range c.members {
			if m.node != nil && m.node.CanPropose() && c.hasQuorum(i) {
				found = i
				count++
			}
		}
		if count == 1 {
			return found, true
		}
		if time.Now().After(deadline) {
			return -1, false
		}
		time.Sleep(poll)
	}
}

// hasQuorum reports whether node i is a voter of its own configuration
// (a leader that removed itself still leads for a moment after the change
// is answered) and a majority of those voters are running on its side of
// the network.
func (c *Cluster) hasQuorum(i int) bool {
	servers, err := c.members[i].node.Servers()
	if err != nil {
		return false
	}
	voters, reachable, self := 0, 0, false
	for _, s := range servers {
		if !s.Voter {
			continue
		}
		self = self || s.ID == c.members[i].id
		voters++
		if j := c.Index(s.ID); j >= 0 && c.members[j].node != nil && c.far[j] == c.far[i] {
			reachable++
		}
	}
	return self && reachable > voters/2
}

// Followers returns the running nodes other than the ready leader (waiting
// for one as Leader does).
func (c *Cluster) Followers() []int {
	c.t.Helper()
	l := c.Leader(c.opts.Timeout)
	var out []int
	for i, m := range c.members {
		if i != l && m.node != nil {
			out = append(out, i)
		}
	}
	return out
}

// Partition cuts the network in two: the given nodes on one side, every
// other node on the other. Messages cross in neither direction; a
// partition replaces the previous one.
func (c *Cluster) Partition(nodes ...int) {
	c.far = map[int]bool{}
	for _, i := range nodes {
		c.far[i] = true
	}
	c.relink()
}

// Heal reconnects every running node with every other.
func (c *Cluster) Heal() {
	c.far = map[int]bool{}
	c.relink()
}

// Kill stops node i as a crash looks to the others: it is cut off from
// everyone first, then closed. It is not a kill -9 for its own storage:
// Close shuts Raft down and flushes Pebble (the process tests in test/
// cover losing what was not synced).
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.node == nil {
		c.t.Fatalf("kill %s: not running", m.id)
	}
	c.cut(i)
	node := m.node
	m.node, m.trans = nil, nil
	if err := node.Close(); err != nil {
		c.t.Fatalf("close %s: %v", m.id, err)
	}
}

// cut disconnects every other node from node i and i from them. Before
// a node closes, so that no peer keeps sending into a transport nobody
// reads until its RPC timeout.
func (c *Cluster) cut(i int) {
	m := c.members[i]
	for j, o := range c.members {
		if j != i && o.trans != nil {
			o.trans.Disconnect(raft.ServerAddress(m.id))
		}
	}
	m.trans.DisconnectAll()
}

// Restart reopens killed node i on its data directory, with a new
// transport at its old address linked to the others as the partition
// allows.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.members[i].node != nil {
		c.t.Fatalf("restart %s: still running", c.members[i].id)
	}
	c.start(i)
	c.relink()
}

// Add starts a new node with an empty data directory that bootstraps
// nothing, linked to the others, and returns its index. It is not a member
// until the leader adds it (AddNonvoter with its ID and RaftAddr).
func (c *Cluster) Add() int {
	c.t.Helper()
	i := len(c.members)
	c.members = append(c.members, &member{id: fmt.Sprintf("n%d", i+1), dir: c.t.TempDir()})
	c.start(i)
	c.relink()
	return i
}

// Propose commits e through the ready leader and returns its result,
// retrying while the answer is one that applied nothing (no leader yet,
// not the leader, not ready): a retry is then safe. ErrUncertain fails the
// test, since the caller could not tell whether e was applied.
func (c *Cluster) Propose(e lockstate.Entry) lockstate.Result {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.Timeout)
	var err error
	uncertain := false
	for time.Now().Before(deadline) {
		l, ok := c.leader(deadline)
		if !ok {
			break
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var res lockstate.Result
		res, err = c.members[l].node.Propose(ctx, e)
		cancel()
		if err == nil {
			if uncertain && e.Op == lockstate.OpSessionOpen && errors.Is(res.Err, lockstate.ErrSessionExists) {
				// The uncertain proposal was applied: what it answered.
				return lockstate.Result{Str: e.Session}
			}
			return res
		}
		// An uncertain outcome (a leadership lost while committing, under
		// load) is retried only for an entry that a second proposal cannot
		// apply twice: one with a request id, which the state machine
		// applies once however often it is proposed, or a session open,
		// whose second proposal answers ErrSessionExists if the first was
		// applied (raftstore TestClusterPartitionedLeader, make test 14:38:
		// its first session open, right after the election).
		retry := e.Req != "" || e.Op == lockstate.OpSessionOpen
		if !NotApplied(err) && !(retry && errors.Is(err, raftstore.ErrUncertain)) {
			c.t.Fatalf("propose %v on %s: %v", e.Op, c.members[l].id, err)
		}
		uncertain = uncertain || errors.Is(err, raftstore.ErrUncertain)
		time.Sleep(poll)
	}
	c.t.Fatalf("propose %v: not committed within %v (last error %v):\n%s", e.Op, c.opts.Timeout, err, c.describe())
	return lockstate.Result{}
}

// NotApplied reports whether err from Propose or Read says nothing was
// applied or read, so that a retry is safe.
func NotApplied(err error) bool {
	return errors.Is(err, raftstore.ErrNoLeader) || errors.Is(err, raftstore.ErrNotLeader) || errors.Is(err, raftstore.ErrNotReady)
}

// WaitApplied waits until every running node has applied index idx.
func (c *Cluster) WaitApplied(idx uint64) {
	c.t.Helper()
	c.WaitFor(fmt.Sprintf("every running node to apply index %d", idx), func() bool {
		for _, m := range c.members {
			if m.node == nil {
				continue
			}
			if applied, _ := m.node.CaughtUp(); applied < idx {
				return false
			}
		}
		return true
	})
}

// SameState waits until every running node has applied the same index and
// returns the state hash they agree on (raftstore.Node.StateHash). Two
// nodes at the same index with different hashes have diverged: that fails
// the test at once.
func (c *Cluster) SameState() (applied uint64, hash [32]byte) {
	c.t.Helper()
	c.WaitFor("every running node to reach the same state", func() bool {
		first := true
		for _, m := range c.members {
			if m.node == nil {
				continue
			}
			a, h := m.node.StateHash()
			switch {
			case first:
				applied, hash, first = a, h, false
			case a != applied:
				return false
			case h != hash:
				c.t.Fatalf("replicas diverge at index %d: %s has state %x, another %x", a, m.id, h, hash)
			}
		}
		return true
	})
	return applied, hash
}

// WaitFor polls cond until it holds, failing the test after the cluster's
// timeout with what it waited for and each node's status.
func (c *Cluster) WaitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s:\n%s", c.opts.Timeout, what, c.describe())
		}
		time.Sleep(poll)
	}
}

// describe is every node's status, for failure messages.
func (c *Cluster) describe() string {
	var b strings.Builder
	for i, m := range c.members {
		if m.node == nil {
			fmt.Fprintf(&b, "  %s: killed\n", m.id)
			continue
		}
		s := m.node.Status()
		fmt.Fprintf(&b, "  %s: %s term %d leader %q commit %d applied %d log [%d, %d] ready %v far %v\n",
			m.id, s.State, s.Term, s.LeaderID, s.CommitIndex, s.Applied, s.FirstIndex, s.LastIndex, m.node.CanPropose(), c.far[i])
	}
	return b.String()
}

// closeAll closes every running node at the end of the test: all are cut
// off first, so that none waits on a peer that is already gone.
func (c *Cluster) closeAll() {
	for i, m := range c.members {
		if m.node != nil {
			c.cut(i)
		}
	}
	for _, m := range c.members {
		if m.node == nil {
			continue
		}
		if err := m.node.Close(); err != nil {
			c.t.Errorf("close %s: %v", m.id, err)
		}
		m.node, m.trans = nil, nil
	}
}
