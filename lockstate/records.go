package lockstate

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sort"
	"strings"

	"github.com/fenced/fenced/acl"
)

// Record layout. Keys are relative; raftstore prefixes them.
//
//	k/<key>                       string, hash or list key: type, created index, deadline, value, mod index from version 3 (keys.go)
//	l/<lock>                      held lock: holder session, owner, count, limit, token, mod index from version 3
//	m/time                        cluster time of the last applied entry, then the highest wall clock (Unix ms) if any
//	m/version                     the cluster version, once above 1 (version.go)
//	n/<id>                        cluster member: raft address, client address, removed, then its binary's version if announced
//	r/<session>\x00<seq:8 BE>     remembered answer of a request: req, result
//	m/horizon                     the highest index of a dropped tombstone, once one was (mods.go)
//	s/<session>                   open session: name, ttl, created, deadline, next memo seq, user if not default
//	t/<name>                      tombstone of a deleted key or lock: deleting index, created index of the key (mods.go)
//	u/<name>                      ACL user: on, nopass, password hashes, key patterns, channel patterns, command rules
//	w/<lock>\x00<pos:8 BE>        queued FLOCK: session, owner, req, limit, deadline, wait ids
//	f/<library>                   function library: code, its functions' names, flags, descriptions (functions.go)
//	x/<sha1>                      cached script: cached by EVAL or SCRIPT LOAD, index, source (scripts.go)
//
// Memos and waiters are records of their own so that answering a request or
// joining a queue writes one small record, not its session's or its lock's
// whole list. Their keys end in a fixed-width big-endian number, so they sort
// in FIFO order within their session or lock, and the name is what precedes
// the last 9 bytes (names may contain any byte). Waiter keys sort after lock
// keys, so Load in key order meets each lock before its queue.
//
// Every value starts with recordVersion. Values are canonical: the same
// state always encodes to the same bytes, which is what makes Hash agree.
const (
	recordVersion = 1

	prefixLock    = "l/"
	prefixMember  = "n/"
	prefixMemo    = "r/"
	prefixSession = "s/"
	prefixUser    = "u/"
	prefixWaiter  = "w/"
	timeKey       = "m/time"
)

func sessionKey(id string) string { return prefixSession + id }
func lockKey(name string) string  { return prefixLock + name }
func memberKey(id string) string  { return prefixMember + id }
func userKey(name string) string  { return prefixUser + name }
func waiterKey(l string, p uint64) string {
	return seqKey(prefixWaiter, l, p)
}
func memoKey(session string, seq uint64) string {
	return seqKey(prefixMemo, session, seq)
}

func seqKey(prefix, name string, n uint64) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(name) + 9)
	b.WriteString(prefix)
	b.WriteString(name)
	b.WriteByte(0)
	var num [8]byte
	binary.BigEndian.PutUint64(num[:], n)
	b.Write(num[:])
	return b.String()
}

// splitSeqKey parses the part of a seqKey after its prefix.
func splitSeqKey(rest string) (string, uint64, bool) {
	if len(rest) < 9 || rest[len(rest)-9] != 0 {
		return "", 0, false
	}
	return rest[:len(rest)-9], binary.BigEndian.Uint64([]byte(rest[len(rest)-8:])), true
}

// The error codes of memorized results and of encoded Results. Part of the
// record and forwarding formats: never reuse a code. 0 is no error.
func errCode(err error) byte {
	switch err {
	case ErrNoSession:
		return 1
	case ErrNotOwner:
		return 2
	case ErrLimit:
		return 3
	case ErrStaleFence:
		return 4
	case ErrCancelled:
		return 5
	case ErrTooManySessions:
		return 6
	case ErrTooManyLocks:
		return 7
	case ErrTooManyWaiters:
		return 8
	case ErrSessionExists:
		return 9
	case ErrBadEntry:
		return 10
	case ErrNodeRemoved:
		return 11
	case ErrBadResult:
		return 12
	case ErrWrongType:
		return 13
	case ErrTooManyUserSessions:
		return 14
	case ErrOOM:
		return 15
	}
	return 0
}

func codeErr(c byte) error {
	switch c {
	case 1:
		return ErrNoSession
	case 2:
		return ErrNotOwner
	case 3:
		return ErrLimit
	case 4:
		return ErrStaleFence
	case 5:
		return ErrCancelled
	case 6:
		return ErrTooManySessions
	case 7:
		return ErrTooManyLocks
	case 8:
		return ErrTooManyWaiters
	case 9:
		return ErrSessionExists
	case 10:
		return ErrBadEntry
	case 11:
		return ErrNodeRemoved
	case 12:
		return ErrBadResult
	case 13:
		return ErrWrongType
	case 14:
		return ErrTooManyUserSessions
	case 15:
		return ErrOOM
	}
	return nil
}

