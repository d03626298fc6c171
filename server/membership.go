package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

// A non-voter counts as caught up while its log, as the leader's own
// appends found it, trails the leader's commit index by at most promoteLag
// entries and an append succeeded within promoteFresh; it is promoted once
// it has stayed caught up for promoteStable (Consul's autopilot calls this
// server stabilisation). The newcomer's own report is never asked: a node
// that claims to be ahead must not get a vote it cannot use.
const (
	promoteLag    = 256
	promoteFresh  = time.Second
	promoteStable = 2 * time.Second
)

// raftJoin is RAFT.JOIN id raft-addr client-addr on the leader: the id is
// recorded in the replicated member table (which also refuses ids that were
// ever removed), then the node enters as a non-voter; the promoter makes it
// a voter once it has caught up.
func (s *Server) raftJoin(c *resp.Conn, args [][]byte) resp.Value {
	id, raftAddr, addr := string(args[1]), string(args[2]), string(args[3])
	for _, a := range []string{raftAddr, addr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return errorReply(fmt.Errorf("%w: bad address %q", commands.ErrSyntax, commands.Clip([]byte(a))))
		}
	}
	// Refuse a clash with the configuration before recording anything, so
	// a bad join can't overwrite a live member's address.
	if err := s.node.CheckJoin(id, raftAddr); err != nil {
		return errorReply(err)
	}
	if v := s.propose(c.Context(), lockstate.Entry{Op: lockstate.OpNodeJoin, Node: id, RaftAddr: raftAddr, Addr: addr}); v.IsError() {
		return v
	}
	if err := s.node.AddNonvoter(id, raftAddr); err != nil {
		return errorReply(err)
	}
	s.log.Info("node joined as non-voter", "id", id, "raft", raftAddr, "addr", addr)
	return resp.SimpleString("OK")
}

// raftRemove is RAFT.REMOVE id: recorded as removed first, so the id is
// never reused even if what follows fails, then taken out of the Raft
// configuration. Repeating it after a partial failure finishes the job. A
// leader that removes itself steps down once the change commits.
func (s *Server) raftRemove(c *resp.Conn, args [][]byte) resp.Value {
	id := string(args[1])
	if v := s.propose(c.Context(), lockstate.Entry{Op: lockstate.OpNodeRemove, Node: id}); v.IsError() {
		return v
	}
	servers, err := s.node.Servers()
	if err != nil {
		return errorReply(err)
	}
	for _, sv := range servers {
		if sv.ID == id {
			if err := s.node.Remove(id); err != nil {
				return errorReply(err)
			}
		}
	}
	s.log.Info("node removed", "id", id)
	return resp.SimpleString("OK")
}

// raftTransfer is RAFT.TRANSFER [id].
func (s *Server) raftTransfer(_ *resp.Conn, args [][]byte) resp.Value {
	id := ""
	if len(args) > 2 {
		return errorReply(wrapArity("raft.transfer"))
	}
	if len(args) == 2 {
		id = string(args[1])
	}
	if err := s.node.Transfer(id); err != nil {
		return errorReply(err)
	}
	return resp.SimpleString("OK")
}

// promote runs on every node and acts while it is the ready leader: it
// makes caught-up non-voters voters.
func (s *Server) promote(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	since := make(map[string]time.Time) // non-voter -> caught up since
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.node.CanPropose() {
			clear(since)
			continue
		}
		servers, err := s.node.Servers()
		if err != nil {
			continue
		}
		now := time.Now()
		for _, sv := range servers {
			if sv.Voter || ctx.Err() != nil {
				continue
			}
			if !s.caughtUp(sv.ID, now) {
				delete(since, sv.ID)
				continue
			}
			if _, ok := since[sv.ID]; !ok {
				since[sv.ID] = now
			}
			if now.Sub(since[sv.ID]) >= promoteStable {
				delete(since, sv.ID)
				if err := s.node.Promote(sv.ID); err != nil {
					s.log.Warn("promote", "id", sv.ID, "err", err)
					continue
				}
				s.log.Info("node promoted to voter", "id", sv.ID)
			}
		}
	}
}

// caughtUp reports whether the non-voter id is caught up at now, from this
// leader's own view of its log.
func (s *Server) caughtUp(id string, now time.Time) bool {
	var m lockstate.Member
	var ok bool
	s.node.Local(func(st *lockstate.State) { m, ok = st.Member(id) })
	if !ok || m.Removed {
		return false
	}
	pr, ok := s.node.FollowerProgress(id)
	_, commit := s.node.CaughtUp()
	return ok && pr.Match+promoteLag >= commit && now.Sub(pr.At) <= promoteFresh
}

