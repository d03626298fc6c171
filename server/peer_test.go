package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
)

// The leader holds a forwarded entry to what a node forwards for its
// clients: ticks and removals are its own, a node records only itself, a
// session's TTL is held to the leader's bounds, names to their caps, and
// the leader chooses a new session's id and creation time, whatever the
// entry said.
func TestCheckForwarded(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	for _, e := range []lockstate.Entry{
		{Op: lockstate.OpTick, Time: 1 << 50},
		{Op: lockstate.OpNodeRemove, Node: "n1"},
		{Op: lockstate.OpNodeJoin, Node: "n1", RaftAddr: "evil:1", Addr: "evil:2"}, // from link n2
		{Op: lockstate.OpSessionOpen, TTL: 100 * 365 * 24 * 3600 * 1000},
		{Op: lockstate.Op(200)},
		// Over the caps the forwarding node's parser applies.
		{Op: lockstate.OpFlock, Lock: strings.Repeat("l", commands.MaxLockName+1)},
		{Op: lockstate.OpFlock, Lock: "l", Owner: strings.Repeat("o", commands.MaxOwner+1)},
		{Op: lockstate.OpFlock, Lock: "l", Req: strings.Repeat("r", commands.MaxReq+1)},
		{Op: lockstate.OpFunlock, Lock: "l", Req: strings.Repeat("r", commands.MaxReq+1)},
		{Op: lockstate.OpSessionOpen, Name: strings.Repeat("n", commands.MaxLabel+1)},
	} {
		if err := s.checkForwarded(&e, "n2"); err == nil {
			t.Errorf("%v forwarded by n2 was accepted", e.Op)
		}
	}
	if err := s.checkForwarded(&lockstate.Entry{Op: lockstate.OpNodeJoin, Node: "n2"}, "n2"); err != nil {
		t.Errorf("n2 recording itself: %v", err)
	}
	e := lockstate.Entry{Op: lockstate.OpSessionOpen, Session: "chosen-by-the-follower", TTL: 0, Created: 1}
	if err := s.checkForwarded(&e, "n2"); err != nil {
		t.Fatal(err)
	}
	if e.Session == "chosen-by-the-follower" || len(e.Session) != 32 || e.Created < time.Now().Add(-time.Minute).UnixMilli() ||
		e.TTL != s.cfg.DefaultTTL.Milliseconds() {
		t.Errorf("the leader kept what the follower chose: %+v", e)
	}
	for _, op := range []lockstate.Op{lockstate.OpFlock, lockstate.OpFunlock, lockstate.OpSessionHeartbeat, lockstate.OpSessionKill,
		lockstate.OpCancelWait, lockstate.OpCancelWaits, lockstate.OpForceUnlock, lockstate.OpExec, lockstate.OpACLSetUser, lockstate.OpACLDelUser} {
		if err := s.checkForwarded(&lockstate.Entry{Op: op}, "n2"); err != nil {
			t.Errorf("%v: %v", op, err)
		}
	}
	atCaps := lockstate.Entry{Op: lockstate.OpFlock, Lock: strings.Repeat("l", commands.MaxLockName),
		Owner: strings.Repeat("o", commands.MaxOwner), Req: strings.Repeat("r", commands.MaxReq)}
	if err := s.checkForwarded(&atCaps, "n2"); err != nil {
		t.Errorf("a FLOCK at every cap: %v", err)
	}
	if err := s.checkForwarded(&lockstate.Entry{Op: lockstate.OpTick}, "n2"); !errors.Is(err, ErrForwarded) {
		t.Errorf("a forwarded tick: %v, want ErrForwarded", err)
	}
	// Only the leader's version gate moves the cluster version.
	if err := s.checkForwarded(&lockstate.Entry{Op: lockstate.OpSetVersion, Version: 2}, "n2"); !errors.Is(err, ErrForwarded) {
		t.Errorf("a forwarded version change: %v, want ErrForwarded", err)
	}
}
