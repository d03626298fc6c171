package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// Client-side caching: CLIENT TRACKING with Redis 7.0's semantics (see
// DESIGN.md, Client-side caching). The tracking table is this node's: the
// keys its tracking connections read, and their BCAST prefixes. What
// invalidates them is the replicated log: every node applies every entry,
// and the keys each entry modified (lockstate.Changes, in Server.Applied)
// are sent to this node's clients, so a client on any node hears of every
// write, whichever node took it, an expiry or a script's, in log order.
//
// A write's proposer is known here only by its arguments: a tracking
// connection's keyspace writes are remembered (proposals) until an applied
// entry with the same arguments is met, which tells NOLOOP whose write it
// was, and whom a script's reads track keys for. Two identical writes in
// flight at once from different connections of this node make the match
// ambiguous: then NOLOOP sends the invalidation anyway, and a script's
// reads are tracked for every candidate, so the doubt costs an extra
// invalidation, never a missed one.

// defaultTrackingMaxKeys is Redis's tracking-table-max-keys.
const defaultTrackingMaxKeys = 1_000_000

// trackingMaxBytes bounds the table's key names in bytes as well as in
// count: a million keys of a megabyte each would pass any memory budget.
// Past it keys are evicted as past tracking-table-max-keys. A key costs
// its name and trackingKeyOverhead (its map entries and set of ids).
const (
	trackingMaxBytes    = 64 << 20
	trackingKeyOverhead = 128
)

// trackingEvictStep bounds the keys evicted at once past the cap, so the
// apply loop never stalls on a lowered cap; the rest go at the next read
// or applied batch (Redis spreads it the same way).
const trackingEvictStep = 1024

// proposalAge is how long an unmatched proposal is kept: one that never
// reached the log (refused before it, or lost with a leader) would
// otherwise stay.
const proposalAge = 30 * time.Second

// invalidateChannel is where a RESP2 connection that others redirect to
// hears of invalidations, as a pub/sub message.
const invalidateChannel = "__redis__:invalidate"

type tracker struct {
	mu      sync.Mutex
	maxKeys atomic.Int64 // tracking-table-max-keys; 0 = no limit
	// keys maps each tracked key to the ids of the connections that may
	// cache it. Ids of connections that closed or turned tracking off stay
	// until the key is invalidated or evicted, as in Redis.
	keys     map[string]map[int64]struct{}
	keyBytes int64 // the keys' cost in bytes
	maxBytes int64 // trackingMaxBytes (lowered by tests)
	items    int   // ids over all keys (INFO's tracking_total_items)
	// clients are this node's connections with tracking on.
	clients map[int64]*tracked
	// prefixes are the BCAST prefixes in use, each with its connections;
	// plens counts the prefixes of each length, for matching a key
	// against them without walking them all.
	prefixes map[string]map[int64]struct{}
	plens    map[int]int
	// proposals are tracking connections' writes not yet met in the log,
	// oldest first.
	proposals []*proposal
	// pushers write invalidations to connections (tracking ones, and
	// those they redirect to), one goroutine each.
	pushers map[int64]*pusher
}

// tracked is one connection's tracking state. Its fields are guarded by
// tracker.mu, except caching, which only the connection's executor
// touches.
type tracked struct {
	c        *resp.Conn
	mode     commands.TrackingMode
	redirect int64      // 0: none
	target   *resp.Conn // the connection redirect named when it was set
	broken   bool       // the redirect target has gone (Redis's broken_redirect)
	prefixes []string   // BCAST prefixes, sorted
	// caching is CLIENT CACHING's flag: it changes whether the next
	// command's reads are tracked (OPTIN: YES, OPTOUT: NO).
	caching bool
	// script is what before tracked for the read-only script about to run
	// (tracking_scripts.go); only the connection's executor touches it.
	script *scriptTrack
}

// proposal is a keyspace write of a tracking connection, from before it
// is proposed until its entry is applied here.
type proposal struct {
	id     int64
	args   []string
	at     time.Time
	noloop bool
	// track: a script's reads are to track its declared keys (keys) for
	// the connection.
	track bool
	keys  []string
}

