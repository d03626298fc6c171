package server

import (
	"context"
	"time"

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
		if !s.node.CanPropose() || !s.start.settled.Load() {
			continue
		}
		servers, err := s.node.Servers()
		if err != nil {
			continue
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
		held = why
		if next == 0 {
			continue
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
	}
}
