package lockstate

import (
	"slices"
	"sort"

	"github.com/fenced/fenced/internal/ms"
)

// enqueue appends a waiting FLOCK to l's queue.
func (s *State) enqueue(l *lock, e Entry, now int64) *waiter {
	// pos is the log index, bumped only if a caller ever reused an index, so
	// the queue's keys stay unique and in order whatever happens.
	pos := s.index
	if n := len(l.queue); n > 0 && l.queue[n-1].pos >= pos {
		pos = l.queue[n-1].pos + 1
	}
	w := &waiter{lock: l, pos: pos, session: e.Session, owner: e.Owner, req: e.Req, limit: e.Limit}
	w.timer.wait = w
	l.queue = append(l.queue, w)
	s.waiters++
	if e.Wait > 0 {
		w.timed = true
		s.schedule(&w.timer, ms.Add(now, e.Wait))
	}
	if e.Req != "" {
		s.reqWaits[sessReq{e.Session, e.Req}] = w
	}
	s.refsOf(e.Session).waiting[l.name]++
	s.bindWaitID(w, e.WaitID)
	s.markDirty(waiterKey(l.name, w.pos), &w.cost)
	return w
}

// bindWaitID adds id to the ids w is answered under. Id 0 is "nobody to
// answer". An id already bound to another waiter moves to w: ids are the
// proposer's, and its latest use is the one that still listens.
func (s *State) bindWaitID(w *waiter, id uint64) {
	if id == 0 || slices.Contains(w.waitIDs, id) {
		return
	}
	if old := s.waitIDs[id]; old != nil {
		old.waitIDs = slices.DeleteFunc(old.waitIDs, func(x uint64) bool { return x == id })
		s.markDirty(waiterKey(old.lock.name, old.pos), &old.cost)
	}
	w.waitIDs = append(w.waitIDs, id)
	s.waitIDs[id] = w
	s.markDirty(waiterKey(w.lock.name, w.pos), &w.cost)
}

// removeWaiter takes w out of its queue and every index. Its answer is the
// caller's job.
func (s *State) removeWaiter(w *waiter) {
	l := w.lock
	i := sort.Search(len(l.queue), func(i int) bool { return l.queue[i].pos >= w.pos })
	if i < len(l.queue) && l.queue[i] == w {
		l.queue = slices.Delete(l.queue, i, i+1)
		s.waiters--
	}
	s.unschedule(&w.timer)
	for _, id := range w.waitIDs {
		if s.waitIDs[id] == w {
			delete(s.waitIDs, id)
		}
	}
	if w.req != "" {
		k := sessReq{w.session, w.req}
		if s.reqWaits[k] == w {
			delete(s.reqWaits, k)
		}
	}
	if r := s.refs[w.session]; r != nil {
		if r.waiting[l.name]--; r.waiting[l.name] <= 0 {
			delete(r.waiting, l.name)
		}
	}
	s.markDirty(waiterKey(l.name, w.pos), &w.cost)
	// A lock released in this entry and waiting for its hand-off is free
	// once nobody waits for it any more.
	if l.session == "" && len(l.queue) == 0 && s.locks[l.name] == l {
		delete(s.locks, l.name)
		s.unindexName(l.name)
		s.markDirty(lockKey(l.name), &l.cost)
	}
}

// cancelOwnWait answers ErrCancelled to a wait of (session, owner) on l.
func (s *State) cancelOwnWait(l *lock, session, owner string) {
	if r := s.refs[session]; r == nil || r.waiting[l.name] == 0 {
		return // the common case, without a scan of the queue
	}
	for _, w := range l.queue {
		if w.session == session && w.owner == owner {
			s.removeWaiter(w)
			s.answer(w, Result{Err: ErrCancelled})
			return // an owner waits at most once per lock
		}
	}
}

// cancelWait is OpCancelWait: the connection waiting under e.WaitID went
// away. The wait ends when nobody is left to answer.
func (s *State) cancelWait(e Entry) Result {
	if !s.cancelWaitID(e.WaitID) {
		return Result{}
	}
	return Result{Int: 1}
}

// cancelWaits is OpCancelWaits: a node restarted, so every wait it
// registered in the process of epoch e.WaitID>>32 has nobody listening.
// Each id of that epoch is cancelled as by OpCancelWait, in ascending order.
// Epoch 0 is no node's: it matches nothing.
func (s *State) cancelWaits(e Entry) Result {
	epoch := e.WaitID >> 32
	if epoch == 0 {
		return Result{}
	}
	var ids []uint64
	for id := range s.waitIDs {
		if id>>32 == epoch {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // map order must not reach the memos' order
	for _, id := range ids {
		s.cancelWaitID(id)
	}
	return Result{Int: int64(len(ids))}
}

// cancelWaitID unbinds id from its waiter, if any. A waiter left with no
// id leaves its queue, and its REQ is remembered as ErrCancelled; nobody is
// woken, since nobody listens.
func (s *State) cancelWaitID(id uint64) bool {
	w := s.waitIDs[id]
	if w == nil {
		return false
	}
	delete(s.waitIDs, id)
	w.waitIDs = slices.DeleteFunc(w.waitIDs, func(x uint64) bool { return x == id })
	if len(w.waitIDs) > 0 {
		s.markDirty(waiterKey(w.lock.name, w.pos), &w.cost)
		return true
	}
	s.removeWaiter(w)
	if ss := s.sessions[w.session]; ss != nil {
		s.remember(ss, w.req, Result{Err: ErrCancelled})
	}
	return true
}

// timeOut ends a timed wait whose deadline has passed: the answer is null.
func (s *State) timeOut(w *waiter) {
	s.removeWaiter(w)
	s.answer(w, Result{Null: true})
}

// answer wakes w's callers with r and remembers r for w's REQ.
func (s *State) answer(w *waiter, r Result) {
	s.wake(w, r)
	if ss := s.sessions[w.session]; ss != nil {
		s.remember(ss, w.req, r)
	}
}

func (s *State) wake(w *waiter, r Result) {
	for _, id := range w.waitIDs {
		s.wakes = append(s.wakes, Wake{WaitID: id, Result: r})
	}
}
