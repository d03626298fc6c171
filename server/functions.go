package server

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// function serves FUNCTION (Redis 7 Functions, cluster version 3): LOAD,
// DELETE, FLUSH and RESTORE change the replicated libraries, so each is one
// log entry; LIST, DUMP, STATS, KILL and HELP (and any FUNCTION command
// with bad arguments) only read, so they are served as linearizable reads
// on the leader, as a Read command is: a follower forwards them whole.
func (s *Server) function(c *resp.Conn, args [][]byte) resp.Value {
	if lockstate.FunctionIsWrite(args) {
		return s.execWrite(c, args)
	}
	if fromClient(c) {
		addr, err := s.leaderPeer()
		switch {
		case err != nil:
			return errorReply(err)
		case addr != "":
			spec, _ := s.table.Lookup(args[0])
			return s.forwardRaw(c.Context(), addr, s.userOf(c), spec, args)
		}
	}
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return resp.FromReply(st.FunctionRead(strs))
	})
}

// fcallRO serves FCALL_RO as evalRO serves EVAL_RO: on the leader, after a
// linearizable read's checks, under the state's read lock, with the
// connection's user. The function must have the no-writes flag, so it
// changes nothing and needs no log entry.
func (s *Server) fcallRO(c *resp.Conn, args [][]byte) resp.Value {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	user, _ := s.actor(c)
	if plant.On(plant.FcallROLocal) {
		// The planted bug: this node answers from what it has applied.
		var v resp.Value
		s.node.Local(func(st *lockstate.State) {
			v = resp.FromReply(st.FcallRO(strs, user, max(st.Time(), s.clock.Now())))
		})
		return v
	}
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return resp.FromReply(st.FcallRO(strs, user, now))
	})
}

// fcallROLocal reports whether the planted FcallROLocal keeps spec, FCALL_RO,
// on the node the client asked instead of forwarding it to the leader.
func fcallROLocal(spec *commands.Spec) bool {
	return spec.Name == "fcall_ro" && plant.On(plant.FcallROLocal)
}
