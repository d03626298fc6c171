package resp

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// A Conn is one client connection. Two goroutines serve it: a reader that
// parses commands into a bounded queue, and an executor that calls the
// Handler for each command in order and writes the replies, flushing when
// the queue is empty. A slow command therefore holds up only its own
// connection, and a client that does not read its replies stops the writer,
// then the queue, then the reader: its memory stays bounded by MaxPipeline
// commands and about twice Limits.MaxCommand bytes of arguments.
//
// The methods are safe to call from any goroutine.
type Conn struct {
	srv     *Server
	nc      net.Conn
	rd      *Reader // owned by readLoop
	id      int64
	created time.Time
	remote  string
	local   string
	ctx     context.Context
	cancel  context.CancelFunc

	proto      atomic.Int32
	pubsub     atomic.Bool  // SetPubSub: the pub/sub output class, no idle timeout
	lastActive atomic.Int64 // Unix ns of the last command read or answered (touch)
	closeAfter atomic.Bool
	killed     atomic.Bool // Close was called
	unflushed  atomic.Bool // replies are buffered, waiting for the end of a pipeline
	flushTimer *time.Timer // executor only: flushes them if a command takes long

	wmu sync.Mutex // wmu serialises writes: replies from the executor or the replier, Push from anyone
	w   *Writer

	laterState   // replies not ready yet (later.go)
	betweenState // pushes held for the replies before them (between.go)

	omu sync.Mutex // omu guards out
	out outState   // pending output (outlimit.go)

	mu         sync.Mutex // mu guards the fields below
	name       string
	state      any
	limits     Limits
	newLimits  bool // limits changed since the reader last applied them
	pending    int  // commands queued or executing (incremented by the reader)
	queued     int  // bytes of those commands' arguments
	closing    bool // no further command will be started
	lingering  bool // closeConn is draining input: readLoop must not report errors
	queue      chan item
	finished   chan struct{} // signalled (never blocking) after each command
	execDone   chan struct{} // closed when the executor stops taking commands
	readerDone chan struct{} // closed when readLoop returns
}

// item is one entry of a Conn's queue: a command, or the protocol error
// that ends the connection.
type item struct {
	args [][]byte
	err  error
}

func newConn(s *Server, nc net.Conn) *Conn {
	lim := s.connLimitsLocked() // startConn holds s.mu
	c := &Conn{
		srv:        s,
		nc:         nc,
		id:         s.nextID.Add(1),
		created:    time.Now(),
		limits:     lim,
		queue:      make(chan item, s.maxPipeline()),
		finished:   make(chan struct{}, 1),
		execDone:   make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	if a := nc.RemoteAddr(); a != nil {
		c.remote = a.String()
	}
	if a := nc.LocalAddr(); a != nil {
		c.local = a.String()
	}
	c.w = NewWriter(deadlineWriter{c})
	c.ctx, c.cancel = context.WithCancel(s.baseCtx)
	c.proto.Store(2)
	c.touch()
	c.rd = NewReader(touchingReader{c}, lim)
	return c
}

// ID returns the connection's id, unique within its Server, from 1.
func (c *Conn) ID() int64 { return c.id }

// Context is cancelled when the peer closes the connection or sends bytes
// that cannot be parsed, when the connection is closed, or when the Server
// is closed. Commands already queued still run after that, with this
// context done.
func (c *Conn) Context() context.Context { return c.ctx }

// Proto returns the protocol version replies are written in: 2 (the
// default) or 3.
func (c *Conn) Proto() int { return int(c.proto.Load()) }

// SetProto sets the protocol version, 2 or 3 (other values are ignored).
// The reply of the command calling it is already written in the new version,
// as HELLO 3 must answer in RESP3.
func (c *Conn) SetProto(p int) {
	if p == 2 || p == 3 {
		c.proto.Store(int32(p))
	}
}

// Name returns the name set by SetName (CLIENT SETNAME).
func (c *Conn) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// SetName sets the connection's name.
func (c *Conn) SetName(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.name = name
}

// CloseAfterReply closes the connection once the reply of the current
// command is written (QUIT). Commands queued behind it are not run.
func (c *Conn) CloseAfterReply() { c.closeAfter.Store(true) }

// Closing reports whether the connection has ended, or will end once the
// reply now being made is written (QUIT): a client that read that reply
// must find the connection gone, as Redis frees it before it runs another
// client's command.
func (c *Conn) Closing() bool { return c.closeAfter.Load() || c.Context().Err() != nil }

// SetLimits changes the reader limits, for example after AUTH. The commands
// after the current one are read with them, even if the client sent them
// before this command's reply (see readLoop).
func (c *Conn) SetLimits(lim Limits) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limits, c.newLimits = lim, true
}