func newTracker() *tracker {
	t := &tracker{
		keys:     make(map[string]map[int64]struct{}),
		clients:  make(map[int64]*tracked),
		prefixes: make(map[string]map[int64]struct{}),
		plens:    make(map[int]int),
		pushers:  make(map[int64]*pusher),
	}
	t.maxKeys.Store(defaultTrackingMaxKeys)
	t.maxBytes = trackingMaxBytes
	return t
}

// trackedOf returns c's tracking state, nil while tracking is off.
func trackedOf(c *resp.Conn) *tracked {
	if st, ok := c.State().(*connState); ok {
		return st.track
	}
	return nil
}

// caches reports whether tr's next command's reads are to be tracked:
// always, unless OPTIN without CLIENT CACHING YES, or OPTOUT after CLIENT
// CACHING NO.
func (tr *tracked) caches() bool {
	return !(tr.mode.OptIn && !tr.caching) && !(tr.mode.OptOut && tr.caching)
}

// before is called for each command of a tracking connection, before it
// runs: a read's keys are tracked now, so that every entry this node
// applies after it (the read itself is served at the leader's state, no
// older) invalidates them; a keyspace write is remembered as a proposal.
// CLIENT CACHING's flag lasts one command (any CLIENT subcommand keeps it,
// as Redis), or one transaction: given before MULTI, it holds for every
// command queued and for EXEC (inTx: c is in MULTI), as Redis keeps it
// while its client is in MULTI.
func (t *tracker) before(c *resp.Conn, spec *commands.Spec, args [][]byte, inTx bool) *proposal {
	tr := trackedOf(c)
	if tr == nil {
		return nil
	}
	caches := tr.caches()
	ends := spec.Name == "exec" || spec.Name == "discard"
	if spec.Name != "client" && spec.Name != "multi" && (!inTx || ends) {
		tr.caching = false
	}
	tr.script = nil
	switch {
	case spec.Has(commands.Read):
		if caches && !tr.mode.BCast {
			keys := spec.KeysOf(args)
			if roScript(spec) && !inTx {
				tr.script = &scriptTrack{keys: keys, fresh: t.fresh(c.ID(), keys)}
			}
			t.remember(c.ID(), keys)
		}
	case spec.Has(commands.Write) && spec.Has(commands.Keyspace):
		p := &proposal{id: c.ID(), args: make([]string, len(args)), at: time.Now(), noloop: tr.mode.NoLoop}
		for i, a := range args {
			p.args[i] = string(a)
		}
		if (spec.Name == "eval" || spec.Name == "evalsha" || spec.Name == "fcall") && caches && !tr.mode.BCast {
			p.track = true
			for _, k := range spec.KeysOf(args) {
				p.keys = append(p.keys, string(k))
			}
		}
		t.mu.Lock()
		t.proposals = append(t.proposals, p)
		t.mu.Unlock()
		return p
	}
	return nil
}

// notProposed reports whether an error reply means the write never
// reached the log: its proposal will never be met.
func notProposed(r resp.Value) bool {
	if !r.IsError() {
		return false
	}
	msg := r.Text()
	for _, code := range []string{"TRYAGAIN ", "CLUSTERDOWN ", "MISCONF ", "LOADING ", "MOVED ", "ERR unknown command", "ERR Can't execute"} {
		if strings.HasPrefix(msg, code) {
			return true
		}
	}
	return false
}

// drop forgets p.
func (t *tracker) drop(p *proposal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.proposals, p); i >= 0 {
		t.proposals = slices.Delete(t.proposals, i, i+1)
	}
}

// remember tracks keys for connection id, then keeps the table within its
// cap.
func (t *tracker) remember(id int64, keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.rememberLocked(id, string(k))
	}
	t.limitLocked()
}

func (t *tracker) rememberLocked(id int64, key string) {
	ids := t.keys[key]
	if ids == nil {
		ids = make(map[int64]struct{}, 1)
		t.keys[key] = ids
		t.keyBytes += int64(len(key)) + trackingKeyOverhead
	}
	if _, ok := ids[id]; !ok {
		ids[id] = struct{}{}
		t.items++
	}
}

