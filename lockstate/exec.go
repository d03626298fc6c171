package lockstate

import (
	"fmt"
	"math"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/reply"
)

// The keyspace commands. Arity is checked once, by commands.Check, against
// the same table the server dispatches on; each handler parses the rest
// with the commands package's parsers and answers a reply.Value with
// Redis's texts.
//
// Write handlers run only inside Apply (OpExec), at the entry's time and
// index; read handlers only read, at the now they are given, so they serve
// both Exec on the leader and, later, scripts inside Apply.

// handler runs one command; args[0] is its name as sent.
type handler func(s *State, args [][]byte, now int64) reply.Value

// readHandler and writeHandler name the commands the state machine
// executes, by their table name (nil: not one of them).
func readHandler(name string) handler {
	switch name {
	case "get":
		return cmdGet
	case "mget":
		return cmdMget
	case "exists":
		return cmdExists
	case "ttl":
		return cmdTTL
	case "pttl":
		return cmdPTTL
	case "expiretime":
		return cmdExpireTime
	case "pexpiretime":
		return cmdPExpireTime
	case "type":
		return cmdType
	case "keys":
		return cmdKeys
	case "scan":
		return cmdScan
	case "getrange":
		return cmdGetRange
	case "dbsize":
		return cmdDBSize
	case "hget":
		return cmdHget
	case "hexists":
		return cmdHexists
	case "hgetall":
		return cmdHgetall
	case "llen":
		return cmdLlen
	case "lrange":
		return cmdLrange
	case "strlen":
		return cmdStrlen
	case "hlen":
		return cmdHlen
	case "touch":
		return cmdExists // TOUCH counts the names that exist, as EXISTS does; fenced keeps no access time
	case "randomkey":
		return cmdRandomKey
	case "object":
		return cmdObject
	case "sort_ro":
		return cmdSort
	case "smembers":
		return cmdSmembers
	case "sismember":
		return cmdSismember
	case "smismember":
		return cmdSmismember
	case "scard":
		return cmdScard
	case "srandmember":
		return cmdSrandmember
	case "getbit":
		return cmdGetBit
	case "bitcount":
		return cmdBitCount
	case "bitpos":
		return cmdBitPos
	case "lcs":
		return cmdLCS
	}
	return nil
}

func writeHandler(name string) handler {
	switch name {
	case "set":
		return cmdSet
	case "getdel":
		return cmdGetDel
	case "mset":
		return cmdMset
	case "msetnx":
		return cmdMsetNX
	case "incr":
		return cmdIncr
	case "setnx":
		return cmdSetNX
	case "setex", "psetex":
		return cmdSetEx
	case "getset":
		return cmdGetSet
	case "getex":
		return cmdGetEx
	case "append":
		return cmdAppend
	case "setrange":
		return cmdSetRange
	case "incrby", "decrby":
		return cmdIncrBy
	case "incrbyfloat":
		return cmdIncrByFloat
	case "decr":
		return cmdDecr
	case "del", "unlink":
		return cmdDel
	case "expire", "pexpire", "expireat", "pexpireat":
		return cmdExpire
	case "persist":
		return cmdPersist
	case "delex":
		return cmdDelEx
	case "delifeq":
		return cmdDelIfEq
	case "hset":
		return cmdHset
	case "hincrby":
		return cmdHincrBy
	case "hdel":
		return cmdHdel
	case "lpush", "rpush":
		return cmdPush
	case "lpop":
		return cmdLpop
	case "sort":
		return cmdSort
	case "sadd":
		return cmdSadd
	case "srem":
		return cmdSrem
	case "spop":
		return cmdSpop
	case "blpop":
		return cmdBlpop
	case "eval":
		return cmdEval
	case "evalsha":
		return cmdEvalSHA
	case "eval_ro":
		// Through the log only to cache its script (EvalRO runs the rest).
		return cmdEvalRO
	case "evalsha_ro":
		return cmdEvalSHARO
	case "script":
		return cmdScript
	case "function":
		return cmdFunction
	case "fcall":
		return cmdFcall
	case "fcall_ro":
		// Inside a transaction's entry only: alone it is a read (FcallRO).
		return cmdFcallRO
	case "publish":
		return cmdPublish
	case "rename", "renamenx":
		return cmdRename
	case "copy":
		return cmdCopy
	case "flushall", "flushdb":
		return cmdFlush
	case "move":
		return cmdMove
	case "swapdb":
		return cmdSwapDB
	case "setbit":
		return cmdSetBit
	case "rpop":
		return cmdRpop
	case "lmove", "rpoplpush", "blmove", "brpoplpush":
		return cmdLmove
	case "hmset":
		return cmdHmset
	}
	return nil
}

