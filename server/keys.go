package server

import (
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// Key commands run in the state machine: writes as one
// OpExec entry holding the command, reads against the leader's state after
// a linearizable read check. Unix times (SET EXAT/PXAT, EXPIREAT,
// PEXPIREAT) go as sent: the state machine measures them against the wall
// clock the leader stamps into the entry, so no replica reads a clock.

func (s *Server) execWrite(c *resp.Conn, args [][]byte) resp.Value {
	return s.proposeAhead(c, s.execEntry(c, args), execReply)
}

// execEntry is the entry of a keyspace write: its arguments, which every
// replica's state machine runs, for c's user.
func (s *Server) execEntry(c *resp.Conn, args [][]byte) lockstate.Entry {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	e := lockstate.Entry{Op: lockstate.OpExec, Args: strs}
	e.User, e.AsAdmin = s.actor(c)
	return e
}

func execReply(res lockstate.Result) resp.Value {
	if res.Err != nil {
		return errorReply(res.Err)
	}
	return resp.FromReply(res.Reply)
}

func (s *Server) execRead(c *resp.Conn, args [][]byte) resp.Value {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return resp.FromReply(st.Exec(strs, now))
	})
}