// Kinds of memorized result.
const (
	memoInt  = 0
	memoNull = 1
	memoErr  = 2
)

func appendSession(b []byte, ss *session) []byte {
	b = append(b, recordVersion)
	b = appendString(b, ss.name)
	b = appendVarint(b, ss.ttl)
	b = appendVarint(b, ss.created)
	b = appendVarint(b, ss.timer.deadline)
	b = appendUvarint(b, ss.nextSeq)
	if ss.user != "" { // absent for the default user, as before users existed
		b = appendString(b, ss.user)
	}
	return b
}

func appendUser(b []byte, u *acl.User) []byte {
	b = append(b, recordVersion)
	b = appendBool(b, u.On)
	b = appendBool(b, u.NoPass)
	for _, l := range [][]string{u.Passwords, u.Keys, u.Channels, u.Commands} {
		b = appendUvarint(b, uint64(len(l)))
		for _, x := range l {
			b = appendString(b, x)
		}
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendLock(b []byte, l *lock) []byte {
	b = append(b, recordVersion)
	b = appendString(b, l.session)
	b = appendString(b, l.owner)
	b = appendVarint(b, l.count)
	b = appendVarint(b, l.limit)
	b = appendVarint(b, l.token)
	if l.mod != 0 { // from cluster version 3 (mods.go)
		b = appendUvarint(b, l.mod)
	}
	return b
}

func appendWaiter(b []byte, w *waiter) []byte {
	b = append(b, recordVersion)
	b = appendString(b, w.session)
	b = appendString(b, w.owner)
	b = appendString(b, w.req)
	b = appendVarint(b, w.limit)
	if w.timed {
		b = append(b, 1)
		b = appendVarint(b, w.timer.deadline)
	} else {
		b = append(b, 0)
	}
	b = appendUvarint(b, uint64(len(w.waitIDs)))
	for _, id := range w.waitIDs {
		b = appendUvarint(b, id)
	}
	return b
}

// Member flags.
const (
	memberLive    = 0
	memberRemoved = 1
)

func appendMember(b []byte, m *Member) []byte {
	b = append(b, recordVersion)
	b = appendString(b, m.RaftAddr)
	b = appendString(b, m.Addr)
	if m.Removed {
		b = append(b, memberRemoved)
	} else {
		b = append(b, memberLive)
	}
	if m.Version != 0 { // absent in records from before the version gate
		b = appendVarint(b, m.Version)
	}
	return b
}

func appendMemo(b []byte, m *memo) []byte {
	b = append(b, recordVersion)
	b = appendString(b, m.req)
	switch {
	case m.err != nil:
		return append(b, memoErr, errCode(m.err))
	case m.null:
		return append(b, memoNull)
	}
	b = append(b, memoInt)
	return appendVarint(b, m.int)
}

// lookup appends the current value of the record at key to b, and reports
// whether the record exists. It only reads the State.
func (s *State) lookup(b []byte, key string) ([]byte, bool) {
	switch {
	case key == versionKey:
		if s.version == 0 {
			return b, false
		}
		b = appendVarint(append(b, recordVersion), s.version)
	case key == horizonKey:
		if s.horizon == 0 {
			return b, false
		}
		b = appendUvarint(append(b, recordVersion), s.horizon)
	case strings.HasPrefix(key, prefixTomb):
		t := s.tombs[key[len(prefixTomb):]]
		if t == nil {
			return b, false
		}
		b = appendTomb(b, t)
	case key == notifyKey:
		return s.appendNotify(b)
	case key == timeKey:
		if s.time == 0 && s.wall == 0 {
			return b, false
		}
		b = appendVarint(append(b, recordVersion), s.time)
		if s.wall != 0 { // absent in states from before wall clocks
			b = appendVarint(b, s.wall)
		}
	case strings.HasPrefix(key, prefixSession):
		ss := s.sessions[key[len(prefixSession):]]
		if ss == nil {
			return b, false
		}
		b = appendSession(b, ss)
	case strings.HasPrefix(key, prefixScript):
		sc := s.scripts[key[len(prefixScript):]]
		if sc == nil {
			return b, false
		}
		b = appendScript(b, sc)
	case strings.HasPrefix(key, prefixLibrary):
		lib := s.libs[key[len(prefixLibrary):]]
		if lib == nil {
			return b, false
		}
		b = appendLibrary(b, lib)
	case strings.HasPrefix(key, prefixKV):
		k := s.kv[key[len(prefixKV):]]
		if k == nil {
			return b, false
		}
		b = appendKV(b, k)
	case strings.HasPrefix(key, prefixLock):
		l := s.locks[key[len(prefixLock):]]
		if l == nil {
			return b, false
		}
		b = appendLock(b, l)
	case strings.HasPrefix(key, prefixWaiter):
		w := s.findWaiter(key[len(prefixWaiter):])
		if w == nil {
			return b, false
		}
		b = appendWaiter(b, w)
	case strings.HasPrefix(key, prefixUser):
		u := s.users[key[len(prefixUser):]]
		if u == nil {
			return b, false
		}
		b = appendUser(b, u)
	case strings.HasPrefix(key, prefixMember):
		m := s.members[key[len(prefixMember):]]
		if m == nil {
			return b, false
		}
		b = appendMember(b, m)
	case strings.HasPrefix(key, prefixMemo):
		m := s.findMemo(key[len(prefixMemo):])
		if m == nil {
			return b, false
		}
		b = appendMemo(b, m)
	default:
		return b, false
	}
	return b, true
}

func (s *State) findWaiter(rest string) *waiter {
	name, pos, ok := splitSeqKey(rest)
	if !ok {
		return nil
	}
	l := s.locks[name]
	if l == nil {
		return nil
	}
	i := sort.Search(len(l.queue), func(i int) bool { return l.queue[i].pos >= pos })
	if i < len(l.queue) && l.queue[i].pos == pos {
		return l.queue[i]
	}
	return nil
}

func (s *State) findMemo(rest string) *memo {
	id, seq, ok := splitSeqKey(rest)
	if !ok {
		return nil
	}
	rf := s.refs[id]
	if rf == nil {
		return nil
	}
	i := sort.Search(len(rf.memos), func(i int) bool { return rf.memos[i].seq >= seq })
	if i < len(rf.memos) && rf.memos[i].seq == seq {
		return rf.memos[i]
	}
	return nil
}

// Records calls fn for every record in ascending key order, with exactly the
// bytes Apply wrote. key and value are valid only during the call. Records
// and Hash only read the State, like the other reads.
func (s *State) Records(fn func(key, value []byte) error) error {
	var buf []byte
	for _, k := range s.keys() {
		v, _ := s.lookup(buf[:0], k)
		buf = v
		if err := fn([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}

// keys returns the keys of all records, sorted.
func (s *State) keys() []string {
	var keys []string
	if s.time != 0 || s.wall != 0 {
		keys = append(keys, timeKey)
	}
	if s.version != 0 {
		keys = append(keys, versionKey)
	}
	if s.horizon != 0 {
		keys = append(keys, horizonKey)
	}
	for name := range s.tombs {
		keys = append(keys, tombRecKey(name))
	}
	if s.notifyFlags != 0 {
		keys = append(keys, notifyKey)
	}
	for id := range s.sessions {
		keys = append(keys, sessionKey(id))
	}
	for name, l := range s.locks {
		keys = append(keys, lockKey(name))
		for _, w := range l.queue {
			keys = append(keys, waiterKey(name, w.pos))
		}
	}
	for id := range s.members {
		keys = append(keys, memberKey(id))
	}
	for name := range s.users {
		keys = append(keys, userKey(name))
	}
	for name := range s.kv {
		keys = append(keys, kvRecKey(name))
	}
	for sha := range s.scripts {
		keys = append(keys, scriptKey(sha))
	}
	for name := range s.libs {
		keys = append(keys, libraryKey(name))
	}
	for id, rf := range s.refs {
		for _, m := range rf.memos {
			keys = append(keys, memoKey(id, m.seq))
		}
	}
	slices.Sort(keys)
	return keys
}

// Hash is a SHA-256 over Records (each key and value length-prefixed): equal
// hashes mean equal states.
func (s *State) Hash() [32]byte {
	h := sha256.New()
	var n []byte
	_ = s.Records(func(k, v []byte) error {
		n = binary.AppendUvarint(n[:0], uint64(len(k)))
		h.Write(n)
		h.Write(k)
		n = binary.AppendUvarint(n[:0], uint64(len(v)))
		h.Write(n)
		h.Write(v)
		return nil
	})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
