package server

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Pub/sub. PUBLISH goes through the log like any write, and so do the
// keyspace notifications a write raises (lockstate/notify.go); every node
// delivers each message to its own subscribers, of the channel and of
// every pattern that matches it, when it applies the entry, so a
// subscriber on any node hears every message once, in log order. A node
// that restarts does not deliver again what it applied before (the FSM
// skips entries already in its state); a node that was down misses the
// messages of that time, as a Redis subscriber whose connection dropped
// does. Subscriptions are this node's connections: PUBSUB answers for this
// node only, as Redis answers for its own server.

// msgOverhead is what a queued message costs besides its encoded bytes
// (its four resp.Values of about 90 bytes each and its queue slot), counted with them against the pub/sub output
// limit so that many small messages are bounded as well as a few large
// ones.
const msgOverhead = 512

// The bounds on pattern subscriptions: a pattern's length and how many one
// connection may hold. Redis has none; here they bound what a connection
// can make every message cost (each message is matched against every
// pattern of the node) and the memory its patterns hold.
const (
	MaxPatternLen = 4096
	MaxPatterns   = 1024
)

// errMatchWork disconnects a subscriber whose patterns would take more
// than subscriberMatchWork for one message.
var errMatchWork = errors.New("pub/sub: matching the patterns would take too long")

var (
	// ErrPatternTooLong refuses a PSUBSCRIBE with a pattern longer than
	// MaxPatternLen; nothing is subscribed.
	ErrPatternTooLong = reply.NewErr("ERR", "pattern longer than 4096 bytes")
	// ErrTooManyPatterns refuses a PSUBSCRIBE that would take the
	// connection past MaxPatterns; nothing is subscribed.
	ErrTooManyPatterns = reply.NewErr("ERR", "too many patterns subscribed by this connection (1024 at most)")
)

// The work pattern matching may take, in glob steps (glob.MatchWithin: a
// match costs at most the pattern's length times the channel's, about 3
// ns a step; a 4 KiB pattern against a 512 KiB channel can take 6 s).
//
// inlineMatchWork bounds what deliver does for one message on the apply
// loop. A pattern whose match could exceed what is left is not matched
// there: the message goes to each of its subscribers with the pattern, and
// the subscriber's own goroutine matches it before sending, its bytes
// counted against the subscriber's output limit meanwhile. So no pattern
// and no channel, however long, holds up applying entries.
//
// subscriberMatchWork bounds what one subscriber's patterns may take for
// one message (about 12 ms): a subscriber that needs more is disconnected,
// as one that cannot keep up with its output is. PUBLISH's count does not
// count it, and spends at most publishMatchWork on the node's patterns
// (patterns past that count as not matching).
const (
	inlineMatchWork     = 1 << 16
	subscriberMatchWork = 1 << 22
	publishMatchWork    = 1 << 24
	quickMatchWork      = 1 << 12 // receivers' first pass, per pattern
)

type pubsub struct {
	mu    sync.Mutex
	seq   uint64 // numbers the messages delivered, for subscriberMatchWork
	chans map[string]map[*subscriber]struct{}
	pats  map[string]*patternSubs
	// order is every pattern with a subscriber, in the order it was first
	// subscribed on this node: the order a message's pmessages go out in.
	// (Redis walks a hash table, whose order nothing promises.)
	order []*patternSubs
}

// patternSubs is one pattern and its subscribers, in subscription order.
type patternSubs struct {
	pattern string
	subs    []*subscriber
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
	pats  []string            // guarded by pubsub.mu, in subscription order (PUNSUBSCRIBE's, as Redis's list)

	qmu   sync.Mutex
	queue []queuedMsg   // guarded by qmu
	wake  chan struct{} // signalled (never blocking) when queue grows
}

// queuedMsg is a message waiting for its subscriber, with the bytes it
// counts as the connection's pending output. A pattern's message that
// deliver left unmatched (inlineMatchWork) carries the pattern and the
// channel: it goes out only if they match.
type queuedMsg struct {
	v                resp.Value
	size             int
	pattern, channel string
	unmatched        bool
	seq              uint64 // the message's number (pubsub.seq)
	after            uint64 // a tracking push: the commands it follows (resp.Conn.Started when queued)
}

