package lockstate

import "github.com/fenced/fenced/internal/plant"

// flock is FLOCK. Any use by a live session renews it, whatever the answer.
func (s *State) flock(e Entry, now int64) Result {
	ss := s.sessions[e.Session]
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
			return Result{Queued: true}
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
	}
	if l == nil {
		if s.kv[e.Lock] != nil { // live: expire ran at this entry's time
			return Result{Err: ErrWrongType}
		}
		if len(s.refsOf(e.Session).held) >= s.cfg.MaxLocksPerSession {
			return Result{Err: ErrTooManyLocks}
		}
		l = &lock{name: e.Lock}
		s.locks[l.name] = l
		s.grant(l, e.Session, e.Owner, e.Limit)
		return Result{Int: l.token}
	}
	if l.session == e.Session && l.owner == e.Owner {
		if l.limit > 0 && l.count >= l.limit {
			return Result{Err: ErrLimit}
		}
		l.count++
		s.markDirty(lockKey(l.name))
		return Result{Int: l.token}
	}
	if e.Wait < 0 {
		return Result{Null: true}
	}
	if len(l.queue) >= s.cfg.MaxWaitersPerLock {
		return Result{Err: ErrTooManyWaiters}
	}
	s.enqueue(l, e, now)
	return Result{Queued: true}
}

// funlock is FUNLOCK.
func (s *State) funlock(e Entry, now int64) Result {
	ss := s.sessions[e.Session]
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
	s.markDirty(lockKey(l.name))
	return Result{Int: l.count}
}

// forceUnlock is LOCK.FORCEUNLOCK: fenced on the current token, so an admin
// acting on stale information cannot release a newer ownership.
func (s *State) forceUnlock(e Entry) Result {
	l := s.locks[e.Lock]
	if l == nil || e.Fence != l.token {
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
	s.markDirty(lockKey(l.name))
}

// release ends the current ownership of l, whatever its count, and hands the
// lock to the first waiter that can take it, in this same entry so nobody
// can take it in between. With no such waiter the record goes: a free lock
// has no state worth keeping, since tokens come from the log.
func (s *State) release(l *lock) {
	if r := s.refs[l.session]; r != nil {
		delete(r.held, l.name)
	}
	for len(l.queue) > 0 {
		w := l.queue[0]
		s.removeWaiter(w)
		// A waiter must be live at the entry's time. While due deadlines are
		// being processed, one whose session or wait is also due, but comes
		// later in their order, is over already: it does not get the lock.
		ss := s.sessions[w.session]
		switch {
		case (ss == nil || ss.timer.deadline < s.now) && !plant.On(plant.WaiterSession):
			s.wake(w, Result{Err: ErrNoSession})
		case w.timed && w.timer.deadline < s.now:
			s.answer(w, Result{Null: true})
		case len(s.refsOf(w.session).held) >= s.cfg.MaxLocksPerSession:
			s.answer(w, Result{Err: ErrTooManyLocks})
		default:
			s.grant(l, w.session, w.owner, w.limit)
			s.answer(w, Result{Int: l.token})
			return
		}
	}
	delete(s.locks, l.name)
	s.markDirty(lockKey(l.name))
}
