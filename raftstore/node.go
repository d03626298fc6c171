package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
)

// Errors returned by Propose and Read. The first three mean nothing was
// applied, so a retry is safe; ErrUncertain means the outcome is unknown.
var (
	// ErrNoLeader is returned when the cluster has no leader.
	ErrNoLeader = reply.NewErr("CLUSTERDOWN", "no leader")
	// ErrNotLeader is returned by a node that is not the leader.
	ErrNotLeader = reply.NewErr("TRYAGAIN", "not the leader")
	// ErrNotReady is returned by a new leader before it applied its term's
	// barrier, and by a node that is shutting down before it proposed.
	ErrNotReady = reply.NewErr("TRYAGAIN", "leader not ready")
	// ErrUncertain is returned when the entry may or may not have been
	// committed: leadership was lost after it was proposed.
	ErrUncertain = reply.NewErr("UNCERTAIN", "outcome unknown")
)

// Clock is the cluster clock that stamps proposed entries (session.Clock):
// Now is the cluster time, and Stamp the cluster time and the node's wall
// clock of a new entry, read together, all in ms. The
// node calls Lead once it is the ready leader of a term, having applied
// every earlier entry, and Follow when it no longer leads.
type Clock interface {
	Now() int64
	Stamp() (now, wall int64)
	Lead()
	Follow()
}

// Config configures a Node.
type Config struct {
	ID       string
	RaftAddr string // listen address of the Raft transport
	// RaftAdvertise is the Raft address the other nodes dial, if not
	// RaftAddr (a NAT, or the fault tests' proxy).
	RaftAdvertise string
	Dir           string // data directory
	Bootstrap     bool   // start a new cluster if there is no state: this node alone, or BootstrapServers
	State         lockstate.Config
	Clock         Clock
	Observer      Observer
	Logger        *slog.Logger
	// Meter, if set, hears how long the disk writes take (meter.go).
	Meter Meter

	// BootstrapServers is the first configuration of a cluster this node
	// bootstraps, for clusters that start with several members (in-process
	// test clusters; a deployment grows one node at a time with RAFT.JOIN).
	// Every node bootstrapped together must be given the same list, this
	// node in it. Empty means this node alone, at its transport's address.
	BootstrapServers []Server
	// Transport, if set, carries Raft's messages instead of the TCP
	// transport built from RaftAddr and RaftAdvertise, which are then
	// ignored: tests connect nodes in memory (raft.InmemTransport). Open
	// takes it over, whether it succeeds or not: the node closes it, if it
	// is an io.Closer, when it closes or when Open fails.
	Transport raft.Transport
	// PeerTLS, if set, makes every connection of the peer channel (Raft
	// and the forwarding links) mutual TLS 1.3 with these certificates.
	PeerTLS *PeerTLS

	// Raft timing; zero values take the defaults below.
	HeartbeatTimeout  time.Duration
	ElectionTimeout   time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	ApplyTimeout      time.Duration // how long Propose waits to enqueue
	// MaxPendingBytes bounds the bytes of the entries this node proposed
	// as leader whose outcome it has not seen (0 = DefaultMaxPendingBytes):
	// a proposal waits up to ApplyTimeout for room, then fails with
	// ErrBusy.
	MaxPendingBytes int64

	// MaxMemory bounds the state's size (lockstate.State.Used) in bytes;
	// 0 = no bound. The leader stamps its own into every entry it
	// proposes, so the replicas all refuse the same entries whatever their
	// own settings; SetMaxMemory changes it at run time.
	MaxMemory int64

	// DiskReserve is the free space kept in Dir (0 = DefaultDiskReserve):
	// below it the node takes no writes, below half of it its own writes
	// are refused before they reach Pebble (see DESIGN.md, Disk trouble).
	DiskReserve uint64
}

