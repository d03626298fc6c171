package lockstate

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/RaduBerinde/btreemap"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/reply"
)

// SCAN's cursor, and how KEYS, SCAN and SESSION.LIST read a large state
// without holding up Apply.
//
// The name index (State.names) holds every key and held lock name, ordered
// by (NameHash(name), name). NameHash is the first 8 bytes of the name's
// SHA-256, so it depends on the name alone: every replica, and every leader
// after a failover, orders the names alike.
//
// A SCAN cursor c is a position in hash space: "every name whose hash is
// below c has been covered". A call visits the names with hash >= c in
// order, COUNT of them (the hint), then also every further name with the
// same hash as the last one visited, and answers the hash after that last
// one as the next cursor (0 once the end of hash space is reached: 0 is
// never the next cursor of a call with more to visit, since the next
// cursor is a hash plus one). So the calls of one iteration cover disjoint
// intervals [c0, c1), [c1, c2), … that together make all of [0, 2^64), and
// a name present from the first call to the last has one fixed hash, lies in
// exactly one interval, and is returned by the call that covers it: keys
// added or deleted between calls, on whatever node, cannot make it skipped.
// (It is even returned only once, unless the client restarts; Redis allows
// repeats, fenced has none.) The tail of equal hashes is what keeps this
// true when two names collide; with a cryptographic hash such a tail is a
// name or two, however the names were chosen, so a call's work stays close
// to COUNT. Any 64-bit number is a valid cursor, as in Redis.
//
// The same walk, in steps of scanStep names with the state lock released
// between them (Scan.Step; raftstore.Node.ReadSteps), serves KEYS and a
// client's SCAN, so applying an entry waits for at most one step, never for
// a whole scan: see Scan.

// nameKey orders the name index.
type nameKey struct {
	hash uint64
	name string
}

func cmpNameKey(a, b nameKey) int {
	if c := cmp.Compare(a.hash, b.hash); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func newNameIndex() *btreemap.BTreeMap[nameKey, struct{}] {
	return btreemap.New[nameKey, struct{}](32, cmpNameKey)
}

// NameHash is a name's place in SCAN's order.
func NameHash(name string) uint64 {
	h := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(h[:8])
}

// indexName and unindexName keep the name index equal to the names of
// s.kv and s.locks: every insertion into one of them calls indexName,
// every removal unindexName.
func (s *State) indexName(name string) {
	s.names.ReplaceOrInsert(nameKey{s.nameHash(name), name}, struct{}{})
}

func (s *State) unindexName(name string) {
	s.names.Delete(nameKey{s.nameHash(name), name})
}

// scanStep is how many names one step of a Scan visits under the state
// lock: a few hundred microseconds of work at most, whatever the COUNT.
const scanStep = 1024

// Scan is one SCAN call, or a whole KEYS, run in bounded steps. Step visits
// names under the caller's read lock of the state; Match and the reply need
// no lock. Keys whose deadline is before now are skipped, as KEYS and SCAN
// never show an expired key.
//
// For KEYS (Budget < 0) the steps walk the whole hash space; the state may
// change between them. What is kept: every key present for the whole call
// is returned exactly once, every key returned was present (live at now)
// when its step ran, and the answer is sorted, as before. Redis's KEYS is
// one atomic snapshot; fenced's differs only for keys created or deleted
// while the call runs, which a client could not tell apart from a call
// made a moment earlier or later for each of them.
type Scan struct {
	Cursor  uint64 // where the next step starts
	Budget  int64  // names left to visit (COUNT); < 0 = all (KEYS)
	Pattern string // MATCH; "" = any
	Type    string // TYPE, lower case; "" = any
	Done    bool   // hash space is exhausted
	Keys    bool   // a KEYS: sort the answer
	found   []string
	// legacy: a script's SCAN below cluster version 3, where an empty
	// name matched every all-star pattern (see State.keyMatch).
	legacy bool
}

// NewScan parses SCAN's arguments (a[0] is the name).
func NewScan(a [][]byte) (*Scan, error) {
	r, err := commands.ParseScan(a)
	if err != nil {
		return nil, err
	}
	sc := &Scan{Cursor: r.Cursor, Budget: r.Count, Type: strings.ToLower(r.Type)}
	if r.Match && r.Pattern != "*" {
		sc.Pattern = r.Pattern
	}
	return sc, nil
}

// NewKeysScan is KEYS pattern as a Scan.
func NewKeysScan(pattern string) *Scan {
	sc := &Scan{Budget: -1, Keys: true}
	if pattern != "*" {
		sc.Pattern = pattern
	}
	return sc
}

// Step visits up to scanStep names of s (under the caller's read lock) and
// reports whether the scan is over. Names are only collected here; the
// pattern is matched by Finish, outside the lock (a glob over a long name
// is the slow part of KEYS).
func (sc *Scan) Step(s *State, now int64) (done bool) {
	if sc.Done || sc.Budget == 0 {
		return true
	}
	n := int64(scanStep)
	if sc.Budget > 0 && sc.Budget < n {
		n = sc.Budget
	}
	visited := int64(0)
	var last uint64
	stopped := false
	s.names.AscendFunc(btreemap.GE(nameKey{hash: sc.Cursor}), btreemap.Max[nameKey](), func(k nameKey, _ struct{}) bool {
		if visited >= n && k.hash != last {
			stopped = true
			return false
		}
		visited++
		last = k.hash
		if t := s.KeyType(k.name, now); t == "none" || (sc.Type != "" && t != sc.Type) {
			return true // expired, or not of the TYPE asked for
		}
		sc.found = append(sc.found, k.name)
		return true
	})
	if stopped {
		sc.Cursor = last + 1 // a name with a higher hash is next: last < 2^64-1
	} else {
		sc.Done, sc.Cursor = true, 0
	}
	if sc.Budget > 0 {
		sc.Budget = max(0, sc.Budget-visited)
	}
	return sc.Done || sc.Budget == 0
}

// Finish matches the collected names against the pattern (without the
// state lock), and answers SCAN's reply (the next cursor and the names) or
// KEYS's (the names, sorted).
func (sc *Scan) Finish() reply.Value {
	out := make([]reply.Value, 0, len(sc.found))
	names := sc.found
	if sc.Keys {
		slices.Sort(names)
	}
	for _, n := range names {
		if sc.Pattern == "" || glob.Match(sc.Pattern, n) || sc.legacy && n == "" && glob.AllStars(sc.Pattern) {
			out = append(out, reply.BulkString(n))
		}
	}
	sc.found = nil
	if sc.Keys {
		return reply.Array(out...)
	}
	return reply.Array(reply.BulkString(strconv.FormatUint(sc.Cursor, 10)), reply.Array(out...))
}

// cmdScan runs a SCAN in one go: inside a script (which holds the state
// for its whole entry anyway) and through Exec. A client's SCAN goes
// through NewScan and Step instead, with the lock released between steps.
func cmdScan(s *State, a [][]byte, now int64) reply.Value {
	sc, err := NewScan(a)
	if err != nil {
		return parseErr(err)
	}
	sc.legacy = s.Version() < 3 // see keyMatch
	for !sc.Step(s, now) {
	}
	return sc.Finish()
}

// SessionIDs appends the open session ids to out, unsorted: a copy of
// string headers only (16 bytes each), so the caller can sort and reply
// after releasing the state lock (SESSION.LIST).
func (s *State) SessionIDs(out []string) []string {
	for id := range s.sessions {
		out = append(out, id)
	}
	return out
}
