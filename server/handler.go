package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

type handlerFunc func(c *resp.Conn, args [][]byte) resp.Value

// handlers maps every command of the table to its handler; a test checks
// that the two agree. Keyspace commands without a handler of their own
// share two: writes go through the log as one entry, reads are served from
// the leader's state.
func (s *Server) handlers() map[string]handlerFunc {
	m := s.nativeHandlers()
	for _, spec := range s.table.All() {
		switch {
		case m[spec.Name] != nil, !spec.Has(commands.Keyspace):
		case spec.Has(commands.Write):
			m[spec.Name] = s.execWrite
		case spec.Has(commands.Read):
			m[spec.Name] = s.execRead
		}
	}
	return m
}

func (s *Server) nativeHandlers() map[string]handlerFunc {
	return map[string]handlerFunc{
		"flock":             s.flock,
		"funlock":           s.funlock,
		"fence":             s.fence,
		"lock.info":         s.lockInfo,
		"lock.forceunlock":  s.forceUnlock,
		"session.open":      s.sessionOpen,
		"session.heartbeat": s.sessionHeartbeat,
		"session.kill":      s.sessionKill,
		"session.info":      s.sessionInfo,
		"session.list":      s.sessionList,
		"keys":              s.keys,
		"scan":              s.scan,
		"randomkey":         s.randomKey,
		"srandmember":       s.srandMember,
		"raft.snapshot":     s.raftSnapshot,
		"save":              s.save,
		"bgsave":            s.bgsave,
		"shutdown":          s.shutdownCmd,
		"raft.status":       s.raftStatus,
		"raft.hash":         s.raftHash,
		"raft.backup":       s.raftBackup,
		"raft.join":         s.raftJoin,
		"raft.remove":       s.raftRemove,
		"raft.transfer":     s.raftTransfer,
		"raft.propose":      s.raftPropose,
		"raft.link":         s.raftLink,
		"raft.user":         s.raftUser,
		"acl":               s.aclCmd,
		"cluster":           s.cluster,
		"ping":              s.ping,
		"echo":              s.echo,
		"hello":             s.hello,
		"auth":              s.authCmd,
		"select":            s.selectCmd,
		"quit":              s.quit,
		"reset":             s.reset,
		"client":            s.client,
		"command":           s.command,
		"info":              s.info,
		"time":              s.time,
		"role":              s.role,
		"config":            s.configCmd,
		"slowlog":           s.slowlogCmd,
		"latency":           s.latencyCmd,
		"blpop":             s.blpop,
		"blmove":            s.blmove,
		"brpoplpush":        s.blmove,
		"eval_ro":           s.evalRO,
		"evalsha_ro":        s.evalRO,
		"function":          s.function,
		"fcall_ro":          s.fcallRO,
		"publish":           s.publish,
		"subscribe":         s.subscribe,
		"unsubscribe":       s.unsubscribe,
		"multi":             s.multi,
		"exec":              s.exec,
		"discard":           s.discard,
		"watch":             s.watch,
		"unwatch":           s.unwatch,
		"raft.watch":        s.raftWatch,
		"psubscribe":        s.psubscribe,
		"punsubscribe":      s.punsubscribe,
		"pubsub":            s.pubsubCmd,
	}
}

// ServeRESP runs one command and gives its reply as CLIENT REPLY allows
// (clientreply.go).
func (s *Server) ServeRESP(c *resp.Conn, args [][]byte) resp.Value {
	return s.replied(c, s.dispatch(c, args))
}

