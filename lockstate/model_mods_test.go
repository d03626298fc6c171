package lockstate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fenced/fenced/acl"
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// The model's transactions and WATCH, by another route than mods.go: the
// model keeps, from cluster version 3, every name's history of changes
// (each a log index, and whether it deleted a key), found by
// comparing what each name holds before and after each step of an entry,
// plus the writes Redis counts as touching a key though they change
// nothing visible (SET of the same value, EXPIRE to the same deadline, a
// SET whose PXAT is already past, which Redis sets and expires at once).
// A watch is broken by any change after its index, except, for a key that
// was stale when watched, a deletion as its first change: Redis's
// touchWatchedKey and isWatchedKeyExpired, replayed. No tombstone cap: the
// runs stay far below it.

type mChange struct {
	index   uint64
	deleted bool
}

// mNames are the pools' names, each once ("a" is a key and a lock).
func mNames() []string {
	n := append(append(genKeys(), genLocks()...), genListKeys()...)
	slices.Sort(n)
	return slices.Compact(n)
}

// looks describes every name of the pools as the records hold it.
func (m *model) looks() map[string]mLook {
	out := map[string]mLook{}
	for _, name := range mNames() {
		if k := m.keys[name]; k != nil {
			out[name] = mLook{what: fmt.Sprintf("k %s %d %v %d", k.look(), k.created, k.ttl, k.deadline)}
		} else if l := m.locks[name]; l != nil {
			out[name] = mLook{what: fmt.Sprintf("l %s %q %d %d %d", l.holder, l.owner, l.count, l.limit, l.token), lock: true}
		}
	}
	return out
}

type mLook struct {
	what string
	lock bool
}

// phase runs fn and records the names it changed.
func (m *model) phase(fn func()) {
	if max(m.version, 1) < txVersion {
		fn()
		return
	}
	before := m.looks()
	fn()
	after := m.looks()
	for _, name := range mNames() {
		b, hadB := before[name]
		a, hasA := after[name]
		switch {
		case hadB && !hasA:
			m.changed(name, !b.lock)
		case hasA && (!hadB || a.what != b.what):
			m.changed(name, false)
		}
	}
}

func (m *model) changed(name string, deleted bool) {
	if m.hist == nil {
		m.hist = map[string][]mChange{}
	}
	m.hist[name] = append(m.hist[name], mChange{index: m.index, deleted: deleted})
}

// write runs one keyspace write, recording what it changed, and also a
// write that changed nothing visible that Redis counts as a touch.
func (m *model) write(args []string, now int64) reply.Value {
	var r reply.Value
	if len(args) < 2 {
		// FLUSHALL and FLUSHDB name no key: what they change, the diff sees.
		m.phase(func() { r = m.exec(args, now) })
		return r
	}
	name := args[1]
	existed := m.liveKey(name, now) != nil
	var was string
	if k := m.liveKey(name, now); k != nil {
		was = k.val
	}
	m.phase(func() { r = m.exec(args, now) })
	if max(m.version, 1) < txVersion || r.IsError() {
		return r
	}
	if h := m.hist[name]; len(h) > 0 && h[len(h)-1].index == m.index {
		return r // already changed by this entry
	}
	upper := func(s string) bool {
		return slices.ContainsFunc(args[2:], func(a string) bool { return strings.EqualFold(a, s) })
	}
	touched := false
	switch strings.ToUpper(args[0]) {
	case "SET":
		touched = !(upper("NX") && existed) && !(upper("XX") && !existed)
	case "GETSET", "APPEND", "INCR", "INCRBY", "DECR", "DECRBY", "INCRBYFLOAT", "PSETEX", "SETEX":
		touched = true
	case "SETNX", "PEXPIRE", "PEXPIREAT", "EXPIRE", "EXPIREAT", "PERSIST":
		touched = r.Kind == reply.KindInt && r.Int == 1
	case "GETEX": // PERSIST touches only a key with a TTL: a change the diff sees
		touched = len(args) > 2 && existed && !upper("PERSIST")
	case "SETRANGE":
		touched = args[3] != ""
	case "LMOVE", "RPOPLPUSH", "BLMOVE", "BRPOPLPUSH":
		// A move touches both lists, a rotation too, though it may leave
		// its list as it was (one element, or equal ones).
		touched = r.Kind == reply.KindBulk
	case "SETBIT": // only a bit that flips, or a string that grows or is new
		k := m.liveKey(name, now)
		touched = !existed || k == nil || k.val != was
	}
	if touched {
		m.changed(name, false)
	}
	return r
}

