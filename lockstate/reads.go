package lockstate

import "slices"

// Reads. The caller passes now, the leader's current cluster time (>= Time()),
// for the remaining-time fields. They report the state as applied: a
// deadline that has passed takes effect with the next entry (the leader's
// tick), so Remaining is then 0 rather than the session being gone.

// Fence answers FENCE. Without an owner: the holder's token, or Null when
// the lock is free. With one: its token, ErrNoSession if the session is not
// open, or ErrNotOwner if that owner doesn't hold the lock.
func (s *State) Fence(lock, session, owner string, withOwner bool) Result {
	l := s.locks[lock]
	if !withOwner {
		if l == nil || l.session == "" {
			return Result{Null: true}
		}
		return Result{Int: l.token}
	}
	if s.sessions[session] == nil {
		return Result{Err: ErrNoSession}
	}
	if l == nil || l.session != session || l.owner != owner {
		return Result{Err: ErrNotOwner}
	}
	return Result{Int: l.token}
}

// FenceOf answers the FENCE command at cluster time now: Fence, except
// that without an owner a name that is not a held lock may be a plain key,
// whose token is the index that created it (KeyFence). Both the command
// and a script's FENCE answer from here.
func (s *State) FenceOf(lock, session, owner string, withOwner bool, now int64) Result {
	r := s.Fence(lock, session, owner, withOwner)
	if !r.Null {
		return r
	}
	if tok, ok := s.KeyFence(lock, now); ok {
		return Result{Int: tok}
	}
	return r
}

// LockInfo answers LOCK.INFO. A free lock is the zero LockInfo.
func (s *State) LockInfo(lock string, now int64) LockInfo {
	l := s.locks[lock]
	if l == nil {
		return LockInfo{}
	}
	info := LockInfo{Holder: l.session, Owner: l.owner, Count: l.count, Limit: l.limit, Token: l.token}
	for _, w := range l.queue {
		rem := int64(-1)
		if w.timed {
			rem = max(0, w.timer.deadline-now)
		}
		info.Waiters = append(info.Waiters, WaiterInfo{Session: w.session, Owner: w.owner, Remaining: rem})
	}
	return info
}

// SessionInfo answers SESSION.INFO for user (an admin may ask about any
// session), or ErrNoSession: another user's session is as good as absent.
func (s *State) SessionInfo(id, user string, admin bool, now int64) (SessionInfo, error) {
	ss := s.sessionFor(Entry{Session: id, User: user, AsAdmin: admin})
	if ss == nil {
		return SessionInfo{}, ErrNoSession
	}
	info := SessionInfo{ID: id, Name: ss.name, TTL: ss.ttl, Remaining: max(0, ss.timer.deadline-now), Created: ss.created}
	if rf := s.refs[id]; rf != nil && len(rf.held) > 0 {
		info.Held = sortedKeys(rf.held)
	}
	if rf := s.refs[id]; rf != nil && len(rf.waiting) > 0 {
		info.Waiting = sortedKeys(rf.waiting)
	}
	return info, nil
}

// Sessions returns the open session ids, sorted.
func (s *State) Sessions() []string {
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Counts returns the number of open sessions and of held locks.
func (s *State) Counts() (sessions, locks int) { return len(s.sessions), len(s.locks) }

// Waiters returns, in constant time, the number of queued FLOCKs (a FLOCK
// retried under a new wait id is still one).
func (s *State) Waiters() int { return s.waiters }

// WaitIDs returns the ids of every queued FLOCK, sorted. A node that starts
// up holds no connection for any of them, so it cancels them: a closed
// connection cancels its wait, and a restart closed them all.
func (s *State) WaitIDs() []uint64 {
	ids := make([]uint64, 0, len(s.waitIDs))
	for id := range s.waitIDs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