func (c *Config) setDefaults() {
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = 500 * time.Millisecond
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = 500 * time.Millisecond
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 16384
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 5 * time.Second
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Node is one member of the Raft cluster with its Pebble storage.
type Node struct {
	cfg     Config
	db      *pebble.DB
	logs    *LogStore
	cache   *logCache // recent entries in front of logs
	pending *pendingBytes
	// replicating counts the bytes of the appends in flight to followers,
	// over every pipeline.
	replicating *atomic.Int64
	raft        *raft.Raft
	trans       raft.Transport // the node's own: closed by Close
	peers       *peerMux       // the peer channel; nil with a given Transport
	progress    *progress      // followers' logs as this node's appends found them
	fsm         *fsm
	readyTerm   atomic.Uint64 // term whose barrier this node applied as leader
	maxMemory   atomic.Int64  // Config.MaxMemory, as last set
	existing    bool          // the data directory held Raft state at start
	verify      *verifier     // coalesced leadership checks for reads
	disk        *disk         // can the node persist, and why not
	// transferring is set while a leadership transfer asked for by a
	// leader that cannot persist is under way.
	transferring atomic.Bool
	counts       nodeCounts // Counts (meter.go)

	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced after every applied batch

	stop chan struct{}
	done chan struct{}
}

// Open opens (or creates) the node's storage, replays nothing that is
// already applied, and starts Raft.
func Open(cfg Config) (*Node, error) {
	cfg.setDefaults()
	n := &Node{cfg: cfg, trans: cfg.Transport, appliedCh: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	n.maxMemory.Store(cfg.MaxMemory)
	n.pending = newPendingBytes(cfg.MaxPendingBytes)
	n.replicating = new(atomic.Int64)
	if err := n.open(); err != nil {
		// The transport is the node's, given or built: a failed Open must
		// not leave it listening.
		if n.trans != nil {
			closeTransport(n.trans)
		}
		if n.db != nil {
			n.db.Close()
		}
		return nil, err
	}
	n.verify = &verifier{check: n.confirmLeader}
	go n.watchLeadership()
	go n.pending.reap(n.stop)
	return n, nil
}

// open opens the storage and starts Raft. On error, Open closes what it
// left in n.db and n.trans.
func (n *Node) open() error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("raftstore: data dir: %w", err)
	}
	n.disk = newDisk(cfg.Dir, cfg.DiskReserve, cfg.Logger)
	var err error
	if n.db, err = openDB(filepath.Join(cfg.Dir, "pebble"), vfs.Default, cfg.Logger, n.disk.fatal); err != nil {
		return err
	}
	if n.logs, err = NewLogStore(n.db); err != nil {
		return err
	}
	n.logs.disk, n.logs.meter = n.disk, cfg.Meter
	if n.fsm, err = newFSM(n.db, cfg.State, nodeObserver{n}); err != nil {
		return err
	}
	n.fsm.disk, n.fsm.meter = n.disk, cfg.Meter
	// Entries already in the log were proposed before this process began:
	// applying them replays the past, whose messages no subscriber of this
	// process may hear.
	if n.fsm.replayUntil, err = n.logs.LastIndex(); err != nil {
		return err
	}
	hlog := newRaftLogger(cfg.Logger)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog)
	if err != nil {
		return fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	if err := n.restoreNewerSnapshot(snaps); err != nil {
		return err
	}
	// hashicorp/raft reads every entry after the last snapshot as it
	// starts, and panics on one it cannot read (api.go, NewRaft).
	if err := checkLog(n.logs, snaps, cfg.Dir, cfg.ID); err != nil {
		return err
	}
	if n.trans == nil {
		mux, err := newPeerMux(cfg.RaftAddr, cfg.RaftAdvertise, cfg.PeerTLS, cfg.Logger)
		if err != nil {
			return err
		}
		n.peers = mux
		n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: mux, MaxPool: 4, Timeout: 10 * time.Second, Logger: hlog,
		})
	}
	n.progress = newProgress()
	n.trans = guardedTransport{Transport: n.trans, stop: n.stop, progress: n.progress, inflight: n.replicating}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hlog
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	// How often raft compares the log with the threshold: a cheap check,
	// so often enough that compaction follows the threshold closely.
	rc.SnapshotInterval = time.Second
	rc.TrailingLogs = cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = maxAppendEntries
	// The state machine is durable in Pebble with its applied index, so a
	// restart replays only the log entries after it instead of restoring
	// the last snapshot first.
	rc.NoSnapshotRestoreOnStart = true
	// A leader that removes itself steps down and stays up instead of
	// shutting Raft down: hashicorp/raft v1.7.3 shuts down right after
	// handing the committed configuration entry to the FSM goroutine, which
	// may exit before answering it, and that future has no shutdown channel,
	// so RAFT.REMOVE of the leader could wait forever. A removed node has no
	// vote in its latest configuration, so it never starts an election.
	rc.ShutdownOnRemove = false
	// Raft reports some metrics twice, labelled with the peer and with the
	// peer's id in the name (raft.replication.heartbeat.<id>): the second
	// kind makes a metric name per peer, so only the labelled kind is kept.
	rc.NoLegacyTelemetry = true
	cache := newLogCache(n.logs, logCacheEntries, logCacheBytes)
	n.cache = cache
	existing, err := raft.HasExistingState(cache, n.logs, snaps)
	if err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	n.existing = existing
	if n.raft, err = raft.NewRaft(rc, n.fsm, cache, n.logs, snaps, n.trans); err != nil {
		return fmt.Errorf("raftstore: start raft: %w", err)
	}
	// Before any election can end: the first leader is counted too.
	n.countLeaderChanges()
	if !existing && cfg.Bootstrap {
		if err := n.raft.BootstrapCluster(n.bootstrapConfiguration()).Error(); err != nil {
			// Wait for raft's goroutines: Open closes the database next.
			n.raft.Shutdown().Error()
			return fmt.Errorf("raftstore: bootstrap: %w", err)
		}
	}
	return nil
}