// Error replies, in Redis's words.
var (
	errWrongType    = reply.ErrorOf(ErrWrongType)
	errNotInt       = reply.ErrorOf(commands.ErrNotInteger)
	errIncrOverflow = reply.Error("ERR increment or decrement would overflow")
	errOOM          = reply.ErrorOf(ErrOOM)
	// errExat answers SET EXAT|PXAT in an entry without a wall clock: from
	// before version 2, when only a script could send them.
	errExat = reply.Error("ERR EXAT and PXAT are not supported in scripts")
)

type execMode uint8

const (
	execRead  execMode = 1 << iota // read commands may run
	execWrite                      // write commands may run (inside Apply only)
)

// Exec answers a read command of the keyspace (GET, MGET, EXISTS, TTL,
// PTTL, TYPE, KEYS, GETRANGE, HGET, HEXISTS, HGETALL, LLEN, DBSIZE) against
// the current state, at cluster time now (the leader's, >= Time()): a key
// whose deadline is before now is absent, and TTL/PTTL count from now. It
// never changes the State, so it may run concurrently with the other
// reads. A write command or an unknown one answers an error reply.
func (s *State) Exec(args []string, now int64) reply.Value {
	return s.call(args, now, execRead)
}

// call runs one command in the modes allowed.
func (s *State) call(args []string, now int64, mode execMode) reply.Value {
	if len(args) == 0 {
		return reply.Error("ERR empty command")
	}
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	check := s.table.Check
	if mode&execWrite != 0 {
		check = s.checkAt
	}
	spec, err := check(a)
	if err != nil {
		return reply.ErrorOf(err)
	}
	if h := readHandler(spec.Name); h != nil && mode&execRead != 0 {
		return h(s, a, now)
	}
	if h := writeHandler(spec.Name); h != nil && mode&execWrite != 0 {
		return s.write(spec, h, a, now)
	}
	if spec.Name == "config" && mode&execWrite != 0 {
		return cmdConfig(s, a, now) // an OpExec only: scripts never reach it (notify.go)
	}
	switch {
	case readHandler(spec.Name) != nil:
		return reply.Error(fmt.Sprintf("ERR '%s' is a read command: it is not applied through the log", spec.Name))
	case writeHandler(spec.Name) != nil:
		return reply.Error(fmt.Sprintf("ERR '%s' is a write command: it must be applied through the log", spec.Name))
	}
	return reply.Error(fmt.Sprintf("ERR '%s' is not a keyspace command", spec.Name))
}

// checkAt is Table.Check at the cluster's version: inside the log (an
// OpExec, a script's redis.call) a command the version does not have yet
// is unknown, exactly as a replica on an older binary answers it, so that
// the two agree during a rolling upgrade.
func (s *State) checkAt(a [][]byte) (*commands.Spec, error) {
	return s.table.CheckAt(a, func(spec *commands.Spec) bool { return spec.Version > s.Version() })
}

// write runs the write command a with its handler h, unless it would grow
// the state past the entry's MaxMemory (memory.go): from an OpExec entry
// and from a script alike.
func (s *State) write(spec *commands.Spec, h handler, a [][]byte, now int64) reply.Value {
	if spec.Has(commands.DenyOOM) && !s.roomFor(argBytes(a)+extraGrowth(spec.Name, a)) {
		return errOOM
	}
	return h(s, a, now)
}