func newPubsub() *pubsub {
	return &pubsub{chans: make(map[string]map[*subscriber]struct{}), pats: make(map[string]*patternSubs)}
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

// subscriberIf returns c's subscriber, nil if it never subscribed.
func subscriberIf(c *resp.Conn) *subscriber {
	if st, _ := c.State().(*connState); st != nil {
		return st.sub
	}
	return nil
}

// enqueue queues m for the subscriber, unless that takes the connection
// past its output limit, which closes it.
func (sub *subscriber) enqueue(m queuedMsg) {
	if sub.c.Reserve(m.size) != nil {
		return // closed: its goroutine drops it
	}
	sub.qmu.Lock()
	sub.queue = append(sub.queue, m)
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
	var seq uint64 // the message whose matches work counts
	work := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.wake:
		}
		q := sub.take()
		for i, m := range q {
			var err error
			send := true
			if m.unmatched {
				if m.seq != seq {
					seq, work = m.seq, subscriberMatchWork
				}
				send, work = glob.MatchWithin(m.pattern, m.channel, work)
				if work < 0 {
					err = errMatchWork
				}
			}
			if send {
				sub.mu.Lock()
				err = sub.c.Push(m.v)
				sub.mu.Unlock()
			}
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
	for _, pat := range slices.Clone(sub.pats) {
		p.removePattern(sub, pat)
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

// addPattern subscribes sub to pat, if it is not already.
func (p *pubsub) addPattern(sub *subscriber, pat string) {
	if slices.Contains(sub.pats, pat) {
		return
	}
	sub.pats = append(sub.pats, pat)
	ps := p.pats[pat]
	if ps == nil {
		ps = &patternSubs{pattern: pat}
		p.pats[pat] = ps
		p.order = append(p.order, ps)
	}
	ps.subs = append(ps.subs, sub)
}

func (p *pubsub) removePattern(sub *subscriber, pat string) {
	i := slices.Index(sub.pats, pat)
	if i < 0 {
		return
	}
	sub.pats = slices.Delete(sub.pats, i, i+1)
	ps := p.pats[pat]
	ps.subs = slices.DeleteFunc(ps.subs, func(x *subscriber) bool { return x == sub })
	if len(ps.subs) == 0 {
		delete(p.pats, pat)
		p.order = slices.DeleteFunc(p.order, func(x *patternSubs) bool { return x == ps })
	}
}

// deliver hands applied messages to this node's subscribers: for each
// message, its channel's subscribers get a "message", then each pattern
// that matches it, in order, gives each of its subscribers a "pmessage",
// as Redis's pubsubPublishMessage sends them.
func (p *pubsub) deliver(msgs []lockstate.Message) {
	if len(msgs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.seq++
		if subs := p.chans[m.Channel]; len(subs) > 0 {
			v := resp.Push(resp.BulkString("message"), resp.BulkString(m.Channel), resp.BulkString(m.Payload))
			n := resp.EncodedLen(v, 3) + msgOverhead
			for sub := range subs {
				sub.enqueue(queuedMsg{v: v, size: n})
			}
		}
		budget := inlineMatchWork
		for _, ps := range p.order {
			work := (len(ps.pattern) + 1) * (len(m.Channel) + 1)
			inline := work <= budget
			if inline {
				budget -= work
				if !glob.Match(ps.pattern, m.Channel) {
					continue
				}
			}
			v := resp.Push(resp.BulkString("pmessage"), resp.BulkString(ps.pattern), resp.BulkString(m.Channel), resp.BulkString(m.Payload))
			q := queuedMsg{v: v, size: resp.EncodedLen(v, 3) + msgOverhead}
			if !inline {
				q.pattern, q.channel, q.unmatched, q.seq = ps.pattern, m.Channel, true, p.seq
			}
			for _, sub := range ps.subs {
				sub.enqueue(q)
			}
		}
	}
}

// receivers is what PUBLISH ch answers: how many deliveries this node
// makes of a message to ch, one per subscriber of the channel and one per
// subscriber of each pattern that matches it (a connection on both, or on
// two matching patterns, counts twice, as Redis counts). The patterns are
// matched on the caller's goroutine, outside the lock.
func (p *pubsub) receivers(ch string) int64 {
	p.mu.Lock()
	n := int64(len(p.chans[ch]))
	pats := make([]patternCount, len(p.order))
	for i, ps := range p.order {
		pats[i] = patternCount{ps.pattern, len(ps.subs)}
	}
	p.mu.Unlock()
	return n + matchingSubscribers(pats, ch, glob.MatchWithin)
}

// patternCount is a pattern and how many subscribers it has.
type patternCount struct {
	pattern string
	n       int
}

// matchingSubscribers sums the subscribers of the patterns that match ch,
// spending at most publishMatchWork steps of match (glob.MatchWithin's
// contract) on them all. Quick matches first, so that a few slow patterns
// cannot use up the work and leave the rest uncounted; then the slow ones,
// shortest first (a match costs at most the pattern's length times the
// channel's, so a short one that backtracks is counted before long hostile
// ones use up the work), each up to subscriberMatchWork (past which its
// subscribers are disconnected rather than served: not counted); patterns
// past the work count as not matching.
func matchingSubscribers(pats []patternCount, ch string, match func(pattern, str string, budget int) (bool, int)) int64 {
	var n int64
	work := publishMatchWork
	var slow []patternCount
	for _, quick := range []bool{true, false} {
		todo := pats
		if !quick {
			todo = slow
			slices.SortStableFunc(todo, func(a, b patternCount) int { return cmp.Compare(len(a.pattern), len(b.pattern)) })
		}
		for _, pc := range todo {
			if work <= 0 {
				return n
			}
			budget := min(work, subscriberMatchWork)
			if quick {
				budget = min(work, quickMatchWork)
			}
			ok, left := match(pc.pattern, ch, budget)
			work -= budget - max(left, 0)
			switch {
			case left < 0 && quick:
				slow = append(slow, pc)
			case ok:
				n += int64(pc.n)
			}
		}
	}
	return n
}

// counts returns how many channels and patterns c listens on.
func (p *pubsub) counts(c *resp.Conn) (chans, pats int) {
	sub := subscriberIf(c)
	if sub == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(sub.chans), len(sub.pats)
}

// subscribed is the number of channels and patterns c listens on: the
// count Redis's (un)subscribe replies carry.
func (p *pubsub) subscribed(c *resp.Conn) int {
	ch, pat := p.counts(c)
	return ch + pat
}

func (s *Server) subscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.subscribeWith(c, args, c.Push)
}

// subscribeWith is SUBSCRIBE with its confirmations given to push: c.Push,
// or EXEC's array (multi.go). So are the *With forms below.
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
		n := len(sub.chans) + len(sub.pats)
		p.mu.Unlock()
		if !confirm(c, push, "subscribe", resp.BulkString(ch), n) {
			break
		}
	}
	return resp.Pushed()
}