// bootstrapConfiguration is the configuration a bootstrapping node starts
// the cluster with: BootstrapServers, or this node alone.
func (n *Node) bootstrapConfiguration() raft.Configuration {
	if len(n.cfg.BootstrapServers) == 0 {
		return raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(n.cfg.ID), Address: n.trans.LocalAddr()}}}
	}
	var conf raft.Configuration
	for _, s := range n.cfg.BootstrapServers {
		suffrage := raft.Nonvoter
		if s.Voter {
			suffrage = raft.Voter
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: suffrage, ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.RaftAddr)})
	}
	return conf
}

// closeTransport closes t if it can be closed: raft.Transport itself has no
// Close (raft.WithClose is optional).
func closeTransport(t raft.Transport) error {
	if c, ok := t.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// restoreNewerSnapshot covers the state machine's writes being lost after
// the last snapshot was taken (they are synced before it is, so this means
// a damaged or replaced data directory): raft would skip to the snapshot
// index, so the state must be brought there first.
func (n *Node) restoreNewerSnapshot(snaps raft.SnapshotStore) error {
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return err
	}
	if list[0].Index <= n.fsm.appliedIndex() {
		return nil
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return fmt.Errorf("raftstore: open snapshot: %w", err)
	}
	return n.fsm.Restore(rc)
}

// nodeObserver is the FSM's observer: the node's own bookkeeping, then the
// configured Observer.
type nodeObserver struct{ n *Node }

func (o nodeObserver) Applied(t int64, ev lockstate.Events) {
	// An entry of a term this node does not lead as the ready leader was
	// stamped by another node: the clock must follow it (session.Clock),
	// even if leadership was lost and regained between two polls of
	// watchLeadership.
	if o.n.fsm.lastTerm.Load() != o.n.readyTerm.Load() {
		o.n.cfg.Clock.Follow()
	}
	o.n.applied(t, ev)
}

func (o nodeObserver) Restored(applied uint64, read func(fn func(*lockstate.State))) {
	var t int64
	read(func(st *lockstate.State) { t = st.Time() })
	o.n.applied(t, lockstate.Events{})
	if o.n.cfg.Observer != nil {
		o.n.cfg.Observer.Restored(applied, read)
	}
}

