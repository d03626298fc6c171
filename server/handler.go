package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

type handlerFunc func(c *resp.Conn, args [][]byte) resp.Value

// handlers maps every command of the table to its handler; a test checks
// that the two agree. Keyspace commands the state machine executes share
// two handlers: writes go through the log as one entry, reads are served
// from the leader's state.
func (s *Server) handlers() map[string]handlerFunc {
	m := s.nativeHandlers()
	for _, spec := range s.table.All() {
		switch {
		case m[spec.Name] != nil:
		case lockstate.IsExecWrite(spec.Name):
			m[spec.Name] = s.execWrite
		case lockstate.IsExecRead(spec.Name):
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
		"raft.snapshot":     s.raftSnapshot,
		"raft.status":       s.raftStatus,
		"raft.hash":         s.raftHash,
		"raft.join":         s.raftJoin,
		"raft.remove":       s.raftRemove,
		"raft.transfer":     s.raftTransfer,
		"raft.propose":      s.raftPropose,
		"raft.link":         s.raftLink,
		"cluster":           s.cluster,
		"ping":              s.ping,
		"echo":              s.echo,
		"hello":             s.hello,
		"auth":              s.auth,
		"select":            s.selectCmd,
		"quit":              s.quit,
		"reset":             s.reset,
		"client":            s.client,
		"command":           s.command,
		"info":              s.info,
		"time":              s.time,
		"role":              s.role,
		"blpop":             s.blpop,
		"publish":           s.publish,
		"subscribe":         s.subscribe,
		"unsubscribe":       s.unsubscribe,
	}
}

// ServeRESP dispatches one command: the table checks the name and arity
// once, here, and the handler parses the rest.
func (s *Server) ServeRESP(c *resp.Conn, args [][]byte) resp.Value {
	s.stats.commands.Add(1)
	spec, err := s.table.Check(args)
	if err == nil {
		s.stats.calls[spec.Name].Add(1)
	}
	var v resp.Value
	switch {
	case err != nil:
		v = errorReply(err)
	case s.pubsub.subscribed(c) > 0 && c.Proto() == 2:
		v = s.inSubscribedMode(c, spec.Name)
		if v.Kind() == resp.KindInvalid {
			v = s.cmds[spec.Name](c, args)
		}
	case !s.settled.Load() && linkOf(c) == "" && (spec.Has(commands.Write) || spec.Has(commands.Read)) && !strings.HasPrefix(spec.Name, "raft."):
		v = errorReply(ErrStarting)
	case s.cfg.Redirect && linkOf(c) == "" && (spec.Has(commands.Write) || spec.Has(commands.Read)) && !s.node.IsLeader():
		v = s.moved()
	case s.leaderOnly(c, spec):
		addr, err := s.leaderAddr()
		switch {
		case err != nil:
			v = errorReply(err)
		case addr != "":
			v = s.forwardRaw(c.Context(), addr, spec.Has(commands.Write), args)
		default:
			v = s.cmds[spec.Name](c, args)
		}
	default:
		v = s.cmds[spec.Name](c, args)
	}
	if v.IsError() {
		s.stats.errors.Add(1)
	}
	return v
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

// leaderOnly reports whether a command must run on the leader as a whole:
// reads (served only by a leader that confirmed it leads) and membership
// changes. Commands that come over a link from another node never move on.
func (s *Server) leaderOnly(c *resp.Conn, spec *commands.Spec) bool {
	if linkOf(c) != "" {
		return false
	}
	switch spec.Name {
	case "raft.join", "raft.remove", "raft.transfer":
		return true
	}
	return spec.Has(commands.Read) && !plant.On(plant.StaleRead)
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

func syntaxError(format string, args ...any) resp.Value {
	return resp.Error("ERR " + fmt.Sprintf(format, args...))
}
