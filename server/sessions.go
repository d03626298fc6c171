package server

import (
	"slices"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
	"github.com/fenced/fenced/session"
)

func (s *Server) sessionOpen(c *resp.Conn, args [][]byte) resp.Value {
	r, err := commands.ParseSessionOpen(args)
	if err != nil {
		return errorReply(err)
	}
	ttl, err := session.TTLBounds{Min: s.cfg.MinTTL, Max: s.cfg.MaxTTL, Default: s.cfg.DefaultTTL}.Resolve(r.TTL)
	if err != nil {
		return errorReply(err)
	}
	e := lockstate.Entry{
		Op: lockstate.OpSessionOpen, Session: session.NewID(), TTL: ttl, Name: r.Name,
		Created: s.wallNow().UnixMilli(),
	}
	// The session is the opening user's: only it may use it.
	e.User, _ = s.actor(c)
	return s.proposeAhead(c, e, resultReply)
}

func (s *Server) sessionHeartbeat(c *resp.Conn, args [][]byte) resp.Value {
	e := lockstate.Entry{Op: lockstate.OpSessionHeartbeat, Session: string(args[1])}
	e.User, e.AsAdmin = s.actor(c)
	return s.proposeAhead(c, e, resultReply)
}

func (s *Server) sessionKill(c *resp.Conn, args [][]byte) resp.Value {
	e := lockstate.Entry{Op: lockstate.OpSessionKill, Session: string(args[1])}
	e.User, e.AsAdmin = s.actor(c)
	return s.proposeAhead(c, e, resultReply)
}

func (s *Server) sessionInfo(c *resp.Conn, args [][]byte) resp.Value {
	id := string(args[1])
	user, admin := s.actor(c)
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		si, err := st.SessionInfo(id, user, admin, now)
		if err != nil {
			return errorReply(err)
		}
		return resp.Map(
			resp.BulkString("id"), resp.BulkString(si.ID),
			resp.BulkString("name"), resp.BulkString(si.Name),
			resp.BulkString("ttl"), resp.Int(si.TTL),
			resp.BulkString("remaining"), resp.Int(si.Remaining),
			resp.BulkString("created"), resp.BulkString(time.UnixMilli(si.Created).UTC().Format(time.RFC3339Nano)),
			resp.BulkString("locks"), stringsArray(si.Held),
			resp.BulkString("waiting"), stringsArray(si.Waiting),
		)
	})
}

func (s *Server) sessionList(c *resp.Conn, _ [][]byte) resp.Value {
	// Only the ids' headers are copied under the state lock; sorting
	// them, the slow part, waits until it is released.
	var ids []string
	v := s.read(c.Context(), func(st *lockstate.State, _ int64) resp.Value {
		n, _ := st.Counts()
		ids = st.SessionIDs(make([]string, 0, n))
		return resp.Value{}
	})
	if v.IsError() {
		return v
	}
	slices.Sort(ids)
	return stringsArray(ids)
}

func stringsArray(ss []string) resp.Value {
	vs := make([]resp.Value, len(ss))
	for i, s := range ss {
		vs[i] = resp.BulkString(s)
	}
	return resp.Array(vs...)
}
