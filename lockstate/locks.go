package lockstate

import (
	"slices"

	"github.com/fenced/fenced/internal/plant"
)

// flock is FLOCK. Any use by a live session renews it, whatever the answer.
func (s *State) flock(e Entry, now int64) Result {
	ss := s.sessionFor(e)
	if ss == nil {
		return Result{Err: ErrNoSession}
	}
	s.renew(ss, now)
	if e.Req != "" && !plant.On(plant.NoDedup) {
		k := sessReq{e.Session, e.Req}
		// A retry of a FLOCK that is still queued keeps its place: it is
		// answered together with the original.
		if w := s.reqWaits[k]; w != nil {
			s.bindWaitID(w, e.WaitID)
			return Result{Queued: true, Int: int64(w.pos)}
		}
		if m := s.memos[k]; m != nil {
			return m.result()
		}
	}
	r := s.acquire(e, now)
	if !r.Queued {
		s.remember(ss, e.Req, r)
	}
	return r
}

func (s *State) acquire(e Entry, now int64) Result {
	l := s.locks[e.Lock]
	if l != nil {
		// The owner has stopped waiting for its earlier FLOCK: it sent a
		// new one.
		s.cancelOwnWait(l, e.Session, e.Owner)
		l = s.locks[e.Lock] // gone if that was the last wait for a released lock
	}
	if l == nil {
		if s.kv[e.Lock] != nil { // live: expire ran at this entry's time
			return Result{Err: ErrWrongType}
		}
		if len(s.refsOf(e.Session).held) >= s.cfg.MaxLocksPerSession {
			return Result{Err: ErrTooManyLocks}
		}
		if !s.roomFor(flockGrowth(e)) {
			return Result{Err: ErrOOM}
		}
		l = &lock{name: e.Lock}
		s.locks[l.name] = l
		s.indexName(l.name)
		s.grant(l, e.Session, e.Owner, e.Limit)
		return Result{Int: l.token}
	}
	if l.session == e.Session && l.owner == e.Owner {
		if l.limit > 0 && l.count >= l.limit {
			return Result{Err: ErrLimit}
		}
		l.count++
		s.markDirty(lockKey(l.name), &l.cost)
		return Result{Int: l.token}
	}
	if e.Wait < 0 {
		return Result{Null: true}
	}
	if len(l.queue) >= s.cfg.MaxWaitersPerLock {
		return Result{Err: ErrTooManyWaiters}
	}
	if !s.roomFor(flockGrowth(e)) {
		return Result{Err: ErrOOM}
	}
	w := s.enqueue(l, e, now)
	return Result{Queued: true, Int: int64(w.pos)}
}

// flockGrowth bounds what a FLOCK that takes a free lock or joins a queue
// adds: the lock or waiter record and its request's memo. A reentrant hold
// adds nothing and is never refused.
func flockGrowth(e Entry) int64 {
	return int64(2*len(e.Lock)+len(e.Session)+2*len(e.Owner)+2*len(e.Req)) + recordOverhead + 64
}

// funlock is FUNLOCK.
func (s *State) funlock(e Entry, now int64) Result {
	ss := s.sessionFor(e)
	if ss == nil {
		return Result{Err: ErrNoSession}
	}
	s.renew(ss, now)
	if e.Req != "" && !plant.On(plant.NoDedup) {
		if m := s.memos[sessReq{e.Session, e.Req}]; m != nil {
			return m.result()
		}
	}
	r := s.unlock(e)
	s.remember(ss, e.Req, r)
	return r
}

func (s *State) unlock(e Entry) Result {
	l := s.locks[e.Lock]
	if l == nil || l.session != e.Session || l.owner != e.Owner {
		return Result{Err: ErrNotOwner}
	}
	if e.Fence != 0 && e.Fence != l.token {
		return Result{Err: ErrStaleFence}
	}
	l.count--
	if l.count == 0 {
		s.release(l)
		return Result{}
	}
	s.markDirty(lockKey(l.name), &l.cost)
	return Result{Int: l.count}
}

