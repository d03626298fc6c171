package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Errors of a Client, for callers that must know whether a command may have
// been executed. Every error of Do and Pipeline matches exactly one of them
// (errors.Is), and also the cause: the context's error, a net error,
// ErrProtocol...
var (
	// ErrNotSent: no byte of the command reached the connection, so the
	// server cannot have executed it.
	ErrNotSent = errors.New("resp: command not sent")
	// ErrReplyLost: the command was written, in part or in whole, and its
	// reply was not read; the server may or may not have executed it.
	ErrReplyLost = errors.New("resp: reply lost")
)

var (
	errClientClosed = fmt.Errorf("resp: client closed: %w", net.ErrClosed)
	errEmptyCommand = errors.New("resp: empty command")
	errUnsolicited  = errors.New("resp: unsolicited data from the server")
)

// A Client is one connection to a RESP server, which it sends commands to
// and reads replies from in turn. Do and Pipeline must not be called
// concurrently; Close and Broken may be called from any goroutine, and
// Close aborts a Do in progress.
//
// Any I/O or protocol error breaks the Client for good (Broken reports
// it): later calls fail with ErrNotSent, and the caller should Close it.
// An error reply from the server is not an error: it is a Value whose
// IsError is true, and the Client stays usable.
type Client struct {
	nc   net.Conn
	w    *Writer
	rd   *ReplyReader
	sent int64 // bytes of the current call accepted by nc.Write

	cause  error // why the Client broke; set before broken
	broken atomic.Bool
	closed atomic.Bool
}

// Dial connects to the RESP server at addr over TCP, with TCP_NODELAY, in at
// most timeout (if positive) and before ctx ends. Replies are read within
// DefaultReplyLimits.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*Client, error) {
	return DialWith(ctx, &net.Dialer{Timeout: timeout}, addr)
}

// DialWith is Dial with the caller's dialer (its timeout, its source
// address).
func DialWith(ctx context.Context, d *net.Dialer, addr string) (*Client, error) {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return NewClient(nc, DefaultReplyLimits()), nil
}

// NewClient returns a Client over an established connection (TLS, a
// pipe...), reading replies within lim. The Client owns nc.
func NewClient(nc net.Conn, lim ReplyLimits) *Client {
	c := &Client{nc: nc}
	c.w = NewWriter(sentCounter{c})
	c.rd = NewReplyReader(nc, lim)
	return c
}

// sentCounter counts the bytes the connection accepted, which tells
// ErrNotSent from ErrReplyLost.
type sentCounter struct{ c *Client }

func (s sentCounter) Write(p []byte) (int, error) {
	n, err := s.c.nc.Write(p)
	if n > 0 {
		s.c.sent += int64(n)
	}
	return n, err
}

// Do sends one command, as a multibulk array of args, and returns its reply.
// An error reply is returned as a Value, not as an error.
//
// A deadline of ctx bounds the whole call, and cancelling ctx makes Do
// return at once. An error wraps ErrNotSent if no byte was written: ctx
// was already done, the Client is closed or broken, args is empty, the
// server had closed the connection or sent unsolicited bytes (checked
// before writing, on Unix), or the first write failed. It wraps
// ErrReplyLost otherwise, including when ctx ends after writing began.
// Either way it also wraps the cause (context.Canceled, io.EOF,
// ErrProtocol...). Every error breaks the Client, except those of the
// checks that come before any I/O: a closed or broken Client, an empty
// command, a done ctx.
//
// The reply is the next one on the connection: a RESP3 push frame, which a
// server sends only after a subscription, is returned like a reply.
func (c *Client) Do(ctx context.Context, args ...[]byte) (Value, error) {
	var out [1]Value
	vs, err := c.roundTrip(ctx, [][][]byte{args}, out[:0])
	if err != nil {
		return Value{}, err
	}
	return vs[0], nil
}

// Pipeline sends the commands together and returns their replies, in order.
// On an error it also returns the replies read before it, whose commands
// have been executed; for the others, the error tells as in Do.
func (c *Client) Pipeline(ctx context.Context, cmds [][][]byte) ([]Value, error) {
	return c.roundTrip(ctx, cmds, make([]Value, 0, len(cmds)))
}

// Broken reports whether an error has made the Client unusable, or it has
// been closed. A pool should Close it rather than reuse it.
func (c *Client) Broken() bool { return c.broken.Load() || c.closed.Load() }

// Close closes the connection. A Do in progress fails, with ErrReplyLost if
// it had written anything.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.nc.Close()
}

// longAgo is a deadline in the past, which makes blocked I/O return.
var longAgo = time.Unix(1, 0)

func (c *Client) roundTrip(ctx context.Context, cmds [][][]byte, out []Value) ([]Value, error) {
	c.sent = 0
	if c.closed.Load() {
		return out, fmt.Errorf("%w: %w", ErrNotSent, errClientClosed)
	}
	if c.broken.Load() {
		return out, fmt.Errorf("%w: client broken by: %w", ErrNotSent, c.cause)
	}
	for _, args := range cmds {
		if len(args) == 0 {
			return out, fmt.Errorf("%w: %w", ErrNotSent, errEmptyCommand)
		}
	}
	if len(cmds) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("%w: %w", ErrNotSent, err)
	}

	deadline, _ := ctx.Deadline() // zero: none, clearing the last call's
	if err := c.nc.SetDeadline(deadline); err != nil {
		return out, c.fail(ctx, err)
	}
	if ctx.Done() != nil {
		// Cancelling ctx sets a past deadline, failing any blocked I/O.
		// Wait for that to finish before returning, or it could hit the
		// next call.
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			c.nc.SetDeadline(longAgo)
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired
			}
		}()
	}

	// Left-over reply bytes, or a connection the server has closed while
	// the Client was idle (a restart, an idle timeout): nothing is sent.
	if c.rd.Buffered() > 0 {
		return out, c.fail(ctx, errUnsolicited)
	}
	if err := probe(c.nc); err != nil {
		return out, c.fail(ctx, err)
	}

	for _, args := range cmds {
		c.w.header('*', int64(len(args)))
		for _, a := range args {
			c.w.header('$', int64(len(a)))
			c.w.write(a)
			c.w.writeString("\r\n")
		}
	}
	if err := c.w.Flush(); err != nil {
		return out, c.fail(ctx, err)
	}
	for range cmds {
		v, err := c.rd.Read()
		if err != nil {
			return out, c.fail(ctx, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// fail breaks the Client after err and returns the error for the caller.
func (c *Client) fail(ctx context.Context, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Name the context's end that set the deadline, which may be a
		// moment ahead of ctx noticing its own.
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		} else if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
	}
	if c.closed.Load() {
		err = fmt.Errorf("%w (%w)", errClientClosed, err)
	}
	c.cause = err
	c.broken.Store(true)
	if c.sent == 0 {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", ErrReplyLost, err)
}
