package lockstate

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/fenced/fenced/internal/racetest"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/commands"
)

// The bounded exhaustive check. Small-scope hypothesis: a bug in
// how entries interleave shows up with few sessions, locks and entries. So
// every sequence of up to depth entries over 3 sessions, 2 locks and 2
// owners is applied, breadth first, from three sessions opened at time 0,
// and after each entry the lock invariants are checked by xObserver, which
// sees only the answers, the wakes and the public reads, never the
// implementation's bookkeeping.
//
// Times: a session lives TTL 3 ms after its last renewal and a timed wait
// 2 ms, so every pending deadline lies within 3 ms of the last entry's time;
// each entry takes every time from that one to 4 ms after it, which lands
// just before, on and just after every pending deadline.
//
// States that differ only by a shift of time, of log index and of wait ids
// behave alike, so each is expanded once: xFingerprint writes a state with
// times relative to its clock and tokens and wait ids by rank.

var exhaustiveDepth = flag.Int("exhaustive.depth", 2, "entries tried after each root state in TestExhaustive (make exhaustive: 3)")

const (
	xTTL  = 3
	xWait = 2
	// xEpoch is the proposer epoch of every wait id (OpCancelWaits).
	xEpoch = 7
)

var (
	xSessions = []string{"x0", "x1", "x2"}
	xLocks    = []string{"l0", "l1"}
	xOwners   = []string{"", "o"}
)

// xConfig is tight enough that the refusal branches (too many locks for a
// session, a full queue) are reached too.
func xConfig() Config {
	return Config{MaxSessions: 3, MaxLocksPerSession: 1, MaxWaitersPerLock: 2, ReqMemory: 2}
}

// xNode is a state of the search: the State's records, rebuilt by Load for
// every entry tried from it (so every transition also tests snapshot and
// load), and the observer's knowledge.
type xNode struct {
	records     [][2][]byte
	fp          string // xFingerprint
	hash        [32]byte
	deadline    int64
	hasDeadline bool
	index       uint64
	nextID      uint64
	obs         *xObserver
	path        []Entry // from empty
}

// xOps lists the entries tried from state s at index i, before their time
// is set. Ops that can only answer an error are kept: they renew sessions
// and move time on.
func xOps(s *State, nextID *uint64) []Entry {
	id := func() uint64 { *nextID++; return xEpoch<<32 | *nextID }
	open := map[string]bool{}
	for _, id := range s.Sessions() {
		open[id] = true
	}
	es := []Entry{{Op: OpTick}, {Op: OpCancelWaits, WaitID: xEpoch << 32}}
	for _, ss := range xSessions {
		if !open[ss] {
			es = append(es, Entry{Op: OpSessionOpen, Session: ss, TTL: xTTL})
		}
		es = append(es, Entry{Op: OpSessionHeartbeat, Session: ss}, Entry{Op: OpSessionKill, Session: ss})
		for _, l := range xLocks {
			tok := s.LockInfo(l, 0).Token
			for _, o := range xOwners {
				for _, wait := range []int64{-1, 0, xWait} {
					es = append(es, Entry{Op: OpFlock, Session: ss, Lock: l, Owner: o, Wait: wait, WaitID: id()})
				}
				es = append(es,
					Entry{Op: OpFunlock, Session: ss, Lock: l, Owner: o},
					Entry{Op: OpFunlock, Session: ss, Lock: l, Owner: o, Fence: tok})
			}
			// A REQ, retried under a new wait id; a LIMIT.
			es = append(es,
				Entry{Op: OpFlock, Session: ss, Lock: l, Wait: 0, Req: "r", WaitID: id()},
				Entry{Op: OpFlock, Session: ss, Lock: l, Wait: -1, Limit: 1})
		}
	}
	for _, l := range xLocks {
		if tok := s.LockInfo(l, 0).Token; tok != 0 {
			es = append(es, Entry{Op: OpForceUnlock, Lock: l, Fence: tok})
		}
	}
	for _, wid := range s.WaitIDs() {
		es = append(es, Entry{Op: OpCancelWait, WaitID: wid})
	}
	return es
}

// xStats is what a search did.
type xStats struct {
	states, transitions int
	perDepth            []int
}

