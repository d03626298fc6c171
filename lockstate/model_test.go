package lockstate

import (
	"github.com/fenced/fenced/acl"
	"slices"
	"strings"

	"github.com/fenced/fenced/internal/ms"
)

// model is a naive second implementation of the semantics: plain slices and
// linear scans, no heap, no indexes, no records. State must answer every
// entry and every read exactly as it does.
type model struct {
	cfg      Config
	time     int64
	index    uint64
	now      int64
	wall     int64 // highest wall clock of an entry
	unix     int64 // the entry's Unix time: wall, or now without one
	walled   bool
	sessions map[string]*mSession
	locks    map[string]*mLock
	members  map[string]Member
	keys     map[string]*mKey // model_keys_test.go
	version  int64            // the cluster version, 0 until raised
	// users are kept with the acl package's own rule application, which
	// acl's tests check; the model checks what the state does with them.
	users map[string]*acl.User
	wakes []Wake
	// expired counts what the deadlines of the entry in progress ended.
	expired Expirations
	// hist is each name's changes from cluster version 3, for WATCH
	// (model_mods_test.go).
	hist map[string][]mChange
	// notify is notify-keyspace-events as last set (model_notify_test.go),
	// messages the events of the entry in progress.
	notify   string
	messages []Message
	// pushed are the lists the entry in progress pushed to, in order
	// (model_keys_test.go): what wakes a BLPOP or a BLMOVE.
	pushed []string
}

type mSession struct {
	id, name, user         string
	ttl, created, deadline int64
	memos                  []mMemo // oldest first
}

type mMemo struct {
	req string
	res Result
}

type mLock struct {
	holder, owner       string
	count, limit, token int64
	queue               []*mWaiter
}

type mWaiter struct {
	lock                string
	pos                 uint64
	session, owner, req string
	limit               int64
	timed               bool
	deadline            int64
	ids                 []uint64
}

func newModel(cfg Config) *model {
	return &model{cfg: New(cfg).cfg, sessions: map[string]*mSession{}, locks: map[string]*mLock{},
		members: map[string]Member{}, keys: map[string]*mKey{}, users: map[string]*acl.User{}}
}

func (m *model) apply(index uint64, e Entry) Result {
	m.index = index
	now := max(e.Time, m.time)
	m.time, m.now = now, now
	m.unix, m.walled = now, e.Wall != 0
	if m.walled {
		m.wall = max(m.wall, e.Wall)
		m.unix = m.wall
	}
	m.phase(func() {
		m.expire(now)
		m.expireKeys(now)
	})
	var r Result
	switch e.Op {
	case OpExec:
		r.Reply = m.write(e.Args, now)
	case OpMulti:
		r.Reply = m.multi(e, now)
	default:
		m.phase(func() { r = m.op(e, now) })
	}
	m.phase(m.handOff)
	r.Wakes, r.Expired, r.Messages, r.Pushed = m.wakes, m.expired, m.messages, m.pushed
	m.wakes, m.expired, m.messages, m.pushed = nil, Expirations{}, nil, nil
	return r
}