// psubscribe is PSUBSCRIBE: each pattern checked first (length, and the
// connection's count), so a refused command subscribes to nothing.
func (s *Server) psubscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.psubscribeWith(c, args, c.Push)
}

func (s *Server) psubscribeWith(c *resp.Conn, args [][]byte, push func(resp.Value) error) resp.Value {
	p := s.pubsub
	fresh := map[string]bool{}
	for _, a := range args[1:] {
		if len(a) > MaxPatternLen {
			return errorReply(ErrPatternTooLong)
		}
		fresh[string(a)] = true
	}
	if old := subscriberIf(c); old != nil {
		p.mu.Lock()
		for _, pat := range old.pats {
			delete(fresh, pat)
		}
		held := len(old.pats)
		p.mu.Unlock()
		if held+len(fresh) > MaxPatterns {
			return errorReply(ErrTooManyPatterns)
		}
	} else if len(fresh) > MaxPatterns {
		return errorReply(ErrTooManyPatterns)
	}
	sub := p.subscriberOf(c)
	sub.mu.Lock()
	defer sub.mu.Unlock()
	c.SetPubSub(true)
	for _, a := range args[1:] {
		p.mu.Lock()
		p.addPattern(sub, string(a))
		n := len(sub.chans) + len(sub.pats)
		p.mu.Unlock()
		if !confirm(c, push, "psubscribe", resp.Bulk(a), n) {
			break
		}
	}
	return resp.Pushed()
}