// Close closes the connection now, from any goroutine (CLIENT KILL, an
// authentication deadline): commands not yet started are dropped, and a
// handler running sees its Context done.
func (c *Conn) Close() error {
	c.killed.Store(true)
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	// Close the socket before cancelling: a handler woken by the cancel
	// must not get its reply out first.
	err := c.nc.Close()
	c.cancel()
	return err
}

// RemoteAddr returns the client's address.
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr returns the server's end of the connection (CLIENT LIST's laddr).
func (c *Conn) LocalAddr() string { return c.local }

// Created returns when the connection was accepted.
func (c *Conn) Created() time.Time { return c.created }

// State returns the value set by SetState, nil at first.
func (c *Conn) State() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SetState stores the handler's per-connection state (authentication,
// subscriptions, transaction...). The resp package never looks at it.
func (c *Conn) SetState(v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = v
}

// Push writes v, normally built with Push(...), to the client now, between
// two replies, and flushes it. It may be called from any goroutine. It
// blocks while the client does not read, up to the Server's WriteTimeout.
// It does not count v as pending output: a caller that queues pushes
// counts them (Reserve, Release).
func (c *Conn) Push(v Value) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.w.WriteValue(v, c.Proto()); err != nil {
		return err
	}
	c.unflushed.Store(false)
	return c.w.Flush()
}

// serve runs the executor on the calling goroutine until the connection
// ends, then cleans up.
func (c *Conn) serve() {
	go c.readLoop()

	linger := false
	for it := range c.queue {
		if c.killed.Load() {
			break
		}
		keep, lingerClose := c.exec(it)
		if !keep {
			linger = lingerClose
			break
		}
	}
	c.stopReplier()
	c.closeConn(linger)
	if f := c.srv.OnClose; f != nil {
		func() {
			defer c.recoverPanic("OnClose")
			f(c)
		}()
	}
	c.srv.removeConn(c)
}

// readLoop parses commands into the queue until the stream ends.
func (c *Conn) readLoop() {
	rd := c.rd
	defer close(c.readerDone)
	defer close(c.queue)
	// Cancel first: a handler blocked in a wait learns the peer has gone.
	defer c.cancel()
	defer c.recoverPanic("reader")
	first := true // no command read yet
	for {
		c.applyLimits(rd)
		args, err := rd.ReadCommand()
		if err == nil {
			c.touch()
		}
		if err != nil && isLimitError(err) && c.waitIdle() && c.applyLimits(rd) {
			// A command still executing when the input went over the limits
			// changed them (AUTH): read the same input with the new ones,
			// as Redis would, having run that command before reading on.
			continue
		}
		if err != nil {
			c.mu.Lock()
			quiet := c.lingering
			c.mu.Unlock()
			if quiet {
				return
			}
			if errors.Is(err, ErrProtocol) {
				c.enqueue(item{err: err}, rd.lim.MaxCommand)
			} else if err != io.EOF {
				c.srv.logger().Debug("resp: read", "conn", c.id, "err", err)
			}
			return
		}
		if rd.Inline() && looksLikeHTTP(args, first) {
			// Neither this line nor anything after it is queued: the
			// executor closes the connection once it reaches this item
			// (crossproto.go).
			c.srv.crossProtocol(c)
			c.enqueue(item{err: errCrossProtocol}, rd.lim.MaxCommand)
			return
		}
		first = false
		if !c.enqueue(item{args: args}, rd.lim.MaxCommand) {
			return
		}
	}
}