// announce runs once at start-up, in the background, until it succeeds:
// it records this node's client address in the member table (so followers
// can forward to it when it leads) and cancels the waits that an earlier
// process of this node left queued (their connections are gone).
func (s *Server) announce(ctx context.Context) {
	epochs := s.waits.oldEpochs()
	const poll = 20 * time.Millisecond
	for delay := poll; ; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if s.node.Leader() == "" {
			s.start.waitingFor("a leader (no quorum of the cluster's voters reachable yet)")
			delay = poll
			continue
		}
		delay = min(2*delay, time.Second) // back off while attempts fail
		s.start.waitingFor("its address to be recorded in the member table")
		if err := s.announceSelf(ctx); err != nil {
			if errors.Is(err, lockstate.ErrNodeRemoved) {
				s.log.Error("this node's id was removed from the cluster; start it with a new --id and empty --data", "id", s.cfg.ID)
				return
			}
			s.log.Debug("announce", "err", err)
			continue
		}
		if len(epochs) > 0 {
			s.start.waitingFor("the waits of its previous run to be cancelled")
		}
		for len(epochs) > 0 {
			e := lockstate.Entry{Op: lockstate.OpCancelWaits, WaitID: epochs[0] << 32}
			if _, err := s.submit(ctx, e); err != nil {
				s.log.Debug("cancel orphaned waits", "err", err)
				break
			}
			epochs = epochs[1:]
			s.waits.forgetEpochs(epochs)
		}
		if len(epochs) == 0 {
			// A new cluster moves to the newest version before its first
			// client command, rather than a poll later (version.go); where
			// other members have yet to announce, the gate does it then.
			s.raiseVersion(ctx, "")
			s.start.settle()
			s.log.Info("node settled", "id", s.cfg.ID)
			return
		}
	}
}

// announceSelf records this node in the member table, with the cluster
// version its binary knows, if it is a member of the Raft configuration
// and its record is missing or out of date.
func (s *Server) announceSelf(ctx context.Context) error {
	servers, err := s.node.Servers()
	if err != nil {
		return err
	}
	raftAddr := ""
	for _, sv := range servers {
		if sv.ID == s.cfg.ID {
			raftAddr = sv.RaftAddr
		}
	}
	if raftAddr == "" {
		return fmt.Errorf("%w: not a member yet", raftstore.ErrNotReady)
	}
	addr := s.clientAddr()
	var m lockstate.Member
	var ok bool
	s.node.Local(func(st *lockstate.State) { m, ok = st.Member(s.cfg.ID) })
	if ok && m.Removed {
		return lockstate.ErrNodeRemoved
	}
	// The version this binary knows goes with the addresses, so that the
	// leader's version gate (version.go) sees a restart on a new release.
	known := int64(lockstate.MaxVersion)
	if plant.On(plant.VersionLie) {
		known++
	}
	if ok && m.Addr == addr && m.RaftAddr == raftAddr && m.Version == known {
		return nil
	}
	res, err := s.submit(ctx, lockstate.Entry{Op: lockstate.OpNodeJoin, Node: s.cfg.ID, RaftAddr: raftAddr, Addr: addr, Version: known})
	if err != nil {
		return err
	}
	return res.Err
}

// join asks the member whose peer channel is s.cfg.Join to add this node,
// retrying while the answer is retryable. It goes over the peer channel,
// so the member knows this node by its certificate. A decided refusal is
// returned: the node can't serve.
func (s *Server) join(ctx context.Context) error {
	args := [][]byte{[]byte("RAFT.JOIN"), []byte(s.cfg.ID), []byte(s.node.RaftAddr()), []byte(s.clientAddr())}
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		v, err := s.callPeer(ctx, s.cfg.Join, args...)
		switch {
		case err == nil && !v.IsError():
			s.log.Info("joined the cluster", "via", s.cfg.Join)
			return nil
		case clientPort(v, err):
			return fmt.Errorf("%w: %s is a client port; --join takes a member's Raft address (its --raft-addr)", ErrJoin, s.cfg.Join)
		case err == nil && !retryable(v.Text()):
			return fmt.Errorf("%w: RAFT.JOIN at %s: %s", ErrJoin, s.cfg.Join, v.Text())
		}
		s.log.Info("joining: will retry", "via", s.cfg.Join, "err", err, "reply", v.Text())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// clientPort reports whether the answer to a RAFT.JOIN sent over the peer
// channel came from a RESP server's client port instead (fenced's or
// Redis's): a peer channel reads the dialer's kind byte first and always
// knows RAFT.JOIN, while a client port takes the kind byte for the start
// of an inline command it does not know ("ERR unknown command 'L*4'").
// With peer TLS, the client port answers the TLS ClientHello with a RESP
// error, whose first five bytes the TLS client reports as the record
// header that does not look like TLS.
func clientPort(v resp.Value, err error) bool {
	if err == nil {
		return v.IsError() && strings.HasPrefix(v.Text(), "ERR unknown command")
	}
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) && string(rh.RecordHeader[:]) == "-ERR "
}

// ErrJoin is returned by Serve when the cluster refused this node.
var ErrJoin = errors.New("server: join refused")

// callPeer sends one command to the node at the peer address addr, on a
// connection of its own that is not a link: like a client's command, a
// member that is not the leader forwards it.
func (s *Server) callPeer(ctx context.Context, addr string, args ...[]byte) (resp.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
	nc, err := s.node.DialPeer(dctx, addr)
	dcancel()
	if err != nil {
		return resp.Value{}, err
	}
	c := resp.NewClient(nc, resp.DefaultReplyLimits())
	defer c.Close()
	return c.Do(ctx, args...)
}

func retryable(msg string) bool {
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "UNCERTAIN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