func (n *Node) applied(t int64, ev lockstate.Events) {
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
	if n.cfg.Observer != nil {
		n.cfg.Observer.Applied(t, ev)
	}
}

// watchLeadership marks the node ready once, as leader of a term, it has
// applied a barrier: only then does its state include every entry committed
// by earlier leaders, so reads and ticks are safe.
func (n *Node) watchLeadership() {
	defer close(n.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-n.raft.LeaderCh():
		case <-t.C:
		}
		n.disk.refresh()
		if n.raft.State() == raft.Leader && n.disk.Err() != nil {
			n.handOff()
		}
		if n.raft.State() != raft.Leader {
			n.cfg.Clock.Follow()
			continue
		}
		term := n.raft.CurrentTerm()
		if n.readyTerm.Load() == term {
			continue
		}
		if err := n.raft.Barrier(n.cfg.ElectionTimeout * 4).Error(); err != nil {
			n.cfg.Logger.Warn("leader barrier failed", "err", err)
			continue
		}
		n.cfg.Clock.Lead()
		n.readyTerm.Store(term)
		n.cfg.Logger.Info("leader ready", "term", term)
		if n.cfg.Observer != nil {
			n.cfg.Observer.Applied(n.LastTime(), lockstate.Events{}) // let the ticker look at deadlines
		}
	}
}

// handOff hands leadership to another voter, once at a time, when this
// leader cannot persist: it takes no client writes (the server answers
// MISCONF), and soon cannot append at all, while a follower with space can
// lead the cluster on. A node alone keeps leading: there is nobody to
// hand to.
func (n *Node) handOff() {
	if !n.transferring.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer n.transferring.Store(false)
		n.cfg.Logger.Warn("handing leadership on: this node cannot persist", "reason", n.disk.Err())
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.cfg.Logger.Info("leadership not handed on", "err", err)
			// Not again at once: a lone voter would spin here.
			select {
			case <-n.stop:
			case <-time.After(n.cfg.ElectionTimeout):
			}
		}
	}()
}

// DiskError is nil while the node can persist, else why it cannot: its free
// space is below the reserve (until space is back), or a write to its data
// directory failed (until it is restarted). The server refuses writes
// meanwhile (ErrCannotPersist).
func (n *Node) DiskError() error { return n.disk.Err() }

// Existing reports whether the node restarted with Raft state: it is then
// the member it was, and bootstrap or join requests are ignored.
func (n *Node) Existing() bool { return n.existing }

// CanPropose reports whether this node leads and has applied its barrier.
func (n *Node) CanPropose() bool {
	return n.raft.State() == raft.Leader && n.readyTerm.Load() == n.raft.CurrentTerm()
}

func (n *Node) notReady() error {
	if n.raft.State() == raft.Leader {
		return ErrNotReady
	}
	if addr, _ := n.raft.LeaderWithID(); addr == "" {
		return ErrNoLeader
	}
	return ErrNotLeader
}

// Propose stamps e with the cluster time and the wall clock, commits it through Raft and
// returns its result once applied on this node.
func (n *Node) Propose(ctx context.Context, e lockstate.Entry) (lockstate.Result, error) {
	wait, err := n.Enqueue(e)
	if err != nil {
		return lockstate.Result{}, err
	}
	return wait()
}

