package server

import (
	"context"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
)

// versionPoll is how often the leader looks whether the cluster can move
// to a newer version: a rolling upgrade waits this long at most after the
// last node announced its new binary.
const versionPoll = time.Second

// gateVersion runs on every node and acts while it is the ready leader: it
// moves the cluster to the newest version that every member's binary
// knows, once they have all announced it (lockstate/version.go). The state
// machine checks the same condition when it applies the entry, so a stale
// view here can only delay the move, never make it early.
func (s *Server) gateVersion(ctx context.Context) {
	t := time.NewTicker(versionPoll)
	defer t.Stop()
	held := "" // the last reason logged, so each is logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.start.settled.Load() {
			held = s.raiseVersion(ctx, held)
		}
	}
}

// raiseVersion is one look of the gate: if this node can propose and
// every member knows a newer version, it proposes OpSetVersion. It returns
// why the cluster stays where it is, logged when it differs from held.
// announce runs it once before the node settles too, so that a new
// cluster of one node serves its first command at the newest version.
func (s *Server) raiseVersion(ctx context.Context, held string) string {
	if !s.node.CanPropose() {
		return held
	}
	servers, err := s.node.Servers()
	if err != nil {
		return held
	}
	ids := make([]string, len(servers))
	for i, sv := range servers {
		ids[i] = sv.ID
	}
	var next, now int64
	var why string
	s.node.Local(func(st *lockstate.State) {
		now = st.Version()
		next, why = st.NextVersion(ids)
	})
	if why != held && why != "" {
		s.log.Info("cluster version held", "version", now, "known", lockstate.MaxVersion, "why", why)
	}
	if next == 0 {
		return why
	}
	res, err := s.submit(ctx, lockstate.Entry{Op: lockstate.OpSetVersion, Version: next})
	switch {
	case err != nil:
		s.log.Debug("raise cluster version", "err", err)
	case res.Err != nil:
		s.log.Info("cluster version not raised", "to", next, "err", res.Err)
	case res.Int != 0:
		s.log.Info("cluster version raised", "from", now, "to", res.Int)
	}
	return why
}

// clusterVersion is the cluster version as this node has applied it: the
// version it last saw, read anew from the state only while that is below
// want (the version only rises, so a seen one stays true).
func (s *Server) clusterVersion(want int64) int64 {
	if v := s.version.Load(); v >= want {
		return v
	}
	var v int64
	s.node.Local(func(st *lockstate.State) { v = st.Version() })
	for {
		old := s.version.Load()
		if old >= v || s.version.CompareAndSwap(old, v) {
			return max(old, v)
		}
	}
}

// notYet is the server's side of the version gate: a write the cluster's
// version does not have yet is unknown, as the state machine would answer
// it, and is refused before it is proposed, so that a cluster still at an
// older version never commits it. So is a connection command of a version
// (MULTI, PSUBSCRIBE, PUBSUB), as a binary without it answers. A read
// runs: the node serves it from its own state, through no log. A follower
// that has not yet applied the switch refuses for a moment longer than the
// leader.
func (s *Server) notYet(spec *commands.Spec) bool {
	return !spec.Has(commands.Read) && s.clusterVersion(spec.Version) < spec.Version
}

// notYetSettled is notYet for Table.CheckAt, which refuses before the
// arity is looked at, as a binary without the command does. Until the
// node settles it says no: the command then waits for the settling, which
// moves a new cluster to the newest version, and is decided after it.
func (s *Server) notYetSettled(spec *commands.Spec) bool {
	return s.start.settled.Load() && s.notYet(spec)
}
