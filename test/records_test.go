package test

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Issue 15, acceptance c: a list that would outgrow what a snapshot
// carries is refused at write time (it used to be accepted, and then a
// 155 x 512 KiB list made every restart fail with "bad snapshot: value
// length"); the list that was accepted survives RAFT.SNAPSHOT, a restart,
// and a new node that can only catch up by installing the snapshot.
//
// Not parallel: under -race, loading a large state at the restart takes
// seconds (32 MiB, the cap before it was 4 MiB, took over the harness's
// 30 s start-up bound among make test's parallel tests on 2 cores).
func TestBigRecordRefusedAtWrite(t *testing.T) {
	flags := []string{"--trailing-logs", "16"}
	c := startCluster(t, 1, flags)
	n := c.nodes[0]
	cl := n.client(t)
	el := strings.Repeat("e", 512<<10)
	pushed := 0
	for ; pushed < 20; pushed++ {
		_, err := do(tctx(t), cl, "RPUSH", "big", el)
		if err != nil {
			if !strings.Contains(err.Error(), "would grow past 4 MiB") {
				t.Fatalf("RPUSH %d: %v", pushed+1, err)
			}
			break
		}
	}
	if pushed == 20 || pushed < 7 {
		t.Fatalf("%d pushes of 512 KiB accepted, want the refusal near 4 MiB", pushed)
	}
	if got := mustInt(t, cl, "LLEN", "big"); got != int64(pushed) {
		t.Fatalf("LLEN %d after the refused push, want %d", got, pushed)
	}
	// Room comes back with a pop; other keys are not affected.
	mustInt(t, cl, "RPUSH", "small", "x")
	if _, err := do(tctx(t), cl, "LPOP", "big"); err != nil {
		t.Fatal(err)
	}
	mustInt(t, cl, "RPUSH", "big", el)
	t.Logf("%d pushes of 512 KiB accepted, the next refused", pushed)

	if _, err := do(tctx(t), cl, "RAFT.SNAPSHOT"); err != nil {
		t.Fatal(err)
	}
	if first := mustRaftStatus(t, n).int(t, "first_index"); first <= 1 {
		t.Fatalf("first_index %d after RAFT.SNAPSHOT with --trailing-logs 16: the log was not truncated", first)
	}
	n.kill()
	restarted := time.Now()
	n.restart()
	t.Logf("restart to serving: %v", time.Since(restarted).Round(time.Millisecond))
	c.leader(30 * time.Second)
	cl = n.client(t)
	if got := mustInt(t, cl, "LLEN", "big"); got != int64(pushed) {
		t.Fatalf("LLEN %d after the restart, want %d", got, pushed)
	}

	// A node that joins now finds the log truncated (--trailing-logs 16)
	// and installs the snapshot.
	joined := c.add("n2", flags...)
	c.waitVoters(2)
	// RAFT.HASH digests the whole state (4 MiB here) under the state
	// machine's lock: asked once a second, not in eventually's tight loop.
	deadline := time.Now().Add(60 * time.Second)
	for !reflect.DeepEqual(raftHash(t, joined.client(t)), raftHash(t, cl)) {
		if time.Now().After(deadline) {
			t.Fatal("the new node did not reach the leader's state within 60 s")
		}
		time.Sleep(time.Second)
	}
}