// extraGrowth is what a command may add beyond its arguments: SETRANGE's
// zero padding up to its offset and SETBIT's up to its offset's byte (a
// string holds MaxRecord at most), and the digits INCRBYFLOAT may print
// (up to Redis's 5 KiB for a long double).
func extraGrowth(name string, a [][]byte) int64 {
	switch name {
	case "setrange":
		if n, err := commands.ParseInt(a[2]); err == nil && n > 0 {
			return min(n, MaxRecord)
		}
	case "setbit":
		if n, err := commands.ParseInt(a[2]); err == nil && n > 0 {
			return min(n>>3+1, MaxRecord)
		}
	case "incrbyfloat":
		return 5 << 10
	}
	return 0
}

// find returns the live key name, or lock = true when name is a held
// fenced lock.
func (s *State) find(name string, now int64) (k *kvKey, lock bool) {
	if s.locks[name] != nil {
		return nil, true
	}
	return s.live(name, now), false
}

// typed returns the live key name if it has type t, nil if there is none,
// and ok = false if name is a key of another type or a held lock.
func (s *State) typed(name string, t kvType, now int64) (k *kvKey, ok bool) {
	k, lock := s.find(name, now)
	if lock || (k != nil && k.typ != t) {
		return nil, false
	}
	return k, true
}

func parseErr(err error) reply.Value { return reply.ErrorOf(err) }

// bulks is ss as bulk strings, the elements of an array or set reply.
func bulks(ss []string) []reply.Value {
	out := make([]reply.Value, len(ss))
	for i, m := range ss {
		out[i] = reply.BulkString(m)
	}
	return out
}

func cmdType(s *State, a [][]byte, now int64) reply.Value {
	return reply.SimpleString(s.KeyType(string(a[1]), now))
}

func cmdDBSize(s *State, a [][]byte, now int64) reply.Value {
	return reply.Int(int64(s.KeyCount(now)))
}

func cmdExists(s *State, a [][]byte, now int64) reply.Value {
	var n int64
	for _, name := range a[1:] {
		if k, lock := s.find(string(name), now); k != nil || lock {
			n++
		}
	}
	return reply.Int(n)
}

func cmdKeys(s *State, a [][]byte, now int64) reply.Value {
	pattern := string(a[1])
	names := s.keyNames(now, func(name string) bool { return s.keyMatch(pattern, name) })
	out := make([]reply.Value, len(names))
	for i, n := range names {
		out[i] = reply.BulkString(n)
	}
	return reply.Array(out...)
}

// keyMatch is KEYS's test of a name: "*" is every name (Redis's shortcut,
// which glob.Match's empty-string rule needs); below cluster version 3 an
// empty name matched every all-star pattern, as a script's KEYS must
// still answer there.
func (s *State) keyMatch(pattern, name string) bool {
	return pattern == "*" || glob.Match(pattern, name) || name == "" && s.Version() < 3 && glob.AllStars(pattern)
}

// DEL and UNLINK delete keys, not fenced locks: a held lock is released by
// its owner (FUNLOCK) or an admin (LOCK.FORCEUNLOCK), so DEL counts it 0.
func cmdDel(s *State, a [][]byte, now int64) reply.Value {
	var n int64
	for _, name := range a[1:] {
		if k := s.live(string(name), now); k != nil {
			s.deleteKey(k)
			s.notify(notifyGeneric, "del", k.name)
			n++
		}
	}
	return reply.Int(n)
}

func remaining(s *State, a [][]byte, now int64) (int64, bool) {
	d, ok := s.deadlineOf(a[1], now)
	if !ok {
		return d, false
	}
	return max(0, ms.Sub(d, now)), true
}