// xRoot is a starting state: the entries that lead to it, from empty.
type xRoot struct {
	name    string
	entries []Entry
}

// xRoots are where the search starts: three sessions just opened, and
// contended states that the depth bound would otherwise barely reach.
func xRoots() []xRoot {
	open := []Entry{
		{Op: OpSessionOpen, Session: "x0", TTL: xTTL},
		{Op: OpSessionOpen, Session: "x1", TTL: xTTL},
		{Op: OpSessionOpen, Session: "x2", TTL: xTTL},
	}
	at := func(t int64, es ...Entry) []Entry {
		for i := range es {
			es[i].Time = t
		}
		return es
	}
	return []xRoot{
		{"open", open},
		// x0 holds l0 until 3; x1 and x2 queue behind it, live until 4.
		{"queue", slices.Concat(open, at(0, Entry{Op: OpFlock, Session: "x0", Lock: "l0", Wait: -1}),
			at(1, Entry{Op: OpFlock, Session: "x1", Lock: "l0", Wait: 0, WaitID: xEpoch<<32 | 1},
				Entry{Op: OpFlock, Session: "x2", Lock: "l0", Owner: "o", Wait: 0, WaitID: xEpoch<<32 | 2}))},
		// x0 holds l0 and x1 holds l1, each waiting for the other's; x2
		// waits for l0 with a REQ.
		{"cross", slices.Concat(open, at(0, Entry{Op: OpFlock, Session: "x0", Lock: "l0", Wait: -1},
			Entry{Op: OpFlock, Session: "x1", Lock: "l1", Wait: -1}),
			at(1, Entry{Op: OpFlock, Session: "x0", Lock: "l1", Owner: "o", Wait: 0, WaitID: xEpoch<<32 | 1},
				Entry{Op: OpFlock, Session: "x1", Lock: "l0", Wait: xWait, WaitID: xEpoch<<32 | 2},
				Entry{Op: OpFlock, Session: "x2", Lock: "l0", Wait: 0, Req: "r", WaitID: xEpoch<<32 | 3}))},
	}
}

// searcher runs the search; a state seen from one root is not expanded
// again from another.
type searcher struct {
	table *commands.Table
	seen  map[string]bool
	st    xStats
}

// exhaust searches depth entries from every root and returns the first
// violation.
func exhaust(depth int) (xStats, error) {
	x := &searcher{table: commands.New(), seen: map[string]bool{}}
	x.st.perDepth = make([]int, depth)
	for _, root := range xRoots() {
		if err := x.search(root, depth); err != nil {
			return x.st, fmt.Errorf("from %s: %w", root.name, err)
		}
	}
	return x.st, nil
}

func (x *searcher) search(root xRoot, depth int) error {
	s := newState(xConfig(), x.table)
	n := &xNode{obs: newXObserver(), nextID: xEpoch<<32 | 100}
	for _, e := range root.entries {
		n.index++
		r, err := s.Apply(n.index, e, newMemWriter())
		if err != nil {
			return err
		}
		if err := n.obs.observe(s, n.index, e, r); err != nil {
			return err
		}
		n.path = append(n.path, e)
	}
	n.remember(s)
	x.seen[n.fp] = true
	x.st.states++
	frontier := []*xNode{n}
	for d := range depth {
		var next []*xNode
		for _, n := range frontier {
			children, err := x.expand(n)
			if err != nil {
				return err
			}
			next = append(next, children...)
		}
		x.st.states += len(next)
		x.st.perDepth[d] += len(next)
		frontier = next
	}
	// The last level is loaded and checked too, as the others were when
	// they were expanded.
	for _, n := range frontier {
		if _, err := x.load(n); err != nil {
			return err
		}
	}
	return nil
}

