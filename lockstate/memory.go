package lockstate

import "strings"

// The state's size, for --maxmemory. Every replica must refuse the same
// entries, so the size is not the process's memory (which depends on the
// allocator, the garbage collector and what else the node holds) but a
// count derived from the records alone: each record counts its key, its
// value and recordOverhead. A string, hash or list key counts kvHeader and
// the elements' share of its record (kvKey.size) rather than its encoded
// length, so that a push onto a long list does not encode the whole list to
// be counted. The count is a function of the records, so equal hashes mean
// equal counts; it is kept up to date entry by entry (account), and Load
// rebuilds it.
//
// An entry whose MaxMemory is set refuses, with ErrOOM, any command that
// would grow the count past it: SESSION.OPEN, FLOCK of a lock not already
// held by the same owner, the keyspace's DenyOOM commands (inside scripts
// too), and caching a new script. Reads, deletes, releases, SESSION.KILL,
// heartbeats and expiry are never refused, so a full state can always be
// emptied. The growth a command is charged (roomFor) is an upper estimate
// from its arguments, since it is decided before the command runs.
//
// Redis lets a script with the allow-oom flag write past maxmemory, and
// caches the script of an EVAL whatever the memory (EVAL is not denyoom).
// fenced does both within AllowOOMHeadroom past MaxMemory (cluster version
// 3): such a write or caching is refused only where it would grow the state
// past MaxMemory + AllowOOMHeadroom, so the state stays bounded, and every
// replica decides alike, since the flag is in the script's text and
// MaxMemory in the entry. Every other growth still stops at MaxMemory, so
// the headroom is left for the scripts that declare they need it.

const (
	// recordOverhead is what each record counts besides its bytes: about
	// what its object, its map entries and its index entries take in
	// memory, so that many small records count for what they cost.
	recordOverhead = 96
	// kvHeader is a key record's count besides its name and elements: its
	// type, creation index and deadline.
	kvHeader = 24
	// AllowOOMHeadroom is how far past MaxMemory an allow-oom script or
	// function may write, and EVAL may cache its script: 1 MiB.
	AllowOOMHeadroom = 1 << 20
)

// Used returns the state's size: the count MaxMemory bounds.
func (s *State) Used() int64 { return s.used }

// cost returns the count of the record at key as the State now holds it,
// and a pointer to where its object keeps it (nil for the records counted
// in s.costs). cost is 0 for a record that does not exist.
func (s *State) cost(key string) (int64, *int64) {
	var slot *int64
	v := s.buf[:0]
	switch {
	case strings.HasPrefix(key, prefixKV):
		k := s.kv[key[len(prefixKV):]]
		if k == nil {
			return 0, nil
		}
		n := int64(len(key) + kvHeader + recordOverhead)
		if k.mod != 0 {
			n += modBytes
		}
		if k.typ == kvString {
			return n + int64(len(k.str)), &k.cost
		}
		return n + int64(k.size), &k.cost
	// The numerous kinds keep their count in their object, found once.
	case strings.HasPrefix(key, prefixSession):
		ss := s.sessions[key[len(prefixSession):]]
		if ss == nil {
			return 0, nil
		}
		v, slot = appendSession(v, ss), &ss.cost
	case strings.HasPrefix(key, prefixLock):
		l := s.locks[key[len(prefixLock):]]
		if l == nil {
			return 0, nil
		}
		v, slot = appendLock(v, l), &l.cost
	case strings.HasPrefix(key, prefixWaiter):
		w := s.findWaiter(key[len(prefixWaiter):])
		if w == nil {
			return 0, nil
		}
		v, slot = appendWaiter(v, w), &w.cost
	case strings.HasPrefix(key, prefixMemo):
		m := s.findMemo(key[len(prefixMemo):])
		if m == nil {
			return 0, nil
		}
		v, slot = appendMemo(v, m), &m.cost
	case key == timeKey:
		var ok bool
		if v, ok = s.lookup(v, key); !ok {
			return 0, &s.timeCost
		}
		slot = &s.timeCost
	default:
		var ok bool
		if v, ok = s.lookup(v, key); !ok {
			return 0, nil
		}
	}
	s.buf = v
	return int64(len(key) + len(v) + recordOverhead), slot
}

// count sets the share of Used kept for the record at key to what it now
// is, and returns it.
func (s *State) count(key string) int64 {
	n, slot := s.cost(key)
	switch {
	case slot != nil:
		*slot = n
	case n > 0:
		s.costs[key] = n
	default:
		delete(s.costs, key)
	}
	return n
}

// account brings Used up to date with the records the entry changed.
func (s *State) account() {
	for _, m := range s.marks {
		n := s.count(m.key)
		s.used += n - m.before
		if m.fresh {
			s.unflushedBytes += n
		}
	}
	clear(s.marks) // let go of the keys
	s.marks = s.marks[:0]
}

// UnflushedBytes is about how many bytes the next Flush writes: each record
// changed since the last Flush, at its count after its first change.
// raftstore writes back sooner when it is large.
func (s *State) UnflushedBytes() int64 { return s.unflushedBytes }

// roomFor reports whether the entry may grow the state by about n more
// bytes (besides what its earlier commands were admitted for), and if so
// admits them: within MaxMemory, or within its headroom while an allow-oom
// script runs.
func (s *State) roomFor(n int64) bool { return s.roomWithin(n, s.headroom) }

// roomWithin is roomFor with headroom bytes allowed past MaxMemory.
func (s *State) roomWithin(n, headroom int64) bool {
	if s.maxMemory <= 0 {
		return true
	}
	n += recordOverhead
	if s.used+s.pending+n > s.maxMemory+headroom {
		return false
	}
	s.pending += n
	return true
}

// argBytes is the growth a command's arguments can bring, at most: each
// argument and its length, and room for a number a command makes (INCR).
func argBytes(args [][]byte) int64 {
	n := int64(32)
	for _, a := range args[1:] {
		n += int64(len(a)) + 16
	}
	return n
}
