package resp

import "sync/atomic"

// Pushes written between replies. A push that reports an event, such as a
// key invalidation (CLIENT TRACKING), must not reach the client ahead of
// the reply of a command that started before the event: that reply may
// show the state from before it, and a client that applied the push first
// would then keep the old value. PushBetween holds such a push until every
// command started before it has had its reply written, then writes it right
// after that reply, before the reply of any command started later. A push
// that arrives while no command is under way goes out at once.

// betweenState is the part of a Conn that orders such pushes.
type betweenState struct {
	started  atomic.Uint64 // commands started, each to be answered (executor)
	answered uint64        // replies written; guarded by wmu
	held     []heldPush    // guarded by wmu, in arrival order
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
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if n := c.started.Load(); n != c.answered {
		c.held = append(c.held, heldPush{v: v, after: n, size: size})
		return nil
	}
	defer c.Release(size)
	if err := c.w.WriteValue(v, c.Proto()); err != nil {
		return err
	}
	c.unflushed.Store(false)
	return c.w.Flush()
}

// startCommand counts a command whose reply will be written.
func (c *Conn) startCommand() { c.started.Add(1) }

// repliedOne counts a reply just written (wmu held) and writes behind it the
// held pushes that were waiting for it; the caller flushes.
func (c *Conn) repliedOne() error {
	c.answered++
	i := 0
	var err error
	for ; i < len(c.held) && c.held[i].after <= c.answered; i++ {
		h := c.held[i]
		c.held[i] = heldPush{}
		if err == nil {
			err = c.w.WriteValue(h.v, c.Proto())
		}
		c.Release(h.size)
	}
	c.held = c.held[i:]
	return err
}