// setMaxKeys is CONFIG SET tracking-table-max-keys: a lowered cap evicts
// the keys past it now, as Redis's cron does at once even on an idle
// server, a step at a time so that the apply loop is not held up.
func (t *tracker) setMaxKeys(n int64) {
	t.maxKeys.Store(n)
	for {
		t.mu.Lock()
		t.limitLocked()
		over := t.overLocked() // another CONFIG SET may have changed the cap
		t.mu.Unlock()
		if !over {
			return
		}
	}
}

// overLocked reports whether the table is past tracking-table-max-keys or
// its bytes' bound.
func (t *tracker) overLocked() bool {
	max := t.maxKeys.Load()
	return max > 0 && int64(len(t.keys)) > max || t.keyBytes > t.maxBytes
}

// limitLocked evicts keys past tracking-table-max-keys or trackingMaxBytes,
// each with an invalidation to the connections that tracked it, as Redis
// does: those clients would otherwise miss its next change.
func (t *tracker) limitLocked() {
	for n := 0; t.overLocked() && n < trackingEvictStep; n++ {
		for k := range t.keys { // an arbitrary key, as Redis's random walk
			t.invalidateLocked(k, 0)
			break
		}
	}
}

// applied sends the invalidations of applied entries, in log order.
func (t *tracker) applied(changes []*lockstate.Changes) {
	if len(changes) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireProposals(time.Now())
	if len(t.clients) == 0 && len(t.proposals) == 0 && len(t.keys) == 0 {
		// Nobody tracks: nothing to send, nobody to match, and no key
		// left by a connection that turned tracking off to forget (a
		// change or a flush forgets it, as in Redis).
		return
	}
	for _, ch := range changes {
		if ch.Flushed {
			t.flushLocked()
		}
		cands := t.match(ch)
		var proposer int64 // 0: unknown, or ambiguous
		if len(cands) == 1 {
			proposer = cands[0].id
		}
		pos := 0
		for _, rd := range ch.Reads {
			at := min(max(rd.At, pos), len(ch.Keys))
			t.invalidateKeys(ch.Keys[pos:at], proposer)
			pos = at
			for _, p := range cands {
				if !p.track || t.clients[p.id] == nil {
					continue
				}
				keys := rd.Keys
				if keys == nil {
					keys = p.keys
				}
				for _, k := range keys {
					t.rememberLocked(p.id, k)
				}
			}
		}
		t.invalidateKeys(ch.Keys[pos:], proposer)
		t.broadcast(ch.Keys, proposer)
	}
	t.limitLocked()
}

// match returns the proposals that ch may be, oldest first, and forgets
// the oldest: it is this entry, if any is.
func (t *tracker) match(ch *lockstate.Changes) []*proposal {
	if ch.Op != lockstate.OpExec || len(t.proposals) == 0 {
		return nil
	}
	var cands []*proposal
	first := -1
	for i, p := range t.proposals {
		if slices.Equal(p.args, ch.Args) {
			if first < 0 {
				first = i
			}
			cands = append(cands, p)
		}
	}
	if first >= 0 {
		t.proposals = slices.Delete(t.proposals, first, first+1)
	}
	return cands
}

func (t *tracker) expireProposals(now time.Time) {
	n := 0
	for n < len(t.proposals) && now.Sub(t.proposals[n].at) > proposalAge {
		n++
	}
	if n > 0 {
		t.proposals = slices.Delete(t.proposals, 0, n)
	}
}

func (t *tracker) invalidateKeys(keys []string, proposer int64) {
	for _, k := range keys {
		t.invalidateLocked(k, proposer)
	}
}

// invalidateLocked sends key's invalidation to the connections that track
// it and forgets it, as Redis: a NOLOOP connection's own write is not sent
// to it, but it stops tracking the key all the same.
func (t *tracker) invalidateLocked(key string, proposer int64) {
	ids, ok := t.keys[key]
	if !ok {
		return
	}
	t.deleteKeyLocked(key)
	t.items -= len(ids)
	for id := range ids {
		tr := t.clients[id]
		if tr == nil || tr.mode.BCast || tr.mode.NoLoop && id == proposer {
			continue
		}
		t.send(tr, resp.Array(resp.BulkString(key)))
	}
}

