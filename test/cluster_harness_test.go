package test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cluster is a set of fenced processes on loopback that form one Raft
// cluster: the first bootstraps it, the others join through it.
type cluster struct {
	t        testing.TB
	nodes    []*node
	ids      []string
	password string // what the tests' clients authenticate with ("" = none)
	bin      string // the binary nodes run ("" = the tests' build)
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

// startClusterWith starts size nodes as startCluster does, each with args,
// whose clients authenticate with password.
func startClusterWith(t testing.TB, size int, password string, args ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, password: password}
	for i := range size {
		c.add(fmt.Sprintf("n%d", i+1), args...)
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
		a = append(a, "--join", c.lastAlive().raftAddr)
	}
	n := startNode(c.t, nodeOpts{args: a, password: c.password, bin: c.bin})
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

// raftMember is one element of RAFT.STATUS nodes.
type raftMember struct{ ID, RaftAddr, Addr, Suffrage string }

// raftStatus is a parsed RAFT.STATUS reply.
type raftStatus struct {
	fields map[string]string // every field but nodes, as text
	nodes  []raftMember      // in reply order
}

// raftStatusOf asks n for RAFT.STATUS, without the leadership check.
func raftStatusOf(n *node, timeout time.Duration) (raftStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return raftStatusCtx(ctx, n)
}

func mustRaftStatus(t testing.TB, n *node) raftStatus {
	t.Helper()
	st, err := raftStatusOf(n, 3*time.Second)
	if err != nil {
		t.Fatalf("RAFT.STATUS of %s: %v", n.addr, err)
	}
	return st
}

// status is the fields of n's RAFT.STATUS, as the chaos harness reads them.
func status(ctx context.Context, n *node) (map[string]string, error) {
	st, err := raftStatusCtx(ctx, n)
	return st.fields, err
}

func raftStatusCtx(ctx context.Context, n *node) (raftStatus, error) {
	st := raftStatus{fields: map[string]string{}}
	c := redis.NewClient(n.options(3))
	defer c.Close()
	v, err := c.Do(ctx, "RAFT.STATUS").Result()
	if err != nil {
		return st, err
	}
	m, err := asMap(v)
	if err != nil {
		return st, err
	}
	for k, val := range m {
		if k != "nodes" {
			st.fields[k] = fmt.Sprint(val)
			continue
		}
		arr, ok := val.([]any)
		if !ok {
			return st, fmt.Errorf("RAFT.STATUS nodes is %T %v, want an array", val, val)
		}
		for _, e := range arr {
			em, err := asMap(e)
			if err != nil {
				return st, fmt.Errorf("RAFT.STATUS nodes: %v", err)
			}
			st.nodes = append(st.nodes, raftMember{
				ID: fmt.Sprint(em["id"]), RaftAddr: fmt.Sprint(em["raft_addr"]),
				Addr: fmt.Sprint(em["addr"]), Suffrage: fmt.Sprint(em["suffrage"]),
			})
		}
	}
	return st, nil
}

// int is a numeric field; it fails the test if the field is not a number.
func (s raftStatus) int(t testing.TB, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s.fields[key], 10, 64)
	if err != nil {
		t.Fatalf("RAFT.STATUS %s = %q: %v", key, s.fields[key], err)
	}
	return v
}

// memberIDs are the ids of the members, sorted.
func (s raftStatus) memberIDs() []string {
	var ids []string
	for _, m := range s.nodes {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return ids
}

// members are the members as "id raft_addr addr suffrage", sorted.
func (s raftStatus) members() []string {
	var out []string
	for _, m := range s.nodes {
		out = append(out, fmt.Sprintf("%s %s %s %s", m.ID, m.RaftAddr, m.Addr, m.Suffrage))
	}
	sort.Strings(out)
	return out
}

func (s raftStatus) String() string {
	return fmt.Sprintf("role=%s term=%s leader_id=%s commit=%s applied=%s first=%s last=%s voters=%s nodes=%v",
		s.fields["role"], s.fields["term"], s.fields["leader_id"], s.fields["commit_index"], s.fields["applied_index"],
		s.fields["first_index"], s.fields["last_index"], s.fields["voters"], s.nodes)
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
			st, err := raftStatusOf(n, time.Second)
			if err == nil && st.fields["role"] == "leader" {
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
			st, err := raftStatusOf(n, time.Second)
			if err == nil && st.fields["role"] == "leader" && st.fields["voters"] == fmt.Sprint(want) {
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
