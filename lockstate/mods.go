package lockstate

import (
	"cmp"
	"errors"
	"strings"

	"github.com/RaduBerinde/btreemap"
)

// Mod indexes: what WATCH compares (see DESIGN.md, Transactions). From
// cluster version 3 every name of the keyspace (a string, hash or list key,
// or a held lock) carries the log index of the entry that last changed it,
// as etcd's mod revision, and a name that was deleted keeps a tombstone
// with the index of its deletion. A transaction's entry carries, for each
// watched key, the index up to which its WATCH saw the state; the state
// machine fails the transaction if the name changed after it. Every
// replica decides alike, whichever node took the WATCH and whatever leader
// applies the EXEC.
//
// All key writes pass through markDirty, which calls touch for the records
// of keys and locks: expiry, scripts, transactions, OpExec and the lock
// commands alike. stampMods then gives each touched name its mod index, or a
// tombstone when it is gone, at the end of each entry (and before a
// transaction checks its watches, so that what the entry's expiry deleted
// counts).
//
// Tombstones are bounded (Config.MaxTombstones): the oldest are dropped
// first, and horizon keeps the highest index of a dropped one. A watched
// name that is absent, without a tombstone, was deleted at or before the
// horizon if at all: a watch older than the horizon fails, conservatively.

// txVersion is the cluster version from which mods are kept and OpMulti
// runs. Below it nothing here is recorded, so that replicas of older
// binaries hold the same records.
const txVersion = 3

// modBytes is what a key's mod index adds to its share of Used.
const modBytes = 8

// tomb is a deleted name's tombstone.
type tomb struct {
	index uint64 // the entry that deleted it
	// lastMod is the mod index the deleted key had, the entry's own for a
	// lock or when the entry changed the name more than once: a watch of a
	// key that was already expired (stale) passes if only that key's
	// deletion came after it.
	lastMod uint64
}

// tombKey orders the tombstones for dropping: oldest first, by name within
// an index, so that every replica drops the same ones.
type tombKey struct {
	index uint64
	name  string
}