// broadcast sends BCAST connections the keys of one entry that match
// their prefixes: one message per prefix, its keys sorted, prefixes in
// order, as Redis's per-event-loop batch.
func (t *tracker) broadcast(keys []string, proposer int64) {
	if len(t.prefixes) == 0 || len(keys) == 0 {
		return
	}
	var groups map[string][]string
	for _, k := range keys {
		for l := range t.plens {
			if l > len(k) {
				continue
			}
			if _, ok := t.prefixes[k[:l]]; ok {
				if groups == nil {
					groups = make(map[string][]string)
				}
				groups[k[:l]] = append(groups[k[:l]], k)
			}
		}
	}
	for _, p := range sortedKeysOf(groups) {
		ks := groups[p]
		slices.Sort(ks)
		ks = slices.Compact(ks)
		elems := make([]resp.Value, len(ks))
		for i, k := range ks {
			elems[i] = resp.BulkString(k)
		}
		msg := resp.Array(elems...)
		for id := range t.prefixes[p] {
			tr := t.clients[id]
			if tr == nil || tr.mode.NoLoop && id == proposer {
				continue
			}
			t.send(tr, msg)
		}
	}
}

// flushLocked tells every tracking connection that every key changed (a
// null invalidation) and empties the table: FLUSHALL, FLUSHDB, and a
// snapshot installed over this node's state, whose entries it never saw.
func (t *tracker) flushLocked() {
	for _, tr := range t.clients {
		t.send(tr, resp.Null())
	}
	clear(t.keys)
	t.keyBytes = 0
	t.items = 0
}

// tableBytes is what the table's keys cost, in bytes.
func (t *tracker) tableBytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keyBytes
}

// deleteKeyLocked removes key from the table.
func (t *tracker) deleteKeyLocked(key string) {
	delete(t.keys, key)
	t.keyBytes -= int64(len(key)) + trackingKeyOverhead
}

// flushAll is flushLocked for the server (Restored).
func (t *tracker) flushAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLocked()
}

// send delivers an invalidation, keys (an array) or null (every key), to
// tr or the connection it redirects to, in Redis's form: a RESP3 push
// "invalidate"; a pub/sub message on __redis__:invalidate to a RESP2
// redirect target that is subscribed; nothing to a RESP2 connection
// otherwise. A redirect target that has gone makes it a
// "tracking-redir-broken" push to tr (RESP3).
func (t *tracker) send(tr *tracked, keys resp.Value) {
	dest, redirected := tr.c, false
	if tr.redirect != 0 {
		// Closing, not only ended: after QUIT's +OK a client may write
		// before the target's connection has ended (TestDiffClientReply
		// 14:20 and TestTrackingRedirectQuit once got no
		// tracking-redir-broken that way).
		if tr.target == nil || tr.target.Closing() {
			tr.broken = true
			if tr.c.Proto() > 2 {
				t.push(tr.c, resp.Push(resp.BulkString("tracking-redir-broken"), resp.Int(tr.redirect)))
			}
			return
		}
		dest, redirected = tr.target, true
	}
	switch {
	case dest.Proto() > 2:
		t.push(dest, resp.Push(resp.BulkString("invalidate"), keys))
	case redirected && dest.PubSub():
		t.push(dest, resp.Push(resp.BulkString("message"), resp.BulkString(invalidateChannel), keys))
	}
}

// push queues v for c's pusher, starting it.
func (t *tracker) push(c *resp.Conn, v resp.Value) {
	p := t.pushers[c.ID()]
	if p == nil {
		p = &pusher{c: c, wake: make(chan struct{}, 1)}
		t.pushers[c.ID()] = p
		go t.run(p)
	}
	p.enqueue(v)
}

