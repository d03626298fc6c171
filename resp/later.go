package resp

import (
	"errors"
	"sync/atomic"
)

// Replies that are not ready yet (Later). The executor hands a Later, and
// every reply after it until they are all written, to a replier goroutine
// of the connection that waits for each in turn and writes it: replies keep
// command order while the executor goes on with the commands a Pipeliner
// lets run ahead (writes that a leader proposes one after another, so that
// they share a commit). A command that may not run ahead waits until the
// replier has written everything (awaitReplies).

// later is one reply handed to the replier, with the argument bytes its
// command still counts against the connection's queue.
type later struct {
	v    Value
	size int
}

// laterState is the part of a Conn that concerns the replier.
type laterState struct {
	replies     chan later    // to the replier, in command order; nil until the first Later
	replierDone chan struct{} // closed when the replier has returned
	replied     chan struct{} // signalled (never blocking) after each reply the replier writes
	owed        atomic.Int64  // replies handed to the replier and not yet written
	failed      atomic.Bool   // the replier could not write: the connection is broken
}

// runsAhead reports whether the command may start before the replies owed.
func (c *Conn) runsAhead(it item) bool {
	p, ok := c.srv.Handler.(Pipeliner)
	return ok && it.err == nil && p.RunsAhead(c, it.args)
}

// handOff gives v to the replier, starting it on first use. It blocks while
// MaxPipeline replies are owed, which bounds the connection's memory as the
// queue does.
func (c *Conn) handOff(v Value, size int) {
	if c.replies == nil {
		c.replies = make(chan later, c.srv.maxPipeline())
		c.replierDone = make(chan struct{})
		c.replied = make(chan struct{}, 1)
		go c.replier()
	}
	c.owed.Add(1)
	c.replies <- later{v: v, size: size}
}

// awaitReplies waits until the replier has written every reply handed to
// it.
func (c *Conn) awaitReplies() {
	for c.owed.Load() > 0 {
		<-c.replied
	}
}

// stopReplier waits for the owed replies and ends the replier; the executor
// calls it once it takes no more commands.
func (c *Conn) stopReplier() {
	if c.replies == nil {
		return
	}
	close(c.replies)
	<-c.replierDone
}

func (c *Conn) replier() {
	defer close(c.replierDone)
	for r := range c.replies {
		v := r.v
		if v.kind == KindLater {
			v = c.resolve(v)
		}
		if !c.failed.Load() {
			err := c.writeReply(v, len(c.replies) == 0)
			if errors.Is(err, errZeroValue) {
				c.srv.logger().Error("resp: a Later returned a zero Value", "conn", c.id)
			} else if err != nil {
				// The client is gone or stopped reading: closing the socket
				// ends the reader, then the executor.
				c.failed.Store(true)
				c.nc.Close()
			}
		}
		c.commandDone(r.size)
		c.owed.Add(-1)
		select {
		case c.replied <- struct{}{}:
		default:
		}
		if c.srv.inShutdown.Load() {
			// Shutdown found this connection busy and waits for it to close.
			c.closeIfIdle()
		}
	}
}

// resolve waits for a Later, turning a panic into an error reply.
func (c *Conn) resolve(v Value) (out Value) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.logger().Error("resp: panic in a Later", "conn", c.id, "panic", p)
			out = Error("ERR internal error")
		}
	}()
	out = v.later()
	if out.kind == KindLater {
		out = Error("ERR internal error: a Later returned a Later")
	}
	return out
}