// Enqueue is the first half of Propose: it stamps e and hands it to Raft,
// and returns the second half, which waits for the result. Entries enqueued
// one after another are committed in that order, so a connection can
// pipeline its writes: they share commits instead of waiting for one each.
func (n *Node) Enqueue(e lockstate.Entry) (wait func() (lockstate.Result, error), err error) {
	if !n.CanPropose() {
		return nil, n.notReady()
	}
	e.Time, e.Wall = n.cfg.Clock.Stamp()
	e.MaxMemory = n.maxMemory.Load()
	data := e.Encode(nil)
	size := int64(len(data)) // what the entry counts in n.pending, as first encoded
	if !n.pending.tryAcquire(size) {
		// The entry's time must be the moment Raft takes it, not before
		// its wait for room: stamped again once there is room.
		if err := n.pending.acquire(size, n.cfg.ApplyTimeout, n.stop); err != nil {
			return nil, err
		}
		e.Time, e.Wall = n.cfg.Clock.Stamp()
		data = e.Encode(data[:0])
	}
	f := n.pending.track(n.raft.Apply(data, n.cfg.ApplyTimeout), size)
	n.counts.pending.Add(1)
	var once sync.Once
	return func() (lockstate.Result, error) {
		res, err := n.result(f)
		// Waited for once or many times, a proposal ends once.
		once.Do(func() {
			n.counts.pending.Add(-1)
			if err != nil {
				n.counts.failed.Add(1)
			}
		})
		return res, err
	}, nil
}

// SetMaxMemory sets the bound this node stamps into the entries it
// proposes as leader (Config.MaxMemory); 0 = none.
func (n *Node) SetMaxMemory(bytes int64) { n.maxMemory.Store(max(bytes, 0)) }

// MaxMemory returns the bound set by Config.MaxMemory or SetMaxMemory.
func (n *Node) MaxMemory() int64 { return n.maxMemory.Load() }

// result waits for a proposal and classifies its failure.
func (n *Node) result(f raft.ApplyFuture) (lockstate.Result, error) {
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return lockstate.Result{}, n.notReady()
		case notStored(err):
			// This leader could not append the entry (dispatchLogs): it
			// reached no log, not even its own, so nothing was applied.
			// The node's condition says why, in the words the disk
			// guard chose.
			return lockstate.Result{}, n.cannotPersist(err)
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return lockstate.Result{}, fmt.Errorf("%w: %v", ErrNotReady, err)
		case plant.On(plant.LostIsFailure):
			return lockstate.Result{}, fmt.Errorf("%w: %v", ErrNotReady, err)
		default: // ErrLeadershipLost, ErrRaftShutdown after enqueue
			return lockstate.Result{}, fmt.Errorf("%w: %v", ErrUncertain, err)
		}
	}
	res, ok := f.Response().(*lockstate.Result)
	if !ok || res == nil {
		return lockstate.Result{}, fmt.Errorf("%w: entry %d had no result", ErrUncertain, f.Index())
	}
	return *res, nil
}

// notStored reports whether an apply future failed because the leader's
// own append failed. hashicorp/raft v1.7 answers a future with a store
// error only in dispatchLogs, before the entry is replicated, and with its
// sentinels in every other case; the log cache words that store error as
// "unable to store logs within log store".
func notStored(err error) bool {
	for _, e := range []error{raft.ErrLeadershipLost, raft.ErrRaftShutdown, raft.ErrAbortedByRestore, raft.ErrNotLeader, raft.ErrEnqueueTimeout, raft.ErrLeadershipTransferInProgress} {
		if errors.Is(err, e) {
			return false
		}
	}
	return errors.Is(err, ErrCannotPersist) || strings.Contains(err.Error(), "unable to store logs")
}

// cannotPersist is ErrCannotPersist with the node's reason, or err's.
func (n *Node) cannotPersist(err error) error {
	if cause := n.disk.Err(); cause != nil {
		return fmt.Errorf("%w: %w", ErrCannotPersist, cause)
	}
	if errors.Is(err, ErrCannotPersist) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrCannotPersist, err)
}

// Tick proposes a tick entry (session package).
func (n *Node) Tick(ctx context.Context) error {
	_, err := n.Propose(ctx, lockstate.Entry{Op: lockstate.OpTick})
	return err
}

