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
	track := takeScript(c) // CLIENT TRACKING (tracking_scripts.go)
	v := s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		ran = true
		r, ok, read := st.EvalROReads(strs, user, now)
		cached = ok
		if ok {
			s.tracking.scriptRan(c.ID(), track, read)
		}
		return resp.FromReply(r)
	})
	if ran && !cached {
		prop := s.tracking.scriptInLog(c, track, args)
		return s.execWrite(c, args).Then(func(r resp.Value) {
			if prop != nil && notProposed(r) {
				s.tracking.drop(prop)
			}
		})
	}
	return v
}
