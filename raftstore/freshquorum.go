package raftstore

import (
	"time"

	"github.com/hashicorp/raft"
)

// Leadership confirmed by answers to appends sent after the read arrived.
//
// raft.VerifyLeader counts, as a follower's vote, any successful answer
// to an append that the leader processes after the check began, whatever
// the time the append was sent. A leader frozen (a paused process, a
// stalled machine) with answers waiting in its sockets wakes up, a read
// arrives, and those answers, sent by followers before they elected
// another leader, confirm it: the woken leader served a session the new
// leader had killed (make test, TestClusterNoStaleRead). So a read is
// confirmed only once a quorum of voters has answered, in this term, an
// append (a heartbeat included) sent after the check began; guardedTransport
// records when each acknowledged append was sent.

// confirmLeader is the verifier's check: raft's own round, then fresh
// answers from a quorum, waited for up to the heartbeat timeout (the
// round makes raft send every follower a heartbeat at once).
func (n *Node) confirmLeader() error {
	began := time.Now()
	term := n.raft.CurrentTerm()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return err
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	var peers []raft.ServerID
	voters := 0
	self := raft.ServerID(n.cfg.ID)
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID != self {
			peers = append(peers, s.ID)
		}
	}
	need := voters/2 + 1 - 1 // this node's own vote counts
	return n.progress.awaitFresh(peers, need, term, began, n.cfg.HeartbeatTimeout, n.stop)
}

// awaitFresh waits until need of peers have acknowledged, in term, an
// append sent at or after since; raft.ErrNotLeader if they have not within
// timeout, or if stop is closed.
func (p *progress) awaitFresh(peers []raft.ServerID, need int, term uint64, since time.Time, timeout time.Duration, stop <-chan struct{}) error {
	if need <= 0 {
		return nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		fresh := 0
		for _, id := range peers {
			if a, ok := p.acked[id]; ok && a.term == term && !a.sent.Before(since) {
				fresh++
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if fresh >= need {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return raft.ErrNotLeader
		case <-stop:
			return raft.ErrNotLeader
		}
	}
}

// ack is the latest acknowledged append to a peer: its term and when it
// was sent.
type ack struct {
	term uint64
	sent time.Time
}

// observeAck records that peer id acknowledged an append of term sent at
// sent.
func (p *progress) observeAck(id raft.ServerID, term uint64, sent time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.acked[id]; a.term > term || a.term == term && a.sent.After(sent) {
		return
	}
	p.acked[id] = ack{term: term, sent: sent}
	close(p.changed)
	p.changed = make(chan struct{})
}
