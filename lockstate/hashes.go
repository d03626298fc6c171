package lockstate

import (
	"math"
	"slices"
	"strconv"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// Hash and list commands. A hash keeps its fields in insertion order, as
// Redis's small hashes do, so HGETALL answers in Redis's order; an emptied
// hash or list is deleted.

func cmdHset(s *State, a [][]byte, now int64) reply.Value {
	pairs, err := commands.ParsePairs(a, 2)
	if err != nil {
		return parseErr(err)
	}
	name := string(a[1])
	k, ok := s.typed(name, kvHash, now)
	if !ok {
		return errWrongType
	}
	add := 0 // an upper bound: a field set twice, or replaced, counts in full
	for _, fv := range pairs {
		add += elemSize(fv[0]) + elemSize(fv[1])
	}
	if !fits(k, add) {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	if k == nil {
		k = s.newKey(name, kvHash)
	}
	var added int64
	for _, fv := range pairs {
		if s.hset(k, fv[0], fv[1]) {
			added++
		}
	}
	s.notify(notifyHash, "hset", name)
	return reply.Int(added)
}

// cmdHmset is HMSET key field value [field value ...] (cluster version
// 3): Redis's deprecated form of HSET, the same write and "hset" event,
// answering OK.
func cmdHmset(s *State, a [][]byte, now int64) reply.Value {
	if r := cmdHset(s, a, now); r.Kind != reply.KindInt {
		return r
	}
	return reply.OK()
}

// hset sets one field; it reports whether the field is new.
func (s *State) hset(k *kvKey, f, v string) bool {
	old, had := k.hash[f]
	if !had {
		k.fields = append(k.fields, f)
		k.size += elemSize(f)
	} else {
		k.size -= elemSize(old)
	}
	k.hash[f] = v
	k.size += elemSize(v)
	s.markDirty(kvRecKey(k.name), &k.cost)
	return !had
}

func cmdHget(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvHash, now)
	if !ok {
		return errWrongType
	}
	if k != nil {
		if v, ok := k.hash[string(a[2])]; ok {
			return reply.BulkString(v)
		}
	}
	return reply.Null()
}

func cmdHexists(s *State, a [][]byte, now int64) reply.Value { return hasElem(s, a, kvHash, now) }

// hasElem is HEXISTS and SISMEMBER: 1 if key a[1], of type t, holds the
// field or member a[2].
func hasElem(s *State, a [][]byte, t kvType, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), t, now)
	if !ok {
		return errWrongType
	}
	if k != nil {
		if _, ok := k.hash[string(a[2])]; ok {
			return reply.Int(1)
		}
	}
	return reply.Int(0)
}

// shrunk records that elements left k (event, of class), and deletes k
// once it holds none, as Redis deletes an emptied hash, list or set.
func (s *State) shrunk(k *kvKey, class int, event string) {
	s.markDirty(kvRecKey(k.name), &k.cost)
	s.notify(class, event, k.name)
	if len(k.list) == 0 && len(k.hash) == 0 {
		s.deleteKey(k)
		s.notify(notifyGeneric, "del", k.name)
	}
}

func cmdHgetall(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvHash, now)
	if !ok {
		return errWrongType
	}
	var out []reply.Value
	if k != nil {
		out = make([]reply.Value, 0, 2*len(k.fields))
		for _, f := range k.fields {
			out = append(out, reply.BulkString(f), reply.BulkString(k.hash[f]))
		}
	}
	return reply.Map(out...)
}

func cmdHdel(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvHash, now)
	if !ok {
		return errWrongType
	}
	if k == nil {
		return reply.Int(0)
	}
	var n int64
	for _, f := range a[2:] {
		if v, ok := k.hash[string(f)]; ok {
			k.size -= elemSize(string(f)) + elemSize(v)
			delete(k.hash, string(f))
			n++
		}
	}
	if n > 0 {
		// One pass over the field order for all the fields taken, not one
		// each: an HDEL of m fields from n costs O(n + m), not O(n·m)
		// (BenchmarkHdelMany).
		k.fields = slices.DeleteFunc(k.fields, func(x string) bool { _, ok := k.hash[x]; return !ok })
		s.shrunk(k, notifyHash, "hdel")
	}
	return reply.Int(n)
}