// load rebuilds n's State from its records and checks that it is the
// state that was snapshotted.
func (x *searcher) load(n *xNode) (*State, error) {
	s, err := x.loadRecords(n.records)
	if err != nil {
		return nil, err
	}
	if fp := xFingerprint(s, n.obs); fp != n.fp || s.Hash() != n.hash {
		return nil, fmt.Errorf("state differs after snapshot and load:\n%s\n%s\nafter\n%s", n.fp, fp, fmtPath(n.path))
	}
	if d, ok := s.NextDeadline(); d != n.deadline || ok != n.hasDeadline {
		return nil, fmt.Errorf("NextDeadline differs after snapshot and load, after\n%s", fmtPath(n.path))
	}
	if err := checkInvariants(s); err != nil {
		return nil, fmt.Errorf("after load: %v, after\n%s", err, fmtPath(n.path))
	}
	return s, nil
}

// expand tries every entry at every time from n and returns the states
// not seen before.
func (x *searcher) expand(n *xNode) ([]*xNode, error) {
	base, err := x.load(n)
	if err != nil {
		return nil, err
	}
	nextID := n.nextID
	ops := xOps(base, &nextID)
	var out []*xNode
	for dt := int64(0); dt <= xTTL+1; dt++ {
		for _, e := range ops {
			e.Time = base.Time() + dt
			x.st.transitions++
			c, err := x.step(n, e)
			if err != nil {
				return nil, fmt.Errorf("%v\nafter\n%s", err, fmtPath(append(slices.Clone(n.path), e)))
			}
			if x.seen[c.fp] {
				continue
			}
			x.seen[c.fp] = true
			c.nextID = nextID
			out = append(out, c)
		}
	}
	return out, nil
}

// step applies e to a fresh load of n and checks the invariants.
func (x *searcher) step(n *xNode, e Entry) (*xNode, error) {
	s, err := x.loadRecords(n.records)
	if err != nil {
		return nil, err
	}
	c := &xNode{index: n.index + 1, obs: n.obs.clone()}
	w := newMemWriter()
	for _, kv := range n.records {
		w.m[string(kv[0])] = kv[1]
	}
	r, err := s.Apply(c.index, e, w)
	if err != nil {
		return nil, err
	}
	if err := c.obs.observe(s, c.index, e, r); err != nil {
		return nil, err
	}
	if err := checkInvariants(s); err != nil {
		return nil, err
	}
	c.fp = xFingerprint(s, c.obs)
	if !x.seen[c.fp] {
		// What a replica's storage holds after the entry is the state.
		if err := sameRecords(s, w); err != nil {
			return nil, err
		}
		c.remember(s)
		c.path = append(slices.Clone(n.path), e)
	}
	return c, nil
}

// remember keeps what a node needs to be loaded and checked later.
func (n *xNode) remember(s *State) {
	n.records = snapshot(s)
	n.fp = xFingerprint(s, n.obs)
	n.hash = s.Hash()
	n.deadline, n.hasDeadline = s.NextDeadline()
}

