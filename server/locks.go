package server

import (
	"context"
	"errors"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

func (s *Server) flock(c *resp.Conn, args [][]byte) resp.Value {
	r, err := commands.ParseFlock(args)
	if err != nil {
		return errorReply(err)
	}
	e := lockstate.Entry{Op: lockstate.OpFlock, Lock: r.Lock, Session: r.Session, Owner: r.Owner, Wait: r.Wait, Limit: r.Limit, Req: r.Req}
	e.User, e.AsAdmin = s.actor(c)
	if r.Wait == commands.NoWait {
		e.Wait = lockstate.NoWait
		return s.proposeAhead(c, e, resultReply)
	}
	start := time.Now()
	// Register before proposing: the grant may be applied before Propose
	// returns.
	id, answer := s.waits.register(r.Lock, r.Session, r.Owner)
	defer s.waits.unregister(id)
	e.WaitID = id
	res, err := s.submit(c.Context(), e)
	if err != nil {
		if errors.Is(err, raftstore.ErrUncertain) || errors.Is(err, ErrForwardLost) {
			// If the FLOCK was queued after all, nobody will take its
			// answer: cancel it. A cancel is ordered after the FLOCK in the
			// log if the FLOCK is there at all.
			s.cancelWait(id)
		}
		return errorReply(err)
	}
	if !res.Queued {
		return resultReply(res)
	}
	s.waits.queued(id, res.Int)
	select {
	case r := <-answer:
		outcome := waitGranted
		switch {
		case r.Err != nil:
			outcome = waitError
		case r.Null:
			outcome = waitTimedOut
		}
		s.waited(start, outcome)
		return resultReply(r)
	case <-c.Context().Done():
		// The client is gone: take its request out of the queue so the lock
		// is not handed to a connection that will never see it.
		s.cancelWait(id)
		s.waited(start, waitAbandoned)
		return resp.Null()
	case <-s.waits.done:
		s.waited(start, waitShutdown)
		return s.cancelAtShutdown(id, answer)
	}
}

// shutdownAnswer bounds how long a FLOCK cancelled at shutdown waits for
// the answer of a wait that the cancel found already resolved.
const shutdownAnswer = time.Second

// cancelAtShutdown answers a waiting FLOCK when the server shuts down. It
// may say CANCELLED only once its cancel has taken the wait out of the
// queue: a cancel that failed (a leader in transfer, say) leaves the wait
// queued, to be granted later to a client told it was not (found by the
// rolling-upgrade test, which stops nodes gracefully under load). A wait
// the cancel found already resolved was granted or timed out: its answer
// is on its way.
func (s *Server) cancelAtShutdown(id uint64, answer <-chan lockstate.Result) resp.Value {
	cancelled, err := s.cancelWait(id)
	switch {
	case err != nil:
		return errorReply(ErrShutdownUncertain)
	case cancelled:
		return errorReply(ErrShuttingDown)
	}
	select {
	case r := <-answer:
		return resultReply(r)
	case <-time.After(shutdownAnswer):
		return errorReply(ErrShutdownUncertain)
	}
}

// waited records a queued FLOCK's wait, from its command's start.
func (s *Server) waited(start time.Time, outcome string) {
	s.metrics.lockWait.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

// cancelWait takes a queued FLOCK out of its queue, through Raft like
// every change, and reports whether the wait was still there to take out.
func (s *Server) cancelWait(id uint64) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := s.submit(ctx, lockstate.Entry{Op: lockstate.OpCancelWait, WaitID: id})
	if err != nil {
		s.log.Warn("cancel wait", "id", id, "err", err)
		return false, err
	}
	return res.Int == 1, nil
}

func (s *Server) funlock(c *resp.Conn, args [][]byte) resp.Value {
	r, err := commands.ParseFunlock(args)
	if err != nil {
		return errorReply(err)
	}
	e := lockstate.Entry{Op: lockstate.OpFunlock, Lock: r.Lock, Session: r.Session, Owner: r.Owner, Fence: r.Fence, Req: r.Req}
	e.User, e.AsAdmin = s.actor(c)
	return s.proposeAhead(c, e, resultReply)
}

func (s *Server) forceUnlock(c *resp.Conn, args [][]byte) resp.Value {
	r, err := commands.ParseForceUnlock(args)
	if err != nil {
		return errorReply(err)
	}
	return s.proposeAhead(c, lockstate.Entry{Op: lockstate.OpForceUnlock, Lock: r.Lock, Fence: r.Token}, resultReply)
}

func (s *Server) fence(c *resp.Conn, args [][]byte) resp.Value {
	r, err := commands.ParseFence(args)
	if err != nil {
		return errorReply(err)
	}
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		if r.IfEq {
			if tok, ok := st.KeyFenceIfEq(r.Lock, r.Value, now); ok {
				return resp.Int(tok)
			}
			return resp.Null()
		}
		return resultReply(st.FenceOf(r.Lock, r.Session, r.Owner, r.WithOwner, now))
	})
}

func (s *Server) lockInfo(c *resp.Conn, args [][]byte) resp.Value {
	name := string(args[1])
	user, admin := s.actor(c)
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		li := st.LockInfo(name, now)
		// A session id is the only credential a session has: it is shown
		// only to its user, or an admin.
		shown := func(id string) resp.Value {
			if owner, ok := st.SessionUser(id); admin || ok && owner == user {
				return resp.BulkString(id)
			}
			return resp.Null()
		}
		waiters := make([]resp.Value, len(li.Waiters))
		for i, w := range li.Waiters {
			waiters[i] = resp.Map(
				resp.BulkString("session"), shown(w.Session),
				resp.BulkString("owner"), resp.BulkString(w.Owner),
				resp.BulkString("remaining"), resp.Int(w.Remaining),
			)
		}
		holder, owner, token := resp.Null(), resp.Null(), resp.Null()
		if li.Holder != "" {
			holder, owner, token = shown(li.Holder), resp.BulkString(li.Owner), resp.Int(li.Token)
		}
		return resp.Map(
			resp.BulkString("holder"), holder,
			resp.BulkString("owner"), owner,
			resp.BulkString("count"), resp.Int(li.Count),
			resp.BulkString("limit"), resp.Int(li.Limit),
			resp.BulkString("token"), token,
			resp.BulkString("waiters"), resp.Array(waiters...),
		)
	})
}
