package test

import (
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/plant"
)

// upgradeRun is a rolling upgrade of a 3-node cluster under the lock
// workload: each node in turn moves to a binary of a pretend next release
// (built with -tags fencednext: cluster version 4, where INCR adds 2) and
// takes the leadership, then faults go on over the upgraded cluster.
func upgradeRun(bug plant.Bug, d time.Duration) chaosRun {
	return chaosRun{
		opts:    chaosOpts{nodes: 3, plant: bug, extra: []string{"--snapshot-threshold", "300", "--trailing-logs", "50"}},
		clients: 6, locks: 3, ttl: 1500 * time.Millisecond,
		duration: d, every: 3 * time.Second, upgrade: "fencednext",
		first:  []string{"upgrade-node", "upgrade-node", "upgrade-node"},
		faults: []string{"kill-random", "isolate-random", "transfer", "pause-client"},
	}
}

// TestRollingUpgrade: the new semantics switch on only once the last node
// runs the new binary, the replicas agree, and every checker of the fault
// tests passes over the whole upgrade.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	rep := runChaos(t, upgradeRun("", 25*time.Second), chaosSeed(t))
	t.Logf("%v", rep)
	for _, p := range rep.violations {
		t.Error(p)
	}
}

// TestRollingUpgradePlanted: with members that overstate the version their
// binary knows, the gate opens while old nodes still run, and the checkers
// must say so.
func TestRollingUpgradePlanted(t *testing.T) {
	t.Parallel()
	rep := runChaos(t, upgradeRun(plant.VersionLie, 12*time.Second), chaosSeed(t))
	t.Logf("%v", rep)
	var definite []string
	for _, v := range rep.violations {
		if !strings.Contains(v, "timed out") {
			definite = append(definite, v)
		}
	}
	if len(definite) == 0 {
		t.Fatalf("planted bug %s went undetected", plant.VersionLie)
	}
	t.Logf("detected: %s", strings.Join(definite, "; "))
}
