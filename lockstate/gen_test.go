package lockstate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
)

// intSource draws small numbers: from a seeded PRNG, or from fuzzer bytes.
type intSource interface {
	intn(n int) int
	done() bool
}

type rngSource struct{ r *rand.Rand }

func (s rngSource) intn(n int) int { return s.r.IntN(n) }
func (s rngSource) done() bool     { return false }

type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	c := int(s.b[0])
	s.b = s.b[1:]
	return c % n
}
func (s *byteSource) done() bool { return len(s.b) == 0 }

// gen produces entries over small pools of names, so that sessions, locks,
// owners and request ids collide often and every branch is reached.
type gen struct {
	src    intSource
	index  uint64
	time   int64
	wall   int64  // the proposers' wall clock, which may lag as time may
	waitID uint64 // the last wait id drawn: epoch<<32 | counter
	epoch  uint64 // of the proposing node's process, as in the server
	// fence, when set, peeks at the current token of a lock, so fenced
	// commands are sometimes right.
	fence func(lock string) int64
	// misuse makes the proposer break its contract now and then: a wait id
	// used twice, an index applied twice. State must stay consistent.
	misuse bool
}

// The pools of names.
func genSessions() []string { return []string{"s0", "s1", "s2", "s3", "s4"} }
func genLocks() []string    { return []string{"a", "b", "c"} }
func genOwners() []string   { return []string{"", "x"} }
func genNodes() []string    { return []string{"n0", "n1", "n2", "n3", "n4"} }
func genAddrs() []string    { return []string{"h1:1", "h2:2"} }
func genUsers() []string    { return []string{"", "u1"} }
func genRules() []string {
	return []string{"on", "off", ">pw", "<pw", "nopass", "resetpass", "~k*", "allkeys", "resetkeys", "&c", "+@all", "-@admin", "+get", "reset"}
}

func (g *gen) pick(xs []string) string { return xs[g.src.intn(len(xs))] }

func (g *gen) req() string {
	if g.src.intn(2) == 0 {
		return ""
	}
	return fmt.Sprintf("r%d", g.src.intn(8))
}

func (g *gen) token(lock string) int64 {
	if g.fence != nil && g.src.intn(2) == 0 {
		return g.fence(lock)
	}
	if g.src.intn(4) == 0 {
		return 0
	}
	return int64(g.index) - int64(g.src.intn(20))
}

// Times, TTLs and waits are multiples of 10 ms so that deadlines often fall
// on the same instant and their order of effect is exercised.
func (g *gen) next() (uint64, Entry) {
	if !g.misuse || g.src.intn(20) != 0 {
		g.index += 1 + uint64(g.src.intn(2))
	}
	if g.src.intn(10) == 0 {
		g.time -= 10 * int64(g.src.intn(30)) // a proposer whose clock is behind
	} else {
		g.time += 10 * int64(g.src.intn(12))
	}
	if g.wall == 0 {
		g.wall = 1_700_000_000_000
	}
	g.wall += 10 * int64(g.src.intn(12)-2)
	e := Entry{Time: g.time, Session: g.pick(genSessions())}
	if g.src.intn(3) == 0 {
		e.User = "u1"
	}
	if g.src.intn(10) == 0 {
		e.AsAdmin = true
	}
	switch k := g.src.intn(130); {
	case k >= 126:
		e = Entry{Op: OpACLSetUser, Time: g.time, Name: g.pick([]string{"default", "u1", "u2"})}
		for range g.src.intn(4) {
			e.Args = append(e.Args, g.pick(genRules()))
		}
	case k >= 124:
		e = Entry{Op: OpACLDelUser, Time: g.time, Args: []string{g.pick([]string{"default", "u1", "u2", "u3"})}}
	case k >= 119:
		e = Entry{Op: OpExec, Time: g.time, Args: g.genExec()}
	case k >= 112:
		e = g.genMulti()
		e.User = []string{"", "u1"}[g.src.intn(2)]
	case k < 5:
		e = Entry{Op: OpTick, Time: g.time}
	case k < 17:
		e.Op, e.TTL, e.Name, e.Created = OpSessionOpen, 100+50*int64(g.src.intn(12)), g.pick(genOwners()), int64(g.src.intn(1000))
	case k < 25:
		e.Op = OpSessionHeartbeat
	case k < 29:
		e.Op = OpSessionKill
	case k < 67:
		e.Op, e.Lock, e.Owner, e.Req = OpFlock, g.pick(genLocks()), g.pick(genOwners()), g.req()
		switch g.src.intn(6) {
		case 0, 1:
			e.Wait = NoWait
		case 2:
			e.Wait = 0
		default:
			e.Wait = 10 * (1 + int64(g.src.intn(40)))
		}
		e.Limit = int64(g.src.intn(3))
		g.waitID++
		e.WaitID = g.waitID
		if g.misuse && g.src.intn(8) == 0 {
			e.WaitID = g.waitID - uint64(g.src.intn(8)) // may be 0 or live elsewhere
		}
	case k < 89:
		e.Op, e.Lock, e.Owner, e.Req = OpFunlock, g.pick(genLocks()), g.pick(genOwners()), g.req()
		if g.src.intn(3) == 0 {
			e.Fence = g.token(e.Lock)
		}
	case k < 95:
		e = Entry{Op: OpCancelWait, Time: g.time, WaitID: g.waitID - uint64(g.src.intn(6))}
	case k < 100:
		e = Entry{Op: OpForceUnlock, Time: g.time, Lock: g.pick(genLocks())}
		e.Fence = g.token(e.Lock)
	case k < 104:
		// A node restarts and cancels the waits of its previous process:
		// later ids are of a new epoch. Or a stray cancel: of a recent
		// epoch, the current one included, or of one not used yet. Epoch
		// 0 (the ids before the first restart) is nobody's. The low bits
		// are noise.
		ep := g.epoch - min(g.epoch, uint64(g.src.intn(3)))
		switch g.src.intn(6) {
		case 0, 1, 2:
			ep = g.epoch
			g.epoch++
			g.waitID = g.epoch << 32
		case 3:
			ep = g.epoch + 1
		}
		e = Entry{Op: OpCancelWaits, Time: g.time, WaitID: ep<<32 | uint64(g.src.intn(3))}
	case k < 110:
		e = Entry{Op: OpNodeJoin, Time: g.time, Node: g.pick(genNodes()), RaftAddr: g.pick(genAddrs()), Addr: g.pick(genAddrs())}
		switch g.src.intn(12) {
		case 0:
			e.Node = ""
		case 1:
			e.RaftAddr = ""
		case 2:
			e.Addr = ""
		}
	default:
		e = Entry{Op: OpNodeRemove, Time: g.time, Node: g.pick(genNodes())}
		if g.src.intn(8) == 0 {
			e.Node = ""
		}
	}
	if g.src.intn(4) != 0 { // else an entry from before wall clocks
		e.Wall = g.wall
	}
	return g.index, e
}