// applyLimits gives the reader limits set by SetLimits, if any, and reports
// whether there were.
func (c *Conn) applyLimits(rd *Reader) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.newLimits {
		return false
	}
	rd.SetLimits(c.limits)
	c.newLimits = false
	return true
}

// waitIdle waits until every queued command has been answered; it reports
// false if the executor stopped first.
func (c *Conn) waitIdle() bool {
	for {
		c.mu.Lock()
		p := c.pending
		c.mu.Unlock()
		if p == 0 {
			return true
		}
		select {
		case <-c.finished:
		case <-c.execDone:
			return false
		}
	}
}

// enqueue hands an item to the executor; it reports false if the executor
// no longer takes items. Besides MaxPipeline commands, it bounds the queue
// to maxBytes of arguments (unless it is empty), so the memory of a
// connection is a few commands at most, whatever their size.
func (c *Conn) enqueue(it item, maxBytes int) bool {
	size := argsSize(it.args)
	c.mu.Lock()
	for c.queued > 0 && c.queued+size > maxBytes && !c.closing {
		c.mu.Unlock()
		select {
		case <-c.finished:
		case <-c.execDone:
			return false
		}
		c.mu.Lock()
	}
	if c.closing {
		c.mu.Unlock()
		return false
	}
	c.pending++
	c.queued += size
	c.mu.Unlock()
	select {
	case c.queue <- it:
		return true
	case <-c.execDone:
		return false
	}
}

// exec runs one item and writes its reply. It reports whether to go on and,
// if not, whether to close gently (linger) so the client gets the last
// reply.
func (c *Conn) exec(it item) (keep, linger bool) {
	if c.owed.Load() > 0 && !c.runsAhead(it) {
		c.awaitReplies()
	}
	if c.failed.Load() {
		return false, false
	}
	if it.err == errCrossProtocol {
		// HTTP gets no reply; the commands read before it have theirs.
		c.flush()
		c.commandDone(0)
		return false, false
	}
	c.startCommand()
	var v Value
	if it.err != nil {
		v = Error("ERR " + it.err.Error())
	} else {
		// Replies held back for a pipeline must not wait for a command
		// that blocks (BLPOP, a lock wait): flush them if it takes long.
		armed := c.unflushed.Load()
		if armed {
			if c.flushTimer == nil {
				c.flushTimer = time.AfterFunc(lateFlushDelay, c.lateFlush)
			} else {
				c.flushTimer.Reset(lateFlushDelay)
			}
		}
		var ok bool
		if v, ok = c.call(it.args); !ok {
			v = Error("ERR internal error")
			c.closeAfter.Store(true)
		}
		if armed {
			c.flushTimer.Stop()
		}
	}
	last := it.err != nil || c.closeAfter.Load() || c.srv.inShutdown.Load()
	// A Later is handed off only when another command is waiting to run
	// ahead of it (or replies are already owed): a client that waits for
	// each reply gains nothing from the replier and would pay a goroutine
	// switch per command.
	if !last && (v.kind == KindLater && len(c.queue) > 0 || c.owed.Load() > 0) {
		c.handOff(v, argsSize(it.args))
		return true, false
	}
	// Written here, after every reply owed.
	c.awaitReplies()
	if v.kind == KindLater {
		v = c.resolve(v)
	}
	err := c.writeReply(v, last || len(c.queue) == 0)
	c.commandDone(argsSize(it.args))
	if !last && err == nil && c.srv.inShutdown.Load() {
		// Shutdown began while this command ran and saw it busy: it relies
		// on this executor to close the connection.
		last = true
		err = c.flush()
	}
	if errors.Is(err, errZeroValue) {
		c.srv.logger().Error("resp: handler returned a zero Value", "conn", c.id, "cmd", commandName(it.args))
		err = nil
	}
	if err != nil {
		c.srv.logger().Debug("resp: write", "conn", c.id, "err", err)
		return false, false
	}
	return !last, true
}

// commandDone counts a command answered: its reply is written (or buffered).
func (c *Conn) commandDone(size int) {
	c.mu.Lock()
	c.pending--
	c.queued -= size
	c.mu.Unlock()
	c.touch()
	select {
	case c.finished <- struct{}{}:
	default:
	}
}