// Read runs fn on state that reflects every entry committed before Read was
// called (a linearizable read): the leader, ready in its term, captures its
// commit index, confirms with a quorum that it still leads (in a round
// shared with concurrent reads but started after this one arrived), checks
// that its term did not change meanwhile, and waits until it has applied
// that index. now is the current cluster time. A deposed or cut-off leader
// returns an error, never its old state.
func (n *Node) Read(ctx context.Context, fn func(st *lockstate.State, now int64)) error {
	if !n.CanPropose() {
		return n.notReady()
	}
	term := n.raft.CurrentTerm()
	idx := n.raft.CommitIndex()
	if err := n.verify.verify(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrNotReady, err)
		}
		return n.notReady()
	}
	if n.raft.CurrentTerm() != term || !n.CanPropose() {
		return n.notReady()
	}
	if err := n.waitApplied(ctx, idx); err != nil {
		return err
	}
	now := n.cfg.Clock.Now()
	n.fsm.read(func(st *lockstate.State) { fn(st, now) })
	return nil
}

// ReadSteps is Read for a long read (KEYS, SCAN): after the same checks it
// calls step under the state's read lock, again and again, releasing the
// lock in between so that applying entries waits for one step at most,
// until step reports that it is done. The first step sees every entry
// committed before ReadSteps was called, and each later one a state at
// least as new; now is the same for every step. Each step must do bounded
// work (lockstate.Scan.Step visits a fixed number of names).
func (n *Node) ReadSteps(ctx context.Context, step func(st *lockstate.State, now int64) (done bool)) error {
	var now int64
	done := false
	if err := n.Read(ctx, func(st *lockstate.State, t int64) { now, done = t, step(st, t) }); err != nil {
		return err
	}
	for !done {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: %v", ErrNotReady, err)
		}
		n.fsm.read(func(st *lockstate.State) { done = step(st, now) })
	}
	return nil
}

func (n *Node) waitApplied(ctx context.Context, idx uint64) error {
	idx = n.lastFSMEntry(idx)
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if n.fsm.appliedIndex() >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrNotReady, ctx.Err())
		}
	}
}

// lastFSMEntry returns the index of the last entry at or below idx that
// the state machine applies. Raft hands only commands and configuration
// changes to the FSM: the no-op of a new leader and the barriers are applied
// without it, so the FSM's applied index never reaches them, and a read that
// waited for one (the first read of every term) would wait forever.
func (n *Node) lastFSMEntry(idx uint64) uint64 {
	applied := n.fsm.appliedIndex()
	var l raft.Log
	for i := idx; i > applied; i-- {
		if err := n.logs.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				return applied // compacted: in a snapshot the state includes
			}
			return idx
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return i
		}
	}
	return applied
}

// NextDeadline reports the state machine's earliest pending deadline.
func (n *Node) NextDeadline() (d int64, ok bool) {
	n.fsm.read(func(st *lockstate.State) { d, ok = st.NextDeadline() })
	return d, ok
}

// LastTime is the cluster time of the last applied entry.
func (n *Node) LastTime() (t int64) {
	n.fsm.read(func(st *lockstate.State) { t = st.Time() })
	return t
}

// Local runs fn on this node's applied state without any leadership check:
// for INFO and tests, never for answers that must be linearizable.
func (n *Node) Local(fn func(st *lockstate.State)) { n.fsm.read(fn) }

// StateHash returns the applied index and lockstate's Hash of the state at
// that index, read together: replicas at the same index must agree.
func (n *Node) StateHash() (applied uint64, hash [32]byte) {
	n.fsm.mu.RLock()
	defer n.fsm.mu.RUnlock()
	return n.fsm.applied, n.fsm.state.Hash()
}

// Snapshot takes a snapshot now; raft then truncates the log, keeping
// TrailingLogs entries.
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return fmt.Errorf("raftstore: snapshot: %w", err)
	}
	return nil
}

// RaftAddr is the Raft address the other nodes dial (the advertised one).
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// ErrNoPeerChannel is returned by DialPeer on a node whose Raft transport
// was given (in memory): it has no peer channel.
var ErrNoPeerChannel = errors.New("raftstore: no peer channel (in-memory transport)")

