package lockstate

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/fenced/fenced/reply"
)

// The Redis keyspace. A name is a string, hash or list key, or a held
// fenced lock, never two of them; a free lock has no key. Keys live in
// s.kv, locks in s.locks, and the commands see both (see exec.go).
//
// TTLs are in cluster time: a key's deadline is an absolute cluster time in
// ms, and the key is gone once the time is strictly past it, like every
// other deadline (see expire). Keys with a deadline are in the timer heap,
// so the leader's ticks delete them actively; a read between ticks skips
// them lazily (live).

// kvType is the type of a key. Its values are part of the record format.
type kvType uint8

const (
	kvString kvType = 1
	kvHash   kvType = 2
	kvList   kvType = 3
	kvSet    kvType = 4 // from cluster version 3 (sets.go)
)

// kvKey is the record of one key.
type kvKey struct {
	name    string
	typ     kvType
	str     string            // kvString
	fields  []string          // kvHash, kvSet: field names (members) in insertion order, as Redis's small hashes reply them
	hash    map[string]string // kvHash: field -> value; kvSet: member -> ""
	list    []string          // kvList, never empty
	size    int               // kvHash, kvList, kvSet: the elements' share of the record, elemSize each
	created int64             // log index of the entry that created the key: FENCE key
	mod     uint64            // log index of the entry that last changed it, from version 3 (mods.go)
	ttl     bool              // timer holds the deadline
	timer   timer
	cost    int64 // its record's share of Used (memory.go)
}

// typeName is TYPE's answer.
func (t kvType) typeName() string {
	switch t {
	case kvString:
		return "string"
	case kvHash:
		return "hash"
	case kvList:
		return "list"
	case kvSet:
		return "set"
	}
	return "none"
}

// live returns the key name at cluster time now, or nil when there is none
// or its deadline is past.
func (s *State) live(name string, now int64) *kvKey {
	k := s.kv[name]
	if k == nil || (k.ttl && k.timer.deadline < now) {
		return nil
	}
	return k
}

// newKey creates key name, of type t, at the entry being applied.
func (s *State) newKey(name string, t kvType) *kvKey {
	k := &kvKey{name: name, typ: t, created: int64(s.index)}
	k.timer.key = k
	if t == kvHash || t == kvSet {
		k.hash = make(map[string]string)
	}
	s.kv[name] = k
	s.indexName(name)
	s.markDirty(kvRecKey(name), &k.cost)
	s.notify(notifyNew, "new", name)
	return k
}

// deleteKey removes k.
func (s *State) deleteKey(k *kvKey) {
	if k.ttl {
		s.unschedule(&k.timer)
		s.setTTL(k, false)
	}
	s.markDirty(kvRecKey(k.name), &k.cost) // before it goes: touch sees the key deleted
	delete(s.kv, k.name)
	s.unindexName(k.name)
}

// setDeadline gives k the absolute deadline d.
func (s *State) setDeadline(k *kvKey, d int64) {
	s.setTTL(k, true)
	s.schedule(&k.timer, d)
	s.markDirty(kvRecKey(k.name), &k.cost)
}

// persist removes k's deadline; it reports whether there was one.
func (s *State) persist(k *kvKey) bool {
	if !k.ttl {
		return false
	}
	s.unschedule(&k.timer)
	s.setTTL(k, false)
	s.markDirty(kvRecKey(k.name), &k.cost)
	return true
}

// MaxRecord bounds a hash's or list's record, the one record that holds
// all its fields or elements: a push or HSET that would take it past this
// is refused, so every record the state accepts is one a snapshot can
// carry (raftstore's reader takes values up to twice this). It is small
// because a changed record is written back whole: at 32 MiB, pushing
// 1 KB elements onto one list took a node to 1 GB of RSS, Pebble
// compressing and compacting each 1024-entry write-back's copy of it.
const MaxRecord = 4 << 20

// ErrRecordTooLarge answers a push or HSET that would take its key's
// record past MaxRecord; nothing changed.
var ErrRecordTooLarge = reply.NewErr("ERR", "the key would grow past 4 MiB, the largest hash, list or set a key may hold")

// elemSize is an element's (or a field's, or a value's) share of its
// record: its bytes and, at most, its length prefix.
func elemSize(e string) int { return len(e) + binary.MaxVarintLen64 }

// fits reports whether k (nil: a new key) can take add more bytes of
// elements.
func fits(k *kvKey, add int) bool {
	have := 0
	if k != nil {
		have = k.size
	}
	return add <= MaxRecord-have
}

// setString makes k the string v, whatever its type was.
func (s *State) setString(k *kvKey, v string) {
	k.typ, k.str, k.fields, k.hash, k.list, k.size = kvString, v, nil, nil, nil, 0
	s.markDirty(kvRecKey(k.name), &k.cost)
}

// KeyFence is the token of a plain key: the log index of the entry that
// created it, which a re-created key gets anew, so it strictly increases
// across delete and re-create. A held fenced lock answers its token. false
// when the name is neither at cluster time now. FENCE answers with FenceOf,
// which falls back to this.
func (s *State) KeyFence(name string, now int64) (int64, bool) {
	if l := s.locks[name]; l != nil {
		// Holderless only inside an entry that released it: free until
		// the entry's end hands it on.
		return l.token, l.token != 0
	}
	if k := s.live(name, now); k != nil {
		return k.created, true
	}
	return 0, false
}

// KeyFenceIfEq answers FENCE key IFEQ value: the token of string key name
// (the index that created it) while it holds exactly value, else none. A
// lock holder that set the key with its own random value reads its own
// token this way, never a successor's after its key expired.
func (s *State) KeyFenceIfEq(name, value string, now int64) (int64, bool) {
	if k := s.live(name, now); k != nil && k.typ == kvString && k.str == value && s.locks[name] == nil {
		return k.created, true
	}
	return 0, false
}