func snapshot(s *State) [][2][]byte {
	var recs [][2][]byte
	_ = s.Records(func(k, v []byte) error {
		recs = append(recs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	return recs
}

func (x *searcher) loadRecords(recs [][2][]byte) (*State, error) {
	s := newState(xConfig(), x.table)
	for _, kv := range recs {
		if err := s.Load(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func fmtPath(path []Entry) string {
	var b strings.Builder
	for i, e := range path {
		fmt.Fprintf(&b, "  %d t=%d %s", i+1, e.Time, e.Op)
		for _, f := range []struct {
			name, v string
		}{{"session", e.Session}, {"lock", e.Lock}, {"owner", e.Owner}, {"req", e.Req}} {
			if f.v != "" {
				fmt.Fprintf(&b, " %s=%s", f.name, f.v)
			}
		}
		if e.Op == OpFlock {
			fmt.Fprintf(&b, " wait=%d", e.Wait)
		}
		if e.Limit != 0 {
			fmt.Fprintf(&b, " limit=%d", e.Limit)
		}
		if e.Fence != 0 {
			fmt.Fprintf(&b, " fence=%d", e.Fence)
		}
		if e.WaitID != 0 {
			fmt.Fprintf(&b, " waitid=%d", e.WaitID&0xffffffff)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// xFingerprint writes everything that decides s's future behaviour, and
// the observer's, with times relative to s's clock and tokens and wait ids
// replaced by their rank, so that shifted copies of a state are one.
func xFingerprint(s *State, o *xObserver) string {
	now := s.time
	var toks []int64
	for _, l := range s.locks {
		toks = append(toks, l.token)
	}
	for _, t := range o.lastGrant {
		toks = append(toks, t)
	}
	for _, m := range s.memos {
		toks = append(toks, m.int)
	}
	slices.Sort(toks)
	toks = slices.Compact(toks)
	tok := func(t int64) int { i, _ := slices.BinarySearch(toks, t); return i }
	ids := s.WaitIDs()
	wid := func(id uint64) int { i, _ := slices.BinarySearch(ids, id); return i }

	b := make([]byte, 0, 256)
	num := func(v int64) { b = strconv.AppendInt(b, v, 10); b = append(b, ',') }
	str := func(v string) { b = append(b, v...); b = append(b, ',') }
	for _, id := range sortedKeys(s.sessions) {
		ss := s.sessions[id]
		str("S" + id)
		num(ss.ttl)
		num(ss.timer.deadline - now)
		for _, m := range s.refs[id].memosOrNil() {
			str(m.req)
			num(int64(errCode(m.err)))
			if m.null {
				str("null")
			}
			num(int64(tok(m.int)))
		}
	}
	for _, name := range sortedKeys(s.locks) {
		l := s.locks[name]
		str("L" + name)
		str(l.session)
		str(l.owner)
		num(l.count)
		num(l.limit)
		num(int64(tok(l.token)))
		for _, w := range l.queue {
			str("W" + w.session)
			str(w.owner)
			str(w.req)
			num(w.limit)
			if w.timed {
				num(w.timer.deadline - now)
			}
			for _, id := range w.waitIDs {
				num(int64(wid(id)))
			}
		}
	}
	str("G")
	for _, l := range xLocks {
		if t, ok := o.lastGrant[l]; ok {
			num(int64(tok(t)))
		} else {
			str("-")
		}
	}
	return string(b)
}

func (r *refs) memosOrNil() []*memo {
	if r == nil {
		return nil
	}
	return r.memos
}

// xObserver checks the lock invariants from the outside: on each entry's
// answer and wakes, and on the public reads after it.
type xObserver struct {
	lastGrant map[string]int64 // highest token granted per lock
	pending   map[uint64]*xWaiter
	byReq     map[[2]string]*xWaiter
	queued    uint64 // order in which waits queued
}

type xWaiter struct {
	lock, session, owner, req string
	order                     uint64
	ids                       []uint64
}

func newXObserver() *xObserver {
	return &xObserver{lastGrant: map[string]int64{}, pending: map[uint64]*xWaiter{}, byReq: map[[2]string]*xWaiter{}}
}

func (o *xObserver) clone() *xObserver {
	c := &xObserver{lastGrant: make(map[string]int64, len(o.lastGrant)), pending: make(map[uint64]*xWaiter, len(o.pending)),
		byReq: make(map[[2]string]*xWaiter, len(o.byReq)), queued: o.queued}
	for k, v := range o.lastGrant {
		c.lastGrant[k] = v
	}
	copies := map[*xWaiter]*xWaiter{}
	cp := func(w *xWaiter) *xWaiter {
		if copies[w] == nil {
			x := *w
			x.ids = slices.Clone(w.ids)
			copies[w] = &x
		}
		return copies[w]
	}
	for id, w := range o.pending {
		c.pending[id] = cp(w)
	}
	for k, w := range o.byReq {
		c.byReq[k] = cp(w)
	}
	return c
}

func (o *xObserver) drop(w *xWaiter) {
	for _, id := range w.ids {
		delete(o.pending, id)
	}
	if o.byReq[[2]string{w.session, w.req}] == w {
		delete(o.byReq, [2]string{w.session, w.req})
	}
}

type xGrant struct {
	lock, session, owner string
	token                int64
	waiter               *xWaiter // nil for a FLOCK granted at once
}

// observe checks entry e, applied at index, with answer r, and the state s
// it left.
func (o *xObserver) observe(s *State, index uint64, e Entry, r Result) error {
	var grants []xGrant
	// A queued FLOCK first: the entry's end may already answer it.
	if e.Op == OpFlock && r.Queued {
		w := o.byReq[[2]string{e.Session, e.Req}]
		if e.Req == "" || w == nil {
			o.queued++
			w = &xWaiter{lock: e.Lock, session: e.Session, owner: e.Owner, req: e.Req, order: o.queued}
			if e.Req != "" {
				o.byReq[[2]string{e.Session, e.Req}] = w
			}
		}
		w.ids = append(w.ids, e.WaitID)
		o.pending[e.WaitID] = w
	}
	// Cancellations by the op come before the entry's end, which may
	// answer the rest; the entry's deadlines, before the op, may already
	// have answered a wait the op would cancel.
	inWakes := map[uint64]bool{}
	for _, wk := range r.Wakes {
		inWakes[wk.WaitID] = true
	}
	unbind := func(id uint64) error {
		w := o.pending[id]
		if w == nil || inWakes[id] {
			return fmt.Errorf("wait id %d cancelled but not waiting", id&0xffffffff)
		}
		delete(o.pending, id)
		w.ids = slices.DeleteFunc(w.ids, func(x uint64) bool { return x == id })
		if len(w.ids) == 0 {
			o.drop(w)
		}
		return nil
	}
	switch e.Op {
	case OpCancelWait:
		if r.Int == 1 {
			if err := unbind(e.WaitID); err != nil {
				return err
			}
		}
	case OpCancelWaits:
		var ids []uint64
		for id := range o.pending {
			if id>>32 == e.WaitID>>32 && !inWakes[id] {
				ids = append(ids, id)
			}
		}
		if int64(len(ids)) != r.Int {
			return fmt.Errorf("cancelled %d waits of the epoch, %d were waiting", r.Int, len(ids))
		}
		for _, id := range ids {
			if err := unbind(id); err != nil {
				return err
			}
		}
	}
	// Wakes: each pending wait is answered once, under all its ids, with
	// one answer.
	woken := map[*xWaiter]Result{}
	var order []*xWaiter
	for _, wk := range r.Wakes {
		w := o.pending[wk.WaitID]
		if w == nil {
			return fmt.Errorf("wait id %d answered but not waiting (answered twice?)", wk.WaitID&0xffffffff)
		}
		if prev, ok := woken[w]; ok {
			if !reflect.DeepEqual(prev, wk.Result) {
				return fmt.Errorf("one wait answered twice differently: %s and %s", fmtResult(prev), fmtResult(wk.Result))
			}
		} else {
			woken[w] = wk.Result
			order = append(order, w)
		}
		delete(o.pending, wk.WaitID)
	}
	for _, w := range order {
		for _, id := range w.ids {
			if o.pending[id] == w {
				return fmt.Errorf("wait id %d of an answered wait was not woken", id&0xffffffff)
			}
		}
		o.drop(w)
		if res := woken[w]; res.Err == nil && !res.Null {
			grants = append(grants, xGrant{w.lock, w.session, w.owner, res.Int, w})
		}
	}
	switch e.Op {
	case OpFlock:
		if r.Err == nil && !r.Queued && !r.Null && r.Int == int64(index) {
			// Granted now; a lower token is a reentrant hold or a REQ's
			// remembered answer.
			grants = append(grants, xGrant{e.Lock, e.Session, e.Owner, r.Int, nil})
		}
	}

	open := map[string]bool{}
	for _, id := range s.Sessions() {
		open[id] = true
	}
	granted := map[string]xGrant{}
	for _, g := range grants {
		if prev, ok := granted[g.lock]; ok {
			return fmt.Errorf("lock %s granted twice in entry %d: to %s/%q token %d and to %s/%q token %d",
				g.lock, index, prev.session, prev.owner, prev.token, g.session, g.owner, g.token)
		}
		granted[g.lock] = g
	}
	for _, g := range grants {
		if g.token != int64(index) {
			return fmt.Errorf("lock %s granted at entry %d with token %d", g.lock, index, g.token)
		}
		if last, ok := o.lastGrant[g.lock]; ok && g.token <= last {
			return fmt.Errorf("lock %s granted token %d, not above the earlier %d", g.lock, g.token, last)
		}
		o.lastGrant[g.lock] = g.token
		if !open[g.session] {
			return fmt.Errorf("lock %s granted to %s, whose session this entry ended", g.lock, g.session)
		}
		// FIFO: nobody that queued earlier for this lock may still wait.
		for _, w := range o.pending {
			if w.lock == g.lock && (g.waiter == nil || w.order < g.waiter.order) {
				return fmt.Errorf("lock %s granted to %s ahead of %s, which queued earlier and still waits", g.lock, g.session, w.session)
			}
		}
	}

	// The waits the state still holds are exactly the unanswered ones.
	var want []uint64
	for id := range o.pending {
		want = append(want, id)
	}
	slices.Sort(want)
	if got := s.WaitIDs(); !slices.Equal(got, want) {
		return fmt.Errorf("waiting ids %v, observed unanswered %v (a wait dropped without an answer?)", got, want)
	}
	for _, l := range xLocks {
		info := s.LockInfo(l, s.Time())
		if info.Holder == "" {
			if info.Count != 0 || info.Token != 0 || len(info.Waiters) != 0 {
				return fmt.Errorf("free lock %s: %+v", l, info)
			}
			continue
		}
		if !open[info.Holder] {
			return fmt.Errorf("lock %s held by ended session %s", l, info.Holder)
		}
		if info.Count < 1 {
			return fmt.Errorf("lock %s held with count %d", l, info.Count)
		}
		if info.Token != o.lastGrant[l] {
			return fmt.Errorf("lock %s holder's token %d is not its latest grant %d", l, info.Token, o.lastGrant[l])
		}
		if g, ok := granted[l]; ok && (g.session != info.Holder || g.owner != info.Owner) {
			return fmt.Errorf("lock %s granted to %s/%q but held by %s/%q", l, g.session, g.owner, info.Holder, info.Owner)
		}
		// The queue is the unanswered waits for it, in the order they came.
		var q []*xWaiter
		seen := map[*xWaiter]bool{}
		for _, w := range o.pending {
			if w.lock == l && !seen[w] {
				seen[w] = true
				q = append(q, w)
			}
		}
		slices.SortFunc(q, func(a, b *xWaiter) int { return int(a.order) - int(b.order) })
		if len(q) != len(info.Waiters) {
			return fmt.Errorf("lock %s queue %+v, observed %d waiting", l, info.Waiters, len(q))
		}
		for i, w := range info.Waiters {
			if w.Session != q[i].session || w.Owner != q[i].owner {
				return fmt.Errorf("lock %s queue %+v out of arrival order", l, info.Waiters)
			}
		}
	}
	return nil
}

// TestExhaustive runs the bounded exhaustive check. make exhaustive runs it
// deeper.
func TestExhaustive(t *testing.T) {
	racetest.SkipUnderRace(t)
	depth := *exhaustiveDepth
	start := time.Now()
	st, err := exhaust(depth)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("depth %d: %d distinct states (per depth %v), %d entries applied and checked, in %v",
		depth, st.states, st.perDepth, st.transitions, time.Since(start).Round(time.Millisecond))
}

// TestExhaustiveCatchesPlanted builds this package with each planted bug
// of the state machine (internal/plant) and requires TestExhaustive to
// find it, with the violation that bug makes.
func TestExhaustiveCatchesPlanted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package again")
	}
	if os.Getenv("FENCED_PLANT") != "" {
		t.Skip("already a planted run")
	}
	for _, c := range []struct{ bug, want string }{
		{"double-grant", "granted twice in entry"},
		{"waiter-session", "of ended session"},
		{"memory-tokens", "is not its latest grant"},
		{"no-dedup", "was not woken"},
	} {
		t.Run(c.bug, func(t *testing.T) {
			cmd := exec.Command("go", "test", "-tags", "plant", "-count=1", "-run", "^TestExhaustive$", ".")
			cmd.Env = append(os.Environ(), "FENCED_PLANT="+c.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the exhaustive check passed with %s planted:\n%s", c.bug, out)
			}
			if !bytes.Contains(out, []byte(c.want)) {
				t.Fatalf("the planted run failed, but not with %q:\n%s", c.want, out)
			}
			t.Logf("caught:\n%s", out)
		})
	}
}
