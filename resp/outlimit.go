package resp

import (
	"errors"
	"net"
	"strconv"
	"time"
)

// Output limits and the idle timeout, Redis's client-output-buffer-limit
// and timeout. A connection's pending output is what has been produced for
// it and not yet taken by its socket: the reply being written, and what a
// caller queues for it between Reserve and Release (a subscriber's
// messages). Its class decides the limit: pub/sub for a connection marked
// with SetPubSub (Redis's CLIENT_PUBSUB flag), normal otherwise.

// ErrOutputLimit is returned by Reserve, and ends the connection, when its
// pending output goes past its class's limit.
var ErrOutputLimit = errors.New("resp: client output buffer limit reached")

// OutputLimit is Redis's client-output-buffer-limit of one class of
// clients: a connection whose pending output exceeds Hard bytes is closed at
// once; one whose pending output stays above Soft bytes for longer than
// SoftFor is closed too. Zero is no limit, as Redis's 0.
type OutputLimit struct {
	Hard    int64
	Soft    int64
	SoftFor time.Duration
}

func (l OutputLimit) limited() bool { return l.Hard > 0 || l.Soft > 0 }

// outState is a Conn's output accounting.
type outState struct {
	pending   int64     // bytes of pending output
	softSince time.Time // when pending went over the soft limit; zero while under it
}

// SetPubSub marks the connection as subscribed to channels (Redis's
// CLIENT_PUBSUB flag) or not: a subscriber's pending output is bounded by
// the Server's PubSubOutputLimit instead of OutputLimit, and the idle
// timeout does not apply to it.
func (c *Conn) SetPubSub(on bool) { c.pubsub.Store(on) }

// PubSub reports whether SetPubSub marked the connection.
func (c *Conn) PubSub() bool { return c.pubsub.Load() }

func (c *Conn) outputLimit() OutputLimit {
	if c.pubsub.Load() {
		return c.srv.PubSubOutputLimit
	}
	return c.srv.OutputLimit
}

// PendingOutput returns the bytes of the connection's pending output
// (CLIENT LIST's omem).
func (c *Conn) PendingOutput() int64 {
	c.omu.Lock()
	defer c.omu.Unlock()
	return c.out.pending
}

// QueuedInput returns the bytes of the arguments of the connection's
// commands read and not yet answered (CLIENT LIST's qbuf, as fenced holds
// input: parsed, not raw).
func (c *Conn) QueuedInput() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.queued)
}

// Reserve counts n more bytes of pending output, which the caller has
// produced for the connection and will write (Push) or drop, then Release.
// If that takes the connection past its class's limit, the bytes are not
// counted, the connection is closed and ErrOutputLimit returned; on a
// connection already closed Reserve returns net.ErrClosed.
func (c *Conn) Reserve(n int) error {
	lim := c.outputLimit()
	c.omu.Lock()
	if c.killed.Load() {
		c.omu.Unlock()
		return net.ErrClosed
	}
	c.out.pending += int64(n)
	p := c.out.pending
	over := lim.Hard > 0 && p > lim.Hard
	if lim.Soft > 0 && p > lim.Soft {
		now := time.Now()
		if c.out.softSince.IsZero() {
			c.out.softSince = now
		} else if now.Sub(c.out.softSince) > lim.SoftFor {
			over = true
		}
	} else {
		c.out.softSince = time.Time{}
	}
	if over {
		c.out.pending -= int64(n)
	}
	c.omu.Unlock()
	if !over {
		return nil
	}
	c.srv.logger().Warn("resp: client closed for overcoming of output buffer limits",
		"conn", c.id, "remote", c.remote, "pubsub", c.pubsub.Load(), "pending", p)
	c.Close()
	return ErrOutputLimit
}

// Release uncounts n bytes of pending output that Reserve counted: they
// were written, or dropped.
func (c *Conn) Release(n int) {
	lim := c.outputLimit()
	c.omu.Lock()
	defer c.omu.Unlock()
	c.out.pending -= int64(n)
	if lim.Soft <= 0 || c.out.pending <= lim.Soft {
		c.out.softSince = time.Time{}
	}
}

