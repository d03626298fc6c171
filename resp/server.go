package resp

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrServerClosed is returned by Serve after a call to Shutdown or Close.
var ErrServerClosed = errors.New("resp: Server closed")

// A Handler answers commands.
//
// ServeRESP is called with one command's arguments (at least one; the
// command name is args[0], in the case the client sent) and returns the
// reply. For one Conn, calls are sequential, in the order the commands
// arrived, on one goroutine; different Conns are served concurrently. args
// belong to the handler. A handler that waits (a blocking pop, a lock wait)
// should also stop when c.Context() is done. If ServeRESP panics, the server
// recovers, logs the panic, replies an error and closes that connection
// only.
type Handler interface {
	ServeRESP(c *Conn, args [][]byte) Value
}

// A Pipeliner is a Handler that lets some commands start while replies to
// earlier commands of the connection are still pending (Later): before
// handing a command to ServeRESP behind such replies, the connection asks
// RunsAhead; if it says no, the connection first waits until every earlier
// reply is written, so that the command sees the effects of all the
// commands before it. A Handler that is not a Pipeliner never runs ahead.
// RunsAhead is called on the connection's executor, like ServeRESP.
type Pipeliner interface {
	RunsAhead(c *Conn, args [][]byte) bool
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(c *Conn, args [][]byte) Value

// ServeRESP calls f(c, args).
func (f HandlerFunc) ServeRESP(c *Conn, args [][]byte) Value { return f(c, args) }

// A Server accepts RESP connections and serves their commands with Handler.
// Set the fields before the first call to Serve and don't change them after.
type Server struct {
	Handler Handler
	// Limits are the reader limits a new connection starts with; zero
	// fields take the DefaultLimits. Conn.SetLimits changes them later, for
	// example after AUTH, and SetLimits those of the connections to come.
	Limits Limits
	// MaxConns caps open connections (default 10000). A connection over it
	// is answered "-ERR max number of clients reached" and closed.
	MaxConns int
	// MaxPipeline caps the commands read ahead of the one executing on a
	// connection (default 128); their arguments are also capped to the
	// connection's Limits.MaxCommand bytes. Once reached, the connection is
	// not read until a command finishes, which bounds its memory.
	MaxPipeline int
	// WriteTimeout, if positive, bounds how long a write of replies or
	// pushes may go without progress: a client that takes nothing from its
	// socket for that long (its buffers are full) is disconnected.
	WriteTimeout time.Duration
	// IdleTimeout, if positive, closes a connection that has neither sent
	// a command nor had one answered for that long (Redis's timeout). It
	// does not apply to a connection with a command queued or executing (a
	// blocked client) nor to a subscriber (Conn.SetPubSub).
	IdleTimeout time.Duration
	// OutputLimit bounds the pending output of a normal connection, and
	// PubSubOutputLimit that of a subscriber (Redis's
	// client-output-buffer-limit normal and pubsub classes); see
	// OutputLimit and Conn.Reserve. Zero is no limit.
	OutputLimit       OutputLimit
	PubSubOutputLimit OutputLimit
	// Logger receives panics and connection errors; nil discards them.
	Logger *slog.Logger
	// OnClose, if set, is called once per connection after it has closed
	// and its handler calls have returned, before Shutdown counts it gone.
	OnClose func(c *Conn)

	inShutdown atomic.Bool
	nextID     atomic.Int64
	reaper     sync.Once // starts reapIdle
	// crossLogged is when the cross-protocol guard last logged (Unix ns),
	// crossQuiet how many connections it closed since without a log line.
	crossLogged atomic.Int64
	crossQuiet  atomic.Int64

	mu        sync.Mutex // mu guards the fields below
	newLimits *Limits    // SetLimits's, in place of Limits
	listeners map[*net.Listener]struct{}
	conns     map[*Conn]struct{}
	baseCtx   context.Context // parent of every Conn's context; cancelled by Close
	cancel    context.CancelFunc
	connGone  chan struct{} // signalled (never blocking) when a connection is removed
}

const (
	defaultMaxConns    = 10000
	defaultMaxPipeline = 128
	// lingerTimeout bounds how long a connection the server closes keeps
	// draining the client's input so that its last reply is not lost; see
	// Conn.closeConn.
	lingerTimeout = 500 * time.Millisecond
	// lateFlushDelay is how long replies buffered for a pipeline may wait
	// for the command after them before they are sent anyway.
	lateFlushDelay = time.Millisecond
)

// SetLimits changes the reader limits of the connections accepted from
// now on (CONFIG SET proto-max-bulk-len); those open keep theirs until
// their Conn.SetLimits.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newLimits = &l
}

// connLimitsLocked are the limits a new connection starts with. s.mu
// must be held.
func (s *Server) connLimitsLocked() Limits {
	if s.newLimits != nil {
		return *s.newLimits
	}
	return s.Limits
}

