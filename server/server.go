package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/raftmetrics"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
	"github.com/fenced/fenced/session"
)

// Server is one running fenced node.
type Server struct {
	cfg Config
	// protoMaxBulk is proto-max-bulk-len as CONFIG SET left it (0: as
	// cfg.Limits says); limitsMu orders the changes of connections'
	// limits (protobulk.go).
	protoMaxBulk atomic.Int64
	limitsMu     sync.Mutex
	log          *slog.Logger
	node         *raftstore.Node
	clock        *session.Clock
	ticker       *session.Ticker
	waits        *waits
	lists        *listWaits // BLPOPs waiting on this node
	pubsub       *pubsub    // this node's subscribers
	// tracking is this node's CLIENT TRACKING table (tracking.go).
	tracking *tracker
	fwd      *forwarder
	// start is settled once this node has recorded its address and
	// cancelled the waits of its earlier process; until then its clients'
	// commands wait or get -LOADING, so none of them can hand a lock to
	// such a wait (startup.go).
	start   *startup
	slowlog *slowlog // SLOWLOG (slowlog.go)
	table   *commands.Table
	rs      *resp.Server
	ln      net.Listener // the plaintext client port; nil with --listen ""
	tlsLn   net.Listener // the TLS client port; nil without --tls-listen
	tls     *clientTLS
	// peerRS serves the forwarding links other nodes open on the peer
	// channel (raftstore's link listener).
	peerRS  *resp.Server
	started time.Time
	gitSHA  string // INFO server's git_sha (gitRevision)
	stats   stats
	cmds    map[string]handlerFunc
	auth    authenticator // who a connection is, what it may run (auth.go)
	users   userCache     // the replicated ACL users (acl.go)
	aclLog  aclLog        // this node's ACL refusals, for ACL LOG
	metrics *metrics      // /metrics (prometheus.go)
	// version is the highest cluster version this node has seen applied
	// (version.go: clusterVersion); it only rises.
	version atomic.Int64
	// bgsaving is set while SAVE or BGSAVE snapshots (persist.go).
	bgsaving atomic.Bool
	// shutdownReq is closed by SHUTDOWN: Serve stops as on its context.
	shutdownReq  chan struct{}
	shutdownOnce sync.Once
}

