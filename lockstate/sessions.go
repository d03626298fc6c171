package lockstate

import (
	"slices"

	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/internal/plant"
)

func (s *State) openSession(e Entry, now int64) Result {
	if _, ok := s.sessions[e.Session]; ok {
		return Result{Err: ErrSessionExists}
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		return Result{Err: ErrTooManySessions}
	}
	if s.perUser[e.User] >= s.cfg.MaxSessionsPerUser {
		return Result{Err: ErrTooManyUserSessions}
	}
	if !s.roomFor(int64(2*len(e.Session)+len(e.Name)+len(e.User)) + 64) {
		return Result{Err: ErrOOM}
	}
	s.perUser[e.User]++
	ss := &session{id: e.Session, user: e.User, name: e.Name, ttl: e.TTL, created: e.Created}
	ss.timer.sess = ss
	s.sessions[ss.id] = ss
	s.schedule(&ss.timer, ms.Add(now, ss.ttl))
	s.markDirty(sessionKey(ss.id), &ss.cost)
	return Result{Str: ss.id}
}

func (s *State) heartbeat(e Entry, now int64) Result {
	ss := s.sessionFor(e)
	if ss == nil {
		return Result{Err: ErrNoSession}
	}
	s.renew(ss, now)
	return Result{Int: ss.ttl}
}

func (s *State) killSession(e Entry) Result {
	ss := s.sessionFor(e)
	if ss == nil {
		return Result{}
	}
	s.endSession(ss)
	return Result{Int: 1}
}

// renew moves the session's deadline to a full TTL after now.
func (s *State) renew(ss *session, now int64) {
	d := ms.Add(now, ss.ttl)
	if d == ss.timer.deadline {
		return
	}
	s.schedule(&ss.timer, d)
	s.markDirty(sessionKey(ss.id), &ss.cost)
}

// endSession closes a session, by SESSION.KILL or by expiry: its waits are
// answered ErrNoSession, then its locks are released with their full count
// (handed on at the entry's end), and its memory of requests is dropped.
func (s *State) endSession(ss *session) {
	delete(s.sessions, ss.id)
	if s.perUser[ss.user]--; s.perUser[ss.user] <= 0 {
		delete(s.perUser, ss.user)
	}
	s.unschedule(&ss.timer)
	s.markDirty(sessionKey(ss.id), &ss.cost)
	r := s.refs[ss.id]
	if r == nil {
		return
	}
	for _, name := range sortedKeys(r.waiting) {
		if plant.On(plant.WaiterSession) {
			break // the planted bug: the session's waits stay queued
		}
		l := s.locks[name]
		for _, w := range slices.Clone(l.queue) {
			if w.session == ss.id {
				s.removeWaiter(w)
				s.wake(w, Result{Err: ErrNoSession})
			}
		}
	}
	for _, name := range sortedKeys(r.held) {
		s.release(s.locks[name])
	}
	for _, m := range r.memos {
		delete(s.memos, sessReq{m.session, m.req})
		s.markDirty(memoKey(m.session, m.seq), &m.cost)
	}
	delete(s.refs, ss.id)
}
