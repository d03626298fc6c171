package lockstate

import (
	"fmt"
	"github.com/fenced/fenced/resp"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/fenced/fenced/reply"
)

// The model's keyspace: a subset of the commands (SET [NX|XX] [PX ms], DEL,
// PEXPIRE, PERSIST, INCR, and from cluster version 2 SETNX, PSETEX, GETSET,
// GETEX, APPEND, SETRANGE, INCRBY, DECR, DECRBY, INCRBYFLOAT, from 3 SETBIT;
// GET, PTTL, PEXPIRETIME, EXPIRETIME, TYPE, EXISTS, KEYS *, FENCE, GETBIT,
// BITCOUNT, BITPOS), written plainly,
// with no heap and no parsers of its own beyond strconv and math/big.
// Lists live at their own names (genListKeys: LPUSH, RPUSH, LPOP, and from
// cluster version 3 RPOP, LMOVE, RPOPLPUSH, BLMOVE, BRPOPLPUSH; LRANGE,
// LLEN), where a SET now and then leaves a string for WRONGTYPE.

type mKey struct {
	val      string
	created  int64
	ttl      bool
	deadline int64
	// isList: the key is the list list (val unused).
	isList bool
	list   []string
}

// look is the key's visible content, for the diffs of WATCH and tracking.
func (k *mKey) look() string {
	if k.isList {
		return fmt.Sprintf("list %q", k.list)
	}
	return fmt.Sprintf("%q", k.val)
}

// genListKeys are the list commands' names: no string command of genExec
// writes them.
func genListKeys() []string { return []string{"l1", "l2"} }

// genKeys is the pool of key names: "a" is also a lock name, so WRONGTYPE
// is exercised both ways.
func genKeys() []string { return []string{"a", "k1", "k2"} }

func (m *model) expireKeys(now int64) {
	var due []string
	for name, k := range m.keys {
		if k.ttl && k.deadline < now {
			due = append(due, name)
		}
	}
	// Earliest first, then by name: the order their events come in.
	slices.SortFunc(due, func(a, b string) int {
		if d := m.keys[a].deadline - m.keys[b].deadline; d != 0 {
			return int(d)
		}
		return strings.Compare(a, b)
	})
	for _, name := range due {
		m.expired.Keys++
		delete(m.keys, name)
		m.event('x', "expired", name)
	}
}

func (m *model) liveKey(name string, now int64) *mKey {
	if k := m.keys[name]; k != nil && (!k.ttl || k.deadline >= now) {
		return k
	}
	return nil
}

var wrongType = reply.Error("WRONGTYPE Operation against a key holding the wrong kind of value")