// dispatch dispatches one command: the table checks the name and arity
// once, here, then whether the connection may run it (as Redis does, in
// that order), and the handler parses the rest.
func (s *Server) dispatch(c *resp.Conn, args [][]byte) resp.Value {
	s.stats.commands.Add(1)
	start := time.Now()
	spec, err := s.table.CheckAt(args, s.notYetSettled)
	if err == nil {
		// Who may run it: -NOAUTH, then the user's ACL (-NOPERM), then
		// node-to-node commands kept to the peer channel.
		if err = s.gate(c, spec, args); err == nil && spec.Has(commands.Peer) && !fromPeer(c) {
			err = ErrPeerOnly
		}
		if err == nil {
			err = s.cannotPersist(spec)
		}
	}
	var prop *proposal
	st := inMulti(c)
	// Inside MULTI a read's keys are tracked as it is queued: before the
	// transaction's entry, so whatever changes them after is heard (rueidis
	// caches through MULTI PTTL GET EXEC). A queued write is no proposal of
	// its own: the entry that carries it is the transaction's, so NOLOOP
	// does not hold back its invalidation (one too many, never one missed).
	if err == nil && (st == nil || spec.Has(commands.Read) || spec.Name == "exec" || spec.Name == "discard") {
		prop = s.tracking.before(c, spec, args, st != nil)
	}
	var v resp.Value
	queued := false
	if st != nil {
		v, queued = s.inTransaction(c, st, spec, args, err) // multi.go
	}
	switch {
	case queued:
	case err != nil:
		v = errorReply(err)
	case s.listening(c):
		v = s.inSubscribedMode(c, spec.Name, args)
		if v.Kind() == resp.KindInvalid {
			v = s.cmds[spec.Name](c, args)
		}
	case s.starting(c, spec) && !s.start.wait(c.Context(), settleWait):
		v = errorReply(fmt.Errorf("%w: %s", ErrStarting, s.start.why()))
	case spec.Version > 1 && s.notYet(spec):
		// Arrived before the node settled, which is when a new cluster
		// moves to the newest version (announce): decided now.
		v = errorReply(commands.UnknownCommand(args))
	case s.redirects(c, spec):
		v = s.moved()
	case s.leaderOnly(c, spec):
		v = s.onLeader(c, spec, args)
	default:
		v = s.cmds[spec.Name](c, args)
	}
	// Redis's commandstats: calls and the time they took to run (for a
	// write run ahead, to be proposed; for a waiting FLOCK, its wait too),
	// failed calls (ran, answered an error) and rejected ones (refused
	// before running: arity, permissions, a starting node, a full disk).
	// Errors count when the reply is ready, a write run ahead's later.
	if spec == nil {
		spec, _ = s.table.Lookup(args[0]) // an arity error: still its command's
	}
	var cs *cmdStats
	if spec != nil {
		cs = s.stats.calls[spec.Name]
		if err != nil {
			cs.rejected.Add(1)
		} else {
			took := time.Since(start)
			cs.ran(took)
			if !skipsSlowlog(spec.Name) {
				s.slowlog.record(c, args, took)
			}
		}
	}
	if prop != nil {
		v = v.Then(func(r resp.Value) {
			if notProposed(r) {
				s.tracking.drop(prop)
			}
		})
	}
	if v.Kind() == resp.KindLater {
		return v.Then(func(r resp.Value) { s.countReply(cs, err == nil, r) })
	}
	s.countReply(cs, err == nil, v)
	return v
}

// countReply counts an error reply by its code, and as a failed call of
// cs (a command that ran) when ran.
func (s *Server) countReply(cs *cmdStats, ran bool, r resp.Value) {
	if !r.IsError() {
		return
	}
	s.stats.errors.Add(1)
	s.stats.countError(r.Text())
	if cs != nil && ran {
		cs.failed.Add(1)
	}
}

// fromClient reports whether c is a client's connection: a command that
// came over a link from another node was routed there and never moves on.
func fromClient(c *resp.Conn) bool { return linkOf(c) == "" }

// replicated reports whether spec reads or writes the replicated state,
// which only a settled node and, in redirect mode, only the leader serve.
func replicated(spec *commands.Spec) bool {
	return spec.Has(commands.Write) || spec.Has(commands.Read)
}

// listening reports whether c is a RESP2 connection in subscribed mode,
// where Redis allows only the pub/sub commands, PING, QUIT and RESET.
func (s *Server) listening(c *resp.Conn) bool {
	return s.pubsub.subscribed(c) > 0 && c.Proto() == 2
}

// starting reports whether a client's command must wait for this node to
// settle, or get -LOADING: until then it could hand a lock to a wait of its
// earlier process, and a command of a cluster version (PSUBSCRIBE) could
// find a new cluster not yet moved to it. Cluster administration (raft.*)
// still runs, so that membership can be repaired meanwhile.
func (s *Server) starting(c *resp.Conn, spec *commands.Spec) bool {
	return !s.start.settled.Load() && fromClient(c) && (replicated(spec) || spec.Version > 1) && !strings.HasPrefix(spec.Name, "raft.")
}