// smallConfig makes every bound reachable by gen.
func smallConfig() Config {
	return Config{MaxSessions: 4, MaxSessionsPerUser: 3, MaxLocksPerSession: 2, MaxWaitersPerLock: 3, ReqMemory: 4}
}

// compareReads checks every read of s against the model at time now.
func compareReads(s *State, m *model, now int64) error {
	for _, l := range genLocks() {
		if got, want := s.LockInfo(l, now), m.lockInfo(l, now); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("LockInfo(%s) = %+v, model %+v", l, got, want)
		}
		if got, want := s.Fence(l, "", "", false), m.fence(l, "", "", false); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("Fence(%s) = %+v, model %+v", l, got, want)
		}
		for _, id := range genSessions() {
			for _, o := range genOwners() {
				if got, want := s.Fence(l, id, o, true), m.fence(l, id, o, true); !reflect.DeepEqual(got, want) {
					return fmt.Errorf("Fence(%s, %s, %q) = %+v, model %+v", l, id, o, got, want)
				}
			}
		}
	}
	for _, id := range genSessions() {
		for _, user := range genUsers() {
			got, gerr := s.SessionInfo(id, user, false, now)
			want, werr := m.sessionInfo(id, user, now)
			if gerr != werr || !reflect.DeepEqual(got, want) {
				return fmt.Errorf("SessionInfo(%s) for user %q = %+v %v, model %+v %v", id, user, got, gerr, want, werr)
			}
		}
	}
	if got, want := s.NotifyKeyspaceEvents(), m.notifyConfig(); got != want {
		return fmt.Errorf("notify-keyspace-events %q, model %q", got, want)
	}
	for _, name := range []string{"default", "u1", "u2"} {
		got, gok := s.User(name)
		want, wok := m.users[name]
		if gok != wok || gok && !reflect.DeepEqual(got, want) {
			return fmt.Errorf("User(%s) = %+v %v, model %+v %v", name, got, gok, want, wok)
		}
	}
	if got, want := s.Sessions(), m.sessionIDs(); !slices.Equal(got, want) {
		return fmt.Errorf("Sessions() = %v, model %v", got, want)
	}
	if ns, nl := s.Counts(); ns != len(m.sessions) || nl != len(m.locks) {
		return fmt.Errorf("Counts() = %d, %d, model %d, %d", ns, nl, len(m.sessions), len(m.locks))
	}
	gd, gok := s.NextDeadline()
	wd, wok := m.nextDeadline()
	if gd != wd || gok != wok {
		return fmt.Errorf("NextDeadline() = %d %v, model %d %v", gd, gok, wd, wok)
	}
	if got, want := s.Members(), m.memberList(); !slices.Equal(got, want) {
		return fmt.Errorf("Members() = %v, model %v", got, want)
	}
	for _, id := range append(genNodes(), "") {
		got, gok := s.Member(id)
		want, wok := m.members[id]
		if got != want || gok != wok {
			return fmt.Errorf("Member(%q) = %+v %v, model %+v %v", id, got, gok, want, wok)
		}
	}
	if got, want := s.WaitIDs(), m.waitIDs(); !slices.Equal(got, want) {
		return fmt.Errorf("WaitIDs() = %v, model %v", got, want)
	}
	if s.Time() != m.time {
		return fmt.Errorf("Time() = %d, model %d", s.Time(), m.time)
	}
	return compareKeyReads(s, m, now)
}
