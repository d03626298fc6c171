package lockstate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fenced/fenced/acl"
)

// Load adds one persisted record, as written through Writer, to a State that
// holds no entries applied yet. It is called in key order (at start-up and
// after a snapshot restore) and rebuilds every index, so that the loaded
// State behaves and hashes exactly as the one that wrote the records.
func (s *State) Load(key, value []byte) error {
	k := string(key)
	if err := s.load(k, value); err != nil {
		return fmt.Errorf("lockstate: record %q: %w", key, err)
	}
	s.used += s.count(k)
	return nil
}

var errLoadOrder = errors.New("record out of key order or duplicated")

func (s *State) load(k string, value []byte) error {
	r := reader{b: value}
	if v := r.byte(); r.err == nil && v != recordVersion {
		return fmt.Errorf("unknown record version %d", v)
	}
	switch {
	case k == timeKey:
		t, wall := r.varint(), int64(0)
		if r.err == nil && len(r.b) > 0 {
			if wall = r.varint(); r.err == nil && wall == 0 {
				return errors.New("zero wall time is not stored")
			}
		}
		if err := r.done(); err != nil {
			return err
		}
		if t == 0 && wall == 0 {
			return errors.New("zero time is not stored")
		}
		s.time, s.wall = t, wall
	case k == versionKey:
		v := r.varint()
		if err := r.done(); err != nil {
			return err
		}
		switch {
		case v <= 1:
			return fmt.Errorf("cluster version %d is not stored", v)
		case v > s.maxVersion():
			return fmt.Errorf("%w: the cluster runs version %d and this binary knows up to %d; run a newer release", ErrVersionUnknown, v, s.maxVersion())
		}
		s.version = v
	case k == notifyKey:
		return s.loadNotify(&r)
	case strings.HasPrefix(k, prefixSession):
		return s.loadSession(k[len(prefixSession):], &r)
	case strings.HasPrefix(k, prefixKV):
		return s.loadKV(k[len(prefixKV):], &r)
	case strings.HasPrefix(k, prefixScript):
		return s.loadScript(k[len(prefixScript):], &r)
	case strings.HasPrefix(k, prefixLibrary):
		return s.loadLibrary(k[len(prefixLibrary):], &r)
	case strings.HasPrefix(k, prefixLock):
		return s.loadLock(k[len(prefixLock):], &r)
	case strings.HasPrefix(k, prefixWaiter):
		return s.loadWaiter(k[len(prefixWaiter):], &r)
	case strings.HasPrefix(k, prefixMember):
		return s.loadMember(k[len(prefixMember):], &r)
	case strings.HasPrefix(k, prefixUser):
		return s.loadUser(k[len(prefixUser):], &r)
	case strings.HasPrefix(k, prefixMemo):
		return s.loadMemo(k[len(prefixMemo):], &r)
	case strings.HasPrefix(k, prefixTomb):
		return s.loadTomb(k[len(prefixTomb):], &r)
	case k == horizonKey:
		return s.loadHorizon(&r)
	default:
		return errors.New("unknown key")
	}
	return nil
}