func cmdHincrBy(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseHIncrBy(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvHash, now)
	if !ok {
		return errWrongType
	}
	var n int64
	if k != nil {
		if v, ok := k.hash[p.Field]; ok {
			if n, err = commands.ParseInt([]byte(v)); err != nil {
				return reply.Error("ERR hash value is not an integer")
			}
		}
	}
	if (p.By > 0 && n > math.MaxInt64-p.By) || (p.By < 0 && n < math.MinInt64-p.By) {
		return errIncrOverflow
	}
	n += p.By
	if !fits(k, elemSize(p.Field)+elemSize(strconv.FormatInt(n, 10))) {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	if k == nil {
		k = s.newKey(p.Key, kvHash)
	}
	s.hset(k, p.Field, strconv.FormatInt(n, 10))
	s.notify(notifyHash, "hincrby", p.Key)
	return reply.Int(n)
}

func cmdPush(s *State, a [][]byte, now int64) reply.Value {
	name, els := commands.ParsePush(a)
	k, ok := s.typed(name, kvList, now)
	if !ok {
		return errWrongType
	}
	add := 0
	for _, e := range els {
		add += elemSize(e)
	}
	if !fits(k, add) {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	if k == nil {
		k = s.newKey(name, kvList)
	}
	k.size += add
	event := "rpush"
	if a[0][0] == 'l' || a[0][0] == 'L' {
		// LPUSH a b c leaves c b a in front.
		slices.Reverse(els)
		k.list = append(els, k.list...)
		event = "lpush"
	} else {
		k.list = append(k.list, els...)
	}
	s.markDirty(kvRecKey(k.name), &k.cost)
	s.notify(notifyList, event, name)
	s.pushed = append(s.pushed, k.name)
	return reply.Int(int64(len(k.list)))
}

// cmdBlpop pops the first element of the first non-empty list, as BLPOP
// does when it need not wait: the reply is [key, element], or a null array
// when every list is empty, for the server to wait for a push and try again.
// Scripts may not call it, as in Redis 7.
func cmdBlpop(s *State, a [][]byte, now int64) reply.Value {
	if _, err := commands.ParseBlockTimeout(a[len(a)-1]); err != nil {
		return parseErr(err)
	}
	for _, name := range a[1 : len(a)-1] {
		k, ok := s.typed(string(name), kvList, now)
		if !ok {
			return errWrongType
		}
		if k == nil {
			continue
		}
		e := s.popElems(k, 1, false)[0]
		return reply.Array(reply.BulkString(k.name), reply.BulkString(e))
	}
	return reply.NullArray()
}

func cmdHlen(s *State, a [][]byte, now int64) reply.Value { return lengthOf(s, a[1], kvHash, now) }
func cmdLlen(s *State, a [][]byte, now int64) reply.Value { return lengthOf(s, a[1], kvList, now) }

// cmdLrange is LRANGE key start stop, in Redis 7.0's order: the indexes
// (not an integer), then the key (missing: an empty array), then its type.
// Negative indexes count from the tail; the range is clipped to the list.
func cmdLrange(s *State, a [][]byte, now int64) reply.Value {
	start, err1 := commands.ParseInt(a[2])
	stop, err2 := commands.ParseInt(a[3])
	if err1 != nil || err2 != nil {
		return errNotInt
	}
	k, ok := s.typed(string(a[1]), kvList, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Array()
	}
	n := int64(len(k.list))
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	if start > stop || start >= n {
		return reply.Array()
	}
	stop = min(stop, n-1)
	out := make([]reply.Value, 0, stop-start+1)
	for _, v := range k.list[start : stop+1] {
		out = append(out, reply.BulkString(v))
	}
	return reply.Array(out...)
}

// lengthOf is STRLEN, HLEN and LLEN: the length of key name if it has type
// t, 0 if there is none, WRONGTYPE for another type or a held lock.
func lengthOf(s *State, name []byte, t kvType, now int64) reply.Value {
	k, ok := s.typed(string(name), t, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Int(0)
	}
	switch t {
	case kvString:
		return reply.Int(int64(len(k.str)))
	case kvHash, kvSet:
		return reply.Int(int64(len(k.hash)))
	}
	return reply.Int(int64(len(k.list)))
}
