package lockstate

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/ldouble"
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
	return s.set(p, "set", now)
}

// set is SET as p says, and SETNX, SETEX, PSETEX and GETSET, which are SETs
// with fixed options; cmd names the command in an expiry's error.
func (s *State) set(p commands.Set, cmd string, now int64) reply.Value {
	var deadline int64
	switch p.Expire {
	case commands.SetEXAT, commands.SetPXAT:
		if !s.walled {
			return errExat
		}
		deadline = s.fromUnix(p.Millis, now)
	case commands.SetEX, commands.SetPX:
		if !s.relativeOK(p.Millis) {
			return invalidExpire(cmd)
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
	s.notify(notifyString, "set", p.Key)
	switch p.Expire {
	case commands.SetKeepTTL:
	case commands.SetNoExpire:
		s.persist(k)
	default:
		s.notify(notifyGeneric, "expire", p.Key)
		if deadline < now { // an absolute time in the past: set, and gone
			s.deleteKey(k)
			s.notify(notifyExpired, "expired", p.Key)
			break
		}
		s.setDeadline(k, deadline)
	}
	return res
}

func invalidExpire(cmd string) reply.Value {
	return reply.Error(fmt.Sprintf("ERR invalid expire time in '%s' command", cmd))
}

// cmdSetNX is SETNX key value: SET NX answering 1 or 0. A held lock's name
// answers WRONGTYPE, as SET NX does.
func cmdSetNX(s *State, a [][]byte, now int64) reply.Value {
	r := s.set(commands.Set{Key: string(a[1]), Value: string(a[2]), NX: true}, "setnx", now)
	switch r.Kind {
	case reply.KindNull:
		return reply.Int(0)
	case reply.KindError:
		return r
	}
	return reply.Int(1)
}

// cmdSetEx is SETEX and PSETEX: SET with EX or PX.
func cmdSetEx(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseSetEx(a)
	if err != nil {
		return parseErr(err)
	}
	return s.set(p, strings.ToLower(string(a[0])), now)
}

// cmdGetSet is GETSET key value: SET GET, which drops the key's TTL.
func cmdGetSet(s *State, a [][]byte, now int64) reply.Value {
	return s.set(commands.Set{Key: string(a[1]), Value: string(a[2]), Get: true}, "getset", now)
}

// cmdGetEx is GETEX key [EX|PX|EXAT|PXAT|PERSIST], in Redis 7.0's order:
// the options' syntax, then the key (nil when missing, WRONGTYPE), then
// the expiry's value. As EXPIREAT, an absolute time not after now deletes
// the key, after answering its value.
func cmdGetEx(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseGetEx(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Null()
	case p.Invalid != nil:
		return parseErr(p.Invalid)
	}
	res := reply.BulkString(k.str)
	switch p.Expire {
	case commands.SetEXAT, commands.SetPXAT:
		if !s.walled {
			return errExat
		}
		if when := s.fromUnix(p.Millis, now); when > now {
			s.setDeadline(k, when)
			s.notify(notifyGeneric, "expire", p.Key)
		} else {
			s.deleteKey(k)
			s.notify(notifyGeneric, "del", p.Key)
		}
	case commands.SetEX, commands.SetPX:
		if !s.relativeOK(p.Millis) {
			return invalidExpire("getex")
		}
		s.setDeadline(k, ms.Add(now, p.Millis))
		s.notify(notifyGeneric, "expire", p.Key)
	default:
		if p.Persist && s.persist(k) {
			s.notify(notifyGeneric, "persist", p.Key)
		}
	}
	return res
}

// The limits on a string that APPEND or SETRANGE makes: Redis's
// proto-max-bulk-len (512 MiB), and below it fenced's own, MaxRecord,
// since a string is one record, written back whole.
var (
	errStringMax   = reply.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	errStringLarge = reply.Error("ERR the string would grow past 4 MiB, the largest APPEND or SETRANGE may make")
)

// checkLength checks a string of have+add bytes against both limits;
// both are >= 0 and add is an argument's length, so nothing overflows.
func checkLength(have, add int64) (reply.Value, bool) {
	switch {
	case have > 512<<20-add:
		return errStringMax, false
	case have > MaxRecord-add:
		return errStringLarge, false
	}
	return reply.Value{}, true
}

func cmdAppend(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	if !ok {
		return errWrongType
	}
	if k == nil {
		k = s.newKey(string(a[1]), kvString)
		s.setString(k, string(a[2]))
		s.notify(notifyString, "append", k.name)
		return reply.Int(int64(len(k.str)))
	}
	if errv, ok := checkLength(int64(len(k.str)), int64(len(a[2]))); !ok {
		return errv
	}
	s.setString(k, k.str+string(a[2])) // keeps the TTL, as Redis does
	s.notify(notifyString, "append", k.name)
	return reply.Int(int64(len(k.str)))
}

// cmdSetRange is SETRANGE key offset value: the value written at offset,
// zero bytes padding the string up to it. An empty value changes nothing
// (and creates no key), whatever the offset.
func cmdSetRange(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseSetRange(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvString, now)
	switch {
	case !ok:
		return errWrongType
	case p.Value == "" && k == nil:
		return reply.Int(0)
	case p.Value == "":
		return reply.Int(int64(len(k.str)))
	}
	if errv, ok := checkLength(p.Offset, int64(len(p.Value))); !ok {
		return errv
	}
	end := p.Offset + int64(len(p.Value))
	var old string
	if k != nil {
		old = k.str
	}
	b := make([]byte, max(int64(len(old)), end))
	copy(b, old)
	copy(b[p.Offset:], p.Value)
	if k == nil {
		k = s.newKey(p.Key, kvString)
	}
	s.setString(k, string(b))
	s.notify(notifyString, "setrange", p.Key)
	return reply.Int(int64(len(b)))
}

func cmdIncr(s *State, a [][]byte, now int64) reply.Value {
	return s.incrBy(string(a[1]), s.incrStep(), now)
}

func cmdDecr(s *State, a [][]byte, now int64) reply.Value { return s.incrBy(string(a[1]), -1, now) }

// cmdIncrBy is INCRBY and DECRBY.
func cmdIncrBy(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseIncrBy(a)
	if err != nil {
		return parseErr(err)
	}
	return s.incrBy(p.Key, p.By, now)
}

// incrBy adds by to the integer at name (0 when missing), keeping its TTL.
func (s *State) incrBy(name string, by int64, now int64) reply.Value {
	k, ok := s.typed(name, kvString, now)
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
	if by > 0 && n > math.MaxInt64-by || by < 0 && n < math.MinInt64-by {
		return errIncrOverflow
	}
	n += by
	if k == nil {
		k = s.newKey(name, kvString)
	}
	s.setString(k, strconv.FormatInt(n, 10))
	s.notify(notifyString, "incrby", name)
	return reply.Int(n)
}

var (
	errNotFloat  = reply.Error("ERR value is not a valid float")
	errFloatSum  = reply.Error("ERR increment would produce NaN or Infinity")
	zeroFloat, _ = new(big.Float).SetPrec(64).SetString("0")
)

// cmdIncrByFloat is INCRBYFLOAT in Redis's long double arithmetic
// (internal/ldouble), which every replica computes alike; the value is
// stored as Redis formats it, so a replica never reformats a float.
func cmdIncrByFloat(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	if !ok {
		return errWrongType
	}
	v, vinf := zeroFloat, false
	if k != nil {
		if v, vinf, ok = ldouble.Parse(k.str); !ok {
			return errNotFloat
		}
	}
	by, binf, ok := ldouble.Parse(string(a[2]))
	if !ok {
		return errNotFloat
	}
	if vinf || binf {
		return errFloatSum
	}
	sum, ok := ldouble.Add(v, by)
	if !ok {
		return errFloatSum
	}
	if k == nil {
		k = s.newKey(string(a[1]), kvString)
	}
	s.setString(k, ldouble.Format(sum))
	s.notify(notifyString, "incrbyfloat", k.name)
	return reply.BulkString(k.str)
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
	s.notify(notifyGeneric, "del", k.name)
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
		s.notify(notifyString, "set", kv[0])
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
	s.notify(notifyGeneric, "del", name)
	return reply.Int(1)
}