// call runs the handler, turning a panic into ok == false.
func (c *Conn) call(args [][]byte) (v Value, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.logger().Error("resp: handler panic", "conn", c.id, "cmd", commandName(args),
				"panic", p, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	return c.srv.Handler.ServeRESP(c, args), true
}

func (c *Conn) recoverPanic(where string) {
	if p := recover(); p != nil {
		c.srv.logger().Error("resp: panic in "+where, "conn", c.id, "panic", p, "stack", string(debug.Stack()))
	}
}

// writeReply writes v in the connection's protocol, and flushes if asked.
func (c *Conn) writeReply(v Value, flush bool) error {
	proto := c.Proto()
	if c.outputLimit().limited() {
		// The reply is pending output until written: a reply larger than
		// the connection's hard limit closes it, as in Redis.
		n := EncodedLen(v, proto)
		if err := c.Reserve(n); err != nil {
			return err
		}
		defer c.Release(n)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.w.WriteValue(v, proto)
	if err != nil && !errors.Is(err, errZeroValue) {
		return err
	}
	if herr := c.repliedOne(); herr != nil {
		return herr
	}
	if flush {
		if ferr := c.w.Flush(); ferr != nil {
			return ferr
		}
	}
	c.unflushed.Store(c.w.Buffered() > 0)
	return err
}

// lateFlush runs on a timer while a command executes behind buffered
// replies. A write error stays in the Writer for the executor to see.
func (c *Conn) lateFlush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Flush()
	c.unflushed.Store(false)
}

func (c *Conn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.unflushed.Store(false)
	return c.w.Flush()
}

// closeIfIdle closes the connection if no command is queued or executing,
// and reports whether it did; it is Shutdown's way to end idle
// connections, and the idle timeout's.
func (c *Conn) closeIfIdle() bool {
	c.mu.Lock()
	idle := c.pending == 0 && !c.closing
	if idle {
		c.closing = true
	}
	c.mu.Unlock()
	if idle {
		c.nc.Close()
	}
	return idle
}

// closeConn ends the connection from the executor and waits for the reader.
//
// With linger, the server is the side closing while the client may still be
// sending. Closing a TCP socket with unread input sends a RST, which can
// destroy the last reply before the client reads it; so the write side is
// shut first and the input drained for a moment, as net/http does.
func (c *Conn) closeConn(linger bool) {
	c.mu.Lock()
	c.closing = true
	c.lingering = linger
	c.mu.Unlock()
	close(c.execDone)
	if c.flushTimer != nil {
		c.flushTimer.Stop()
	}
	if linger {
		// The reader stops at the peer's EOF, at the deadline, or at its
		// next command (enqueue fails); what it leaves is drained here.
		deadline := time.Now().Add(lingerTimeout)
		closeWrite(c.nc)
		// The connection has ended for whoever watches it (a tracking
		// client redirecting to it, after QUIT): it runs and writes nothing
		// more, and the drain below may take lingerTimeout.
		c.cancel()
		c.nc.SetReadDeadline(deadline)
		<-c.readerDone
		drain(c.nc, deadline)
	}
	c.nc.Close()
	c.cancel()
	<-c.readerDone
}

// lingerClose shuts the write side of nc and reads what the peer still
// sends until it closes, for at most lingerTimeout. The caller closes nc.
func lingerClose(nc net.Conn) {
	closeWrite(nc)
	drain(nc, time.Now().Add(lingerTimeout))
}

// closeWrite sends EOF (TCP FIN, TLS close_notify) after the bytes written.
func closeWrite(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// drain discards input until EOF, the deadline or 256 KiB.
func drain(nc net.Conn, deadline time.Time) {
	nc.SetReadDeadline(deadline)
	io.Copy(io.Discard, io.LimitReader(nc, 256<<10))
}

func argsSize(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

// commandName returns a command's name for logs, bounded in length.
func commandName(args [][]byte) string {
	if len(args) == 0 {
		return ""
	}
	name := args[0]
	if len(name) > 32 {
		name = name[:32]
	}
	return string(name)
}
