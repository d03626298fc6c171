package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A Mux carries the commands of many callers over one connection at once.
// Each Do queues its command; one writer sends whatever is queued in a
// single write, and one reader matches the replies, which a RESP server
// sends in command order, to the calls in the order they were sent. Many
// commands in flight then share syscalls on both sides, where a Client
// carries one call at a time.
//
// The server must answer every command, in order, and send nothing else
// (no push frames): a Mux suits a link between servers, not subscriptions.
//
// Errors follow Client's: a call's error wraps ErrNotSent if no byte of its
// command was written, ErrReplyLost otherwise. An I/O or protocol error
// breaks the Mux for good, failing every call in flight; so does a call
// whose deadline passes after it was sent, since a server that has not
// answered by then is not answering the calls behind it either.
type Mux struct {
	nc   net.Conn
	rd   *ReplyReader
	kick chan struct{} // wakes the writer; never blocks
	done chan struct{} // closed when the Mux breaks

	mu    sync.Mutex
	queue []*muxCall // not written yet
	sent  []*muxCall // written, in order: the replies due
	err   error      // why the Mux broke; nil while it works
}

type muxCall struct {
	args   [][]byte
	reply  chan muxResult // buffered: the answer never waits for the caller
	unsent bool           // set when a write failed before this command's first byte
}

type muxResult struct {
	v   Value
	err error
}

// muxWriteTimeout bounds one write of queued commands: a peer that stops
// reading breaks the Mux instead of holding every caller.
const muxWriteTimeout = 10 * time.Second

// NewMux returns a Mux over an established connection, reading replies
// within lim. The Mux owns nc; Close ends it.
func NewMux(nc net.Conn, lim ReplyLimits) *Mux {
	m := &Mux{nc: nc, rd: NewReplyReader(nc, lim), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go m.writer()
	go m.reader()
	return m
}

// Do sends one command and returns its reply; an error reply is a Value,
// as with Client.Do. Cancelling ctx makes Do return at once: with
// ErrNotSent if the command was still queued (it is then never sent).
func (m *Mux) Do(ctx context.Context, args ...[]byte) (Value, error) {
	if len(args) == 0 {
		return Value{}, fmt.Errorf("%w: %w", ErrNotSent, errEmptyCommand)
	}
	c := &muxCall{args: args, reply: make(chan muxResult, 1)}
	m.mu.Lock()
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		return Value{}, fmt.Errorf("%w: mux broken by: %w", ErrNotSent, err)
	}
	if err := ctx.Err(); err != nil {
		m.mu.Unlock()
		return Value{}, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	m.queue = append(m.queue, c)
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default: // the writer is already due to look at the queue
	}
	select {
	case r := <-c.reply:
		return r.v, r.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	if i := slices.Index(m.queue, c); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
		m.mu.Unlock()
		return Value{}, fmt.Errorf("%w: %w", ErrNotSent, ctx.Err())
	}
	m.mu.Unlock()
	select {
	case r := <-c.reply: // answered as ctx ended
		return r.v, r.err
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		m.fail(fmt.Errorf("no reply by a caller's deadline: %w", ctx.Err()))
	}
	return Value{}, fmt.Errorf("%w: %w", ErrReplyLost, ctx.Err())
}

// Broken reports whether the Mux failed or was closed: its calls fail with
// ErrNotSent, and the caller should make another.
func (m *Mux) Broken() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err != nil
}

// Close ends the Mux, failing the calls in flight.
func (m *Mux) Close() error {
	m.fail(errClientClosed)
	return nil
}

// writer sends the queued commands, all that are queued in one write.
func (m *Mux) writer() {
	var buf []byte
	var ends []int // each batched command's end in buf
	for {
		select {
		case <-m.kick:
		case <-m.done:
			return
		}
		m.mu.Lock()
		batch := m.queue
		m.queue = nil
		m.sent = append(m.sent, batch...)
		m.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		buf, ends = buf[:0], ends[:0]
		for _, c := range batch {
			buf = appendCommand(buf, c.args)
			ends = append(ends, len(buf))
		}
		m.nc.SetWriteDeadline(time.Now().Add(muxWriteTimeout))
		n, err := m.nc.Write(buf)
		if err != nil {
			// A command whose first byte was not written was not sent.
			m.mu.Lock()
			start := 0
			for i, c := range batch {
				c.unsent = start >= n
				start = ends[i]
			}
			m.mu.Unlock()
			m.fail(err)
			return
		}
		if cap(buf) > 1<<20 {
			buf, ends = nil, nil // a burst of big commands: don't keep its buffer
		}
	}
}

// reader hands each reply to the oldest call sent.
func (m *Mux) reader() {
	for {
		v, err := m.rd.Read()
		if err != nil {
			m.fail(err)
			return
		}
		m.mu.Lock()
		if len(m.sent) == 0 {
			m.mu.Unlock()
			m.fail(errUnsolicited)
			return
		}
		c := m.sent[0]
		m.sent[0] = nil
		m.sent = m.sent[1:]
		m.mu.Unlock()
		c.reply <- muxResult{v: v}
	}
}

// fail breaks the Mux after err: the calls sent lose their replies, the
// ones still queued were never sent.
func (m *Mux) fail(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	sent, queue := m.sent, m.queue
	m.sent, m.queue = nil, nil
	// unsent is read here, under mu: the writer sets it under mu when its
	// write fails, which may be after the reader has broken the Mux (a
	// call of a batch still being written then counts as sent: its reply
	// is lost, the outcome unknown, which is never wrong).
	unsent := make([]bool, len(sent))
	for i, c := range sent {
		unsent[i] = c.unsent
	}
	close(m.done)
	m.mu.Unlock()
	m.nc.Close()
	for i, c := range sent {
		if unsent[i] {
			c.reply <- muxResult{err: fmt.Errorf("%w: %w", ErrNotSent, err)}
		} else {
			c.reply <- muxResult{err: fmt.Errorf("%w: %w", ErrReplyLost, err)}
		}
	}
	for _, c := range queue {
		c.reply <- muxResult{err: fmt.Errorf("%w: %w", ErrNotSent, err)}
	}
}

// appendCommand appends args as a RESP multibulk array.
func appendCommand(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