// pusher writes one connection's invalidations, on its own goroutine so
// that the apply loop never waits for a client, each between two replies
// (resp.Conn.PushAfter, placed when queued), its queue counted as the connection's pending
// output: a client that does not read is disconnected at its output limit.
type pusher struct {
	c     *resp.Conn
	mu    sync.Mutex
	queue []queuedMsg
	wake  chan struct{}
}

func (p *pusher) enqueue(v resp.Value) {
	n := resp.EncodedLen(v, 3) + msgOverhead
	if p.c.Reserve(n) != nil {
		return // closed: its goroutine drops it
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	after := p.c.Started()
	// Behind the reply of the command under way, at once, unless earlier
	// pushes still wait for the writer goroutine (they go first).
	if len(p.queue) == 0 && p.c.HoldPush(v, n, after) {
		return
	}
	p.queue = append(p.queue, queuedMsg{v: v, size: n, after: after})
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pusher) take() []queuedMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

// run writes p's queue until its connection ends, then forgets the
// connection: its pusher, and its tracking state if it had one.
func (t *tracker) run(p *pusher) {
	defer t.gone(p.c)
	ctx := p.c.Context()
	for {
		select {
		case <-ctx.Done():
			for _, m := range p.take() {
				p.c.Release(m.size)
			}
			return
		case <-p.wake:
		}
		q := p.take()
		for i, m := range q {
			q[i] = queuedMsg{}
			if err := p.c.PushAfter(m.v, m.size, m.after); err != nil {
				for _, rest := range q[i+1:] {
					p.c.Release(rest.size)
				}
				p.c.Close()
				break
			}
		}
	}
}

// gone forgets a connection that ended.
func (t *tracker) gone(c *resp.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pushers, c.ID())
	if tr := t.clients[c.ID()]; tr != nil && tr.c == c {
		t.disableLocked(tr)
	}
	t.proposals = slices.DeleteFunc(t.proposals, func(p *proposal) bool { return p.id == c.ID() })
}

// enable is CLIENT TRACKING ON for c, checked against its current mode.
func (t *tracker) enable(c *resp.Conn, req commands.ClientTracking, target *resp.Conn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.clients[c.ID()]
	var cur commands.TrackingMode
	var have []string
	if tr != nil {
		cur, have = tr.mode, tr.prefixes
	}
	if err := req.TrackingConflict(tr != nil, cur); err != nil {
		return err
	}
	if req.Mode.BCast {
		if err := commands.PrefixOverlap(have, req.Prefixes); err != nil {
			return err
		}
		if len(have)+len(req.Prefixes) > commands.MaxTrackingPrefixes {
			return commands.ErrTooManyPrefixes
		}
	}
	if tr == nil {
		tr = &tracked{c: c}
		t.clients[c.ID()] = tr
		if t.pushers[c.ID()] == nil {
			// Its goroutine also notices when the connection ends.
			p := &pusher{c: c, wake: make(chan struct{}, 1)}
			t.pushers[c.ID()] = p
			go t.run(p)
		}
	}
	tr.mode, tr.redirect, tr.target, tr.broken = req.Mode, req.Redirect, target, false
	if req.Mode.BCast {
		if len(req.Prefixes) == 0 {
			t.addPrefix(tr, "")
		}
		for _, p := range req.Prefixes {
			t.addPrefix(tr, p)
		}
	}
	stateOf(c).track = tr
	return nil
}

func (t *tracker) addPrefix(tr *tracked, p string) {
	ids := t.prefixes[p]
	if ids == nil {
		ids = make(map[int64]struct{})
		t.prefixes[p] = ids
		t.plens[len(p)]++
	}
	if _, ok := ids[tr.c.ID()]; ok {
		return
	}
	ids[tr.c.ID()] = struct{}{}
	i, _ := slices.BinarySearch(tr.prefixes, p)
	tr.prefixes = slices.Insert(tr.prefixes, i, p)
}

// disable is CLIENT TRACKING OFF (and RESET): its keys stay in the table
// until they change, as in Redis.
func (t *tracker) disable(c *resp.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.clients[c.ID()]; tr != nil {
		t.disableLocked(tr)
	}
	if st, ok := c.State().(*connState); ok {
		st.track = nil
	}
}

