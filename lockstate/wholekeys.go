package lockstate

import (
	"maps"
	"slices"
	"strings"

	"github.com/RaduBerinde/btreemap"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// Commands on whole keys, Redis 7.0's, from cluster version 3: RENAME,
// RENAMENX, COPY, FLUSHALL, FLUSHDB, MOVE, SWAPDB, TOUCH, RANDOMKEY and
// OBJECT.
//
// fenced's own state is not Redis keys: a held fenced lock is a name of
// type fencedlock, with its session, its waiters and its token, and these
// commands never move, copy or drop one. RENAME or COPY from a lock's name,
// or over it, answers WRONGTYPE (as SET over it does), RENAMENX and COPY
// without REPLACE onto it answer 0 (the name is taken), and FLUSHALL leaves
// every lock, session and waiter in place: dropping a held lock would let a
// second owner take it while the first still holds its token.
//
// Tokens: a key's token is the index of the entry that created it
// (FenceOf, KeyFence), and RENAME and COPY create their destination anew
// in the entry that runs them, so the destination's token is that entry's
// index: above every token the name had before, whatever the source's
// was. The source's name is free afterwards, and a key created there later
// gets a later index again. FLUSHALL deletes; whatever is created after it
// has a later index, so a SET NX lock taken again after a FLUSHALL gets a
// larger token than the one it had.

// errNoSuchKey answers RENAME and RENAMENX of a missing key.
var errNoSuchKey = reply.Error("ERR no such key")

// errLFU answers OBJECT FREQ: fenced never evicts, its maxmemory-policy is
// noeviction, and Redis gives this text under any policy but LFU.
var errLFU = reply.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. " +
	"Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")

// cmdRename is RENAME and RENAMENX, in Redis 7.0's order of checks: a
// missing source, then the same name (RENAME: OK, RENAMENX: 0), then the
// destination. The key keeps its value and its deadline under the new name.
func cmdRename(s *State, a [][]byte, now int64) reply.Value {
	nx := len(a[0]) == len("renamenx")
	src, dst := string(a[1]), string(a[2])
	k, lock := s.find(src, now)
	switch {
	case lock:
		return errWrongType
	case k == nil:
		return errNoSuchKey
	case src == dst && nx:
		return reply.Int(0)
	case src == dst:
		return reply.OK()
	}
	old, dlock := s.find(dst, now)
	switch {
	case nx && (old != nil || dlock):
		return reply.Int(0)
	case dlock:
		return errWrongType
	}
	if old != nil {
		s.deleteKey(old)
	}
	n := s.newKey(dst, k.typ)
	n.str, n.fields, n.hash, n.list, n.size = k.str, k.fields, k.hash, k.list, k.size
	ttl, deadline := k.ttl, k.timer.deadline
	s.deleteKey(k)
	s.created(n, ttl, deadline)
	s.notify(notifyGeneric, "rename_from", src)
	s.notify(notifyGeneric, "rename_to", dst)
	if nx {
		return reply.Int(1)
	}
	return reply.OK()
}

// created finishes a key that RENAME or COPY made: its deadline, and a
// list wakes the BLPOPs waiting on its name, as a push does.
func (s *State) created(k *kvKey, ttl bool, deadline int64) {
	if ttl {
		s.setDeadline(k, deadline)
	}
	if k.typ == kvList {
		s.pushed = append(s.pushed, k.name)
	}
}

