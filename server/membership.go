package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

// promoteLag is how many entries a non-voter may trail the leader's commit
// index and still count as caught up.
const promoteLag = 256

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
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.node.CanPropose() {
			continue
		}
		servers, err := s.node.Servers()
		if err != nil {
			continue
		}
		for _, sv := range servers {
			if sv.Voter || ctx.Err() != nil {
				continue
			}
			if s.caughtUp(ctx, sv.ID) {
				if err := s.node.Promote(sv.ID); err != nil {
					s.log.Warn("promote", "id", sv.ID, "err", err)
					continue
				}
				s.log.Info("node promoted to voter", "id", sv.ID)
			}
		}
	}
}

// caughtUp asks the non-voter id, at its client address, how far it has
// applied, and compares that with this leader's commit index.
func (s *Server) caughtUp(ctx context.Context, id string) bool {
	var m lockstate.Member
	var ok bool
	s.node.Local(func(st *lockstate.State) { m, ok = st.Member(id) })
	if !ok || m.Removed {
		return false
	}
	_, commit := s.node.CaughtUp()
	v, err := s.fwd.do(ctx, m.Addr, readTimeout, []byte("RAFT.STATUS"))
	if err != nil || v.IsError() {
		return false
	}
	applied, ok := mapField(v, "applied_index")
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(applied, 10, 64)
	return err == nil && n+promoteLag >= commit
}

// mapField finds key in a RESP3 map (or a RESP2 flat array) of strings.
func mapField(v resp.Value, key string) (string, bool) {
	el := v.Elems()
	for i := 0; i+1 < len(el); i += 2 {
		if el[i].Text() == key {
			return el[i+1].Text(), true
		}
	}
	return "", false
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
			delay = poll
			continue
		}
		delay = min(2*delay, time.Second) // back off while attempts fail
		if err := s.announceSelf(ctx); err != nil {
			if errors.Is(err, lockstate.ErrNodeRemoved) {
				s.log.Error("this node's id was removed from the cluster; start it with a new --id and empty --data", "id", s.cfg.ID)
				return
			}
			s.log.Debug("announce", "err", err)
			continue
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
			s.settled.Store(true)
			s.log.Info("node settled", "id", s.cfg.ID)
			return
		}
	}
}

// announceSelf records this node in the member table if it is a member of
// the Raft configuration and its record is missing or out of date.
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
	if ok && m.Addr == addr && m.RaftAddr == raftAddr {
		return nil
	}
	res, err := s.submit(ctx, lockstate.Entry{Op: lockstate.OpNodeJoin, Node: s.cfg.ID, RaftAddr: raftAddr, Addr: addr})
	if err != nil {
		return err
	}
	return res.Err
}

// join asks the member at s.cfg.Join to add this node, retrying while the
// answer is retryable. A decided refusal is returned: the node can't serve.
func (s *Server) join(ctx context.Context) error {
	args := [][]byte{[]byte("RAFT.JOIN"), []byte(s.cfg.ID), []byte(s.node.RaftAddr()), []byte(s.clientAddr())}
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		v, err := callOnce(ctx, s.cfg.Join, args...)
		switch {
		case err == nil && !v.IsError():
			s.log.Info("joined the cluster", "via", s.cfg.Join)
			return nil
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

// ErrJoin is returned by Serve when the cluster refused this node.
var ErrJoin = errors.New("server: join refused")

// callOnce sends one command on a connection of its own, as a client
// would: unlike a link, a member that is not the leader forwards it.
func callOnce(ctx context.Context, addr string, args ...[]byte) (resp.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	c, err := resp.Dial(ctx, addr, dialTimeout)
	if err != nil {
		return resp.Value{}, err
	}
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