func (s *Server) unsubscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.unsubscribeWith(c, args, c.Push)
}

func (s *Server) unsubscribeWith(c *resp.Conn, args [][]byte, push func(resp.Value) error) resp.Value {
	return s.pubsub.leave(c, args, push, "unsubscribe", func(sub *subscriber) []string { return sortedSet(sub.chans) },
		func(sub *subscriber, ch string) { s.pubsub.remove(sub, ch) })
}

func (s *Server) punsubscribe(c *resp.Conn, args [][]byte) resp.Value {
	return s.punsubscribeWith(c, args, c.Push)
}

func (s *Server) punsubscribeWith(c *resp.Conn, args [][]byte, push func(resp.Value) error) resp.Value {
	return s.pubsub.leave(c, args, push, "punsubscribe", func(sub *subscriber) []string { return slices.Clone(sub.pats) },
		func(sub *subscriber, pat string) { s.pubsub.removePattern(sub, pat) })
}

// leave is UNSUBSCRIBE and PUNSUBSCRIBE: the names given, or all the
// connection holds (all returns them, under the lock), each confirmed with
// the count left; with none to leave, one confirmation with a null name.
func (p *pubsub) leave(c *resp.Conn, args [][]byte, push func(resp.Value) error, kind string, all func(*subscriber) []string, remove func(*subscriber, string)) resp.Value {
	sub := subscriberIf(c)
	var names []string
	for _, a := range args[1:] {
		names = append(names, string(a))
	}
	if sub != nil {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		if len(names) == 0 {
			p.mu.Lock()
			names = all(sub)
			p.mu.Unlock()
		}
	}
	if len(names) == 0 {
		return resp.Push(resp.BulkString(kind), resp.Null(), resp.Int(int64(p.subscribed(c))))
	}
	for _, name := range names {
		n := 0
		if sub != nil {
			p.mu.Lock()
			remove(sub, name)
			n = len(sub.chans) + len(sub.pats)
			p.mu.Unlock()
		}
		if n == 0 {
			c.SetPubSub(false)
		}
		if !confirm(c, push, kind, resp.BulkString(name), n) {
			break
		}
	}
	return resp.Pushed()
}

// confirm pushes a (un)subscription's confirmation; false (and the
// connection closed) if it could not be written.
func confirm(c *resp.Conn, push func(resp.Value) error, kind string, name resp.Value, n int) bool {
	if err := push(resp.Push(resp.BulkString(kind), name, resp.Int(int64(n)))); err != nil {
		c.Close()
		return false
	}
	return true
}

// unsubscribeAll ends c's subscriptions without replies (RESET).
func (p *pubsub) unsubscribeAll(c *resp.Conn) {
	if sub := subscriberIf(c); sub != nil {
		p.drop(sub)
	}
	c.SetPubSub(false)
}

// inSubscribedMode is RESP2's restriction: a connection that listens on a
// channel or a pattern may only run the pub/sub commands, PING, QUIT and
// RESET. The error names a subcommand as Redis does ("pubsub|numpat").
func (s *Server) inSubscribedMode(c *resp.Conn, name string, args [][]byte) resp.Value {
	if c.Proto() != 2 || s.pubsub.subscribed(c) == 0 {
		return resp.Value{}
	}
	switch name {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ping", "quit", "reset":
		return resp.Value{}
	}
	return resp.Error("ERR Can't execute '" + s.fullName(name, args) + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// publish proposes the message and answers how many receivers this node
// delivered it to (receivers): its subscribers of the channel and of the
// patterns that match it. A PUBLISH from a script answers 0 (lockstate
// does not know who listens), the same on every replica. In a cluster the
// count is the publishing node's, as Redis Cluster's PUBLISH counts its
// own node's. publish waits for its entry's commit (it does not run
// ahead), so the receivers it counts are this node's subscribers once its
// own apply has delivered the message.
func (s *Server) publish(c *resp.Conn, args [][]byte) resp.Value {
	res, err := s.submit(c.Context(), s.execEntry(c, args))
	if v := answer(res, err, execReply); v.IsError() {
		return v
	}
	return resp.Int(s.pubsub.receivers(string(args[1])))
}

func sortedSet(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
