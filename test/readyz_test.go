package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// /readyz is true on the nodes of a healthy
// cluster; false on a node cut off from the majority (the other two
// paused), whether it led or followed, and true again once they are back;
// false with the reason on a node that has not settled (restarted alone:
// no quorum), and true once it has.
func TestReadyz(t *testing.T) {
	t.Parallel()
	metrics := make([]string, 3)
	extra := make([][]string, 3)
	for i := range metrics {
		metrics[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		extra[i] = []string{"--metrics", metrics[i]}
	}
	c := startCluster(t, 3, extra...)
	ready := func(i int) bool {
		code, _ := readyz(t, metrics[i])
		return code == http.StatusOK
	}
	for i := range c.nodes {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d ready", i), func() bool { return ready(i) })
	}

	// Cut off each role in turn: the leader, then a follower.
	leader := c.leader(10 * time.Second)
	for _, role := range []string{"leader", "follower"} {
		cut := leader
		if role == "follower" {
			cut = c.followers(c.leader(10 * time.Second))[0]
		}
		i := nodeIndex(c, cut)
		for _, n := range c.nodes {
			if n != cut {
				n.pause()
			}
		}
		eventually(t, 10*time.Second, "the cut-off "+role+" not ready", func() bool {
			code, body := readyz(t, metrics[i])
			if code == http.StatusOK {
				return false
			}
			t.Logf("cut-off %s: %d %q", role, code, strings.TrimSpace(body))
			return true
		})
		for _, n := range c.nodes {
			if n != cut {
				n.resume()
			}
		}
		eventually(t, 15*time.Second, "the "+role+" ready again", func() bool { return ready(i) })
	}

	// Not settled: one node restarted alone.
	for _, n := range c.nodes {
		n.kill()
	}
	c.nodes[0].startNoWait()
	code, body := readyz(t, metrics[0])
	if code == http.StatusOK || !strings.Contains(body, "starting: waiting for") {
		t.Fatalf("/readyz of a node restarted alone: %d %q", code, body)
	}
	for _, n := range c.nodes[1:] {
		n.startNoWait()
	}
	for i := range c.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d ready after the restart", i), func() bool { return ready(i) })
	}
}

func nodeIndex(c *cluster, n *node) int {
	for i, m := range c.nodes {
		if m == n {
			return i
		}
	}
	return -1
}