// op applies the entries other than OpExec and OpMulti.
func (m *model) op(e Entry, now int64) Result {
	var r Result
	switch e.Op {
	case OpTick:
	case OpSessionOpen:
		switch {
		case m.sessions[e.Session] != nil:
			r.Err = ErrSessionExists
		case len(m.sessions) >= m.cfg.MaxSessions:
			r.Err = ErrTooManySessions
		case m.userSessions(e.User) >= m.cfg.MaxSessionsPerUser:
			r.Err = ErrTooManyUserSessions
		default:
			m.sessions[e.Session] = &mSession{id: e.Session, name: e.Name, user: e.User, ttl: e.TTL, created: e.Created, deadline: ms.Add(now, e.TTL)}
			r.Str = e.Session
		}
	case OpSessionHeartbeat:
		if s := m.session(e); s == nil {
			r.Err = ErrNoSession
		} else {
			s.deadline = ms.Add(now, s.ttl)
			r.Int = s.ttl
		}
	case OpSessionKill:
		if s := m.session(e); s != nil {
			m.end(s)
			r.Int = 1
		}
	case OpACLSetUser:
		u := m.users[e.Name]
		switch {
		case e.Name == "":
			r.Err = ErrBadEntry
		case u == nil && e.Name == "default":
			u = acl.Default("")
		case u == nil:
			u = acl.New(e.Name)
		}
		if u != nil {
			u.Apply(e.Args)
			m.users[e.Name] = u
			r.UsersChanged = true
		}
	case OpACLDelUser:
		if slices.Contains(e.Args, "default") {
			r.Err = ErrDefaultUser
			break
		}
		for _, n := range e.Args {
			if m.users[n] != nil {
				delete(m.users, n)
				r.Int++
			}
		}
		r.UsersChanged = r.Int > 0
	case OpFlock:
		r = m.flock(e, now)
	case OpFunlock:
		r = m.funlock(e, now)
	case OpCancelWait:
		if m.cancel(e.WaitID) {
			r.Int = 1
		}
	case OpCancelWaits:
		var ids []uint64
		for _, w := range m.waiters() {
			for _, id := range w.ids {
				if ep := e.WaitID >> 32; ep != 0 && id>>32 == ep {
					ids = append(ids, id)
				}
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			m.cancel(id)
		}
		r.Int = int64(len(ids))
	case OpNodeJoin:
		old, ok := m.members[e.Node]
		switch {
		case e.Node == "" || e.RaftAddr == "" || e.Addr == "" || e.Version < 0:
			r.Err = ErrBadEntry
		case old.Removed:
			r.Err = ErrNodeRemoved
		default:
			// A join that says no version keeps the one announced before.
			v := e.Version
			if v == 0 {
				v = old.Version
			}
			m.members[e.Node] = Member{ID: e.Node, RaftAddr: e.RaftAddr, Addr: e.Addr, Version: v}
			if !ok {
				r.Int = 1
			}
		}
	case OpSetVersion:
		switch {
		case e.Version <= max(m.version, 1):
		case e.Version > MaxVersion:
			r.Err = ErrVersionUnknown
		default:
			for _, mb := range m.members {
				if !mb.Removed && max(mb.Version, 1) < e.Version {
					r.Err = ErrVersionBehind
				}
			}
			if r.Err == nil {
				m.version, r.Int = e.Version, e.Version
			}
		}
	case OpNodeRemove:
		old, ok := m.members[e.Node]
		switch {
		case e.Node == "":
			r.Err = ErrBadEntry
		case !old.Removed:
			m.members[e.Node] = Member{ID: e.Node, RaftAddr: old.RaftAddr, Addr: old.Addr, Version: old.Version, Removed: true}
			if ok {
				r.Int = 1
			}
		}
	case OpForceUnlock:
		if l := m.locks[e.Lock]; l == nil || l.holder == "" || l.token != e.Fence {
			r.Err = ErrStaleFence
		} else {
			m.release(e.Lock)
			r.Int = 1
		}
	default:
		r.Err = ErrBadEntry
	}
	return r
}

// cancel unbinds wait id id; a waiter left with none ends, CANCELLED.
func (m *model) cancel(id uint64) bool {
	w := m.waiterWithID(id)
	if w == nil {
		return false
	}
	w.ids = slices.DeleteFunc(w.ids, func(x uint64) bool { return x == id })
	if len(w.ids) == 0 {
		m.remove(w)
		m.remember(w.session, w.req, Result{Err: ErrCancelled})
	}
	return true
}

// expire picks the earliest due deadline by a linear scan, again and again.
func (m *model) expire(now int64) {
	for {
		var bs *mSession
		var bw *mWaiter
		var bd int64
		for _, s := range m.sessions {
			if s.deadline >= now { // due only once time is past it
				continue
			}
			if (bs == nil && bw == nil) || s.deadline < bd || (s.deadline == bd && bw == nil && s.id < bs.id) {
				bs, bw, bd = s, nil, s.deadline
			}
		}
		for name, l := range m.locks {
			for _, w := range l.queue {
				if !w.timed || w.deadline >= now {
					continue
				}
				if (bs == nil && bw == nil) || w.deadline < bd || (w.deadline == bd && (bw == nil ||
					name < bw.lock || (name == bw.lock && w.pos < bw.pos))) {
					bs, bw, bd = nil, w, w.deadline
				}
			}
		}
		switch {
		case bw != nil:
			m.expired.Waits++
			m.remove(bw)
			m.answer(bw, Result{Null: true})
		case bs != nil:
			m.expired.Sessions++
			m.expired.Locks += m.heldBy(bs.id)
			m.end(bs)
		default:
			return
		}
	}
}

func (m *model) end(s *mSession) {
	delete(m.sessions, s.id)
	var waits, held []string
	for name, l := range m.locks {
		if l.holder == s.id {
			held = append(held, name)
		}
		for _, w := range l.queue {
			if w.session == s.id {
				waits = append(waits, name)
				break
			}
		}
	}
	slices.Sort(waits)
	slices.Sort(held)
	for _, name := range waits {
		for _, w := range slices.Clone(m.locks[name].queue) {
			if w.session == s.id {
				m.remove(w)
				m.wake(w, Result{Err: ErrNoSession})
			}
		}
	}
	for _, name := range held {
		m.release(name)
	}
}

func (m *model) heldBy(session string) int {
	n := 0
	for _, l := range m.locks {
		if l.count > 0 && l.holder == session {
			n++
		}
	}
	return n
}

// release frees the lock; its waiters wait for the entry's end.
func (m *model) release(name string) {
	l := m.locks[name]
	l.holder, l.owner, l.count, l.limit, l.token = "", "", 0, 0, 0
	if len(l.queue) == 0 {
		delete(m.locks, name)
	}
}

// handOff, at the end of an entry, passes each holderless lock to its first
// waiter that may take it.
func (m *model) handOff() {
	var names []string
	for name, l := range m.locks {
		if l.holder == "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		l := m.locks[name]
		for len(l.queue) > 0 && l.holder == "" {
			w := l.queue[0]
			l.queue = l.queue[1:]
			switch {
			case m.sessions[w.session] == nil:
				m.wake(w, Result{Err: ErrNoSession})
			case m.heldBy(w.session) >= m.cfg.MaxLocksPerSession:
				m.answer(w, Result{Err: ErrTooManyLocks})
			default:
				l.holder, l.owner, l.count, l.limit, l.token = w.session, w.owner, 1, w.limit, int64(m.index)
				m.answer(w, Result{Int: l.token})
			}
		}
		if l.holder == "" {
			delete(m.locks, name)
		}
	}
}

func (m *model) remove(w *mWaiter) {
	l := m.locks[w.lock]
	l.queue = slices.DeleteFunc(l.queue, func(x *mWaiter) bool { return x == w })
	if l.holder == "" && len(l.queue) == 0 {
		delete(m.locks, w.lock)
	}
}

func (m *model) wake(w *mWaiter, r Result) {
	for _, id := range w.ids {
		m.wakes = append(m.wakes, Wake{WaitID: id, Result: r})
	}
}

func (m *model) answer(w *mWaiter, r Result) {
	m.wake(w, r)
	m.remember(w.session, w.req, r)
}

func (m *model) remember(session, req string, r Result) {
	s := m.sessions[session]
	if s == nil || req == "" || r.Err == ErrNoSession {
		return
	}
	s.memos = slices.DeleteFunc(s.memos, func(x mMemo) bool { return x.req == req })
	s.memos = append(s.memos, mMemo{req, r})
	if len(s.memos) > m.cfg.ReqMemory {
		s.memos = s.memos[1:]
	}
}

func (m *model) memo(session, req string) (Result, bool) {
	for _, x := range m.sessions[session].memos {
		if x.req == req {
			return x.res, true
		}
	}
	return Result{}, false
}

func (m *model) waiters() []*mWaiter {
	var ws []*mWaiter
	for _, l := range m.locks {
		ws = append(ws, l.queue...)
	}
	return ws
}

func (m *model) waiterWithID(id uint64) *mWaiter {
	for _, w := range m.waiters() {
		if id != 0 && slices.Contains(w.ids, id) {
			return w
		}
	}
	return nil
}

func (m *model) bind(w *mWaiter, id uint64) {
	if id == 0 || slices.Contains(w.ids, id) {
		return
	}
	if o := m.waiterWithID(id); o != nil {
		o.ids = slices.DeleteFunc(o.ids, func(x uint64) bool { return x == id })
	}
	w.ids = append(w.ids, id)
}

// session is e's session if e's user may use it: its own, or any for an
// admin.
func (m *model) session(e Entry) *mSession {
	s := m.sessions[e.Session]
	if s == nil || s.user != e.User && !e.AsAdmin {
		return nil
	}
	return s
}

func (m *model) flock(e Entry, now int64) Result {
	s := m.session(e)
	if s == nil {
		return Result{Err: ErrNoSession}
	}
	s.deadline = ms.Add(now, s.ttl)
	if e.Req != "" {
		for _, w := range m.waiters() {
			if w.session == e.Session && w.req == e.Req {
				m.bind(w, e.WaitID)
				return Result{Queued: true, Int: int64(w.pos)}
			}
		}
		if r, ok := m.memo(e.Session, e.Req); ok {
			return r
		}
	}
	var r Result
	l := m.locks[e.Lock]
	if l != nil {
		for _, w := range l.queue {
			if w.session == e.Session && w.owner == e.Owner {
				m.remove(w)
				m.answer(w, Result{Err: ErrCancelled})
				break
			}
		}
		l = m.locks[e.Lock]
	}
	switch {
	case l == nil && m.keys[e.Lock] != nil:
		r.Err = ErrWrongType
	case l == nil && m.heldBy(e.Session) >= m.cfg.MaxLocksPerSession:
		r.Err = ErrTooManyLocks
	case l == nil:
		m.locks[e.Lock] = &mLock{holder: e.Session, owner: e.Owner, count: 1, limit: e.Limit, token: int64(m.index)}
		r.Int = int64(m.index)
	case l.holder == e.Session && l.owner == e.Owner:
		if l.limit > 0 && l.count >= l.limit {
			r.Err = ErrLimit
		} else {
			l.count++
			r.Int = l.token
		}
	case e.Wait < 0:
		r.Null = true
	case len(l.queue) >= m.cfg.MaxWaitersPerLock:
		r.Err = ErrTooManyWaiters
	default:
		pos := m.index
		if n := len(l.queue); n > 0 && l.queue[n-1].pos >= pos {
			pos = l.queue[n-1].pos + 1
		}
		w := &mWaiter{lock: e.Lock, pos: pos, session: e.Session, owner: e.Owner, req: e.Req, limit: e.Limit,
			timed: e.Wait > 0, deadline: ms.Add(now, e.Wait)}
		l.queue = append(l.queue, w)
		m.bind(w, e.WaitID)
		return Result{Queued: true, Int: int64(pos)}
	}
	m.remember(e.Session, e.Req, r)
	return r
}

func (m *model) funlock(e Entry, now int64) Result {
	s := m.session(e)
	if s == nil {
		return Result{Err: ErrNoSession}
	}
	s.deadline = ms.Add(now, s.ttl)
	if e.Req != "" {
		if r, ok := m.memo(e.Session, e.Req); ok {
			return r
		}
	}
	var r Result
	l := m.locks[e.Lock]
	switch {
	case l == nil || l.holder != e.Session || l.owner != e.Owner:
		r.Err = ErrNotOwner
	case e.Fence != 0 && e.Fence != l.token:
		r.Err = ErrStaleFence
	default:
		l.count--
		r.Int = l.count
		if l.count == 0 {
			m.release(e.Lock)
		}
	}
	m.remember(e.Session, e.Req, r)
	return r
}

// Reads, as State answers them.

func (m *model) lockInfo(name string, now int64) LockInfo {
	l := m.locks[name]
	if l == nil {
		return LockInfo{}
	}
	info := LockInfo{Holder: l.holder, Owner: l.owner, Count: l.count, Limit: l.limit, Token: l.token}
	for _, w := range l.queue {
		rem := int64(-1)
		if w.timed {
			rem = max(0, w.deadline-now)
		}
		info.Waiters = append(info.Waiters, WaiterInfo{Session: w.session, Owner: w.owner, Remaining: rem})
	}
	return info
}

func (m *model) sessionInfo(id, user string, now int64) (SessionInfo, error) {
	s := m.session(Entry{Session: id, User: user})
	if s == nil {
		return SessionInfo{}, ErrNoSession
	}
	info := SessionInfo{ID: id, Name: s.name, TTL: s.ttl, Remaining: max(0, s.deadline-now), Created: s.created}
	for name, l := range m.locks {
		if l.holder == id {
			info.Held = append(info.Held, name)
		}
		for _, w := range l.queue {
			if w.session == id {
				info.Waiting = append(info.Waiting, name)
				break
			}
		}
	}
	slices.Sort(info.Held)
	slices.Sort(info.Waiting)
	return info, nil
}

func (m *model) fence(lock, session, owner string, withOwner bool) Result {
	l := m.locks[lock]
	switch {
	case !withOwner && l == nil:
		return Result{Null: true}
	case !withOwner:
		return Result{Int: l.token}
	case m.sessions[session] == nil:
		return Result{Err: ErrNoSession}
	case l == nil || l.holder != session || l.owner != owner:
		return Result{Err: ErrNotOwner}
	}
	return Result{Int: l.token}
}

func (m *model) nextDeadline() (int64, bool) {
	var d int64
	ok := false
	for _, s := range m.sessions {
		if !ok || s.deadline < d {
			d, ok = s.deadline, true
		}
	}
	for _, w := range m.waiters() {
		if w.timed && (!ok || w.deadline < d) {
			d, ok = w.deadline, true
		}
	}
	for _, k := range m.keys {
		if k.ttl && (!ok || k.deadline < d) {
			d, ok = k.deadline, true
		}
	}
	if !ok {
		return 0, false
	}
	return ms.Add(d, 1), true // a deadline takes effect 1 ms past it
}

func (m *model) sessionIDs() []string {
	ids := []string{}
	for id := range m.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *model) memberList() []Member {
	ms := []Member{}
	for _, x := range m.members {
		ms = append(ms, x)
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return ms
}

func (m *model) waitIDs() []uint64 {
	ids := []uint64{}
	for _, w := range m.waiters() {
		ids = append(ids, w.ids...)
	}
	slices.Sort(ids)
	return ids
}

// userSessions counts user's open sessions, by a scan (the State keeps a
// counter).
func (m *model) userSessions(user string) int {
	n := 0
	for _, s := range m.sessions {
		if s.user == user {
			n++
		}
	}
	return n
}