// initLocked sets up the server's state on first use. s.mu must be held.
func (s *Server) initLocked() {
	if s.conns != nil {
		return
	}
	s.listeners = make(map[*net.Listener]struct{})
	s.conns = make(map[*Conn]struct{})
	s.baseCtx, s.cancel = context.WithCancel(context.Background())
	s.connGone = make(chan struct{}, 1)
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Server) maxConns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return defaultMaxConns
}

func (s *Server) maxPipeline() int {
	if s.MaxPipeline > 0 {
		return s.MaxPipeline
	}
	return defaultMaxPipeline
}

// Serve accepts connections on ln and serves each on its own goroutines. It
// returns ErrServerClosed after Shutdown or Close, or the listener's error.
// Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	if s.Handler == nil {
		ln.Close()
		return errors.New("resp: Server.Handler is nil")
	}
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.initLocked()
	s.listeners[&ln] = struct{}{}
	done := s.baseCtx.Done()
	s.mu.Unlock()
	if s.IdleTimeout > 0 {
		s.reaper.Do(func() { go s.reapIdle(done) })
	}
	defer func() {
		s.mu.Lock()
		delete(s.listeners, &ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var delay time.Duration // backoff after a temporary accept error, as net/http
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return ErrServerClosed
			}
			var te interface{ Temporary() bool } // EMFILE, ECONNABORTED...
			if errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logger().Warn("resp: accept error; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.startConn(nc)
	}
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.maxConns() {
		s.mu.Unlock()
		go rejectConn(nc, "-ERR max number of clients reached\r\n")
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	go c.serve()
}

// rejectConn answers a connection that will not be served and closes it.
func rejectConn(nc net.Conn, reply string) {
	nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
	if _, err := nc.Write([]byte(reply)); err == nil {
		lingerClose(nc)
	}
	nc.Close()
}

// crossLogEvery bounds the cross-protocol guard's log lines, as Redis
// does: a web page can open connections as fast as it likes.
const crossLogEvery = time.Minute

// crossProtocol logs a connection that the cross-protocol guard closes
// (crossproto.go): the first, then at most one line per crossLogEvery,
// which counts the ones closed in between.
func (s *Server) crossProtocol(c *Conn) {
	now := time.Now().UnixNano()
	last := s.crossLogged.Load()
	if (last != 0 && now-last < int64(crossLogEvery)) || !s.crossLogged.CompareAndSwap(last, now) {
		s.crossQuiet.Add(1)
		return
	}
	s.logger().Warn("resp: possible cross-protocol attack: a connection sent HTTP; closed it before running anything it sent",
		"conn", c.id, "remote", c.remote, "closed_unlogged", s.crossQuiet.Swap(0))
}

// removeConn forgets a finished connection.
func (s *Server) removeConn(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	select {
	case s.connGone <- struct{}{}:
	default:
	}
}

// Accepted is how many connections the server has taken since it started
// (Redis's total_connections_received): each took the next CLIENT ID.
func (s *Server) Accepted() int64 { return s.nextID.Load() }

// NumConns returns the number of connections being served, a closed one
// until its handler has returned (what Shutdown waits for).
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops the server gracefully: it closes the listeners, closes the
// connections with no command in progress, and waits for the others to
// finish the command they are executing (commands queued behind it are not
// started) and close. It returns when every connection is gone, or
// ctx.Err() when ctx ends first; the caller may then call Close. Handler
// contexts are not cancelled by Shutdown: a handler that waits for long
// keeps its connection, and Shutdown, until it returns or Close is called.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.inShutdown.Store(true)
	s.initLocked()
	err := s.closeListenersLocked()
	s.mu.Unlock()
	for {
		s.closeIdleConns()
		if s.NumConns() == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.connGone:
		}
	}
}

// Close stops the server now: it closes the listeners and every connection
// and cancels every Conn's context. It does not wait for handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	s.inShutdown.Store(true)
	s.initLocked()
	err := s.closeListenersLocked()
	s.cancel()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	return err
}

// closeListenersLocked closes every listener. s.mu must be held.
func (s *Server) closeListenersLocked() error {
	var err error
	for ln := range s.listeners {
		if cerr := (*ln).Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// closeIdleConns closes the connections that have no command read and
// unanswered. A busy connection closes itself after its current command,
// since the executor checks inShutdown.
func (s *Server) closeIdleConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.closeIfIdle()
	}
}

// Conns returns the open connections, by id (CLIENT LIST, CLIENT KILL). One
// closed by Close is not among them, though its handler may still be
// running: Redis frees a killed client before it runs another command, so a
// second CLIENT KILL finds no such client.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		if !c.killed.Load() {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Conn) int { return cmp.Compare(a.id, b.id) })
	return out
}
