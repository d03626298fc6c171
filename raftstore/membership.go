package raftstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/reply"
)

// ErrMembership is wrapped by membership errors that are decided: nothing
// changed and retrying the same request will not help.
var ErrMembership = reply.NewErr("ERR", "membership")

// Server is one member of the Raft configuration.
type Server struct {
	ID       string
	RaftAddr string
	Voter    bool
}

// Servers returns the latest Raft configuration, in its own order.
func (n *Node) Servers() ([]Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raftstore: configuration: %w", err)
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// AddNonvoter adds a node that receives the log but does not vote, the way
// every newcomer enters (it is promoted once it has caught up). Adding a
// node that is already a member at the same address changes nothing; an id
// or an address already used by another member is refused.
func (n *Node) AddNonvoter(id, raftAddr string) error {
	if !n.CanPropose() {
		return n.notReady()
	}
	if err := n.CheckJoin(id, raftAddr); err != nil {
		return err
	}
	if _, _, err := n.member(id); err == nil {
		return nil // already a member at this address
	}
	return n.configErr(n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout).Error())
}

// CheckJoin reports whether id may join at raftAddr: nil when the id is
// new and the address unused, or when the id is already a member at that
// address (a repeated join); ErrMembership otherwise.
func (n *Node) CheckJoin(id, raftAddr string) error {
	servers, err := n.Servers()
	if err != nil {
		return err
	}
	for _, s := range servers {
		switch {
		case s.ID == id && s.RaftAddr == raftAddr:
			return nil
		case s.ID == id:
			return fmt.Errorf("%w: id %q is already a member at %s", ErrMembership, id, s.RaftAddr)
		case s.RaftAddr == raftAddr:
			return fmt.Errorf("%w: address %s belongs to member %q; RAFT.REMOVE it first", ErrMembership, raftAddr, s.ID)
		}
	}
	return nil
}

// Promote makes a non-voting member a voter.
func (n *Node) Promote(id string) error {
	if !n.CanPropose() {
		return n.notReady()
	}
	addr, voter, err := n.member(id)
	if err != nil || voter {
		return err
	}
	return n.configErr(n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, n.cfg.ApplyTimeout).Error())
}

// Remove takes a member out of the configuration. A leader that removes
// itself steps down once the change is committed.
func (n *Node) Remove(id string) error {
	if !n.CanPropose() {
		return n.notReady()
	}
	if _, _, err := n.member(id); err != nil {
		return err
	}
	return n.configErr(n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error())
}

// Transfer hands leadership to id, or to the most up-to-date voter when id
// is empty, and waits until this node has stepped down.
func (n *Node) Transfer(id string) error {
	if !n.CanPropose() {
		return n.notReady()
	}
	var f raft.Future
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, voter, err := n.member(id)
		if err != nil {
			return err
		}
		if !voter {
			return fmt.Errorf("%w: %q is not a voter", ErrMembership, id)
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr))
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("%w: leadership transfer: %v", ErrNotReady, err)
	}
	return nil
}

func (n *Node) member(id string) (addr string, voter bool, err error) {
	servers, err := n.Servers()
	if err != nil {
		return "", false, err
	}
	for _, s := range servers {
		if s.ID == id {
			return s.RaftAddr, s.Voter, nil
		}
	}
	return "", false, fmt.Errorf("%w: no member %q", ErrMembership, id)
}

// configErr classifies the error of a configuration change the way Propose
// classifies entries: refused before it was appended is retryable, lost
// after is uncertain.
func (n *Node) configErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notReady()
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrCantBootstrap):
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	case strings.HasPrefix(err.Error(), "configuration changed since"):
		// raft refused a change made against an older configuration.
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	default:
		return fmt.Errorf("%w: %v", ErrUncertain, err)
	}
}

// Leader returns the id of the leader this node knows of ("" for none).
func (n *Node) Leader() string {
	_, id := n.raft.LeaderWithID()
	return string(id)
}

// IsLeader reports whether this node is the leader (ready or not).
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// FollowerProgress is this leader's own view of how far the log of the
// member id matches its own in the current term (false if it has none).
func (n *Node) FollowerProgress(id string) (Progress, bool) {
	pr, ok := n.progress.get(raft.ServerID(id))
	if !ok || pr.Term != n.raft.CurrentTerm() || !n.IsLeader() {
		return Progress{}, false
	}
	return pr, true
}

// CaughtUp reports how far this node's state machine is behind the commit
// index it knows of, for promotion decisions.
func (n *Node) CaughtUp() (applied, commit uint64) {
	return n.fsm.appliedIndex(), n.raft.CommitIndex()
}
