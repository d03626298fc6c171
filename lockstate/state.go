package lockstate

import (
	"slices"

	"github.com/RaduBerinde/btreemap"

	"github.com/fenced/fenced/acl"
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/script"
)

// State is the replicated lock state. Apply (or Step, then Flush) and Load
// modify it and must not run concurrently with anything else; the reads
// (Records and Hash too) only read it, so they may run concurrently with one
// another.
type State struct {
	cfg   Config
	table *commands.Table // arity and names of the keyspace commands
	time  int64           // cluster time of the last applied entry
	wall  int64           // highest wall clock (Unix ms) of an applied entry
	// version is the cluster version (version.go); 0 until raised, which
	// is version 1.
	version int64
	// notifyFlags is notify-keyspace-events, Redis's NOTIFY_* bits
	// (notify.go); 0 = off.
	notifyFlags int

	sessions map[string]*session
	perUser  map[string]int   // open sessions per user (a session's user)
	locks    map[string]*lock // held locks only: a free lock has no record
	refs     map[string]*refs // per-session indexes, derived from the records
	memos    map[sessReq]*memo
	reqWaits map[sessReq]*waiter // queued FLOCKs that carry a REQ
	waitIDs  map[uint64]*waiter
	timers   timerHeap
	members  map[string]*Member       // cluster members, removed ones included
	users    map[string]*acl.User     // ACL users set through ACL SETUSER (users.go)
	kv       map[string]*kvKey        // string, hash and list keys (keys.go)
	scripts  map[string]*storedScript // cached scripts by SHA-1 (scripts.go)
	// evalOrder is the SHA-1s of the scripts cached by EVAL, oldest first.
	evalOrder []string
	libs      map[string]*library // function libraries by name (functions.go)
	fnIndex   map[string]*library // the library of each function, by lowercased name
	engine    *script.Engine

	// names indexes the names of kv and locks in SCAN's order (scan.go):
	// derived, never stored.
	names    *btreemap.BTreeMap[nameKey, struct{}]
	nameHash func(string) uint64 // NameHash; tests make names collide

	// Scratch of the Apply in progress.
	index uint64 // log index of the entry; the token of its grants
	// seeds counts the entry's random draws of sets (SPOP, SRANDMEMBER
	// inside the log): each takes a seed of its own (entrySeed).
	seeds  uint64
	now    int64  // cluster time of the entry
	unix   int64  // Unix ms of the entry: wall, or now in an entry without one
	user   string // the ACL user the entry acts for ("" = default)
	walled bool   // the entry carries a wall clock
	// dirty holds the keys of the records changed since the last Flush,
	// each with the step (entry count) that last changed it.
	dirty    map[string]uint64
	wakes    []Wake
	handoffs []string // locks released with waiters, to hand off at the end
	pushed   []string
	messages []Message
	buf      []byte
	// marks holds each record changed by the entry in progress (step
	// counts the entries), with its share of Used before the entry;
	// pending is the growth its DenyOOM commands admitted so far;
	// maxMemory is the entry's MaxMemory; headroom is what roomFor allows
	// past it, AllowOOMHeadroom while an allow-oom script runs (memory.go).
	step      uint64
	marks     []mark
	pending   int64
	maxMemory int64
	headroom  int64

	// The state's size (memory.go): Used, and each record's share of it,
	// kept in its object or, for the few records without one, in costs.
	used     int64
	costs    map[string]int64
	timeCost int64 // the time record's
	// ttlKeys counts the keys with a deadline (KeyspaceCounts), waiters
	// the queued FLOCKs (Waiters): kept as they change, rebuilt by Load,
	// so that the metrics never walk a large state.
	ttlKeys int
	waiters int
	// expired counts what the deadlines of the entry in progress ended
	// (Result.Expired).
	expired Expirations
	// unflushedBytes is UnflushedBytes.
	unflushedBytes int64

	plantTokens int64 // the planted MemoryTokens bug's counter, never stored

	mods            // mod indexes and tombstones, what WATCH compares (mods.go)
	track trackKeys // the keys the entry in progress changed (tracking.go)
}

// session is the record of an open session.
type session struct {
	id      string
	user    string // the ACL user that opened it; "" = default
	name    string
	ttl     int64
	created int64
	nextSeq uint64 // seq of the next memo, so memos evict in FIFO order
	timer   timer  // its deadline is the session's expiry
	cost    int64  // its record's share of Used (memory.go)
}

