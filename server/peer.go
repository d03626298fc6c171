package server

import (
	"fmt"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
	"github.com/fenced/fenced/session"
)

// Errors of the peer channel's commands.
var (
	// ErrPeerOnly answers a node-to-node command sent to the client port.
	ErrPeerOnly = reply.NewErr("NOPERM", "this command is served only between nodes, on the peer channel")
	// ErrForwarded refuses a forwarded entry that no node forwards for its
	// clients, or whose fields are out of bounds; nothing was proposed.
	ErrForwarded = reply.NewErr("ERR", "refused forwarded entry")
)

// peerHandler serves the connections of the peer channel: commands that
// other nodes forward for their clients, and the node-to-node commands.
// raftstore has verified the other node's certificate (when peer TLS is on)
// before any of them arrives.
type peerHandler struct{ s *Server }

func (h peerHandler) ServeRESP(c *resp.Conn, args [][]byte) resp.Value {
	h.mark(c)
	return h.s.ServeRESP(c, args)
}

func (h peerHandler) RunsAhead(c *resp.Conn, args [][]byte) bool {
	h.mark(c)
	return h.s.RunsAhead(c, args)
}

// mark records that c is a peer's: it needs no AUTH (the node that took
// the client's command checked it before forwarding).
func (peerHandler) mark(c *resp.Conn) {
	st := stateOf(c)
	if !st.peer {
		st.peer, st.user = true, defaultUser
	}
}

// fromPeer reports whether c came over the peer channel.
func fromPeer(c *resp.Conn) bool {
	st, ok := c.State().(*connState)
	return ok && st.peer
}

// raftPropose is RAFT.PROPOSE entry, from a node that forwards a client's
// write: the leader decodes and checks it, stamps it with its own time,
// and proposes it. An entry that does not decode never reaches the log.
func (s *Server) raftPropose(c *resp.Conn, args [][]byte) resp.Value {
	e, err := lockstate.DecodeEntry(args[1])
	if err != nil {
		return errorReply(err)
	}
	if err := s.checkForwarded(&e, linkOf(c)); err != nil {
		return errorReply(err)
	}
	// Enqueued now and answered when committed, so that the RAFT.PROPOSEs
	// behind it on the link join the same commit (RunsAhead); counted in
	// total_pipelined_writes as a client's pipelined writes are.
	wait, err := s.node.Enqueue(e)
	if err != nil {
		return errorReply(err)
	}
	unanswered := &stateOf(c).unanswered
	if unanswered.Add(1) > 1 {
		s.stats.pipelinedWrites.Add(1)
	}
	return resp.Later(func() resp.Value {
		res, err := wait()
		unanswered.Add(-1)
		if err != nil {
			return errorReply(err)
		}
		return resp.Bulk(res.Encode(nil))
	})
}

// checkForwarded holds a forwarded entry to what a node proposes for its
// clients, with the leader's own bounds, and makes the leader the source of
// what it would choose itself: a new session's id and creation time. Ticks
// and membership removals are the leader's own entries; a node records only
// itself in the member table.
func (s *Server) checkForwarded(e *lockstate.Entry, link string) error {
	// The caps on names, as the forwarding node's parser applies them: a
	// peer's entry is not trusted to have been parsed.
	var err error
	switch e.Op {
	case lockstate.OpFlock:
		err = commands.CheckCaps(e.Lock, e.Owner, e.Req, "")
	case lockstate.OpFunlock:
		err = commands.CheckCaps("", "", e.Req, "")
	case lockstate.OpSessionOpen:
		err = commands.CheckCaps("", "", "", e.Name)
	}
	if err != nil {
		return err
	}
	switch e.Op {
	case lockstate.OpSessionOpen:
		ttl, err := session.TTLBounds{Min: s.cfg.MinTTL, Max: s.cfg.MaxTTL, Default: s.cfg.DefaultTTL}.Resolve(e.TTL)
		if err != nil {
			return err
		}
		e.TTL, e.Session, e.Created = ttl, session.NewID(), s.wallNow().UnixMilli()
	case lockstate.OpNodeJoin:
		if link == "" || e.Node != link {
			return fmt.Errorf("%w: node %q may only record itself", ErrForwarded, link)
		}
	case lockstate.OpSessionHeartbeat, lockstate.OpSessionKill, lockstate.OpFlock, lockstate.OpFunlock,
		lockstate.OpCancelWait, lockstate.OpCancelWaits, lockstate.OpForceUnlock, lockstate.OpExec,
		lockstate.OpACLSetUser, lockstate.OpACLDelUser, lockstate.OpMulti:
	default:
		return fmt.Errorf("%w: op %d is not forwarded", ErrForwarded, e.Op)
	}
	return nil
}

// raftLink is RAFT.LINK: commands on this connection come from another
// node and are never forwarded again, so a stale view of the leader can't
// make a loop.
func (s *Server) raftLink(c *resp.Conn, args [][]byte) resp.Value {
	stateOf(c).link = string(args[1])
	return resp.SimpleString("OK")
}
