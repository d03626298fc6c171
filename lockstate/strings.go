package lockstate

import (
	"math"
	"strconv"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/reply"
)

// String commands. A write to a held lock's name answers WRONGTYPE (a lock
// is not overwritten by SET or MSET); reads of it answer WRONGTYPE like any
// key of another type, except MGET, which answers nil as Redis does.

func cmdGet(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Null()
	}
	return reply.BulkString(k.str)
}

func cmdStrlen(s *State, a [][]byte, now int64) reply.Value { return lengthOf(s, a[1], kvString, now) }

func cmdMget(s *State, a [][]byte, now int64) reply.Value {
	out := make([]reply.Value, len(a)-1)
	for i, name := range a[1:] {
		if k, _ := s.typed(string(name), kvString, now); k != nil {
			out[i] = reply.BulkString(k.str)
		} else {
			out[i] = reply.Null()
		}
	}
	return reply.Array(out...)
}

func cmdGetRange(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseGetRange(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvString, now)
	if !ok {
		return errWrongType
	}
	if k == nil {
		return reply.BulkString("")
	}
	return reply.BulkString(getRange(k.str, p.Start, p.End))
}

// getRange is Redis 7's GETRANGE arithmetic.
func getRange(str string, start, end int64) string {
	n := int64(len(str))
	if start < 0 && end < 0 && start > end {
		return ""
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		return ""
	}
	return str[start : end+1]
}

func cmdSet(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseSet(a)
	if err != nil {
		return parseErr(err)
	}
	var deadline int64
	switch p.Expire {
	case commands.SetEXAT, commands.SetPXAT:
		if !s.walled {
			return errExat
		}
		deadline = s.fromUnix(p.Millis, now)
	case commands.SetEX, commands.SetPX:
		if !s.relativeOK(p.Millis) {
			return reply.Error("ERR invalid expire time in 'set' command")
		}
		deadline = ms.Add(now, p.Millis)
	}
	k, lock := s.find(p.Key, now)
	if lock || (p.Get && k != nil && k.typ != kvString) {
		return errWrongType
	}
	res := reply.OK()
	if p.Get {
		res = reply.Null()
		if k != nil {
			res = reply.BulkString(k.str)
		}
	}
	if (p.NX && k != nil) || (p.XX && k == nil) {
		if p.Get {
			return res
		}
		return reply.Null()
	}
	if k == nil {
		k = s.newKey(p.Key, kvString)
	}
	s.setString(k, p.Value)
	switch p.Expire {
	case commands.SetKeepTTL:
	case commands.SetNoExpire:
		s.persist(k)
	default:
		if deadline < now { // an absolute time in the past: set, and gone
			s.deleteKey(k)
			break
		}
		s.setDeadline(k, deadline)
	}
	return res
}

func cmdGetDel(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Null()
	}
	s.deleteKey(k)
	return reply.BulkString(k.str)
}

// msetPairs parses MSET's pairs and checks that none names a held lock.
func msetPairs(s *State, a [][]byte) ([][2]string, reply.Value, bool) {
	pairs, err := commands.ParsePairs(a, 1)
	if err != nil {
		return nil, parseErr(err), false
	}
	for _, kv := range pairs {
		if s.locks[kv[0]] != nil {
			return nil, errWrongType, false
		}
	}
	return pairs, reply.Value{}, true
}

func (s *State) msetAll(pairs [][2]string, now int64) {
	for _, kv := range pairs {
		k := s.live(kv[0], now)
		if k == nil {
			k = s.newKey(kv[0], kvString)
		}
		s.setString(k, kv[1])
		s.persist(k)
	}
}

func cmdMset(s *State, a [][]byte, now int64) reply.Value {
	pairs, errv, ok := msetPairs(s, a)
	if !ok {
		return errv
	}
	s.msetAll(pairs, now)
	return reply.OK()
}

// cmdMsetNX sets all the keys or, if any of them exists (a held lock
// included), none.
func cmdMsetNX(s *State, a [][]byte, now int64) reply.Value {
	pairs, err := commands.ParsePairs(a, 1)
	if err != nil {
		return parseErr(err)
	}
	for _, kv := range pairs {
		if k, lock := s.find(kv[0], now); k != nil || lock {
			return reply.Int(0)
		}
	}
	s.msetAll(pairs, now)
	return reply.Int(1)
}

func cmdIncr(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	if !ok {
		return errWrongType
	}
	var n int64
	if k != nil {
		var err error
		if n, err = commands.ParseInt([]byte(k.str)); err != nil {
			return errNotInt
		}
	}
	step := s.incrStep()
	if n > math.MaxInt64-step {
		return errIncrOverflow
	}
	n += step
	if k == nil {
		k = s.newKey(string(a[1]), kvString)
	}
	s.setString(k, strconv.FormatInt(n, 10))
	return reply.Int(n)
}

// cmdDelEx is DELEX key [IFEQ value | IFNE value] (Redis 8.4): without a
// condition it is DEL of one key.
func cmdDelEx(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseDelEx(a)
	if err != nil {
		return parseErr(err)
	}
	if p.Cond == "" {
		return cmdDel(s, a[:2], now)
	}
	return delIf(s, p.Key, now, func(v string) bool { return (v == p.Value) == (p.Cond == "IFEQ") })
}

// cmdDelIfEq is DELIFEQ key value (Valkey 9).
func cmdDelIfEq(s *State, a [][]byte, now int64) reply.Value {
	want := string(a[2])
	return delIf(s, string(a[1]), now, func(v string) bool { return v == want })
}

func delIf(s *State, name string, now int64, ok func(string) bool) reply.Value {
	k, typeOK := s.typed(name, kvString, now)
	switch {
	case !typeOK:
		return errWrongType
	case k == nil || !ok(k.str):
		return reply.Int(0)
	}
	s.deleteKey(k)
	return reply.Int(1)
}
