package test

import (
	"strings"
	"testing"
	"time"
)

// A single node on an empty directory takes the
// first write sent the moment it answers PING (it used to answer -TRYAGAIN
// for about 650 ms more, and the README's first SESSION.OPEN met it). The
// client connects the moment the process says it serves, and writes after
// its first PONG; then again after a restart on the same directory.
func TestFirstWriteAfterPing(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{noWait: true})
	for run := range 2 {
		if run == 1 {
			n.kill()
			n.startNoWait()
		}
		start := time.Now()
		c := dialRaw(t, n.addr)
		c.send("PING")
		if v := c.read(); v.kind != '+' || v.str != "PONG" {
			t.Fatalf("run %d: PING answered %v", run, v)
		}
		c.send("SESSION.OPEN")
		if v := c.read(); v.kind != '$' || len(v.str) != 32 {
			t.Fatalf("run %d: the first SESSION.OPEN after PONG answered %v", run, v)
		}
		c.send("SET", "first", "write")
		if v := c.read(); v.kind != '+' || v.str != "OK" {
			t.Fatalf("run %d: SET after PONG answered %v", run, v)
		}
		t.Logf("run %d: first write answered %v after the serving line", run, time.Since(start).Round(time.Millisecond))
	}
}

// A node that cannot settle (one node of three,
// restarted alone: no quorum, no leader) answers its clients' commands
// -LOADING with the true reason, after waiting for it, and INFO
// persistence says loading:1; once the others are back it settles, says
// loading:0 and serves.
func TestLoadingUntilSettled(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	for _, n := range c.nodes {
		n.kill()
	}
	alone := c.nodes[0]
	alone.startNoWait()
	raw := dialRaw(t, alone.addr)
	start := time.Now()
	raw.send("SET", "k", "v")
	v := raw.read()
	waited := time.Since(start)
	if v.kind != '-' || v.str != "LOADING fenced is starting: waiting for a leader (no quorum of the cluster's voters reachable yet)" {
		t.Fatalf("SET on a node without quorum answered %v", v)
	}
	if waited < time.Second {
		t.Fatalf("-LOADING after %v: the command did not wait for the node to settle", waited)
	}
	raw.send("INFO", "persistence")
	if v := raw.read(); !strings.Contains(v.str, "loading:1\r\n") {
		t.Fatalf("INFO persistence while starting: %q", v.str)
	}
	for _, n := range c.nodes[1:] {
		n.startNoWait()
	}
	eventually(t, 30*time.Second, "the node settles", func() bool {
		raw.send("INFO", "persistence")
		return strings.Contains(raw.read().str, "loading:0\r\n")
	})
	raw.send("SET", "k", "v")
	if v := raw.read(); v.kind != '+' {
		t.Fatalf("SET once settled answered %v", v)
	}
}
