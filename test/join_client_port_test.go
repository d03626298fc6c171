package test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJoinClientPort: a newcomer whose --join names a member's client port
// instead of its Raft address exits non-zero and says which address is
// wrong and what --join takes, with plain and with TLS peer channels (the
// client port answers RESP either way, never the peer channel's protocol).
// The member is left as it was.
func TestJoinClientPort(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "cluster")
	for _, tc := range []struct {
		name string
		peer func(id string) []string
	}{
		{"plain", func(string) []string { return nil }},
		{"peer-tls", ca.peerFlags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			member := startNode(t, nodeOpts{args: append([]string{"--id", "n1"}, tc.peer("n1")...)})
			newcomer := startNode(t, nodeOpts{noWait: true,
				args: append([]string{"--id", "n2", "--join", member.addr}, tc.peer("n2")...)})
			// The first RAFT.JOIN is sent as soon as the newcomer serves, and
			// its answer is decided; a newcomer still running after this
			// long is retrying, as for a member that is merely down.
			select {
			case <-newcomer.exitedCh():
			case <-time.After(30 * time.Second):
				t.Fatalf("the newcomer still runs 30 s after it was told to join %s, a client port", member.addr)
			}
			newcomer.mu.Lock()
			err := newcomer.exitErr
			newcomer.mu.Unlock()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Errorf("the newcomer exited with %v, want a non-zero status", err)
			}
			want := member.addr + " is a client port; --join takes a member's Raft address (its --raft-addr)"
			if !strings.Contains(newcomer.stderr(), want) {
				t.Errorf("the newcomer's stderr does not say %q:\n%s", want, newcomer.stderr())
			}
			if ids := mustRaftStatus(t, member).memberIDs(); len(ids) != 1 || ids[0] != "n1" {
				t.Errorf("members %v after the refused join, want [n1]", ids)
			}
		})
	}
}