// versionTwo are the commands a cluster runs from version 2 on, and
// versionThree from 3 on.
var (
	versionTwo   = []string{"SETNX", "SETEX", "PSETEX", "GETSET", "GETEX", "APPEND", "SETRANGE", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY"}
	versionThree = []string{"RENAME", "RENAMENX", "COPY", "FLUSHALL", "FLUSHDB", "SETBIT",
		"RPOP", "LMOVE", "RPOPLPUSH", "BLMOVE", "BRPOPLPUSH"}
)

func (m *model) exec(args []string, now int64) reply.Value {
	cmd := strings.ToUpper(args[0])
	if slices.Contains(versionTwo, cmd) && m.version < 2 || slices.Contains(versionThree, cmd) && m.version < 3 {
		var b strings.Builder
		for _, a := range args[1:] {
			fmt.Fprintf(&b, "'%s' ", a)
		}
		return reply.Error(fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", args[0], b.String()))
	}
	if cmd == "FLUSHALL" || cmd == "FLUSHDB" {
		// Every key goes, a SET NX lock's too; fenced's locks stay.
		if len(args) > 2 || len(args) == 2 && args[1] != "ASYNC" && args[1] != "SYNC" {
			return reply.Error("ERR syntax error")
		}
		clear(m.keys)
		return reply.OK()
	}
	name := args[1]
	k := m.liveKey(name, now)
	lock := m.locks[name] != nil
	// set makes name the string v, a new key if there is none.
	set := func(v string) *mKey {
		if k == nil {
			k = &mKey{created: int64(m.index)}
			m.keys[name] = k
			m.event('n', "new", name)
		}
		k.val, k.isList, k.list = v, false, nil
		return k
	}
	switch cmd {
	case "CONFIG":
		return m.config(args)
	case "LPUSH", "RPUSH", "LPOP", "RPOP", "LMOVE", "RPOPLPUSH", "BLMOVE", "BRPOPLPUSH":
		return m.listWrite(cmd, args, now)
	case "SETNX":
		switch {
		case lock:
			return wrongType
		case k != nil:
			return reply.Int(0)
		}
		set(args[2]).ttl = false
		m.event('$', "set", name)
		return reply.Int(1)
	case "PSETEX":
		px, _ := strconv.ParseInt(args[2], 10, 64)
		switch {
		case px <= 0:
			return reply.Error("ERR invalid expire time in 'psetex' command")
		case lock:
			return wrongType
		}
		k := set(args[3])
		k.ttl, k.deadline = true, now+px
		m.event('$', "set", name)
		m.event('g', "expire", name)
		return reply.OK()
	case "GETSET":
		if lock {
			return wrongType
		}
		old := reply.Null()
		if k != nil {
			old = reply.BulkString(k.val)
		}
		set(args[2]).ttl = false
		m.event('$', "set", name)
		return old
	case "GETEX":
		switch {
		case lock:
			return wrongType
		case k == nil:
			return reply.Null()
		}
		val := reply.BulkString(k.val)
		if len(args) == 2 {
			return val
		}
		n, _ := strconv.ParseInt(args[len(args)-1], 10, 64)
		switch args[2] {
		case "PERSIST":
			if k.ttl {
				m.event('g', "persist", name)
			}
			k.ttl = false
		case "PX":
			if n <= 0 {
				return reply.Error("ERR invalid expire time in 'getex' command")
			}
			k.ttl, k.deadline = true, now+n
			m.event('g', "expire", name)
		case "PXAT":
			switch {
			case n <= 0:
				return reply.Error("ERR invalid expire time in 'getex' command")
			case !m.walled:
				return reply.Error("ERR EXAT and PXAT are not supported in scripts")
			case now+n-m.unix <= now:
				delete(m.keys, name)
				m.event('g', "del", name)
			default:
				k.ttl, k.deadline = true, now+n-m.unix
				m.event('g', "expire", name)
			}
		}
		return val
	case "APPEND":
		if lock {
			return wrongType
		}
		old := ""
		if k != nil {
			old = k.val
		}
		n := int64(len(set(old + args[2]).val))
		m.event('$', "append", name)
		return reply.Int(n)
	case "SETRANGE":
		off, _ := strconv.Atoi(args[2])
		switch {
		case off < 0:
			return reply.Error("ERR offset is out of range")
		case lock:
			return wrongType
		case args[3] == "" && k == nil:
			return reply.Int(0)
		case args[3] == "":
			return reply.Int(int64(len(k.val)))
		}
		old := ""
		if k != nil {
			old = k.val
		}
		for len(old) < off+len(args[3]) {
			old += "\x00"
		}
		n := int64(len(set(old[:off] + args[3] + old[off+len(args[3]):]).val))
		m.event('$', "setrange", name)
		return reply.Int(n)
	case "SETBIT":
		// A bit offset addresses a string of at most 512 MiB; bit i is
		// the (7 - i%8)th bit of byte i/8. Nothing changes when the bit
		// already is so (no event).
		off, ok := redisInt(args[2])
		if !ok || off.Sign() < 0 || off.Int64()/8 >= 512<<20 {
			return reply.Error("ERR bit offset is not an integer or out of range")
		}
		if args[3] != "0" && args[3] != "1" {
			return reply.Error("ERR bit is not an integer or out of range")
		}
		if lock {
			return wrongType
		}
		var b []byte
		if k != nil {
			b = []byte(k.val)
		}
		i := int(off.Int64() / 8)
		for len(b) <= i {
			b = append(b, 0)
		}
		bit := byte(0x80) >> (off.Int64() % 8)
		old := int64(0)
		if b[i]&bit != 0 {
			old = 1
		}
		if args[3] == "1" {
			b[i] |= bit
		} else {
			b[i] &^= bit
		}
		if k == nil || string(b) != k.val {
			set(string(b))
			m.event('$', "setbit", name)
		}
		return reply.Int(old)
	case "INCR", "INCRBY", "DECRBY", "DECR":
		by := big.NewInt(1)
		if cmd == "DECR" {
			by = big.NewInt(-1)
		}
		if len(args) > 2 {
			var ok bool
			if by, ok = redisInt(args[2]); !ok {
				return reply.Error("ERR value is not an integer or out of range")
			}
			if cmd == "DECRBY" {
				if by.Int64() == math.MinInt64 {
					return reply.Error("ERR decrement would overflow")
				}
				by.Neg(by)
			}
		}
		if lock {
			return wrongType
		}
		n := big.NewInt(0)
		if k != nil {
			var ok bool
			if n, ok = redisInt(k.val); !ok {
				return reply.Error("ERR value is not an integer or out of range")
			}
		}
		if n.Add(n, by); !n.IsInt64() {
			return reply.Error("ERR increment or decrement would overflow")
		}
		set(n.String())
		m.event('$', "incrby", name)
		return reply.Int(n.Int64())
	case "INCRBYFLOAT":
		// C's long double: strtold rounds each number to a 64-bit
		// significand, the sum is rounded again, and %.17Lf prints the
		// binary value's exact decimal expansion rounded to 17 places
		// (the generator's numbers never fall on a tie there).
		if lock {
			return wrongType
		}
		v := new(big.Rat)
		if k != nil {
			if _, ok := v.SetString(k.val); !ok {
				return reply.Error("ERR value is not a valid float")
			}
		}
		by, ok := new(big.Rat).SetString(args[2])
		if !ok {
			return reply.Error("ERR value is not a valid float")
		}
		long := func(r *big.Rat) *big.Float { return new(big.Float).SetPrec(64).SetRat(r) }
		sum, _ := new(big.Float).SetPrec(64).Add(long(v), long(by)).Rat(nil)
		out := strings.TrimSuffix(strings.TrimRight(sum.FloatString(17), "0"), ".")
		if out == "-0" {
			out = "0"
		}
		set(out)
		m.event('$', "incrbyfloat", name)
		return reply.BulkString(out)
	case "SET":
		nx, xx := slices.Contains(args, "NX"), slices.Contains(args, "XX")
		var px int64
		ttl := false
		if i := slices.Index(args, "PX"); i > 0 {
			px, _ = strconv.ParseInt(args[i+1], 10, 64)
			ttl = true
		}
		if i := slices.Index(args, "PXAT"); i > 0 {
			if !m.walled {
				return reply.Error("ERR EXAT and PXAT are not supported in scripts")
			}
			at, _ := strconv.ParseInt(args[i+1], 10, 64)
			px, ttl = at-m.unix, true // may be in the past
		}
		switch {
		case m.locks[name] != nil:
			return wrongType
		case nx && k != nil, xx && k == nil:
			return reply.Null()
		}
		k = set(args[2])
		k.ttl, k.deadline = ttl, now+px
		m.event('$', "set", name)
		if ttl {
			m.event('g', "expire", name)
		}
		if ttl && px < 0 {
			delete(m.keys, name)
			m.event('x', "expired", name)
		}
		return reply.OK()
	case "RENAME", "RENAMENX":
		// The key moves whole, deadline and all, to a name created now:
		// its token is this entry's index. A held lock neither moves nor
		// is replaced.
		dst := args[2]
		dlock, dk := m.locks[dst] != nil, m.liveKey(dst, now)
		switch {
		case lock:
			return wrongType
		case k == nil:
			return reply.Error("ERR no such key")
		case name == dst && cmd == "RENAME":
			return reply.OK()
		case name == dst:
			return reply.Int(0)
		case cmd == "RENAMENX" && (dlock || dk != nil):
			return reply.Int(0)
		case dlock:
			return wrongType
		}
		delete(m.keys, name)
		m.keys[dst] = &mKey{val: k.val, created: int64(m.index), ttl: k.ttl, deadline: k.deadline}
		// db.c: dbAdd says new, then rename_from and rename_to.
		m.event('n', "new", dst)
		m.event('g', "rename_from", name)
		m.event('g', "rename_to", dst)
		if cmd == "RENAMENX" {
			return reply.Int(1)
		}
		return reply.OK()
	case "COPY":
		// COPY src dst [DB n] [REPLACE], as the generator writes it.
		dst, replace := args[2], slices.Contains(args, "REPLACE")
		if i := slices.Index(args, "DB"); i > 0 && args[i+1] != "0" {
			return reply.Error("ERR DB index is out of range")
		}
		dlock, dk := m.locks[dst] != nil, m.liveKey(dst, now)
		switch {
		case name == dst:
			return reply.Error("ERR source and destination objects are the same")
		case lock:
			return wrongType
		case k == nil:
			return reply.Int(0)
		case (dlock || dk != nil) && !replace:
			return reply.Int(0)
		case dlock:
			return wrongType
		}
		m.keys[dst] = &mKey{val: k.val, created: int64(m.index), ttl: k.ttl, deadline: k.deadline}
		m.event('n', "new", dst)
		m.event('g', "copy_to", dst)
		return reply.Int(1)
	case "PEXPIREAT":
		at, _ := strconv.ParseInt(args[2], 10, 64)
		when := now + at - m.unix
		switch {
		case k == nil:
			return reply.Int(0)
		case when <= now:
			delete(m.keys, name)
			m.event('g', "del", name)
		default:
			k.ttl, k.deadline = true, when
			m.event('g', "expire", name)
		}
		return reply.Int(1)
	case "DEL":
		if k == nil {
			return reply.Int(0)
		}
		delete(m.keys, name)
		m.event('g', "del", name)
		return reply.Int(1)
	case "PEXPIRE":
		ms, _ := strconv.ParseInt(args[2], 10, 64)
		switch {
		case k == nil:
			return reply.Int(0)
		case now+ms <= now:
			delete(m.keys, name)
			m.event('g', "del", name)
		default:
			k.ttl, k.deadline = true, now+ms
			m.event('g', "expire", name)
		}
		return reply.Int(1)
	case "PERSIST":
		if k == nil || !k.ttl {
			return reply.Int(0)
		}
		k.ttl = false
		m.event('g', "persist", name)
		return reply.Int(1)
	}
	panic("model: unknown command " + args[0])
}

// redisInt reads s as Redis's string2ll: an int64 written the one way
// FormatInt writes it (no sign but '-', no leading zero, no "-0").
func redisInt(s string) (*big.Int, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return nil, false
	}
	return big.NewInt(n), true
}

// read answers the model's read commands.
func (m *model) read(args []string, now int64) reply.Value {
	name := args[1]
	k := m.liveKey(name, now)
	lock := m.locks[name] != nil
	switch args[0] {
	case "GET":
		switch {
		case lock || k != nil && k.isList:
			return wrongType
		case k == nil:
			return reply.Null()
		}
		return reply.BulkString(k.val)
	case "LRANGE", "LLEN":
		switch {
		case lock || k != nil && !k.isList:
			return wrongType
		case k == nil && args[0] == "LLEN":
			return reply.Int(0)
		case args[0] == "LLEN":
			return reply.Int(int64(len(k.list)))
		case k == nil:
			return reply.Array()
		}
		out := []reply.Value{}
		for _, e := range k.list { // the whole list: 0 -1
			out = append(out, reply.BulkString(e))
		}
		return reply.Array(out...)
	case "PTTL":
		switch {
		case lock || (k != nil && !k.ttl):
			return reply.Int(-1)
		case k == nil:
			return reply.Int(-2)
		}
		return reply.Int(max(0, k.deadline-now))
	case "PEXPIRETIME", "EXPIRETIME":
		switch {
		case lock || (k != nil && !k.ttl):
			return reply.Int(-1)
		case k == nil:
			return reply.Int(-2)
		}
		// As far from the last entry's wall clock as from its time.
		at := k.deadline
		if m.wall != 0 {
			at += m.wall - m.time
		}
		at = max(0, at)
		if args[0] == "EXPIRETIME" {
			at = (at + 500) / 1000
		}
		return reply.Int(at)
	case "TYPE":
		switch {
		case lock:
			return reply.SimpleString("fencedlock")
		case k == nil:
			return reply.SimpleString("none")
		case k.isList:
			return reply.SimpleString("list")
		}
		return reply.SimpleString("string")
	case "EXISTS":
		if lock || k != nil {
			return reply.Int(1)
		}
		return reply.Int(0)
	case "TOUCH":
		n := 0
		for _, a := range args[1:] {
			if m.locks[a] != nil || m.liveKey(a, now) != nil {
				n++
			}
		}
		return reply.Int(int64(n))
	case "OBJECT":
		return m.objectRead(args, now)
	case "GETBIT", "BITCOUNT", "BITPOS":
		switch {
		case lock:
			return wrongType
		case k == nil && args[0] == "BITPOS" && args[2] == "1":
			return reply.Int(-1)
		case k == nil:
			return reply.Int(0)
		}
		// The string's bits, first byte's high bit first.
		var bitsOf []byte
		for i := 0; i < len(k.val); i++ {
			for j := 7; j >= 0; j-- {
				bitsOf = append(bitsOf, '0'+(k.val[i]>>j)&1)
			}
		}
		switch args[0] {
		case "GETBIT":
			off, _ := strconv.Atoi(args[2])
			if off < len(bitsOf) && bitsOf[off] == '1' {
				return reply.Int(1)
			}
			return reply.Int(0)
		case "BITCOUNT":
			return reply.Int(int64(strings.Count(string(bitsOf), "1")))
		}
		// BITPOS over the whole string: past its end it reads as zeros,
		// but an empty string has no range to look in.
		if len(bitsOf) == 0 {
			return reply.Int(-1)
		}
		if i := strings.IndexByte(string(bitsOf), args[2][0]); i >= 0 {
			return reply.Int(int64(i))
		}
		if args[2] == "1" {
			return reply.Int(-1)
		}
		return reply.Int(int64(len(bitsOf)))
	case "KEYS":
		var names []string
		for n := range m.keys {
			if m.liveKey(n, now) != nil {
				names = append(names, n)
			}
		}
		for n := range m.locks {
			names = append(names, n)
		}
		slices.Sort(names)
		out := []reply.Value{}
		for _, n := range names {
			out = append(out, reply.BulkString(n))
		}
		return reply.Array(out...)
	}
	panic("model: unknown read " + args[0])
}

func (m *model) keyFence(name string, now int64) (int64, bool) {
	if l := m.locks[name]; l != nil {
		return l.token, true
	}
	if k := m.liveKey(name, now); k != nil {
		return k.created, true
	}
	return 0, false
}

// genExec draws a keyspace write over genKeys, now and then a change of
// notify-keyspace-events.
func (g *gen) genExec() []string {
	if g.src.intn(25) == 0 {
		return []string{"CONFIG", "SET", "notify-keyspace-events", g.pick(genNotify())}
	}
	name := g.pick(genKeys())
	ms := func() string { return strconv.Itoa(10 * g.src.intn(30)) }
	at := func() string { return strconv.FormatInt(g.wall+10*int64(g.src.intn(30)-5), 10) }
	if g.src.intn(5) == 0 {
		return g.genList()
	}
	switch g.src.intn(25) {
	case 23:
		return []string{"SETBIT", name, g.pick([]string{"0", "1", "6", "7", "9", "17", "-1", "x"}), g.pick([]string{"0", "1", "1", "2"})}
	case 8:
		return []string{"PEXPIREAT", name, at()}
	case 9:
		return []string{"SET", name, "at", "PXAT", at()}
	case 0, 1, 2:
		a := []string{"SET", name, fmt.Sprint(g.src.intn(3))}
		switch g.src.intn(3) {
		case 1:
			a = append(a, "NX")
		case 2:
			a = append(a, "XX")
		}
		if g.src.intn(2) == 0 {
			a = append(a, "PX", strconv.Itoa(10*(1+g.src.intn(30))))
		}
		return a
	case 3:
		return []string{"DEL", name}
	case 4:
		return []string{"PEXPIRE", name, ms()}
	case 5:
		return []string{"PERSIST", name}
	case 6, 7:
		return []string{"incr", name}
	case 10:
		return []string{"SETNX", name, fmt.Sprint(g.src.intn(3))}
	case 11:
		return []string{"PSETEX", name, ms(), "p"}
	case 12:
		return []string{"GETSET", name, fmt.Sprint(g.src.intn(3))}
	case 13:
		switch g.src.intn(4) {
		case 0:
			return []string{"GETEX", name}
		case 1:
			return []string{"GETEX", name, "PERSIST"}
		case 2:
			return []string{"GETEX", name, "PX", ms()}
		}
		return []string{"GETEX", name, "PXAT", at()}
	case 14:
		return []string{"APPEND", name, g.pick([]string{"", "x", "1"})}
	case 15:
		return []string{"SETRANGE", name, g.pick([]string{"-1", "0", "1", "3"}), g.pick([]string{"", "y", "23"})}
	case 16:
		return []string{"INCRBY", name, g.pick([]string{"1", "-3", "9223372036854775807", "-9223372036854775808", "x"})}
	case 17:
		return []string{"DECRBY", name, g.pick([]string{"2", "-1", "9223372036854775807", "-9223372036854775808"})}
	case 18:
		return []string{"DECR", name}
	case 19:
		return []string{"INCRBYFLOAT", name, g.pick([]string{"1.5", "-0.25", "0.5", "2", "x"})}
	case 20:
		return []string{"RENAME", name, g.pick(genKeys())}
	case 21:
		return []string{"RENAMENX", name, g.pick(genKeys())}
	case 22:
		a := []string{"COPY", name, g.pick(genKeys())}
		if g.src.intn(4) == 0 {
			a = append(a, "DB", g.pick([]string{"0", "1"}))
		}
		if g.src.intn(2) == 0 {
			a = append(a, "REPLACE")
		}
		return a
	default:
		if g.src.intn(3) == 0 {
			return []string{g.pick([]string{"FLUSHALL", "FLUSHDB"}), g.pick([]string{"ASYNC", "SYNC", "NOW"})}[:1+g.src.intn(2)]
		}
		return []string{"RENAME", name, g.pick(genKeys())}
	}
}

// compareKeyReads checks Exec and KeyFence against the model at now.
func compareKeyReads(s *State, m *model, now int64) error {
	names := append(genKeys(), genLocks()...)
	for _, name := range names {
		for _, args := range [][]string{{"GET", name}, {"PTTL", name}, {"PEXPIRETIME", name}, {"EXPIRETIME", name},
			{"TYPE", name}, {"EXISTS", name}, {"GETBIT", name, "1"}, {"GETBIT", name, "9"}, {"BITCOUNT", name},
			{"BITPOS", name, "0"}, {"BITPOS", name, "1"}} {
			if got, want := s.Exec(args, now), m.read(args, now); resp.FromReply(got).String() != resp.FromReply(want).String() {
				return fmt.Errorf("Exec(%q) = %v, model %v", args, got, want)
			}
		}
		gf, gok := s.KeyFence(name, now)
		wf, wok := m.keyFence(name, now)
		if gf != wf || gok != wok {
			return fmt.Errorf("KeyFence(%s) = %d %v, model %d %v", name, gf, gok, wf, wok)
		}
	}
	for _, name := range genListKeys() {
		for _, args := range [][]string{{"LRANGE", name, "0", "-1"}, {"LLEN", name}, {"TYPE", name}, {"EXISTS", name}, {"GET", name}, {"PTTL", name}} {
			if got, want := s.Exec(args, now), m.read(args, now); resp.FromReply(got).String() != resp.FromReply(want).String() {
				return fmt.Errorf("Exec(%q) = %v, model %v", args, got, want)
			}
		}
		gf, gok := s.KeyFence(name, now)
		wf, wok := m.keyFence(name, now)
		if gf != wf || gok != wok {
			return fmt.Errorf("KeyFence(%s) = %d %v, model %d %v", name, gf, gok, wf, wok)
		}
	}
	names = append(names, genListKeys()...)
	for _, args := range [][]string{{"KEYS", "*"}, append([]string{"TOUCH"}, names...), {"OBJECT", "ENCODING", "k1"}, {"OBJECT", "REFCOUNT", "k2"}} {
		if got, want := s.Exec(args, now), m.read(args, now); resp.FromReply(got).String() != resp.FromReply(want).String() {
			return fmt.Errorf("Exec(%q) = %v, model %v", args, got, want)
		}
	}
	return nil
}

// objectRead answers OBJECT ENCODING and REFCOUNT of a model key (a
// string): Redis 7.0 holds a string of at most 20 bytes that reads back as
// the same int64 as that integer, one of at most 44 bytes in one
// allocation, and shares the integers 0 to 9999.
func (m *model) objectRead(args []string, now int64) reply.Value {
	name := args[2]
	k := m.liveKey(name, now)
	switch {
	case m.locks[name] != nil && args[1] == "ENCODING":
		return reply.BulkString("fencedlock")
	case m.locks[name] != nil:
		return reply.Int(1)
	case k == nil:
		return reply.Null()
	}
	n, err := strconv.ParseInt(k.val, 10, 64)
	isInt := err == nil && len(k.val) <= 20 && strconv.FormatInt(n, 10) == k.val
	if args[1] == "REFCOUNT" {
		if isInt && n >= 0 && n < 10000 {
			return reply.Int(math.MaxInt32)
		}
		return reply.Int(1)
	}
	switch {
	case isInt:
		return reply.BulkString("int")
	case len(k.val) <= 44:
		return reply.BulkString("embstr")
	}
	return reply.BulkString("raw")
}

// listWrite runs the list commands on the model: Redis 7.0's t_list.c
// read plainly (lmoveGenericCommand: the source is looked at first, a
// destination of another type refuses with nothing popped; the
// destination's events, then the source's).
func (m *model) listWrite(cmd string, args []string, now int64) reply.Value {
	// list is name as a list: ok is false for another type (or a lock).
	list := func(name string) (*mKey, bool) {
		k := m.liveKey(name, now)
		if m.locks[name] != nil || k != nil && !k.isList {
			return nil, false
		}
		return k, true
	}
	side := func(a string) (tail, ok bool) {
		switch strings.ToUpper(a) {
		case "LEFT":
			return false, true
		case "RIGHT":
			return true, true
		}
		return false, false
	}
	// push puts els on name's head (each in front of the last) or tail,
	// with one event, as Redis notifies a whole push.
	push := func(name string, els []string, tail bool) {
		k := m.liveKey(name, now)
		if k == nil {
			k = &mKey{created: int64(m.index), isList: true}
			m.keys[name] = k
			m.event('n', "new", name)
		}
		for _, e := range els {
			if tail {
				k.list = append(slices.Clone(k.list), e)
			} else {
				k.list = append([]string{e}, k.list...)
			}
		}
		if tail {
			m.event('l', "rpush", name)
		} else {
			m.event('l', "lpush", name)
		}
		m.pushed = append(m.pushed, name)
	}
	pop := func(name string, tail bool) string {
		k := m.keys[name]
		var e string
		if tail {
			e, k.list = k.list[len(k.list)-1], slices.Clone(k.list[:len(k.list)-1])
			m.event('l', "rpop", name)
		} else {
			e, k.list = k.list[0], slices.Clone(k.list[1:])
			m.event('l', "lpop", name)
		}
		if len(k.list) == 0 {
			delete(m.keys, name)
			m.event('g', "del", name)
		}
		return e
	}
	name := args[1]
	switch cmd {
	case "LPUSH", "RPUSH":
		if _, ok := list(name); !ok {
			return wrongType
		}
		push(name, args[2:], cmd == "RPUSH")
		return reply.Int(int64(len(m.keys[name].list)))
	case "LPOP", "RPOP":
		k, ok := list(name)
		switch {
		case !ok:
			return wrongType
		case k == nil:
			return reply.Null()
		}
		return reply.BulkString(pop(name, cmd == "RPOP"))
	}
	from, to, timeout := true, false, ""
	if cmd == "LMOVE" || cmd == "BLMOVE" {
		var ok1, ok2 bool
		from, ok1 = side(args[3])
		to, ok2 = side(args[4])
		if !ok1 || !ok2 {
			return reply.Error("ERR syntax error")
		}
	}
	if cmd[0] == 'B' {
		timeout = args[len(args)-1]
		if f, err := strconv.ParseFloat(timeout, 64); err != nil {
			return reply.Error("ERR timeout is not a float or out of range")
		} else if f < 0 {
			return reply.Error("ERR timeout is negative")
		}
	}
	src, ok := list(name)
	switch {
	case !ok:
		return wrongType
	case src == nil:
		return reply.Null() // the blocking forms too: the state machine never waits
	}
	if _, ok := list(args[2]); !ok {
		return wrongType
	}
	// A rotation pushes onto the list it pops: the element is read first,
	// and the list is never empty in between, so never deleted.
	var e string
	if from {
		e = src.list[len(src.list)-1]
	} else {
		e = src.list[0]
	}
	if name == args[2] {
		rest := slices.Clone(src.list[1:])
		if from {
			rest = slices.Clone(src.list[:len(src.list)-1])
		}
		src.list = rest
		push(name, []string{e}, to)
		if from {
			m.event('l', "rpop", name)
		} else {
			m.event('l', "lpop", name)
		}
		return reply.BulkString(e)
	}
	push(args[2], []string{e}, to)
	pop(name, from)
	return reply.BulkString(e)
}

// genList draws a list command over genListKeys, now and then on a string
// key (WRONGTYPE), or a SET or DEL of a list's name.
func (g *gen) genList() []string {
	names := genListKeys()
	name, other := g.pick(names), g.pick(names)
	if g.src.intn(8) == 0 {
		// A string, a lock or nothing as the source: WRONGTYPE or null.
		// Never as the destination, which a move would make a list.
		name = g.pick([]string{"k1", "a"})
	}
	sides := []string{"LEFT", "RIGHT", "left", "Right"}
	el := func() string { return fmt.Sprint(g.src.intn(4)) }
	switch g.src.intn(12) {
	case 0, 1:
		return []string{g.pick([]string{"LPUSH", "RPUSH"}), g.pick(names), el(), el()}[:3+g.src.intn(2)]
	case 2:
		return []string{g.pick([]string{"LPOP", "RPOP"}), g.pick(names)}
	case 3, 4, 5:
		return []string{"LMOVE", name, other, g.pick(sides), g.pick(sides)}
	case 6:
		return []string{"RPOPLPUSH", name, other}
	case 7:
		return []string{"BLMOVE", name, other, g.pick(sides), g.pick(sides), g.pick([]string{"0", "1.5", "-1"})}
	case 8:
		return []string{"BRPOPLPUSH", name, other, g.pick([]string{"0", "2", "x"})}
	case 9:
		return []string{"SET", g.pick(names), "s"}
	case 10:
		return []string{"DEL", g.pick(names)}
	}
	return []string{"LMOVE", name, other, g.pick([]string{"LEFT", "UP"}), "RIGHT"}
}