// lock is the record of a held lock. Its queue is kept in separate waiter
// records so that joining a long queue doesn't rewrite it.
type lock struct {
	name    string
	session string // holder
	owner   string
	count   int64  // reentrant holds, >= 1
	limit   int64  // reentrancy limit of this ownership; <= 0 = none
	token   int64  // log index of the entry that granted this ownership
	mod     uint64 // log index of the entry that last changed it, from version 3 (mods.go)
	queue   []*waiter
	cost    int64 // its record's share of Used (memory.go)
}

// waiter is a queued FLOCK. pos orders the queue: the log index at which it
// joined, so FIFO is log order.
type waiter struct {
	lock    *lock
	pos     uint64
	session string
	owner   string
	req     string
	limit   int64    // the LIMIT it asked with, for its ownership
	timed   bool     // WAIT > 0: timer holds the deadline
	waitIDs []uint64 // who to answer: the original FLOCK and its retries
	timer   timer
	cost    int64 // its record's share of Used (memory.go)
}

// memo is the remembered final answer to a request (session, req). There
// may be ReqMemory of them per session, so it keeps only what an answer
// needs rather than a whole Result.
type memo struct {
	session string
	req     string
	seq     uint64
	err     error
	null    bool
	int     int64
	cost    int64 // its record's share of Used (memory.go)
}

func (m *memo) result() Result { return Result{Err: m.err, Null: m.null, Int: m.int} }

// refs indexes what a session is involved in, so ending it touches only its
// own locks, waits and memos.
type refs struct {
	held    map[string]struct{} // lock names held by any of its owners
	waiting map[string]int      // lock name -> its queued FLOCKs there
	memos   []*memo             // ascending seq: the FIFO of remembered requests
}

type sessReq struct{ session, req string }

// New returns an empty State. Config fields <= 0 take DefaultConfig's value.
func New(cfg Config) *State { return newState(cfg, commands.New()) }

// newState is New with the command table given, which is only read, so
// that many States may share one (the exhaustive check makes millions).
func newState(cfg Config, table *commands.Table) *State {
	d := DefaultConfig()
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = d.MaxSessions
	}
	if cfg.MaxSessionsPerUser <= 0 {
		cfg.MaxSessionsPerUser = d.MaxSessionsPerUser
	}
	if cfg.MaxLocksPerSession <= 0 {
		cfg.MaxLocksPerSession = d.MaxLocksPerSession
	}
	if cfg.MaxWaitersPerLock <= 0 {
		cfg.MaxWaitersPerLock = d.MaxWaitersPerLock
	}
	if cfg.ReqMemory <= 0 {
		cfg.ReqMemory = d.ReqMemory
	}
	if cfg.MaxTombstones <= 0 {
		cfg.MaxTombstones = d.MaxTombstones
	}
	return &State{
		cfg:      cfg,
		table:    table,
		sessions: make(map[string]*session),
		perUser:  make(map[string]int),
		locks:    make(map[string]*lock),
		refs:     make(map[string]*refs),
		memos:    make(map[sessReq]*memo),
		reqWaits: make(map[sessReq]*waiter),
		waitIDs:  make(map[uint64]*waiter),
		members:  make(map[string]*Member),
		users:    make(map[string]*acl.User),
		dirty:    make(map[string]uint64),
		costs:    make(map[string]int64),
		kv:       make(map[string]*kvKey),
		names:    newNameIndex(),
		nameHash: NameHash,
		scripts:  make(map[string]*storedScript),
		mods:     newMods(),
		libs:     make(map[string]*library),
		fnIndex:  make(map[string]*library),
		// The limits are not configurable: a script must stop at the same
		// step on every replica.
		engine: script.NewEngine(script.DefaultLimits()),
	}
}

// Apply applies e, the entry at Raft log index index, and writes every record
// it changed to w (Set for new or changed records, Delete for removed ones),
// in ascending key order. Decided outcomes, errors included, are in the
// Result; the returned error is only a Writer error, after which the State
// no longer matches what was written and must be discarded.
//
// Indexes must increase from one call to the next: they are the tokens.
func (s *State) Apply(index uint64, e Entry, w Writer) (Result, error) {
	r := s.Step(index, e)
	return r, s.Flush(w)
}