// LinkListener returns a listener of the forwarding links other nodes open
// to this one on the peer channel (DialPeer), authenticated like Raft's
// connections; nil when the node has no peer channel.
func (n *Node) LinkListener() net.Listener {
	if n.peers == nil {
		return nil
	}
	return &linkListener{m: n.peers, closed: make(chan struct{})}
}

// DialPeer opens a forwarding link to the node whose Raft address is addr.
func (n *Node) DialPeer(ctx context.Context, addr string) (net.Conn, error) {
	if n.peers == nil {
		return nil, ErrNoPeerChannel
	}
	return n.peers.dial(ctx, addr, kindLink)
}

// LeaderRaftAddr returns the leader's Raft address, which is its peer
// channel, or "" when no leader is known.
func (n *Node) LeaderRaftAddr() string {
	addr, _ := n.raft.LeaderWithID()
	return string(addr)
}

// Status describes the node for INFO and ROLE.
type Status struct {
	ID, State, Leader, LeaderID string
	Term, CommitIndex, Applied  uint64
	LastIndex, FirstIndex       uint64
	Peers, Voters               int
	LastContact                 time.Time
	// DiskError is why the node cannot persist, "" when it can.
	DiskError string
}

// Status returns the node's Raft status.
func (n *Node) Status() Status {
	leader, leaderID := n.raft.LeaderWithID()
	s := Status{
		ID: n.cfg.ID, State: n.raft.State().String(), Leader: string(leader), LeaderID: string(leaderID),
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), Applied: n.fsm.appliedIndex(),
		LastIndex: n.raft.LastIndex(), LastContact: n.raft.LastContact(),
	}
	s.FirstIndex, _ = n.logs.FirstIndex()
	if err := n.disk.Err(); err != nil {
		s.DiskError = err.Error()
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		s.Peers = len(f.Configuration().Servers)
		for _, sv := range f.Configuration().Servers {
			if sv.Suffrage == raft.Voter {
				s.Voters++
			}
		}
	}
	return s
}

// Close shuts Raft down and closes the storage. Applied state is durable
// through the synced log; writing it back and the final flush make
// restarts replay nothing.
func (n *Node) Close() error {
	close(n.stop)
	<-n.done
	if n.disk.Failed() {
		return n.closeFailed()
	}
	err := n.shutdownRaft()
	if cerr := closeTransport(n.trans); err == nil {
		err = cerr
	}
	// On a disk below half the reserve the write-back is refused and the
	// memtable is not flushed: a flush that cannot be written is retried by
	// Pebble without pause, and would hold up the exit. The WAL and the Raft
	// log hold everything; the next start only replays more.
	if serr := n.fsm.sync(); err == nil {
		err = serr
	}
	if aerr := n.disk.admit(0, "flush at close"); aerr != nil {
		n.cfg.Logger.Warn("closing without a flush: data directory nearly full", "err", aerr)
	} else if ferr := n.db.Flush(); err == nil {
		err = ferr
	}
	if cerr := n.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// raftShutdownGrace is how long Close lets Raft stop by itself before it
// closes Raft's connections under it.
const raftShutdownGrace = time.Second

// shutdownRaft stops Raft. An RPC in flight to a peer that stopped
// answering (a paused process, a dead host) would hold Shutdown for the
// transport's 10 s I/O timeout, past the server's ShutdownBound: after a
// moment, its connections are closed under it.
func (n *Node) shutdownRaft() error {
	f := n.raft.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(raftShutdownGrace):
	}
	if n.peers != nil {
		n.peers.abortDialed()
	}
	return <-done
}

// closeFailed is Close after a Pebble write failed. Raft's goroutine may be
// blocked for good in LogStore.Set, and Pebble's commit pipeline locked, so
// neither is waited for long, and nothing more is written: the process
// exits, and the next start recovers from what reached the disk.
func (n *Node) closeFailed() error {
	done := make(chan struct{})
	go func() {
		n.raft.Shutdown().Error()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	closeTransport(n.trans)
	return fmt.Errorf("raftstore: closed without writing back: %w", n.disk.Err())
}
