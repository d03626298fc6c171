package lockstate

import (
	"fmt"
	"github.com/fenced/fenced/internal/racetest"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// observer checks the lock properties from the outside, on the answers and
// the reads alone: one holder per lock, counts never negative, tokens that
// strictly increase per lock across grants, and FIFO grants among waiters.
type observer struct {
	lastToken map[string]int64       // highest token ever seen per lock
	lastOwner map[string][2]string   // the (session, owner) that held it
	pending   map[uint64]*obsWait    // wait id -> the queued FLOCK it answers
	queues    map[string][]*obsWait  // per lock, in the order they queued
	byReq     map[[2]string]*obsWait // (session, req) of queued FLOCKs with a REQ
}

type obsWait struct {
	lock, session, req string
	ids                []uint64
	done               bool
}

func newObserver() *observer {
	return &observer{lastToken: map[string]int64{}, lastOwner: map[string][2]string{}, pending: map[uint64]*obsWait{},
		queues: map[string][]*obsWait{}, byReq: map[[2]string]*obsWait{}}
}

func (o *observer) resolve(w *obsWait) {
	w.done = true
	for _, id := range w.ids {
		delete(o.pending, id)
	}
	delete(o.byReq, [2]string{w.session, w.req})
	q := o.queues[w.lock]
	for i, x := range q {
		if x == w {
			o.queues[w.lock] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
}

// observe checks one applied entry and its result, then the reads.
func (o *observer) observe(s *State, index uint64, e Entry, r Result) error {
	answered := map[uint64]Result{} // ids answered by this entry
	granted := map[string]int{}     // grants per lock in this entry
	if e.Op == OpFlock && r.Err == nil && !r.Null && !r.Queued && r.Int == int64(index) {
		granted[e.Lock]++
	}
	// A queued FLOCK first: a retry (same REQ) joins its waiter, which the
	// end of this same entry may already answer (its lock freed by an
	// expiry the entry applied first).
	if e.Op == OpFlock && r.Queued {
		w := o.byReq[[2]string{e.Session, e.Req}]
		if e.Req == "" || w == nil {
			w = &obsWait{lock: e.Lock, session: e.Session, req: e.Req}
			o.queues[e.Lock] = append(o.queues[e.Lock], w)
			if e.Req != "" {
				o.byReq[[2]string{e.Session, e.Req}] = w
			}
		}
		if e.WaitID != 0 {
			w.ids = append(w.ids, e.WaitID)
			o.pending[e.WaitID] = w
		}
	}
	for _, wk := range r.Wakes {
		if prev, ok := answered[wk.WaitID]; ok {
			// Every id of a waiter is answered in the same entry, with
			// the same answer.
			if !reflect.DeepEqual(prev, wk.Result) {
				return fmt.Errorf("wait id %d answered twice", wk.WaitID)
			}
			delete(answered, wk.WaitID)
			continue
		}
		w := o.pending[wk.WaitID]
		if w == nil {
			return fmt.Errorf("wake for wait id %d that is not waiting", wk.WaitID)
		}
		for _, id := range w.ids {
			if id != wk.WaitID {
				answered[id] = wk.Result
			}
		}
		if wk.Result.Err == nil && !wk.Result.Null {
			if wk.Result.Int != int64(index) {
				return fmt.Errorf("waiter on %s granted token %d at index %d", w.lock, wk.Result.Int, index)
			}
			if granted[w.lock]++; granted[w.lock] > 1 {
				return fmt.Errorf("lock %s granted twice in entry %d", w.lock, index)
			}
			if head := o.queues[w.lock][0]; head != w {
				return fmt.Errorf("lock %s granted to a waiter behind %v (not FIFO)", w.lock, head.ids)
			}
		}
		o.resolve(w)
	}
	if len(answered) != 0 {
		return fmt.Errorf("wait ids %v of answered waiters not woken", answered)
	}
	if e.Op == OpCancelWait && r.Int == 1 {
		w := o.pending[e.WaitID]
		if w == nil {
			return fmt.Errorf("cancelled unknown wait id %d", e.WaitID)
		}
		delete(o.pending, e.WaitID)
		for i, id := range w.ids {
			if id == e.WaitID {
				w.ids = append(w.ids[:i:i], w.ids[i+1:]...)
				break
			}
		}
		if len(w.ids) == 0 {
			o.resolve(w)
		}
	}
	if e.Op == OpCancelWaits {
		// Every pending id of the epoch, and only those, is cancelled.
		var ids []uint64
		for id := range o.pending {
			if ep := e.WaitID >> 32; ep != 0 && id>>32 == ep {
				ids = append(ids, id)
			}
		}
		if int64(len(ids)) != r.Int {
			return fmt.Errorf("cancelled %d wait ids of epoch %d, observed %d pending", r.Int, e.WaitID>>32, len(ids))
		}
		for _, id := range ids {
			w := o.pending[id]
			delete(o.pending, id)
			w.ids = slices.DeleteFunc(w.ids, func(x uint64) bool { return x == id })
			if len(w.ids) == 0 {
				o.resolve(w)
			}
		}
	}
	for _, l := range genLocks() {
		info := s.LockInfo(l, s.Time())
		if info.Count < 0 || (info.Count == 0) != (info.Holder == "" && info.Token == 0) {
			return fmt.Errorf("lock %s: %+v", l, info)
		}
		if info.Count == 0 {
			if len(info.Waiters) != 0 {
				return fmt.Errorf("free lock %s has waiters", l)
			}
			continue
		}
		if info.Token < o.lastToken[l] {
			return fmt.Errorf("lock %s token went from %d to %d", l, o.lastToken[l], info.Token)
		}
		if info.Token > o.lastToken[l] && info.Token != int64(index) {
			return fmt.Errorf("lock %s new token %d is not the index %d", l, info.Token, index)
		}
		// One token, one ownership: the same token again is the same
		// holder (a reentrant hold), never another.
		holder := [2]string{info.Holder, info.Owner}
		if info.Token == o.lastToken[l] && holder != o.lastOwner[l] {
			return fmt.Errorf("lock %s token %d held by %v, then by %v", l, info.Token, o.lastOwner[l], holder)
		}
		o.lastToken[l], o.lastOwner[l] = info.Token, holder
		if len(info.Waiters) != len(o.queues[l]) {
			return fmt.Errorf("lock %s has %d waiters, observed %d", l, len(info.Waiters), len(o.queues[l]))
		}
		for i, w := range info.Waiters {
			if w.Session != o.queues[l][i].session {
				return fmt.Errorf("lock %s queue order %+v", l, info.Waiters)
			}
			if w.Session == info.Holder && w.Owner == info.Owner {
				return fmt.Errorf("lock %s: holder waits for itself", l)
			}
		}
	}
	return nil
}

// run drives State, the model and the observer with the same entries and
// stops at the first disagreement. Every reloadEvery entries, State is
// replaced by a copy rebuilt from its Records.
// With misuse, the observer, whose properties rest on the proposer's
// contract, is left out.
func run(src intSource, steps, reloadEvery int, misuse bool) error {
	cfg := smallConfig()
	s, m, o, w := New(cfg), newModel(cfg), newObserver(), newMemWriter()
	g := &gen{src: src, misuse: misuse, fence: func(l string) int64 { return s.LockInfo(l, 0).Token }}
	// Most runs move the cluster to version 2 or 3 first, so that their
	// commands run; the rest stay at 1, where they are unknown.
	if src.intn(4) != 0 {
		for _, e := range append([]Entry{{Op: OpNodeJoin, Node: "n0", RaftAddr: "h1:1", Addr: "h1:1", Version: MaxVersion}, {Op: OpSetVersion, Version: 2 + int64(src.intn(2))}}, notifyPrefix(src)...) {
			g.index++
			got, err := s.Apply(g.index, e, w)
			if err != nil {
				return err
			}
			got.Changes = nil // no key changes; checked below
			if want := m.apply(g.index, e); !reflect.DeepEqual(got, want) {
				return fmt.Errorf("version prefix %+v:\n got  %+v\n want %+v", e, got, want)
			}
		}
	}
	for i := 0; i < steps && !src.done(); i++ {
		index, e := g.next()
		got, err := s.Apply(index, e, w)
		if err != nil {
			return err
		}
		before := m.visible()
		want := m.apply(index, e)
		if err := checkChanges(before, m.visible(), got.Changes); err != nil {
			return fmt.Errorf("step %d index %d %+v: %v", i, index, e, err)
		}
		got.Changes = nil
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("step %d index %d %+v:\n got  %+v\n want %+v", i, index, e, got, want)
		}
		if err := checkInvariants(s); err != nil {
			return fmt.Errorf("step %d index %d %+v: %v", i, index, e, err)
		}
		if err := sameRecords(s, w); err != nil {
			return fmt.Errorf("step %d index %d %+v: %v", i, index, e, err)
		}
		if !misuse {
			if err := o.observe(s, index, e, got); err != nil {
				return fmt.Errorf("step %d index %d %+v: %v", i, index, e, err)
			}
		}
		now := s.Time() + int64(src.intn(500))
		if err := compareReads(s, m, now); err != nil {
			return fmt.Errorf("step %d index %d %+v: %v", i, index, e, err)
		}
		if reloadEvery > 0 && i%reloadEvery == reloadEvery-1 {
			if s, err = reload(s); err != nil {
				return fmt.Errorf("step %d: %v", i, err)
			}
			if err := checkInvariants(s); err != nil {
				return fmt.Errorf("step %d after reload: %v", i, err)
			}
		}
	}
	return nil
}

// TestModel compares State with the naive model over many random runs, and
// checks the invariants and the observable lock properties at every step.
func TestModel(t *testing.T) {
	racetest.SkipUnderRace(t)
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		src := rngSource{rand.New(rand.NewPCG(uint64(seed), 1))}
		misuse := seed%3 == 2
		if err := run(src, 400, 37, misuse); err != nil {
			t.Fatalf("seed %d (misuse %v): %v", seed, misuse, err)
		}
	}
}

// TestObserverCatchesDoubleGrant shows that the observer rejects one entry
// granting a lock to two waiters with one token, the answer State gave
// when it handed a freed lock on in the middle of an entry.
func TestObserverCatchesDoubleGrant(t *testing.T) {
	s, o, o2 := New(smallConfig()), newObserver(), newObserver()
	w := newMemWriter()
	entries := []Entry{
		{Op: OpSessionOpen, Session: "s0", TTL: 100},
		{Op: OpSessionOpen, Session: "s1", TTL: 1000},
		{Op: OpSessionOpen, Session: "s2", TTL: 1000},
		{Op: OpFlock, Session: "s0", Lock: "a", Wait: -1},
		{Op: OpFlock, Session: "s1", Lock: "a", Wait: 0, WaitID: 1},
		{Op: OpFlock, Session: "s2", Lock: "a", Wait: 0, WaitID: 2},
	}
	for i, e := range entries {
		r, err := s.Apply(uint64(i+1), e, w)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*observer{o, o2} {
			if err := o.observe(s, uint64(i+1), e, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	// s0 expires and the kill of s1 is in the same entry.
	e := Entry{Op: OpSessionKill, Session: "s1", Time: 200}
	double := Result{Int: 1, Wakes: []Wake{{WaitID: 1, Result: Result{Int: 7}}, {WaitID: 2, Result: Result{Int: 7}}}}
	if err := o2.observe(s, 7, e, double); err == nil || !strings.Contains(err.Error(), "granted twice") {
		t.Fatalf("observer on a double grant: %v", err)
	}
	r, err := s.Apply(7, e, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.observe(s, 7, e, r); err != nil {
		t.Fatalf("the fixed State: %v", err)
	}
}
