package resp

import (
	"sync"
	"sync/atomic"
)

// Pushes written between replies. A push that reports an event, such as a
// key invalidation (CLIENT TRACKING), must not reach the client ahead of
// the reply of a command that started before the event: that reply may
// show the state from before it, and a client that applied the push first
// would then keep the old value. PushBetween holds such a push until every
// command started before it has had its reply written, then writes it right
// after that reply, before the reply of any command started later. A push
// that arrives while no command is under way goes out at once.

// betweenState is the part of a Conn that orders such pushes. hmu, taken
// inside wmu and never around a socket write, lets HoldPush place a push
// without waiting for a write in progress.
type betweenState struct {
	started  atomic.Uint64 // commands started, each to be answered (executor)
	hmu      sync.Mutex
	answered uint64     // replies written; guarded by hmu (and moved under wmu)
	held     []heldPush // guarded by hmu, in arrival order
}

// heldPush is a push waiting for the reply of command number after.
type heldPush struct {
	v     Value
	after uint64
	size  int
}

// PushBetween writes v, normally built with Push(...), once no command
// started before this call is still unanswered. size bytes were Reserved
// for it by the caller; they are Released once v is written or dropped.
// It never blocks on a command; it may block on the socket, like Push.
func (c *Conn) PushBetween(v Value, size int) error {
	return c.PushAfter(v, size, c.started.Load())
}

// Started returns how many of c's commands have started, for PushAfter:
// taken when a push is decided, it places the push right behind the reply
// of the command running then (Redis writes an invalidation into the
// client's buffer at once), however late the push is written.
func (c *Conn) Started() uint64 { return c.started.Load() }

// PushAfter is PushBetween for a push decided when Started returned after:
// it is written once the first after commands are answered, and never
// ahead of a push held before it.
func (c *Conn) PushAfter(v Value, size int, after uint64) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.hold(v, size, after) {
		return nil
	}
	defer c.Release(size)
	if err := c.w.WriteValue(v, c.Proto()); err != nil {
		return err
	}
	c.unflushed.Store(false)
	return c.w.Flush()
}

// HoldPush places v behind the reply of command number after (Started), if
// that reply is still to be written, and reports whether it did; if not,
// the caller writes v (PushAfter). It waits for no socket write, so the
// apply loop may call it: a push decided while a command runs then follows
// that command's reply, however late a writer goroutine gets to it.
func (c *Conn) HoldPush(v Value, size int, after uint64) bool {
	return c.hold(v, size, after)
}

// hold appends v to the held pushes if it must wait, keeping their order.
func (c *Conn) hold(v Value, size int, after uint64) bool {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if n := len(c.held); n > 0 {
		after = max(after, c.held[n-1].after)
	}
	if after <= c.answered {
		return false
	}
	c.held = append(c.held, heldPush{v: v, after: after, size: size})
	return true
}

// startCommand counts a command whose reply will be written.
func (c *Conn) startCommand() { c.started.Add(1) }

// repliedOne counts a reply just written (wmu held) and writes behind it the
// held pushes that were waiting for it; the caller flushes.
func (c *Conn) repliedOne() error {
	c.hmu.Lock()
	c.answered++
	i := 0
	for i < len(c.held) && c.held[i].after <= c.answered {
		i++
	}
	ready := c.held[:i:i]
	c.held = c.held[i:]
	c.hmu.Unlock()
	var err error
	for _, h := range ready {
		if err == nil {
			err = c.w.WriteValue(h.v, c.Proto())
		}
		c.Release(h.size)
	}
	return err
}