// cmdCopy is COPY source destination [DB 0] [REPLACE]: 1 once copied, 0
// when the source is missing or the destination taken without REPLACE.
// The copy has its own elements and the source's deadline. It may grow the
// state by a whole key, which the arguments do not show: it is admitted
// for the source's size before it runs.
func cmdCopy(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseCopy(a)
	if err != nil {
		return parseErr(err)
	}
	k, lock := s.find(p.Src, now)
	switch {
	case lock:
		return errWrongType
	case k == nil:
		return reply.Int(0)
	}
	old, dlock := s.find(p.Dst, now)
	switch {
	case (old != nil || dlock) && !p.Replace:
		return reply.Int(0)
	case dlock:
		return errWrongType
	}
	size := int64(k.size + len(k.str) + len(p.Dst) + len(prefixKV) + kvHeader)
	if !s.roomFor(size) {
		return errOOM
	}
	if old != nil {
		s.deleteKey(old)
	}
	n := s.newKey(p.Dst, k.typ)
	n.str, n.size = k.str, k.size
	switch k.typ {
	case kvHash, kvSet:
		n.fields = append([]string(nil), k.fields...)
		for f, v := range k.hash {
			n.hash[f] = v
		}
	case kvList:
		n.list = append([]string(nil), k.list...)
	}
	s.created(n, k.ttl, k.timer.deadline)
	s.notify(notifyGeneric, "copy_to", p.Dst)
	return reply.Int(1)
}

// cmdFlush is FLUSHALL and FLUSHDB [ASYNC|SYNC] (one database: the same
// thing), done within the entry either way. It deletes every string, hash
// and list key, SET NX locks included, and nothing of fenced's own: held
// locks, sessions, waiters and the script cache stay (Redis keeps its
// scripts too).
func cmdFlush(s *State, a [][]byte, now int64) reply.Value {
	if err := commands.ParseFlush(a); err != nil {
		return parseErr(err)
	}
	// In name order, not the map's: what each deletion leaves behind (the
	// dirty marks, and whatever an entry reports of the keys it changed) is
	// then the same on every replica.
	for _, name := range slices.Sorted(maps.Keys(s.kv)) {
		s.deleteKey(s.kv[name])
	}
	s.keyspaceFlushed()
	return reply.OK()
}

// cmdMove and cmdSwapDB answer as Redis with one database: a move to
// database 0 is onto itself, any other index is out of range, and SWAPDB 0
// 0 is the one swap there is, which changes nothing.
func cmdMove(s *State, a [][]byte, now int64) reply.Value {
	return parseErr(commands.ParseMove(a))
}

func cmdSwapDB(s *State, a [][]byte, now int64) reply.Value {
	if err := commands.ParseSwapDB(a); err != nil {
		return parseErr(err)
	}
	return reply.OK()
}

// RandomKey answers RANDOMKEY: the first live name (key or held lock) at
// or after position r of SCAN's hash order, wrapping round; null when
// there is none. The server draws r on its own for a client's RANDOMKEY;
// a script's draws come from its entry (scriptEnv), so that every replica
// picks the same key.
func (s *State) RandomKey(now int64, r uint64) reply.Value {
	var name string
	found := false
	visit := func(k nameKey, _ struct{}) bool {
		if s.locks[k.name] != nil || s.live(k.name, now) != nil {
			name, found = k.name, true
			return false
		}
		return true
	}
	pivot := nameKey{hash: r}
	s.names.AscendFunc(btreemap.GE(pivot), btreemap.Max[nameKey](), visit)
	if !found {
		s.names.AscendFunc(btreemap.Min[nameKey](), btreemap.LT(pivot), visit)
	}
	if !found {
		return reply.Null()
	}
	return reply.BulkString(name)
}

// cmdRandomKey is RANDOMKEY through Exec: the entry's own draw, as a
// script's first RANDOMKEY makes it.
func cmdRandomKey(s *State, a [][]byte, now int64) reply.Value {
	return s.RandomKey(now, randomDraw(s.index, 0))
}

