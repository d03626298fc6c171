package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecoverLostQuorum: two of three nodes die with their data; the
// survivor has no quorum and no way back, until `fenced recover` rewrites
// its configuration to itself alone. It then serves the old state, and the
// tokens it grants continue above the old ones (they are log indexes).
func TestRecoverLostQuorum(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	lc := leader.client(t)
	sess := openSession(t, lc, 60000, "")
	old := mustInt(t, lc, "FLOCK", "l", sess)
	mustInt(t, lc, "FUNLOCK", "l", sess, "FENCE", old)
	mustStr(t, lc, "SET", "kept", "yes")
	mustInt(t, lc, "SESSION.KILL", sess)

	for _, n := range c.followers(leader) {
		n.kill()
		if err := os.RemoveAll(n.dataDir); err != nil {
			t.Fatal(err)
		}
	}
	// Without recovery the survivor cannot elect itself.
	leader.term()
	leader.startNoWait()
	time.Sleep(2 * time.Second)
	if st := mustRaftStatus(t, leader); st.fields["role"] == "leader" {
		t.Fatalf("the survivor leads without a quorum: %v", st)
	}
	leader.term()

	peers := filepath.Join(t.TempDir(), "peers.json")
	b, _ := json.Marshal([]map[string]any{{"id": c.id(leader), "address": leader.raftAddr}})
	if err := os.WriteFile(peers, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"recover", "--data", leader.dataDir},                     // no peers file
		{"recover", "--data", t.TempDir(), "--peers", peers},      // no node data there
		{"recover", "--data", leader.dataDir, "--peers", "/nope"}, // no such file
	} {
		if out, err := exec.Command(binPath(t), bad...).CombinedOutput(); err == nil {
			t.Errorf("fenced %s succeeded:\n%s", strings.Join(bad, " "), out)
		}
	}
	if out, err := exec.Command(binPath(t), "recover", "--data", leader.dataDir, "--peers", peers).CombinedOutput(); err != nil {
		t.Fatalf("fenced recover: %v\n%s", err, out)
	}
	leader.restart()
	lc = leader.client(t)
	if v := mustStr(t, lc, "GET", "kept"); v != "yes" {
		t.Errorf("GET kept = %q after recovery", v)
	}
	sess = openSession(t, lc, 60000, "")
	if tok := mustInt(t, lc, "FLOCK", "l", sess); tok <= old {
		t.Errorf("token after recovery %d, want above the old %d", tok, old)
	}
	st := mustRaftStatus(t, leader)
	if ids := st.memberIDs(); len(ids) != 1 || ids[0] != c.id(leader) {
		t.Errorf("members after recovery: %v", ids)
	}
}