func cmpTombKey(a, b tombKey) int {
	if c := cmp.Compare(a.index, b.index); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// Records: t/<name> is a tombstone (index, lastMod), m/horizon the horizon.
const (
	prefixTomb = "t/"
	horizonKey = "m/horizon"
)

func tombRecKey(name string) string { return prefixTomb + name }

// mods is the State's part for mod indexes.
type mods struct {
	tombs     map[string]*tomb
	tombOrder *btreemap.BTreeMap[tombKey, struct{}]
	horizon   uint64
	// touched lists the names whose records changed since the last
	// stampMods, first touch first; seen holds, for each, what a
	// tombstone would take as lastMod.
	touched []string
	seen    map[string]uint64
}

func newMods() mods {
	return mods{tombs: make(map[string]*tomb), tombOrder: btreemap.New[tombKey, struct{}](32, cmpTombKey), seen: make(map[string]uint64)}
}

// touch notes that the record at key changed (markDirty). Key records are
// marked before they leave s.kv (deleteKey), so the key deleted is seen.
func (s *State) touch(key string) {
	if len(key) < 2 || key[1] != '/' || (key[0] != 'k' && key[0] != 'l') || s.Version() < txVersion {
		return
	}
	name := key[2:]
	if _, ok := s.seen[name]; ok {
		// Changed twice in the entry: more than a stale key's deletion.
		s.seen[name] = s.index
		return
	}
	s.touched = append(s.touched, name)
	last := s.index // a lock, or a key created by this entry: never stale
	if k := s.kv[name]; key[0] == 'k' && k != nil && uint64(k.created) != s.index {
		last = k.mod
	}
	s.seen[name] = last
}

// stampMods gives every name touched since the last call the entry's
// index: a live one as its mod, a gone one as its tombstone.
func (s *State) stampMods() {
	for _, name := range s.touched {
		switch k, l := s.kv[name], s.locks[name]; {
		case k != nil:
			if k.mod != s.index && s.dirty[kvRecKey(name)] != s.step {
				s.markDirty(kvRecKey(name), &k.cost)
			}
			k.mod = s.index
			s.dropTomb(name)
		case l != nil:
			if l.mod != s.index && s.dirty[lockKey(name)] != s.step {
				s.markDirty(lockKey(name), &l.cost)
			}
			l.mod = s.index
			s.dropTomb(name)
		default:
			s.setTomb(name, s.seen[name])
		}
	}
	clear(s.seen)
	clear(s.touched) // let go of the names
	s.touched = s.touched[:0]
	for len(s.tombs) > s.maxTombstones() {
		k, _, _ := s.tombOrder.Min()
		s.dropTomb(k.name)
		if k.index > s.horizon {
			s.horizon = k.index
			s.markDirty(horizonKey, nil)
		}
	}
}

func (s *State) maxTombstones() int { return s.cfg.MaxTombstones }

func (s *State) setTomb(name string, lastMod uint64) {
	t := s.tombs[name]
	if t != nil && t.index == s.index && t.lastMod == lastMod {
		return
	}
	s.markDirty(tombRecKey(name), nil)
	if t != nil {
		s.tombOrder.Delete(tombKey{t.index, name})
	} else {
		t = &tomb{}
		s.tombs[name] = t
	}
	t.index, t.lastMod = s.index, lastMod
	s.tombOrder.ReplaceOrInsert(tombKey{t.index, name}, struct{}{})
}

func (s *State) dropTomb(name string) {
	t := s.tombs[name]
	if t == nil {
		return
	}
	s.markDirty(tombRecKey(name), nil)
	delete(s.tombs, name)
	s.tombOrder.Delete(tombKey{t.index, name})
}

// Watch is one watched key of a transaction: WATCH saw the state up to
// log index Index (State.WatchIndex) and the key absent, or, Stale, as a
// key already past its deadline that no entry had deleted yet (Redis
// ignores that key's deletion).
type Watch struct {
	Key   string
	Index uint64
	Stale bool
}

// WatchIndex is the index a WATCH records: every mod index and tombstone
// the state holds is at most it, and every later change is above it.
func (s *State) WatchIndex() uint64 { return s.index }

// Watches returns the Watch of each key at cluster time now: what WATCH
// records, read linearizably on the leader.
func (s *State) Watches(keys []string, now int64) []Watch {
	out := make([]Watch, len(keys))
	for i, key := range keys {
		k := s.kv[key]
		out[i] = Watch{Key: key, Index: s.index, Stale: k != nil && k.ttl && k.timer.deadline < now}
	}
	return out
}

// watchBroken reports whether w's key changed after w.Index. It runs
// inside an entry, after its expiry and stampMods: every name in s.kv is
// live, and what the entry deleted has its tombstone.
func (s *State) watchBroken(w Watch) bool {
	if k := s.kv[w.Key]; k != nil {
		return k.mod > w.Index
	}
	if l := s.locks[w.Key]; l != nil {
		return l.mod > w.Index
	}
	if t := s.tombs[w.Key]; t != nil {
		// Deleted after the watch: a change, unless the key was already
		// stale then and its deletion is all that happened since.
		return t.index > w.Index && !(w.Stale && t.lastMod <= w.Index)
	}
	return s.horizon > w.Index
}

func appendTomb(b []byte, t *tomb) []byte {
	b = append(b, recordVersion)
	b = appendUvarint(b, t.index)
	return appendUvarint(b, t.lastMod)
}

func (s *State) loadTomb(name string, r *reader) error {
	t := &tomb{index: r.uvarint(), lastMod: r.uvarint()}
	if err := r.done(); err != nil {
		return err
	}
	switch {
	case t.index == 0 || t.lastMod > t.index:
		return errors.New("bad tombstone")
	case s.tombs[name] != nil:
		return errLoadOrder
	case s.kv[name] != nil || s.locks[name] != nil:
		return errors.New("a tombstone of a live name")
	}
	s.tombs[name] = t
	s.tombOrder.ReplaceOrInsert(tombKey{t.index, name}, struct{}{})
	s.index = max(s.index, t.index)
	return nil
}

func (s *State) loadHorizon(r *reader) error {
	h := r.uvarint()
	if err := r.done(); err != nil {
		return err
	}
	if h == 0 {
		return errors.New("zero horizon is not stored")
	}
	s.horizon = h
	s.index = max(s.index, h)
	return nil
}

// loadMod reads the optional mod index that ends a key's or a lock's
// record.
func (s *State) loadMod(r *reader) uint64 {
	if r.err != nil || len(r.b) == 0 {
		return 0
	}
	m := r.uvarint()
	if r.err == nil && m == 0 {
		r.fail(errors.New("zero mod index is not stored"))
	}
	s.index = max(s.index, m)
	return m
}

// TombstoneCount is the number of tombstones held, and Horizon the
// highest index of one dropped (for tests and INFO).
func (s *State) TombstoneCount() int { return len(s.tombs) }

// Horizon is the highest index of a dropped tombstone (0: none dropped).
func (s *State) Horizon() uint64 { return s.horizon }