// randomDraw is the n-th RANDOMKEY draw of the entry at index: splitmix64
// of the two, a function of the log alone.
func randomDraw(index, n uint64) uint64 {
	z := index*0x9e3779b97f4a7c15 + n + 1
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// cmdObject is OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key and OBJECT HELP.
// A missing key answers null. What fenced holds is a string, a field list
// or an element list, and each record is written whole, so ENCODING names
// the encoding Redis 7.0 would give the same value (objectEncoding), and
// REFCOUNT Redis's count for it. fenced keeps no access clock or counter
// per key (a read changes no replicated state, and a clock of the node's
// own would make a script's answer differ between replicas): IDLETIME is 0,
// as for a key just used, and FREQ is the error Redis gives under its
// noeviction policy, fenced's only one.
func cmdObject(s *State, a [][]byte, now int64) reply.Value {
	sub := strings.ToLower(string(a[1]))
	switch sub {
	case "help":
		if len(a) != 2 {
			return reply.ErrorOf(commands.ArityError("object|help"))
		}
		return objectHelp()
	case "encoding", "freq", "idletime", "refcount":
		if len(a) != 3 {
			return reply.ErrorOf(commands.ArityError("object|" + sub))
		}
	default:
		return reply.Error("ERR unknown subcommand '" + commands.Clip(a[1]) + "'. Try OBJECT HELP.")
	}
	k, lock := s.find(string(a[2]), now)
	if k == nil && !lock {
		return reply.Null()
	}
	switch sub {
	case "freq":
		return errLFU
	case "idletime":
		return reply.Int(0)
	case "refcount":
		if lock {
			return reply.Int(1)
		}
		return reply.Int(refCount(k))
	}
	if lock {
		return reply.BulkString("fencedlock")
	}
	return reply.BulkString(objectEncoding(k))
}

// Redis 7.0's encoding limits (its defaults): a string of up to 44 bytes
// is one allocation with its header (embstr), an integer string of up to
// 20 bytes is held as the integer; a hash stays a listpack while it has
// at most 512 fields (the compiled default; redis.conf's example says 128)
// and no field or value over 64 bytes. Integers 0 to
// 9999 are Redis's shared objects.
const (
	embstrMax        = 44
	intStrMax        = 20
	hashListpackLen  = 512
	hashListpackSize = 64
	setIntsetLen     = 512 // set-max-intset-entries
	sharedIntegers   = 10000
	sharedRefCount   = 1<<31 - 1 // Redis's OBJ_SHARED_REFCOUNT
)

// objectEncoding is the encoding Redis 7.0 gives k's value when it is set
// whole (SET, HSET, RPUSH): by the value, not by its history, so a string
// APPEND or SETRANGE made ("raw" in Redis), one INCRBYFLOAT made ("embstr"),
// and a hash that has shrunk back below the limits ("hashtable") may
// differ from Redis's answer for the same commands (docs/compatibility.md).
// Lists are "quicklist" whatever their size, as in Redis 7.0; a set is an
// "intset" while it holds at most 512 members, each an integer, and a
// "hashtable" otherwise (Redis 7.0 has no listpack sets).
func objectEncoding(k *kvKey) string {
	switch k.typ {
	case kvSet:
		if len(k.fields) > setIntsetLen {
			return "hashtable"
		}
		for _, m := range k.fields {
			if _, ok := sharedInt(m); !ok {
				return "hashtable"
			}
		}
		return "intset"
	case kvString:
		if _, ok := sharedInt(k.str); ok {
			return "int"
		}
		if len(k.str) <= embstrMax {
			return "embstr"
		}
		return "raw"
	case kvHash:
		if len(k.fields) > hashListpackLen {
			return "hashtable"
		}
		for _, f := range k.fields {
			if len(f) > hashListpackSize || len(k.hash[f]) > hashListpackSize {
				return "hashtable"
			}
		}
		return "listpack"
	}
	return "quicklist"
}

// sharedInt reports whether Redis holds str as an integer (ok), and the
// integer.
func sharedInt(str string) (int64, bool) {
	if len(str) > intStrMax {
		return 0, false
	}
	n, err := commands.ParseInt([]byte(str))
	return n, err == nil
}

// refCount is OBJECT REFCOUNT: Redis's shared-object count for the small
// integers it shares, 1 otherwise (every fenced key holds its own value).
func refCount(k *kvKey) int64 {
	if n, ok := sharedInt(k.str); k.typ == kvString && ok && n >= 0 && n < sharedIntegers {
		return sharedRefCount
	}
	return 1
}

func objectHelp() reply.Value {
	var out []reply.Value
	for _, l := range []string{
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP",
		"    Prints this help.",
	} {
		out = append(out, reply.SimpleString(l))
	}
	return reply.Array(out...)
}
