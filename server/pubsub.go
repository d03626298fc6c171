package server

import (
	"slices"
	"sync"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// Pub/sub. PUBLISH goes through the log like any write;
// every node delivers each message to its own subscribers when it applies
// the entry, so a subscriber on any node hears every message once, in log
// order. A node that restarts does not deliver again what it applied
// before (the FSM skips entries already in its state); a node that was
// down misses the messages of that time, as a Redis subscriber whose
// connection dropped does.

// msgOverhead is what a queued message costs besides its encoded bytes
// (its four resp.Values of about 90 bytes each and its queue slot), counted with them against the pub/sub output
// limit so that many small messages are bounded as well as a few large
// ones.
const msgOverhead = 512

type pubsub struct {
	mu    sync.Mutex
	chans map[string]map[*subscriber]struct{}
}

// subscriber is one subscribed connection. Messages reach it through its
// queue, written by its own goroutine, so a slow client never holds up the
// apply loop; the queue's bytes are the connection's pending output, and a
// subscriber past the pub/sub output limit is disconnected
// (resp.Conn.Reserve), as Redis does.
type subscriber struct {
	c *resp.Conn
	// mu orders writes to the connection: SUBSCRIBE's confirmations go out
	// before any message of the channels they confirm.
	mu    sync.Mutex
	chans map[string]struct{} // guarded by pubsub.mu

	qmu   sync.Mutex
	queue []queuedMsg   // guarded by qmu
	wake  chan struct{} // signalled (never blocking) when queue grows
}

// queuedMsg is a message waiting for its subscriber, with the bytes it
// counts as the connection's pending output.
type queuedMsg struct {
	v    resp.Value
	size int
}

func newPubsub() *pubsub {
	return &pubsub{chans: make(map[string]map[*subscriber]struct{})}
}

// subscriberOf returns c's subscriber, creating it and its goroutine.
func (p *pubsub) subscriberOf(c *resp.Conn) *subscriber {
	st := stateOf(c)
	if st.sub == nil {
		st.sub = &subscriber{c: c, chans: make(map[string]struct{}), wake: make(chan struct{}, 1)}
		go p.run(st.sub)
	}
	return st.sub
}

// enqueue queues v for the subscriber, unless that takes the connection
// past its output limit, which closes it.
func (sub *subscriber) enqueue(v resp.Value) {
	n := resp.EncodedLen(v, 3) + msgOverhead
	if sub.c.Reserve(n) != nil {
		return // closed: its goroutine drops it
	}
	sub.qmu.Lock()
	sub.queue = append(sub.queue, queuedMsg{v, n})
	sub.qmu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// take returns the queued messages, emptying the queue.
func (sub *subscriber) take() []queuedMsg {
	sub.qmu.Lock()
	defer sub.qmu.Unlock()
	q := sub.queue
	sub.queue = nil
	return q
}

func (p *pubsub) run(sub *subscriber) {
	defer p.drop(sub)
	defer func() {
		for _, m := range sub.take() {
			sub.c.Release(m.size)
		}
	}()
	ctx := sub.c.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.wake:
		}
		q := sub.take()
		for i, m := range q {
			sub.mu.Lock()
			err := sub.c.Push(m.v)
			sub.mu.Unlock()
			sub.c.Release(m.size)
			q[i] = queuedMsg{} // written: not kept alive by the batch
			if err != nil {
				for _, rest := range q[i+1:] {
					sub.c.Release(rest.size)
				}
				sub.c.Close()
				return
			}
		}
	}
}

// drop removes every subscription of sub.
func (p *pubsub) drop(sub *subscriber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch := range sub.chans {
		p.remove(sub, ch)
	}
}

func (p *pubsub) remove(sub *subscriber, ch string) {
	delete(sub.chans, ch)
	if subs := p.chans[ch]; subs != nil {
		delete(subs, sub)
		if len(subs) == 0 {
			delete(p.chans, ch)
		}
	}
}

// deliver hands applied messages to this node's subscribers.
func (p *pubsub) deliver(msgs []lockstate.Message) {
	if len(msgs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		for sub := range p.chans[m.Channel] {
			sub.enqueue(resp.Push(resp.BulkString("message"), resp.BulkString(m.Channel), resp.BulkString(m.Payload)))
		}
	}
}