// forceUnlock is LOCK.FORCEUNLOCK: fenced on the current token, so an admin
// acting on stale information cannot release a newer ownership.
func (s *State) forceUnlock(e Entry) Result {
	l := s.locks[e.Lock]
	if l == nil || l.session == "" || e.Fence != l.token {
		return Result{Err: ErrStaleFence}
	}
	s.release(l)
	return Result{Int: 1}
}

// grant makes (session, owner) the holder of l. The token is the index of
// the entry being applied, so tokens need no counter and cannot go back.
func (s *State) grant(l *lock, session, owner string, limit int64) {
	l.session, l.owner = session, owner
	l.count, l.limit, l.token = 1, limit, int64(s.index)
	if plant.On(plant.MemoryTokens) {
		s.plantTokens++
		l.token = s.plantTokens
	}
	s.refsOf(session).held[l.name] = struct{}{}
	s.markDirty(lockKey(l.name), &l.cost)
}

// release ends the current ownership of l, whatever its count. With waiters
// queued, the lock stays, holderless, until the entry's end, when handOffs
// passes it on (at most once per entry, so a token names one grant); with
// none the record goes: a free lock has no state worth keeping, since
// tokens come from the log.
func (s *State) release(l *lock) {
	if r := s.refs[l.session]; r != nil {
		delete(r.held, l.name)
	}
	l.session, l.owner, l.count, l.limit, l.token = "", "", 0, 0, 0
	s.markDirty(lockKey(l.name), &l.cost)
	if len(l.queue) == 0 {
		delete(s.locks, l.name)
		s.unindexName(l.name)
		return
	}
	if plant.On(plant.DoubleGrant) {
		s.handOff(l) // the planted bug: a second release in this entry grants again
		return
	}
	s.handoffs = append(s.handoffs, l.name)
}

// handOffs passes every lock released during the entry to its first waiter
// that can take it, in lock-name order. It runs once, after the entry's
// deadlines and its op, so every session and wait that the entry ends is
// already gone from the queues: nobody is granted a lock in the entry that
// ends them, and a lock is granted at most once per entry, so no two
// ownerships share a token.
func (s *State) handOffs() {
	if len(s.handoffs) == 0 {
		return
	}
	slices.Sort(s.handoffs)
	for _, name := range slices.Compact(s.handoffs) {
		// The lock may have gone (its last waiter left) and been taken
		// afresh by the op since: only a holderless one is handed off.
		if l := s.locks[name]; l != nil && l.session == "" {
			s.handOff(l)
		}
	}
	s.handoffs = s.handoffs[:0]
}

// handOff grants holderless l to its first waiter that can take it,
// answering the ones that cannot; with none left the record goes.
func (s *State) handOff(l *lock) {
	for len(l.queue) > 0 {
		w := l.queue[0]
		ss := s.sessions[w.session]
		// At the entry's end every due deadline has taken effect, so a
		// waiter found here is live; the deadline checks matter only to
		// the planted hand-off in the middle of expire.
		switch {
		case (ss == nil || ss.timer.deadline < s.now) && !plant.On(plant.WaiterSession):
			s.removeWaiter(w)
			s.wake(w, Result{Err: ErrNoSession})
		case w.timed && w.timer.deadline < s.now:
			s.removeWaiter(w)
			s.answer(w, Result{Null: true})
		case len(s.refsOf(w.session).held) >= s.cfg.MaxLocksPerSession:
			s.removeWaiter(w)
			s.answer(w, Result{Err: ErrTooManyLocks})
		default:
			s.grant(l, w.session, w.owner, w.limit)
			s.removeWaiter(w)
			s.answer(w, Result{Int: l.token})
			return
		}
	}
	delete(s.locks, l.name)
	s.unindexName(l.name)
	s.markDirty(lockKey(l.name), &l.cost)
}