// touch records activity for the idle timeout.
func (c *Conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// touchingReader is the connection's input as its Reader sees it: every
// read that brings bytes is activity, as Redis sets a client's
// lastinteraction on every read, so a command the reader has only begun to
// take is not idleness.
type touchingReader struct{ c *Conn }

func (r touchingReader) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	if n > 0 {
		r.c.touch()
	}
	return n, err
}

// Idle returns how long the connection has neither sent bytes nor had a
// command answered (CLIENT LIST's idle).
func (c *Conn) Idle() time.Duration {
	return time.Duration(time.Now().UnixNano() - c.lastActive.Load())
}

// closeIfIdleFor closes the connection if it has been idle for d: no
// bytes read and no command answered for that long, none queued or
// executing (a client blocked in a wait is not idle), no input waiting in
// the socket, and not a subscriber, as Redis's timeout.
func (c *Conn) closeIfIdleFor(d time.Duration) {
	if c.pubsub.Load() || c.Idle() < d || inputPending(c.nc) {
		return
	}
	if c.closeIfIdle() {
		c.srv.logger().Debug("resp: closed idle client", "conn", c.id, "remote", c.remote)
	}
}

// reapIdle closes idle connections until the server shuts down.
func (s *Server) reapIdle(done <-chan struct{}) {
	every := min(time.Second, s.IdleTimeout/2)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if s.inShutdown.Load() {
			return
		}
		for _, c := range s.Conns() {
			c.closeIfIdleFor(s.IdleTimeout)
		}
	}
}

// maxWriteChunk is the most handed to the socket under one write deadline:
// the WriteTimeout bounds a time without progress, not a whole reply.
const maxWriteChunk = 64 << 10

// deadlineWriter writes to the connection's socket, each chunk of at most
// maxWriteChunk under a fresh deadline of the Server's WriteTimeout.
type deadlineWriter struct{ c *Conn }

func (w deadlineWriter) Write(p []byte) (int, error) {
	t := w.c.srv.WriteTimeout
	if t <= 0 {
		return w.c.nc.Write(p)
	}
	n := 0
	for n < len(p) {
		end := min(len(p), n+maxWriteChunk)
		w.c.nc.SetWriteDeadline(time.Now().Add(t))
		m, err := w.c.nc.Write(p[n:end])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// EncodedLen returns the number of bytes WriteValue writes for v in proto
// (3: RESP3, otherwise RESP2).
func EncodedLen(v Value, proto int) int { return encodedLen(v, proto == 3) }

func encodedLen(v Value, resp3 bool) int {
	header := func(n int64) int {
		var b [24]byte
		return 1 + len(strconv.AppendInt(b[:0], n, 10)) + 2
	}
	switch v.kind {
	case KindSimpleString, KindError:
		return 1 + len(v.str) + 2
	case KindInt:
		return header(v.num)
	case KindBulk:
		n := len(v.bytes)
		if v.isStr {
			n = len(v.str)
		}
		return header(int64(n)) + n + 2
	case KindNull, KindNullArray:
		if resp3 {
			return 3
		}
		return 5
	case KindBool:
		if resp3 {
			return 4
		}
		return header(v.num)
	case KindDouble:
		var b [40]byte
		n := len(appendDouble(b[:0], v.Float()))
		if resp3 {
			return 1 + n + 2
		}
		return header(int64(n)) + n + 2
	case KindVerbatim:
		n := len(v.str)
		if !resp3 {
			n -= 4
		}
		return header(int64(n)) + n + 2
	case KindArray, KindSet, KindPush, KindMap:
		n := int64(len(v.elems))
		if resp3 && v.kind == KindMap {
			n /= 2
		}
		size := header(n)
		for _, e := range v.elems {
			size += encodedLen(e, resp3)
		}
		return size
	case KindPushed, KindLater:
		return 0
	}
	return len("-ERR internal error: invalid reply value\r\n")
}