// cannotPersist is -MISCONF for a write while this node cannot persist (see
// DESIGN.md, Disk trouble), leader or follower: a follower that cannot
// append falls behind, and what its clients wait for (a FLOCK's grant, a
// BLPOP's element, a message) comes from its own applied state. A forwarded
// write (RAFT.PROPOSE) is refused too. Membership changes are not: they
// are how an operator replaces the node.
func (s *Server) cannotPersist(spec *commands.Spec) error {
	if !spec.Has(commands.Write) || strings.HasPrefix(spec.Name, "raft.") && spec.Name != "raft.propose" {
		return nil
	}
	if err := s.node.DiskError(); err != nil {
		return fmt.Errorf("%w: %w", raftstore.ErrCannotPersist, err)
	}
	return nil
}

// redirects reports whether a follower in redirect mode answers -MOVED:
// the client is to talk to the leader itself instead of being forwarded.
// Another node's request (a RAFT.JOIN sent to a follower) is forwarded as
// ever: nodes don't follow -MOVED.
func (s *Server) redirects(c *resp.Conn, spec *commands.Spec) bool {
	return s.cfg.Redirect && fromClient(c) && !fromPeer(c) && replicated(spec) && !s.node.IsLeader()
}

// onLeader runs a leaderOnly command here if this node leads, else
// forwards the whole command to the leader.
func (s *Server) onLeader(c *resp.Conn, spec *commands.Spec, args [][]byte) resp.Value {
	addr, err := s.leaderPeer()
	switch {
	case err != nil:
		return errorReply(err)
	case addr != "":
		return s.forwardRaw(c.Context(), addr, s.userOf(c), spec, args)
	default:
		return s.cmds[spec.Name](c, args)
	}
}

// moved is the redirect-mode answer of a follower: -MOVED 0 leader:port,
// with slot 0 because the whole keyspace is one shard.
func (s *Server) moved() resp.Value {
	addr, err := s.leaderAddr()
	if err != nil {
		return errorReply(err)
	}
	if addr == "" { // became leader meanwhile
		addr = s.clientAddr()
	}
	return resp.Error("MOVED 0 " + addr)
}

// leaderOnly reports whether a client's command must run on the leader as
// a whole: reads (served only by a leader that confirmed it leads) and the
// table's Leader commands.
func (s *Server) leaderOnly(c *resp.Conn, spec *commands.Spec) bool {
	if !fromClient(c) {
		return false
	}
	return spec.Has(commands.Leader) || (spec.Has(commands.Read) && !plant.On(plant.StaleRead) && !fcallROLocal(spec))
}

// propose commits e, here or through the leader, and turns its result into
// a reply.
func (s *Server) propose(ctx context.Context, e lockstate.Entry) resp.Value {
	res, err := s.submit(ctx, e)
	return answer(res, err, resultReply)
}

func resultReply(r lockstate.Result) resp.Value {
	switch {
	case r.Err != nil:
		return errorReply(r.Err)
	case r.Null:
		return resp.Null()
	case r.Str != "":
		return resp.BulkString(r.Str)
	default:
		return resp.Int(r.Int)
	}
}

// read runs fn as a linearizable read and returns its reply.
func (s *Server) read(ctx context.Context, fn func(st *lockstate.State, now int64) resp.Value) resp.Value {
	var v resp.Value
	if plant.On(plant.StaleRead) {
		// The planted bug: any node answers from what it has applied.
		s.node.Local(func(st *lockstate.State) { v = fn(st, max(st.Time(), s.clock.Now())) })
		return v
	}
	if err := s.node.Read(ctx, func(st *lockstate.State, now int64) { v = fn(st, now) }); err != nil {
		return errorReply(err)
	}
	return v
}

// helpReply is a HELP subcommand's answer: its lines as simple strings.
func helpReply(lines ...string) resp.Value {
	out := make([]resp.Value, len(lines))
	for i, l := range lines {
		out[i] = resp.SimpleString(l)
	}
	return resp.Array(out...)
}

func syntaxError(format string, args ...any) resp.Value {
	return resp.Error("ERR " + fmt.Sprintf(format, args...))
}
