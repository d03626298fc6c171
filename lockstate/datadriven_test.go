package lockstate

import (
	"fmt"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the scenarios in testdata/scenarios (testdata/fuzz
// is the fuzzers'). The command language:
//
//	new [maxsessions=N] [maxlocks=N] [maxwaiters=N] [reqmemory=N]
//	apply [effects]          one entry per input line (effects: and what it
//	                         changed, pushed to and published):
//	  [index=N] [time=N] [wall=N] OP [session=] [name=] [ttl=] [created=] [lock=] [owner=]
//	                     [wait=N|none] [limit=] [req=] [fence=] [waitid=]
//	                     [epoch=] [node=] [raftaddr=] [addr=] [version=]
//	  OP is tick, open, heartbeat, kill, flock, funlock, cancel, forceunlock,
//	  cancelwaits, join, remove, setversion or opN. index defaults to the previous one
//	  + 1 and time to the previous entry's; wait defaults to none (no WAIT).
//	  epoch=E and waitid=E.C set WaitID to E<<32 | C. wall, the entry's wall
//	  clock, defaults to the previous entry's (0: none, as before version 2).
//	  Output: "INDEX: RESULT", then "  wake WAITID: RESULT" lines.
//	info lock=L [now=N]      LOCK.INFO
//	session id=S [now=N]     SESSION.INFO
//	fence lock=L [session=S [owner=O]]
//	member id=N              a member's record, or "unknown"
//	sessions | counts | deadline | time | wall | records | members | waitids
//	reload                   replace the state by one rebuilt from its Records
//	read [now=N]             one keyspace read command per input line, through Exec
//	keyfence key=K [now=N]   FENCE of a plain key (KeyFence)
//
// An apply line "[index=N] [time=N] exec CMD ARG..." is an OpExec whose Args
// are the rest of the line (” for an empty argument); its output is the
// Reply.
//
// now defaults to Time(). After every apply the harness checks the
// invariants and that the writes reproduce Records, and that a reload of the
// state hashes the same.
//
// The scenarios follow locks.md section 4 (edge cases):
//
//	fences      1, 4, 5, 6, 7
//	reentrancy  2
//	ownership   3, 23, owner tags
//	retries     8 to 14 (13: a retry at a new leader or after a restore is
//	            shown by reload; memos are not purged on release, only by
//	            the per-session bound and by the end of the session)
//	waiting     15 to 18, 20
//	admin       19 (OpCancelWait), LOCK.FORCEUNLOCK, unknown ops
//	restarts    OpCancelWaits: the waits of a node's earlier process
//	members     OpNodeJoin and OpNodeRemove: the member table
//	sessions    21, 22, 24, 27, 28
//	time        25, 26: leader changes and clock jumps reach the state
//	            machine only as entry times; a backwards entry time changes
//	            nothing and expiry is decided by entry time alone. How the
//	            leader derives cluster time is raftstore's to test.
//	bounds      the Config limits
//	records     the record layout and Load
//	keys        the Redis keyspace: strings, TTLs, hashes, lists, KEYS,
//	            FENCE of a plain key, and its sharing names with locks
//	strings     Redis 7.0's simple string commands, cluster version 2
//
// Not applicable here: 29 (lock-delay is not implemented), and 30 to 36
// (partitions, crashes, pauses, membership, snapshots under load: cluster
// tests, not a single state machine's).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		h := &harness{}
		h.reset(Config{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.run(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

type harness struct {
	s     *State
	w     *memWriter
	index uint64
	time  int64
	wall  int64
	// effects: the apply in progress also shows each entry's tracking
	// changes, the lists it pushed to and its messages ("apply effects").
	effects bool
}

func (h *harness) reset(cfg Config) {
	h.s, h.w, h.index, h.time, h.wall = New(cfg), newMemWriter(), 0, 0, 0
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	num := func(k string, def int64) (int64, error) {
		v, ok := args[k]
		if !ok {
			return def, nil
		}
		return strconv.ParseInt(v, 10, 64)
	}
	now, err := num("now", h.s.Time())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch d.Cmd {
	case "new":
		var cfg Config
		for k, p := range map[string]*int{"maxsessions": &cfg.MaxSessions, "maxlocks": &cfg.MaxLocksPerSession,
			"maxwaiters": &cfg.MaxWaitersPerLock, "reqmemory": &cfg.ReqMemory, "maxtombstones": &cfg.MaxTombstones} {
			n, err := num(k, 0)
			if err != nil {
				return "", err
			}
			*p = int(n)
		}
		h.reset(cfg)
		return "ok", nil
	case "apply":
		_, h.effects = args["effects"]
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			if err := h.apply(&b, line); err != nil {
				return "", fmt.Errorf("%q: %v", line, err)
			}
		}
	case "info":
		info := h.s.LockInfo(args["lock"], now)
		if info.Count == 0 {
			return "free", nil
		}
		fmt.Fprintf(&b, "holder=%s owner=%q count=%d limit=%d token=%d\n", info.Holder, info.Owner, info.Count, info.Limit, info.Token)
		for _, w := range info.Waiters {
			fmt.Fprintf(&b, "  waiter session=%s owner=%q remaining=%d\n", w.Session, w.Owner, w.Remaining)
		}
	case "session":
		info, err := h.s.SessionInfo(args["id"], "", false, now)
		if err != nil {
			return "err=" + errName(err), nil
		}
		fmt.Fprintf(&b, "id=%s name=%q ttl=%d remaining=%d created=%d held=%v waiting=%v\n",
			info.ID, info.Name, info.TTL, info.Remaining, info.Created, info.Held, info.Waiting)
	case "fence":
		_, with := args["session"]
		return fmtResult(h.s.Fence(args["lock"], args["session"], args["owner"], with)), nil
	case "read":
		// One read command per input line, through Exec at now.
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			var cmd []string
			for _, a := range strings.Fields(line) {
				cmd = append(cmd, scenarioArg(a))
			}
			before := h.s.Hash()
			var rep reply.Value
			switch strings.ToLower(cmd[0]) {
			case "function": // FUNCTION's reads, as the server serves them
				rep = h.s.FunctionRead(cmd)
			case "fcall_ro":
				rep = h.s.FcallRO(cmd, "", now)
			default:
				rep = h.s.Exec(cmd, now)
			}
			fmt.Fprintf(&b, "%s: %s\n", line, resp.FromReply(rep))
			if h.s.Hash() != before {
				return "", fmt.Errorf("Exec(%q) changed the state", line)
			}
		}
	case "watch":
		// What WATCH records of each key (keys=a,b) at now: index, and stale.
		for _, w := range h.s.Watches(strings.Split(args["keys"], ","), now) {
			fmt.Fprintf(&b, "%s@%d", w.Key, w.Index)
			if w.Stale {
				b.WriteString(" stale")
			}
			b.WriteString("\n")
		}
	case "mods":
		// The mod index of each key or lock named, its tombstone, and the
		// horizon.
		for _, name := range strings.Split(args["keys"], ",") {
			switch k, l, t := h.s.kv[name], h.s.locks[name], h.s.tombs[name]; {
			case k != nil:
				fmt.Fprintf(&b, "%s: mod %d\n", name, k.mod)
			case l != nil:
				fmt.Fprintf(&b, "%s: lock mod %d\n", name, l.mod)
			case t != nil:
				fmt.Fprintf(&b, "%s: deleted at %d (last mod %d)\n", name, t.index, t.lastMod)
			default:
				fmt.Fprintf(&b, "%s: none\n", name)
			}
		}
		fmt.Fprintf(&b, "tombstones=%d horizon=%d\n", h.s.TombstoneCount(), h.s.Horizon())
	case "keyfence":
		if f, ok := h.s.KeyFence(args["key"], now); ok {
			return fmt.Sprint(f), nil
		}
		return "none", nil
	case "member":
		m, ok := h.s.Member(args["id"])
		if !ok {
			return "unknown", nil
		}
		return fmtMember(m), nil
	case "members":
		for _, m := range h.s.Members() {
			fmt.Fprintln(&b, fmtMember(m))
		}
		if b.Len() == 0 {
			return "none", nil
		}
	case "waitids":
		var ids []string
		for _, id := range h.s.WaitIDs() {
			ids = append(ids, fmtWaitID(id))
		}
		return fmt.Sprint(ids), nil
	case "sessions":
		return fmt.Sprint(h.s.Sessions()), nil
	case "counts":
		n, l := h.s.Counts()
		return fmt.Sprintf("sessions=%d locks=%d", n, l), nil
	case "deadline":
		if d, ok := h.s.NextDeadline(); ok {
			return fmt.Sprint(d), nil
		}
		return "none", nil
	case "time":
		return fmt.Sprint(h.s.Time()), nil
	case "wall":
		return fmt.Sprint(h.s.Wall()), nil
	case "records":
		err := h.s.Records(func(k, v []byte) error {
			fmt.Fprintln(&b, readableKey(string(k)))
			return nil
		})
		if err != nil {
			return "", err
		}
		if b.Len() == 0 {
			return "none", nil
		}
	case "reload":
		s, err := reload(h.s)
		if err != nil {
			return "", err
		}
		h.s = s
		return "ok", nil
	default:
		return "", fmt.Errorf("unknown command %q", d.Cmd)
	}
	return b.String(), nil
}

// apply parses and applies one entry line.
func (h *harness) apply(b *strings.Builder, line string) error {
	e := Entry{Wait: NoWait}
	index, when, wall := h.index+1, h.time, h.wall
	fields := strings.Fields(line)
	for i, f := range fields {
		if f == "multi" {
			// multi [key@index[!]...] ; CMD args ; CMD args: a transaction
			// watching key since index (! = stale), then its commands.
			e.Op = OpMulti
			segs := strings.Split(strings.Join(fields[i+1:], " "), ";")
			for _, w := range strings.Fields(segs[0]) {
				k, n, _ := strings.Cut(w, "@")
				stale := strings.HasSuffix(n, "!")
				idx, err := strconv.ParseUint(strings.TrimSuffix(n, "!"), 10, 64)
				if err != nil {
					return err
				}
				e.Watches = append(e.Watches, Watch{Key: k, Index: idx, Stale: stale})
			}
			for _, seg := range segs[1:] {
				var cmd []string
				for _, a := range strings.Fields(seg) {
					if a == "''" {
						a = ""
					}
					cmd = append(cmd, a)
				}
				e.Cmds = append(e.Cmds, cmd)
			}
			break
		}
		if f == "exec" {
			// The rest of the line is the command; '' is an empty argument.
			e.Op = OpExec
			for _, a := range fields[i+1:] {
				e.Args = append(e.Args, scenarioArg(a))
			}
			break
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			op, err := parseOp(k)
			if err != nil {
				return err
			}
			e.Op = op
			continue
		}
		var err error
		switch k {
		case "index":
			index, err = strconv.ParseUint(v, 10, 64)
		case "time":
			when, err = strconv.ParseInt(v, 10, 64)
		case "wall":
			wall, err = strconv.ParseInt(v, 10, 64)
		case "session":
			e.Session = v
		case "name":
			e.Name = v
		case "lock":
			e.Lock = v
		case "owner":
			e.Owner = v
		case "req":
			e.Req = v
		case "wait":
			if v != "none" {
				e.Wait, err = strconv.ParseInt(v, 10, 64)
			}
		case "waitid":
			e.WaitID, err = parseWaitID(v)
		case "epoch":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			e.WaitID = n << 32
		case "node":
			e.Node = v
		case "raftaddr":
			e.RaftAddr = v
		case "addr":
			e.Addr = v
		case "version":
			e.Version, err = strconv.ParseInt(v, 10, 64)
		default:
			p := map[string]*int64{"ttl": &e.TTL, "created": &e.Created, "limit": &e.Limit, "fence": &e.Fence}[k]
			if p == nil {
				return fmt.Errorf("unknown field %q", k)
			}
			*p, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return err
		}
	}
	if e.Op == 0 {
		return fmt.Errorf("no op")
	}
	if e.Op != OpFlock {
		e.Wait = 0
	}
	e.Time, e.Wall = when, wall
	h.index, h.time, h.wall = index, when, wall
	r, err := h.s.Apply(index, e, h.w)
	if err != nil {
		return err
	}
	res := fmtResult(r)
	switch e.Op {
	case OpTick:
		res = "tick"
	case OpExec, OpMulti:
		res = resp.FromReply(r.Reply).String()
	}
	fmt.Fprintf(b, "%d: %s\n", index, res)
	for _, w := range r.Wakes {
		fmt.Fprintf(b, "  wake %s: %s\n", fmtWaitID(w.WaitID), fmtResult(w.Result))
	}
	if h.effects {
		if r.Changes != nil && len(r.Changes.Keys) > 0 {
			fmt.Fprintf(b, "  changed: %s\n", strings.Join(r.Changes.Keys, " "))
		}
		if len(r.Pushed) > 0 {
			fmt.Fprintf(b, "  pushed: %s\n", strings.Join(r.Pushed, " "))
		}
		for _, m := range r.Messages {
			fmt.Fprintf(b, "  message %s: %s\n", m.Channel, m.Payload)
		}
	}
	if err := checkInvariants(h.s); err != nil {
		return err
	}
	if err := sameRecords(h.s, h.w); err != nil {
		return err
	}
	_, err = reload(h.s)
	return err
}

func parseOp(name string) (Op, error) {
	switch name {
	case "tick":
		return OpTick, nil
	case "open":
		return OpSessionOpen, nil
	case "heartbeat":
		return OpSessionHeartbeat, nil
	case "kill":
		return OpSessionKill, nil
	case "flock":
		return OpFlock, nil
	case "funlock":
		return OpFunlock, nil
	case "cancel":
		return OpCancelWait, nil
	case "forceunlock":
		return OpForceUnlock, nil
	case "cancelwaits":
		return OpCancelWaits, nil
	case "join":
		return OpNodeJoin, nil
	case "remove":
		return OpNodeRemove, nil
	case "setversion":
		return OpSetVersion, nil
	}
	if n, ok := strings.CutPrefix(name, "op"); ok {
		v, err := strconv.ParseUint(n, 10, 8)
		return Op(v), err
	}
	return 0, fmt.Errorf("unknown op %q", name)
}

// readableKey shows a record key with its trailing sequence number decoded.
func readableKey(k string) string {
	for _, p := range []string{prefixWaiter, prefixMemo} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			if name, n, ok := splitSeqKey(rest); ok {
				return fmt.Sprintf("%s%s #%d", p, name, n)
			}
		}
	}
	return k
}

// parseWaitID reads a wait id: N, or E.C for E<<32 | C.
func parseWaitID(v string) (uint64, error) {
	e, c, ok := strings.Cut(v, ".")
	if !ok {
		return strconv.ParseUint(v, 10, 64)
	}
	hi, err := strconv.ParseUint(e, 10, 32)
	if err != nil {
		return 0, err
	}
	lo, err := strconv.ParseUint(c, 10, 32)
	return hi<<32 | lo, err
}

// fmtWaitID shows a wait id with an epoch as E.C, as parseWaitID reads it.
func fmtWaitID(id uint64) string {
	if id>>32 == 0 {
		return fmt.Sprint(id)
	}
	return fmt.Sprintf("%d.%d", id>>32, id&(1<<32-1))
}

func fmtMember(m Member) string {
	s := fmt.Sprintf("%s raft=%s addr=%s", m.ID, m.RaftAddr, m.Addr)
	if m.Removed {
		s += " removed"
	}
	return s
}

// scenarioArg is a command's argument as a scenario writes it: two single
// quotes are an empty argument, and a Go-quoted one ("#!lua\x20name=l\n...") may hold
// spaces and newlines.
func scenarioArg(a string) string {
	if a == "''" {
		return ""
	}
	if strings.HasPrefix(a, `"`) {
		if u, err := strconv.Unquote(a); err == nil {
			return u
		}
	}
	return a
}