// Step applies e like Apply but keeps the changed records to be written by
// the next Flush, so that a batch of entries writes each record it touched
// once, in its final form (the cluster time and a session used by several
// entries of the batch, say). After the Flush the storage holds what Apply
// entry by entry would have left.
func (s *State) Step(index uint64, e Entry) Result {
	s.index, s.user, s.seeds = index, e.User, 0
	s.maxMemory, s.pending, s.headroom = e.MaxMemory, 0, 0
	s.step++
	s.track.applying = true // a script's reads count only inside Apply (tracking.go)
	// Time never goes backwards: a new leader's clock, or a stale proposal,
	// cannot undo an expiry or stretch a deadline already passed.
	now := max(e.Time, s.time)
	s.now = now
	if now != s.time {
		s.time = now
		s.markDirty(timeKey, nil)
	}
	// The wall clock never goes backwards either, whichever leader's clock
	// stamped the entry. An entry from before wall clocks has its absolute
	// times in cluster time.
	s.unix, s.walled = now, e.Wall != 0
	if s.walled {
		if e.Wall > s.wall {
			s.wall = e.Wall
			s.markDirty(timeKey, nil)
		}
		s.unix = s.wall
	}
	s.expire(now)

	var r Result
	switch e.Op {
	case OpTick:
	case OpSessionOpen:
		r = s.openSession(e, now)
	case OpSessionHeartbeat:
		r = s.heartbeat(e, now)
	case OpSessionKill:
		r = s.killSession(e)
	case OpFlock:
		r = s.flock(e, now)
	case OpFunlock:
		r = s.funlock(e, now)
	case OpCancelWait:
		r = s.cancelWait(e)
	case OpForceUnlock:
		r = s.forceUnlock(e)
	case OpCancelWaits:
		r = s.cancelWaits(e)
	case OpNodeJoin:
		r = s.joinNode(e)
	case OpNodeRemove:
		r = s.removeNode(e)
	case OpExec:
		r = Result{Reply: s.call(e.Args, now, execWrite)}
	case OpACLSetUser:
		r = s.setUser(e)
	case OpACLDelUser:
		r = s.delUsers(e)
	case OpSetVersion:
		r = s.setVersion(e)
	case OpMulti:
		r = s.multi(e, now)
	default:
		r = Result{Err: ErrBadEntry}
	}
	s.handOffs()
	s.stampMods()
	s.account()
	r.Wakes, r.Pushed, r.Messages, r.Expired = s.wakes, s.pushed, s.messages, s.expired
	r.Changes = s.takeChanges(&e)
	s.wakes, s.pushed, s.messages, s.expired = nil, nil, nil, Expirations{}
	return r
}

// Time returns the cluster time of the last applied entry (0 when empty).
func (s *State) Time() int64 { return s.time }

// Wall returns the highest wall clock, Unix ms, of the applied entries (0
// when none carried one).
func (s *State) Wall() int64 { return s.wall }

// NextDeadline returns the cluster time, in ms, at which the earliest
// pending session, wait or key deadline takes effect (1 ms past it, see expire):
// the time at which the leader should propose a tick.
func (s *State) NextDeadline() (int64, bool) {
	if len(s.timers) == 0 {
		return 0, false
	}
	return ms.Add(s.timers[0].deadline, 1), true
}

// markDirty records that the record at key changed: the next Flush writes
// it, and the end of the entry counts its new size. cost is the share of
// Used kept by the object that held the record when the entry began (or
// the new object, if none did), nil for a record kept in s.costs. It may be
// called after the change, the object already out of the maps.
func (s *State) markDirty(key string, cost *int64) {
	s.touch(key) // every key write passes here: WATCH's mod indexes (mods.go)
	step, was := s.dirty[key]
	if was && step == s.step {
		return // counted from its first change in this entry
	}
	s.dirty[key] = s.step
	s.noteChange(key) // once per key and entry: what CLIENT TRACKING invalidates
	m := mark{key: key, fresh: !was}
	switch {
	case cost != nil:
		m.before = *cost
	case key == timeKey:
		m.before = s.timeCost
	default:
		m.before = s.costs[key]
	}
	s.marks = append(s.marks, m)
}

// mark is a record changed by the entry in progress and its share of Used
// before the entry; fresh if it was not changed since the last Flush.
type mark struct {
	key    string
	before int64
	fresh  bool
}

// Unflushed is the number of records changed since the last Flush: what
// the next Flush will write.
func (s *State) Unflushed() int { return len(s.dirty) }

// Flush writes the records changed since the last Flush, in key order, so
// that the Writer sees the same sequence on every replica that flushes after
// the same entries. A Writer error leaves the State ahead of the storage: it
// must then be discarded.
func (s *State) Flush(w Writer) error {
	keys := make([]string, 0, len(s.dirty))
	for k := range s.dirty {
		keys = append(keys, k)
	}
	clear(s.dirty)
	s.unflushedBytes = 0
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := s.lookup(s.buf[:0], k)
		s.buf = v
		var err error
		if ok {
			err = w.Set([]byte(k), v)
		} else {
			err = w.Delete([]byte(k))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// refsOf returns the indexes of session id, creating them.
func (s *State) refsOf(id string) *refs {
	r := s.refs[id]
	if r == nil {
		r = &refs{held: make(map[string]struct{}), waiting: make(map[string]int)}
		s.refs[id] = r
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
