package server

import (
	"context"
	"math/rand/v2"

	"github.com/fenced/fenced/internal/plant"
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

// randomKey is RANDOMKEY from a client: a read, so this node's own draw
// picks the key (a script's RANDOMKEY draws from its entry instead, the
// same on every replica).
func (s *Server) randomKey(c *resp.Conn, args [][]byte) resp.Value {
	r := rand.Uint64()
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return resp.FromReply(st.RandomKey(now, r))
	})
}

// srandMember draws on this node, as randomKey does: a read changes no
// state, so its picks need not be the same on every replica.
func (s *Server) srandMember(c *resp.Conn, args [][]byte) resp.Value {
	r := rand.Uint64()
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return resp.FromReply(st.SrandMember(args, now, r))
	})
}

// keys and scan walk the state in bounded steps with the state lock
// released between them (lockstate.Scan, raftstore.Node.ReadSteps), so a
// KEYS over a million keys, or a SCAN with a huge COUNT, never holds up
// applying entries for longer than one step.
func (s *Server) keys(c *resp.Conn, args [][]byte) resp.Value {
	return s.scanSteps(c.Context(), lockstate.NewKeysScan(string(args[1])))
}

func (s *Server) scan(c *resp.Conn, args [][]byte) resp.Value {
	sc, err := lockstate.NewScan(args)
	if err != nil {
		return errorReply(err)
	}
	return s.scanSteps(c.Context(), sc)
}

func (s *Server) scanSteps(ctx context.Context, sc *lockstate.Scan) resp.Value {
	if err := s.readSteps(ctx, sc.Step); err != nil {
		return errorReply(err)
	}
	return resp.FromReply(sc.Finish())
}

// readSteps is read for a long read: see raftstore.Node.ReadSteps.
func (s *Server) readSteps(ctx context.Context, step func(st *lockstate.State, now int64) bool) error {
	if plant.On(plant.StaleRead) {
		done := false
		for !done {
			s.node.Local(func(st *lockstate.State) { done = step(st, max(st.Time(), s.clock.Now())) })
		}
		return nil
	}
	return s.node.ReadSteps(ctx, step)
}
