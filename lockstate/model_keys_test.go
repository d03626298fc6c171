package lockstate

import (
	"fmt"
	"github.com/fenced/fenced/resp"
	"slices"
	"strconv"
	"strings"

	"github.com/fenced/fenced/reply"
)

// The model's keyspace: a subset of the commands (SET [NX|XX] [PX ms], DEL,
// PEXPIRE, PERSIST, INCR; GET, PTTL, TYPE, EXISTS, KEYS *, FENCE), written
// plainly, with no heap and no parsers of its own beyond Sscan.

type mKey struct {
	val      string
	created  int64
	ttl      bool
	deadline int64
}

// genKeys is the pool of key names: "a" is also a lock name, so WRONGTYPE
// is exercised both ways.
func genKeys() []string { return []string{"a", "k1", "k2"} }

func (m *model) expireKeys(now int64) {
	for name, k := range m.keys {
		if k.ttl && k.deadline < now {
			m.expired.Keys++
			delete(m.keys, name)
		}
	}
}

func (m *model) liveKey(name string, now int64) *mKey {
	if k := m.keys[name]; k != nil && (!k.ttl || k.deadline >= now) {
		return k
	}
	return nil
}

var wrongType = reply.Error("WRONGTYPE Operation against a key holding the wrong kind of value")

func (m *model) exec(args []string, now int64) reply.Value {
	name := args[1]
	k := m.liveKey(name, now)
	switch strings.ToUpper(args[0]) {
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
		if k == nil {
			k = &mKey{created: int64(m.index)}
			m.keys[name] = k
		}
		k.val, k.ttl, k.deadline = args[2], ttl, now+px
		if ttl && px < 0 {
			delete(m.keys, name)
		}
		return reply.OK()
	case "PEXPIREAT":
		at, _ := strconv.ParseInt(args[2], 10, 64)
		when := now + at - m.unix
		switch {
		case k == nil:
			return reply.Int(0)
		case when <= now:
			delete(m.keys, name)
		default:
			k.ttl, k.deadline = true, when
		}
		return reply.Int(1)
	case "DEL":
		if k == nil {
			return reply.Int(0)
		}
		delete(m.keys, name)
		return reply.Int(1)
	case "PEXPIRE":
		ms, _ := strconv.ParseInt(args[2], 10, 64)
		switch {
		case k == nil:
			return reply.Int(0)
		case now+ms <= now:
			delete(m.keys, name)
		default:
			k.ttl, k.deadline = true, now+ms
		}
		return reply.Int(1)
	case "PERSIST":
		if k == nil || !k.ttl {
			return reply.Int(0)
		}
		k.ttl = false
		return reply.Int(1)
	case "INCR":
		if m.locks[name] != nil {
			return wrongType
		}
		var n int64
		if k != nil {
			var err error
			if n, err = strconv.ParseInt(k.val, 10, 64); err != nil {
				return reply.Error("ERR value is not an integer or out of range")
			}
		}
		if k == nil {
			k = &mKey{created: int64(m.index)}
			m.keys[name] = k
		}
		n++
		k.val = strconv.FormatInt(n, 10)
		return reply.Int(n)
	}
	panic("model: unknown command " + args[0])
}

// read answers the model's read commands.
func (m *model) read(args []string, now int64) reply.Value {
	name := args[1]
	k := m.liveKey(name, now)
	lock := m.locks[name] != nil
	switch args[0] {
	case "GET":
		switch {
		case lock:
			return wrongType
		case k == nil:
			return reply.Null()
		}
		return reply.BulkString(k.val)
	case "PTTL":
		switch {
		case lock || (k != nil && !k.ttl):
			return reply.Int(-1)
		case k == nil:
			return reply.Int(-2)
		}
		return reply.Int(max(0, k.deadline-now))
	case "TYPE":
		switch {
		case lock:
			return reply.SimpleString("fencedlock")
		case k == nil:
			return reply.SimpleString("none")
		}
		return reply.SimpleString("string")
	case "EXISTS":
		if lock || k != nil {
			return reply.Int(1)
		}
		return reply.Int(0)
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

// genExec draws a keyspace write over genKeys.
func (g *gen) genExec() []string {
	name := g.pick(genKeys())
	ms := func() string { return strconv.Itoa(10 * g.src.intn(30)) }
	at := func() string { return strconv.FormatInt(g.wall+10*int64(g.src.intn(30)-5), 10) }
	switch g.src.intn(10) {
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
	default:
		return []string{"incr", name}
	}
}

// compareKeyReads checks Exec and KeyFence against the model at now.
func compareKeyReads(s *State, m *model, now int64) error {
	names := append(genKeys(), genLocks()...)
	for _, name := range names {
		for _, cmd := range []string{"GET", "PTTL", "TYPE", "EXISTS"} {
			args := []string{cmd, name}
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
	args := []string{"KEYS", "*"}
	if got, want := s.Exec(args, now), m.read(args, now); resp.FromReply(got).String() != resp.FromReply(want).String() {
		return fmt.Errorf("Exec(%q) = %v, model %v", args, got, want)
	}
	return nil
}