// deadlineOf is the key's deadline in cluster time (ok), or else what TTL
// and EXPIRETIME answer without one: -2 for no key, -1 for a key without a
// TTL or a held lock.
func (s *State) deadlineOf(name []byte, now int64) (int64, bool) {
	k, lock := s.find(string(name), now)
	switch {
	case lock:
		return -1, false
	case k == nil:
		return -2, false
	case !k.ttl:
		return -1, false
	}
	return k.timer.deadline, true
}

func cmdPTTL(s *State, a [][]byte, now int64) reply.Value {
	d, _ := remaining(s, a, now)
	return reply.Int(d)
}

// cmdExpireTime and cmdPExpireTime answer the key's deadline as a Unix
// time: the deadline in cluster time, as far from the last entry's time as
// it is from that entry's wall clock (the inverse of fromUnix).
func cmdExpireTime(s *State, a [][]byte, now int64) reply.Value {
	at, ok := s.expireTime(a, now)
	if ok {
		at = ms.Add(at, 500) / 1000
	}
	return reply.Int(at)
}

func cmdPExpireTime(s *State, a [][]byte, now int64) reply.Value {
	at, _ := s.expireTime(a, now)
	return reply.Int(at)
}

// expireTime is PEXPIRETIME's answer: -2 no key, -1 no TTL, or the Unix
// ms of the deadline (ok).
func (s *State) expireTime(a [][]byte, now int64) (int64, bool) {
	at, ok := s.deadlineOf(a[1], now)
	if !ok {
		return at, false
	}
	if s.wall != 0 { // else the entries carry no wall clock: cluster time is all there is
		at = ms.Add(at, ms.Sub(s.wall, s.time))
	}
	return max(0, at), true
}

func cmdTTL(s *State, a [][]byte, now int64) reply.Value {
	d, ok := remaining(s, a, now)
	if ok {
		d = ms.Add(d, 500) / 1000
	}
	return reply.Int(d)
}

// cmdExpire is EXPIRE and PEXPIRE (relative to the entry's time) and
// EXPIREAT and PEXPIREAT (Unix time, measured against the entry's wall
// clock), with Redis's range rule: a relative time that overflows when
// added to the Unix time is invalid. As in Redis, a deadline not after now
// deletes the key.
func cmdExpire(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseExpire(a)
	if err != nil {
		return parseErr(err)
	}
	name := strings.ToLower(string(a[0]))
	var when int64 // the deadline in cluster time
	if name == "pexpireat" || name == "expireat" {
		when = s.fromUnix(p.Millis, now)
	} else {
		if !s.relativeOK(p.Millis) {
			return reply.Error(fmt.Sprintf("ERR invalid expire time in '%s' command", name))
		}
		when = ms.Add(now, p.Millis)
	}
	k := s.live(string(a[1]), now)
	if k == nil { // a held lock has no key TTL
		return reply.Int(0)
	}
	switch {
	case p.NX && k.ttl, p.XX && !k.ttl,
		p.GT && (!k.ttl || when <= k.timer.deadline),
		p.LT && k.ttl && when >= k.timer.deadline:
		return reply.Int(0)
	}
	if when <= now {
		s.deleteKey(k)
		s.notify(notifyGeneric, "del", k.name)
		return reply.Int(1)
	}
	s.setDeadline(k, when)
	s.notify(notifyGeneric, "expire", k.name)
	return reply.Int(1)
}

// relativeOK is Redis's range rule for a relative expiry d in ms: the Unix
// time it lands on must fit in int64, whatever the cluster's age.
func (s *State) relativeOK(d int64) bool {
	return s.unix <= 0 || d <= math.MaxInt64-s.unix
}

// fromUnix turns an absolute Unix time in ms into cluster time: as far from
// the entry's time as it is from the entry's wall clock.
func (s *State) fromUnix(at, now int64) int64 {
	return ms.Add(now, ms.Sub(at, s.unix))
}

func cmdPersist(s *State, a [][]byte, now int64) reply.Value {
	if k := s.live(string(a[1]), now); k != nil && s.persist(k) {
		s.notify(notifyGeneric, "persist", k.name)
		return reply.Int(1)
	}
	return reply.Int(0)
}