// KeyType answers TYPE: "none", "string", "hash", "list", "set" or
// "fencedlock".
func (s *State) KeyType(name string, now int64) string {
	if s.locks[name] != nil {
		return "fencedlock"
	}
	if k := s.live(name, now); k != nil {
		return k.typ.typeName()
	}
	return "none"
}

// setTTL records whether k has a deadline, keeping the count of such keys
// (KeyspaceCounts).
func (s *State) setTTL(k *kvKey, on bool) {
	switch {
	case on && !k.ttl:
		s.ttlKeys++
	case !on && k.ttl:
		s.ttlKeys--
	}
	k.ttl = on
}

// KeyspaceCounts returns, in constant time, the names held (keys and held
// locks, a key past its deadline included until a tick deletes it, as
// Redis's INFO keyspace counts them) and the keys with a deadline.
func (s *State) KeyspaceCounts() (keys, expires int) {
	return len(s.kv) + len(s.locks), s.ttlKeys
}

// KeyCount answers DBSIZE: the keys live at now plus the held locks.
func (s *State) KeyCount(now int64) int {
	n := len(s.locks)
	for _, k := range s.kv {
		if !k.ttl || k.timer.deadline >= now {
			n++
		}
	}
	return n
}

// Record of a key, k/<name>: version, type, created (varint), a deadline
// flag (0, or 1 and the deadline as a varint), then by type: a string's
// value; a hash's field count and its field, value pairs in insertion
// order; a list's length and its elements; a set's size and its members in
// insertion order.
const prefixKV = "k/"

func kvRecKey(name string) string { return prefixKV + name }

func appendKV(b []byte, k *kvKey) []byte {
	b = append(b, recordVersion, byte(k.typ))
	b = appendVarint(b, k.created)
	if k.ttl {
		b = append(b, 1)
		b = appendVarint(b, k.timer.deadline)
	} else {
		b = append(b, 0)
	}
	switch k.typ {
	case kvString:
		b = appendString(b, k.str)
	case kvHash:
		b = appendUvarint(b, uint64(len(k.fields)))
		for _, f := range k.fields {
			b = appendString(b, f)
			b = appendString(b, k.hash[f])
		}
	case kvList:
		b = appendUvarint(b, uint64(len(k.list)))
		for _, e := range k.list {
			b = appendString(b, e)
		}
	case kvSet:
		b = appendUvarint(b, uint64(len(k.fields)))
		for _, m := range k.fields {
			b = appendString(b, m)
		}
	}
	if k.mod != 0 { // from cluster version 3 (mods.go)
		b = appendUvarint(b, k.mod)
	}
	return b
}

func (s *State) loadKV(name string, r *reader) error {
	k := &kvKey{name: name, typ: kvType(r.byte()), created: r.varint()}
	k.timer.key = k
	var deadline int64
	switch r.byte() {
	case 0:
	case 1:
		k.ttl = true // counted once the key is in (setTTL)
		deadline = r.varint()
	default:
		r.fail(errors.New("bad deadline flag"))
	}
	// Every element takes at least a byte: a count past the rest of the
	// record is rejected before allocating.
	count := func() int {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.fail(errLength)
			return 0
		}
		return int(n)
	}
	switch k.typ {
	case kvString:
		k.str = r.str()
	case kvHash:
		n := count()
		k.hash = make(map[string]string, n)
		for i := 0; i < n && r.err == nil; i++ {
			f, v := r.str(), r.str()
			if _, dup := k.hash[f]; dup && r.err == nil {
				r.fail(errors.New("hash field twice"))
			}
			k.fields = append(k.fields, f)
			k.hash[f] = v
			k.size += elemSize(f) + elemSize(v)
		}
		if n == 0 && r.err == nil {
			r.fail(errors.New("empty hash"))
		}
	case kvList:
		n := count()
		for i := 0; i < n && r.err == nil; i++ {
			e := r.str()
			k.list = append(k.list, e)
			k.size += elemSize(e)
		}
		if n == 0 && r.err == nil {
			r.fail(errors.New("empty list"))
		}
	case kvSet:
		n := count()
		k.hash = make(map[string]string, n)
		for i := 0; i < n && r.err == nil; i++ {
			m := r.str()
			if _, dup := k.hash[m]; dup && r.err == nil {
				r.fail(errors.New("set member twice"))
			}
			k.fields = append(k.fields, m)
			k.hash[m] = ""
			k.size += elemSize(m)
		}
		if n == 0 && r.err == nil {
			r.fail(errors.New("empty set"))
		}
	default:
		if r.err == nil {
			r.fail(errors.New("unknown key type"))
		}
	}
	k.mod = s.loadMod(r)
	if err := r.done(); err != nil {
		return err
	}
	if s.kv[name] != nil {
		return errLoadOrder
	}
	if s.locks[name] != nil {
		return errors.New("a key and a held lock of the same name")
	}
	s.kv[name] = k
	s.indexName(name)
	if k.ttl {
		s.ttlKeys++
		s.schedule(&k.timer, deadline)
	}
	return nil
}

// keyNames returns the names KEYS sees at now, sorted: live keys and held
// locks.
func (s *State) keyNames(now int64, match func(string) bool) []string {
	var out []string
	for name, k := range s.kv {
		if (!k.ttl || k.timer.deadline >= now) && match(name) {
			out = append(out, name)
		}
	}
	for name := range s.locks {
		if match(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