func (s *State) loadSession(id string, r *reader) error {
	ss := &session{id: id, name: r.str(), ttl: r.varint(), created: r.varint()}
	deadline := r.varint()
	ss.nextSeq = r.uvarint()
	if r.err == nil && len(r.b) > 0 {
		if ss.user = r.str(); r.err == nil && ss.user == "" {
			return errors.New("the default user is not stored")
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	if s.sessions[id] != nil {
		return errLoadOrder
	}
	ss.timer.sess = ss
	s.sessions[id] = ss
	s.perUser[ss.user]++
	s.schedule(&ss.timer, deadline)
	return nil
}

func (s *State) loadLock(name string, r *reader) error {
	l := &lock{name: name, session: r.str(), owner: r.str(), count: r.varint(), limit: r.varint(), token: r.varint()}
	l.mod = s.loadMod(r)
	if err := r.done(); err != nil {
		return err
	}
	if l.count < 1 {
		return errors.New("a held lock needs a count >= 1")
	}
	if s.locks[name] != nil {
		return errLoadOrder
	}
	if s.kv[name] != nil {
		return errors.New("a held lock and a key of the same name")
	}
	s.locks[name] = l
	s.indexName(name)
	s.refsOf(l.session).held[name] = struct{}{}
	return nil
}

func (s *State) loadWaiter(rest string, r *reader) error {
	name, pos, ok := splitSeqKey(rest)
	if !ok {
		return errors.New("malformed waiter key")
	}
	w := &waiter{pos: pos, session: r.str(), owner: r.str(), req: r.str(), limit: r.varint()}
	var deadline int64
	switch r.byte() {
	case 0:
	case 1:
		w.timed = true
		deadline = r.varint()
	default:
		r.fail(errors.New("bad deadline flag"))
	}
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		w.waitIDs = append(w.waitIDs, r.uvarint())
	}
	if err := r.done(); err != nil {
		return err
	}
	l := s.locks[name]
	if l == nil {
		return errors.New("waiter of a lock that is not held")
	}
	if q := l.queue; len(q) > 0 && q[len(q)-1].pos >= pos {
		return errLoadOrder
	}
	for i, id := range w.waitIDs {
		if id == 0 || s.waitIDs[id] != nil || slices.Contains(w.waitIDs[:i], id) {
			return fmt.Errorf("wait id %d zero or in use", id)
		}
	}
	k := sessReq{w.session, w.req}
	if w.req != "" && s.reqWaits[k] != nil {
		return errors.New("two waiters for one request")
	}
	w.lock = l
	w.timer.wait = w
	l.queue = append(l.queue, w)
	s.waiters++
	for _, id := range w.waitIDs {
		s.waitIDs[id] = w
	}
	if w.req != "" {
		s.reqWaits[k] = w
	}
	if w.timed {
		s.schedule(&w.timer, deadline)
	}
	s.refsOf(w.session).waiting[name]++
	return nil
}

func (s *State) loadMemo(rest string, r *reader) error {
	id, seq, ok := splitSeqKey(rest)
	if !ok {
		return errors.New("malformed memo key")
	}
	m := &memo{session: id, seq: seq, req: r.str()}
	switch r.byte() {
	case memoInt:
		m.int = r.varint()
	case memoNull:
		m.null = true
	case memoErr:
		if m.err = codeErr(r.byte()); m.err == nil && r.err == nil {
			r.fail(errors.New("unknown error code"))
		}
	default:
		r.fail(errors.New("bad result kind"))
	}
	if err := r.done(); err != nil {
		return err
	}
	if m.req == "" {
		return errors.New("memo without a request id")
	}
	k := sessReq{id, m.req}
	if s.memos[k] != nil {
		return errors.New("two memos for one request")
	}
	rf := s.refsOf(id)
	if n := len(rf.memos); n > 0 && rf.memos[n-1].seq >= seq {
		return errLoadOrder
	}
	rf.memos = append(rf.memos, m)
	s.memos[k] = m
	return nil
}

func (s *State) loadMember(id string, r *reader) error {
	m := &Member{ID: id, RaftAddr: r.str(), Addr: r.str()}
	switch r.byte() {
	case memberLive:
	case memberRemoved:
		m.Removed = true
	default:
		r.fail(errors.New("bad member flag"))
	}
	if r.err == nil && len(r.b) > 0 {
		if m.Version = r.varint(); r.err == nil && m.Version <= 0 {
			return errors.New("member version must be positive when stored")
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	if id == "" {
		return errors.New("member without an id")
	}
	if !m.Removed && (m.RaftAddr == "" || m.Addr == "") {
		return errors.New("live member without its addresses")
	}
	if s.members[id] != nil {
		return errLoadOrder
	}
	s.members[id] = m
	return nil
}

func (s *State) loadUser(name string, r *reader) error {
	u := &acl.User{Name: name, On: r.bool(), NoPass: r.bool()}
	for _, l := range []*[]string{&u.Passwords, &u.Keys, &u.Channels, &u.Commands} {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.fail(errLength)
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			*l = append(*l, r.str())
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	if name == "" || s.users[name] != nil {
		return errLoadOrder
	}
	// Only what Apply makes is accepted, so that a loaded state hashes and
	// encodes as the one it came from.
	if !slices.IsSorted(u.Passwords) || len(slices.Compact(slices.Clone(u.Passwords))) != len(u.Passwords) {
		return errors.New("user passwords not sorted and unique")
	}
	s.users[name] = u
	return nil
}