// count is the number of this node's subscribers of ch.
func (p *pubsub) count(ch string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.chans[ch]))
}

// subscribed is the number of channels c listens on.
func (p *pubsub) subscribed(c *resp.Conn) int {
	st, _ := c.State().(*connState)
	if st == nil || st.sub == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(st.sub.chans)
}

func (s *Server) subscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.subscribeWith(c, args, c.Push)
}

// subscribeWith is SUBSCRIBE with its confirmations given to push: c.Push,
// or EXEC's array (multi.go).
func (s *Server) subscribeWith(c *resp.Conn, args [][]byte, push func(resp.Value) error) resp.Value {
	p := s.pubsub
	sub := p.subscriberOf(c)
	sub.mu.Lock()
	defer sub.mu.Unlock()
	c.SetPubSub(true) // before its first message is queued
	for _, a := range args[1:] {
		ch := string(a)
		p.mu.Lock()
		if p.chans[ch] == nil {
			p.chans[ch] = make(map[*subscriber]struct{})
		}
		p.chans[ch][sub] = struct{}{}
		sub.chans[ch] = struct{}{}
		n := len(sub.chans)
		p.mu.Unlock()
		if err := push(resp.Push(resp.BulkString("subscribe"), resp.BulkString(ch), resp.Int(int64(n)))); err != nil {
			c.Close()
			break
		}
	}
	return resp.Pushed()
}

func (s *Server) unsubscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.unsubscribeWith(c, args, c.Push)
}

// unsubscribeWith is UNSUBSCRIBE with its confirmations given to push.
func (s *Server) unsubscribeWith(c *resp.Conn, args [][]byte, push func(resp.Value) error) resp.Value {
	p := s.pubsub
	var sub *subscriber
	if st, _ := c.State().(*connState); st != nil {
		sub = st.sub
	}
	var chans []string
	for _, a := range args[1:] {
		chans = append(chans, string(a))
	}
	if sub != nil {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		if len(chans) == 0 {
			p.mu.Lock()
			chans = sortedSet(sub.chans)
			p.mu.Unlock()
		}
	}
	if len(chans) == 0 {
		return resp.Push(resp.BulkString("unsubscribe"), resp.Null(), resp.Int(0))
	}
	for _, ch := range chans {
		n := 0
		if sub != nil {
			p.mu.Lock()
			p.remove(sub, ch)
			n = len(sub.chans)
			p.mu.Unlock()
		}
		if n == 0 {
			c.SetPubSub(false)
		}
		if err := push(resp.Push(resp.BulkString("unsubscribe"), resp.BulkString(ch), resp.Int(int64(n)))); err != nil {
			c.Close()
			break
		}
	}
	return resp.Pushed()
}

// unsubscribeAll ends c's subscriptions without replies (RESET).
func (p *pubsub) unsubscribeAll(c *resp.Conn) {
	if st, _ := c.State().(*connState); st != nil && st.sub != nil {
		p.drop(st.sub)
	}
	c.SetPubSub(false)
}

// inSubscribedMode is RESP2's restriction: a connection that listens on a
// channel may only run the pub/sub commands, PING, QUIT and RESET.
func (s *Server) inSubscribedMode(c *resp.Conn, name string) resp.Value {
	if c.Proto() != 2 || s.pubsub.subscribed(c) == 0 {
		return resp.Value{}
	}
	switch name {
	case "subscribe", "unsubscribe", "ping", "quit", "reset":
		return resp.Value{}
	}
	return resp.Error("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// publish proposes the message and answers the number of this node's
// subscribers of the channel (in a cluster Redis also counts one node's).
// publish waits for its entry's commit (it does not run ahead): the
// receivers it counts are this node's subscribers once its own apply has
// delivered the message.
func (s *Server) publish(c *resp.Conn, args [][]byte) resp.Value {
	res, err := s.submit(c.Context(), s.execEntry(c, args))
	if v := answer(res, err, execReply); v.IsError() {
		return v
	}
	return resp.Int(s.pubsub.count(string(args[1])))
}

func sortedSet(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
