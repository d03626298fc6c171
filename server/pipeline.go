package server

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// Pipelined writes. A client that pipelines writes (heartbeats of many
// sessions, a batch of SETs) would otherwise wait for one commit per
// command, because a connection's commands run one after another. On the
// leader such a write is instead handed to Raft and answered with a
// resp.Later, and the connection goes on to the next command: writes
// proposed one after another are committed in that order, in shared
// batches. Any other command waits until the replies before it are written,
// so it still sees their effects.

// RunsAhead implements resp.Pipeliner: a command the table lets run ahead
// (commands.Spec.RunsAhead) may start before earlier replies are ready,
// when this node leads and the connection is a client's in its normal mode.
func (s *Server) RunsAhead(c *resp.Conn, args [][]byte) bool {
	spec, ok := s.table.Lookup(args[0])
	if !ok || !spec.RunsAhead(args) || inMulti(c) != nil { // queued, not run
		return false
	}
	// A forwarding link runs its RAFT.PROPOSEs ahead, many clients' writes
	// in flight on one connection (forwarder.propose); a client's
	// connection its own writes, in its normal mode.
	from := fromClient(c) && s.pubsub.subscribed(c) == 0
	if spec.Has(commands.Peer) {
		from = !fromClient(c)
	}
	return from && s.start.settled.Load() && s.node.CanPropose()
}

// proposeAhead commits e and answers reply(result): on the leader with a
// resp.Later, so that the connection's next write may join the same commit;
// elsewhere through the leader, as propose does. A write proposed while an
// earlier one of the connection is still unanswered is counted in INFO
// stats as total_pipelined_writes.
func (s *Server) proposeAhead(c *resp.Conn, e lockstate.Entry, reply func(lockstate.Result) resp.Value) resp.Value {
	if s.node.IsLeader() {
		if wait, err := s.node.Enqueue(e); err == nil {
			unanswered := &stateOf(c).unanswered
			if unanswered.Add(1) > 1 {
				s.stats.pipelinedWrites.Add(1)
			}
			return resp.Later(func() resp.Value {
				res, err := wait()
				unanswered.Add(-1)
				return answer(res, err, reply)
			})
		}
	}
	res, err := s.submit(c.Context(), e)
	return answer(res, err, reply)
}

// answer turns a proposal's outcome into a reply.
func answer(res lockstate.Result, err error, reply func(lockstate.Result) resp.Value) resp.Value {
	if err != nil {
		return errorReply(err)
	}
	return reply(res)
}
