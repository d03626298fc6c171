package server

import (
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// evalRO serves EVAL_RO and EVALSHA_RO (Redis 7, cluster version 3) as
// reads: on the leader, after a linearizable read's checks (Node.Read:
// the commit index at arrival, a quorum's confirmation, applied up to it),
// under the state's read lock, with the connection's user. A read-only
// script changes nothing, so it needs no log entry and no Raft round
// trip; it runs within the same step limits as any script, and holds up
// applying entries for as long as it runs, as an EVAL in the log does.
//
// The exception is an EVAL_RO whose script is not cached yet: Redis's
// EVAL_RO caches it, and the cache is replicated state, so that command
// goes through the log as one entry (which caches the script and runs it
// read-only at that entry).
func (s *Server) evalRO(c *resp.Conn, args [][]byte) resp.Value {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	user, _ := s.actor(c)
	ran, cached := false, true
	v := s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		ran = true
		r, ok := st.EvalRO(strs, user, now)
		cached = ok
		return resp.FromReply(r)
	})
	if ran && !cached {
		return s.execWrite(c, args)
	}
	return v
}