// watchBroken replays Redis's rule over the name's history.
func (m *model) watchBroken(w Watch) bool {
	stale := w.Stale
	for _, c := range m.hist[w.Key] {
		if c.index <= w.Index {
			continue
		}
		if stale && c.deleted {
			stale = false // the stale key's own deletion first: no change
			continue
		}
		return true
	}
	return false
}

// multi is OpMulti in the model.
func (m *model) multi(e Entry, now int64) reply.Value {
	if max(m.version, 1) < txVersion {
		return reply.Error("ERR unknown command 'exec', with args beginning with: ")
	}
	for _, w := range e.Watches {
		if m.watchBroken(w) {
			return reply.NullArray()
		}
	}
	out := []reply.Value{}
	for _, c := range e.Cmds {
		if v, ok := m.denied(e.User, c); !ok {
			out = append(out, v)
			continue
		}
		switch strings.ToUpper(c[0]) {
		case "GET", "PTTL", "TYPE", "EXISTS":
			out = append(out, m.read(c, now))
		case "CONFIG":
			// Not a keyspace command: the server runs it beside the
			// entry, never in it.
			out = append(out, reply.Error("ERR Command not allowed inside a transaction"))
		default:
			out = append(out, m.write(c, now))
		}
	}
	return reply.Array(out...)
}

// denied holds a queued command to its user's ACL as it is when the entry
// applies, with Redis's words for EXEC.
func (m *model) denied(user string, args []string) (reply.Value, bool) {
	if user == "" {
		user = acl.DefaultUser
	}
	u := m.users[user]
	if u == nil {
		if user == acl.DefaultUser {
			return reply.Value{}, true
		}
		return reply.Error(errTxNoPerm + "no permission to execute the command or subcommand"), false
	}
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	spec, _ := modelTable.Lookup(a[0])
	if !u.Can(spec.PermOf(a)) {
		return reply.Error(errTxNoPerm + "no permission to execute the command or subcommand"), false
	}
	for _, k := range spec.KeysOf(a) {
		if !u.CanKey(string(k)) {
			return reply.Error(errTxNoPerm + "no permission to touch the specified keys"), false
		}
	}
	return reply.Value{}, true
}

var modelTable = commands.New()

// genMulti draws a transaction: up to two watches of recent indexes (stale
// or not) and up to three commands, writes and reads.
func (g *gen) genMulti() Entry {
	e := Entry{Op: OpMulti, Time: g.time}
	names := append(genKeys(), genLocks()...)
	for range g.src.intn(3) {
		back := uint64(g.src.intn(8))
		e.Watches = append(e.Watches, Watch{Key: g.pick(names), Index: g.index - min(back, g.index), Stale: g.src.intn(4) == 0})
	}
	for range g.src.intn(4) {
		if g.src.intn(3) == 0 {
			e.Cmds = append(e.Cmds, []string{g.pick([]string{"GET", "PTTL", "TYPE", "EXISTS"}), g.pick(names)})
		} else {
			e.Cmds = append(e.Cmds, g.genExec())
		}
	}
	if len(e.Cmds) == 0 && len(e.Watches) == 0 {
		e.Cmds = [][]string{{"GET", g.pick(names)}}
	}
	return e
}