// Start opens the node and starts serving clients on cfg.Listen and
// cfg.TLS.Listen. It returns once the listeners are bound; Addr and
// TLSAddr tell where.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var ctls *clientTLS
	if cfg.TLS.Listen != "" {
		// Read the certificate, key and CA before anything else: a bad
		// file refuses to start, naming it.
		var err error
		if ctls, err = loadClientTLS(cfg.TLS); err != nil {
			return nil, err
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = cfg.NewLogger(os.Stderr)
	}
	w, err := newWaits(cfg.Data)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, tls: ctls, waits: w, lists: newListWaits(), pubsub: newPubsub(), tracking: newTracker(), fwd: newForwarder(cfg.ID), table: commands.New(), started: time.Now(), start: newStartup(), slowlog: newSlowlog(), shutdownReq: make(chan struct{})}
	s.gitSHA, _ = gitRevision()
	s.auth = newAuthenticator(cfg.RequirePass, &s.users)
	s.clock = session.NewClock(0)
	s.clock.SetWallOffset(cfg.ClockOffset)
	// The ticker exists before the node: the node reports applied entries
	// (Applied kicks the ticker) from the moment it opens.
	s.ticker = session.NewTicker(tickerNode{s}, s.clock, cfg.Logger)
	var raftSink prometheus.Collector
	if cfg.Metrics != "" {
		// hashicorp/raft's own metrics go to a process-wide sink
		// (raftmetrics.Install says why); without --metrics, nowhere.
		sink, err := raftmetrics.Install()
		if err != nil {
			return nil, fmt.Errorf("server: raft metrics: %w", err)
		}
		raftSink = sink
	}
	s.metrics = s.newMetrics(raftSink)
	var peerTLS *raftstore.PeerTLS
	if cfg.PeerCertFile != "" {
		if peerTLS, err = raftstore.LoadPeerTLS(cfg.PeerCertFile, cfg.PeerKeyFile, cfg.PeerCAFile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	node, err := raftstore.Open(raftstore.Config{
		ID: cfg.ID, RaftAddr: cfg.RaftAddr, RaftAdvertise: cfg.RaftAdvertise, Dir: cfg.Data, Bootstrap: cfg.Bootstrap && cfg.Join == "",
		State: cfg.State, Clock: s.clock, Observer: s, Logger: cfg.Logger, PeerTLS: peerTLS,
		SnapshotThreshold: cfg.SnapshotThreshold, TrailingLogs: cfg.TrailingLogs, MaxMemory: cfg.MaxMemory,
		DiskReserve: cfg.DiskReserve, Meter: s.metrics,
	})
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	s.node = node
	s.users.node.Store(node)
	s.users.reload()
	s.fwd.dial = node.DialPeer
	// Continue the cluster clock from the last applied entry: time spent
	// down does not count towards any TTL.
	s.clock.Observe(node.LastTime())
	s.cmds = s.handlers()
	s.stats.calls = make(map[string]*cmdStats)
	for _, spec := range s.table.All() {
		s.stats.calls[spec.Name] = new(cmdStats)
	}
	s.rs = &resp.Server{Handler: s, Limits: s.connLimits(), MaxConns: cfg.MaxConns, Logger: cfg.Logger,
		WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
		OutputLimit: cfg.OutputLimits.Normal, PubSubOutputLimit: cfg.OutputLimits.PubSub}
	// Links from other nodes idle between requests and are never
	// subscribers; a node that stops reading its replies is let go.
	s.peerRS = &resp.Server{Handler: peerHandler{s}, Limits: peerLimits(cfg.Limits), MaxConns: cfg.MaxConns, Logger: cfg.Logger,
		WriteTimeout: cfg.WriteTimeout}
	return s, nil
}

// peerLimits are the limits of the links from other nodes: a forwarded
// write is one argument, RAFT.PROPOSE's entry, which holds a whole client
// command, so it may be as large as a command any node's clients may send
// (up to MaxCommand, with arguments up to ProtoMaxBulkMax, whatever this
// node's own proto-max-bulk-len), and a little more for its encoding.
func peerLimits(l resp.Limits) resp.Limits {
	d := resp.DefaultLimits()
	l.MaxCommand = max(l.MaxCommand, d.MaxCommand, ProtoMaxBulkMax) + 1<<20
	l.MaxBulk = l.MaxCommand
	return l
}

// tickerNode is the ticker's view of s.node, which is set after the ticker
// is made; the ticker only runs (Serve) once it is.
type tickerNode struct{ s *Server }

func (n tickerNode) NextDeadline() (int64, bool)    { return n.s.node.NextDeadline() }
func (n tickerNode) CanPropose() bool               { return n.s.node.CanPropose() }
func (n tickerNode) Tick(ctx context.Context) error { return n.s.node.Tick(ctx) }

// listen binds the client ports: plaintext, TLS, or both.
func (s *Server) listen() error {
	if s.cfg.Listen != "" {
		ln, err := net.Listen("tcp", s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("server: listen: %w", err)
		}
		s.ln = ln
	}
	if s.tls != nil {
		ln, err := s.tls.listen()
		if err != nil {
			s.closeListeners()
			return err
		}
		s.tlsLn = ln
	}
	return nil
}

func (s *Server) closeListeners() {
	for _, ln := range []net.Listener{s.ln, s.tlsLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// clientAddr is the client address this node gives other nodes and
// redirected clients (the member table, -MOVED, CLUSTER SLOTS): the
// plaintext port's when there is one, since the table holds one address
// and other nodes' links and --join dial it in plaintext; the TLS port's
// when it is the only one.
func (s *Server) clientAddr() string {
	if s.cfg.Advertise != "" {
		return s.cfg.Advertise
	}
	return s.Addr().String()
}

// Addr is the address clients connect to: the plaintext port, or the TLS
// port if plaintext is off.
func (s *Server) Addr() net.Addr {
	if s.ln != nil {
		return s.ln.Addr()
	}
	return s.tlsLn.Addr()
}

// TLSAddr is the TLS client port's address, nil without one.
func (s *Server) TLSAddr() net.Addr {
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// Applied is the raftstore.Observer: it advances the clock, answers waiting
// FLOCKs, wakes BLPOPs, delivers messages and wakes the ticker.
func (s *Server) Applied(t int64, ev lockstate.Events) {
	s.clock.Observe(t)
	s.stats.countExpired(ev.Expired)
	if ev.UsersChanged {
		s.users.reload()
	}
	s.waits.deliver(ev.Wakes)
	s.lists.notify(ev.Pushed, false)
	s.pubsub.deliver(ev.Messages)
	s.tracking.applied(ev.Changes)
	s.ticker.Kick()
}

// Restored is the raftstore.Observer's report of a snapshot install: FLOCKs
// waiting here whose answer was decided inside the snapshot never got a
// wake, so they are answered from the restored state, and every BLPOP tries
// again.
func (s *Server) Restored(applied uint64, read func(fn func(*lockstate.State))) {
	// Operators (and the fault tests) look for this line: a node that lagged
	// past the leader's log caught up by snapshot.
	s.log.Info("installed a snapshot")
	read(func(st *lockstate.State) {
		s.waits.resolveMissing(st, applied)
		s.users.refresh(st)
	})
	s.lists.notify(nil, true)
	// The entries the snapshot stands for were never seen here: every
	// cached key may have changed.
	s.tracking.flushAll()
}

// Serve runs until ctx is cancelled, then shuts down gracefully: stop
// accepting, finish in-flight commands, close Raft and Pebble. Sessions are
// not killed by a shutdown.
func (s *Server) Serve(ctx context.Context) error {
	tctx, stopTicker := context.WithCancel(context.Background())
	tickerDone := make(chan struct{})
	go func() { defer close(tickerDone); s.ticker.Run(tctx) }()
	go s.announce(tctx)
	go s.promote(tctx)
	go s.gateVersion(tctx)
	go returnIdleMemory(tctx)
	var metrics *http.Server
	if s.cfg.Metrics != "" {
		m, err := s.serveMetrics()
		if err != nil {
			stopTicker()
			<-tickerDone
			s.node.Close()
			s.closeListeners()
			return err
		}
		metrics = m
	}
	plain := ""
	if s.ln != nil {
		plain = s.ln.Addr().String()
	}
	serving := []any{"listen", plain, "raft", s.node.RaftAddr(), "data", s.cfg.Data, "id", s.cfg.ID}
	if s.tlsLn != nil {
		serving = append(serving, "tls", s.tlsLn.Addr().String(), "tls_auth_clients", s.cfg.TLS.AuthClients)
	}
	s.log.Info("fenced serving", serving...)
	errc := make(chan error, 4)
	for _, ln := range []net.Listener{s.ln, s.tlsLn} {
		if ln != nil {
			go func() { errc <- s.rs.Serve(ln) }()
		}
	}
	if ln := s.node.LinkListener(); ln != nil {
		go func() { errc <- s.peerRS.Serve(ln) }()
	}
	if s.tls != nil && s.cfg.Reload != nil {
		go s.reloadTLS(tctx)
	}
	if s.cfg.Join != "" && !s.node.Existing() {
		go func() {
			if err := s.join(tctx); err != nil {
				errc <- err
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case <-s.shutdownReq:
	case err = <-errc:
	}
	// Half the bound for the connections, the rest for Raft and Pebble.
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownBound/2)
	defer cancel()
	s.waits.shutdown()
	if s.node.CanPropose() {
		// Hand leadership over first, so the cluster doesn't wait for an
		// election timeout (a single node has nobody to hand it to).
		if terr := s.node.Transfer(""); terr == nil {
			s.log.Info("leadership transferred before shutdown")
		}
	}
	for _, rs := range []*resp.Server{s.rs, s.peerRS} {
		if serr := rs.Shutdown(sctx); serr != nil && !errors.Is(serr, resp.ErrServerClosed) {
			s.log.Warn("shutdown", "err", serr)
		}
	}
	if metrics != nil {
		metrics.Shutdown(sctx)
	}
	stopTicker()
	<-tickerDone
	s.fwd.close()
	if cerr := s.node.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, resp.ErrServerClosed) {
		err = nil
	}
	s.log.Info("fenced stopped")
	return err
}

// ShutdownBound is how long a node may take to stop once asked to (SIGTERM):
// main stops the process after it whatever is still running, printing every
// goroutine's stack, so a stop never hangs and a slow one says where.
const ShutdownBound = 10 * time.Second

// Run starts a node with cfg and serves until ctx is cancelled. With a TLS
// port, SIGHUP reloads its certificate, key and CA (notifyReload).
func Run(ctx context.Context, cfg Config) error {
	limitHeap(cfg.MaxMemory)
	stop := notifyReload(&cfg)
	defer stop()
	s, err := Start(cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// limitHeap gives the Go runtime a soft memory limit that follows
// --maxmemory: twice the state (the state itself, and what one garbage
// collection cycle lets pile up beside it) and 192 MiB for the rest (the
// Raft log cache, buffers, connections). Near it the collector runs more
// often and returns memory to the system, so a full state does not leave
// the process at several times its size. What the runtime does not count
// must fit in the 128 MiB between this limit and the node's stated budget
// of twice the state and 320 MiB: Pebble's memtables and cache, allocated
// outside the Go heap, and the binary's own pages (23 MiB) came to 82 MiB
// at the peak of a snapshot installed under load. GOMEMLIMIT, if set,
// wins.
func limitHeap(maxMemory int64) {
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
	case maxMemory <= 0 || maxMemory > math.MaxInt64/4:
		debug.SetMemoryLimit(math.MaxInt64) // none, as with no --maxmemory
	default:
		debug.SetMemoryLimit(2*maxMemory + 192<<20)
	}
}

// wallNow is this node's wall clock, shifted by --clock-offset. It labels
// things (created-at, TIME); it never decides an expiry.
func (s *Server) wallNow() time.Time { return time.Now().Add(s.cfg.ClockOffset) }
