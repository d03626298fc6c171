package test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cluster is a set of fenced processes on loopback that form one Raft
// cluster: the first bootstraps it, the others join through it.
type cluster struct {
	t     testing.TB
	nodes []*node
	ids   []string
}

// startCluster starts size nodes with ids n1, n2, ...; extra[i], when
// given, are extra flags of node i. It returns once every node serves
// reads (through the leader) and all are voters.
func startCluster(t testing.TB, size int, extra ...[]string) *cluster {
	t.Helper()
	c := &cluster{t: t}
	for i := range size {
		c.add(fmt.Sprintf("n%d", i+1), extraArgs(extra, i)...)
	}
	c.waitVoters(size)
	return c
}

func extraArgs(extra [][]string, i int) []string {
	if i < len(extra) {
		return extra[i]
	}
	return nil
}

// add starts one more node with the given id: the first bootstraps, later
// ones join through the most recently added live node, which is often a
// follower (it forwards RAFT.JOIN to the leader).
func (c *cluster) add(id string, args ...string) *node {
	c.t.Helper()
	a := append([]string{"--id", id}, args...)
	if len(c.nodes) > 0 {
		a = append(a, "--join", c.lastAlive().addr)
	}
	n := startNode(c.t, nodeOpts{args: a})
	c.nodes = append(c.nodes, n)
	c.ids = append(c.ids, id)
	return n
}

func (c *cluster) lastAlive() *node {
	for i := len(c.nodes) - 1; i >= 0; i-- {
		if n := c.nodes[i]; n.alive() && !n.paused() {
			return n
		}
	}
	c.t.Fatal("no live node")
	return nil
}

// id returns the node id of n.
func (c *cluster) id(n *node) string {
	return c.ids[slices.Index(c.nodes, n)]
}

// status is RAFT.STATUS of one node, without the leadership check.
func status(ctx context.Context, n *node) (map[string]string, error) {
	cl := redis.NewClient(n.options(3))
	defer cl.Close()
	v, err := cl.Do(ctx, "RAFT.STATUS").Result()
	if err != nil {
		return nil, err
	}
	m, err := asMap(v)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

// leader waits until exactly one live node reports itself leader and a
// linearizable read succeeds through it, and returns it.
func (c *cluster) leader(timeout time.Duration) *node {
	c.t.Helper()
	var found *node
	eventually(c.t, timeout, "a ready leader", func() bool {
		found = nil
		for _, n := range c.nodes {
			if !n.alive() || n.paused() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := status(ctx, n)
			cancel()
			if err == nil && st["role"] == "leader" {
				if found != nil {
					return false // two claim it: wait for the old one to notice
				}
				found = n
			}
		}
		if found == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cl := redis.NewClient(found.options(3))
		defer cl.Close()
		return cl.Do(ctx, "FENCE", "__itest_ready_probe__").Err() == redis.Nil
	})
	return found
}

// followers returns the live nodes other than leader.
func (c *cluster) followers(leader *node) []*node {
	var out []*node
	for _, n := range c.nodes {
		if n != leader && n.alive() {
			out = append(out, n)
		}
	}
	return out
}

// waitVoters waits until the leader's configuration has want voters.
func (c *cluster) waitVoters(want int) {
	c.t.Helper()
	eventually(c.t, 30*time.Second, fmt.Sprintf("%d voters", want), func() bool {
		for _, n := range c.nodes {
			if !n.alive() || n.paused() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := status(ctx, n)
			cancel()
			if err == nil && st["role"] == "leader" && st["voters"] == fmt.Sprint(want) {
				return true
			}
		}
		return false
	})
}

// pause and resume stop and continue a node's process (SIGSTOP/SIGCONT):
// its Raft traffic stops while its sockets stay open.
func (n *node) pause()  { n.signal(syscall.SIGSTOP, true) }
func (n *node) resume() { n.signal(syscall.SIGCONT, false) }

func (n *node) signal(sig syscall.Signal, paused bool) {
	n.t.Helper()
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		n.t.Fatalf("signal %v: %v", sig, err)
	}
	n.mu.Lock()
	n.stopped = paused
	n.mu.Unlock()
}

func (n *node) paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped
}