func (t *tracker) disableLocked(tr *tracked) {
	id := tr.c.ID()
	for _, p := range tr.prefixes {
		ids := t.prefixes[p]
		delete(ids, id)
		if len(ids) == 0 {
			delete(t.prefixes, p)
			if t.plens[len(p)]--; t.plens[len(p)] == 0 {
				delete(t.plens, len(p))
			}
		}
	}
	delete(t.clients, id)
}

// info returns what CLIENT TRACKINGINFO and CLIENT GETREDIR answer.
func (t *tracker) info(c *resp.Conn) (flags []string, redirect int64, prefixes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.clients[c.ID()]
	if tr == nil {
		return []string{"off"}, -1, nil
	}
	flags = []string{"on"}
	m := tr.mode
	if m.BCast {
		flags = append(flags, "bcast")
	}
	if m.OptIn {
		flags = append(flags, "optin")
		if tr.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if m.OptOut {
		flags = append(flags, "optout")
		if tr.caching {
			flags = append(flags, "caching-no")
		}
	}
	if m.NoLoop {
		flags = append(flags, "noloop")
	}
	if tr.broken {
		flags = append(flags, "broken_redirect")
	}
	return flags, tr.redirect, slices.Clone(tr.prefixes)
}

// clientFlags is CLIENT LIST's tracking flags of c: t (tracking), R (its
// redirect target is gone), B (BCAST); and its redir field.
func (t *tracker) clientFlags(c *resp.Conn) (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.clients[c.ID()]
	if tr == nil {
		return "", -1
	}
	f := "t"
	if tr.broken {
		f += "R"
	}
	if tr.mode.BCast {
		f += "B"
	}
	return f, tr.redirect
}

// counts are INFO's figures: tracking connections, keys, ids over keys,
// prefixes.
func (t *tracker) counts() (clients, keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients), len(t.keys), t.items, len(t.prefixes)
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// clientTracking is CLIENT TRACKING ON|OFF [...]: a REDIRECT names a
// connection of this node (ids are per node).
func (s *Server) clientTracking(c *resp.Conn, args [][]byte) resp.Value {
	var target *resp.Conn
	req, err := commands.ParseClientTracking(args, func(id int64) bool {
		target = s.connByID(id)
		return target != nil
	})
	if err != nil {
		return errorReply(err)
	}
	if !req.On {
		s.tracking.disable(c)
		return resp.SimpleString("OK")
	}
	if req.Redirect == 0 {
		target = nil
	}
	if err := s.tracking.enable(c, req, target); err != nil {
		return errorReply(err)
	}
	return resp.SimpleString("OK")
}

// connByID is this node's client connection with that id, nil if none.
func (s *Server) connByID(id int64) *resp.Conn {
	for _, o := range s.rs.Conns() {
		if o.ID() == id {
			return o
		}
	}
	return nil
}

// clientCaching is CLIENT CACHING YES|NO: it sets the flag for the next
// command (tracked.caching, cleared by tracker.before).
func (s *Server) clientCaching(c *resp.Conn, args [][]byte) resp.Value {
	tr := trackedOf(c)
	var mode commands.TrackingMode
	if tr != nil {
		mode = tr.mode
	}
	if _, err := commands.ParseClientCaching(args, tr != nil, mode); err != nil {
		return errorReply(err)
	}
	tr.caching = true
	return resp.SimpleString("OK")
}

// clientTrackingInfo is CLIENT TRACKINGINFO: flags (a set), redirect,
// prefixes, in Redis's order.
func (s *Server) clientTrackingInfo(c *resp.Conn) resp.Value {
	flags, redirect, prefixes := s.tracking.info(c)
	fl := make([]resp.Value, len(flags))
	for i, f := range flags {
		fl[i] = resp.BulkString(f)
	}
	ps := make([]resp.Value, len(prefixes))
	for i, p := range prefixes {
		ps[i] = resp.BulkString(p)
	}
	return resp.Map(
		resp.BulkString("flags"), resp.Set(fl...),
		resp.BulkString("redirect"), resp.Int(redirect),
		resp.BulkString("prefixes"), resp.Array(ps...),
	)
}
