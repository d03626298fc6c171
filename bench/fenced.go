package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// readyTimeout bounds how long a process may take to start serving.
const readyTimeout = 30 * time.Second

// probeKey is read with FENCE to tell whether a node serves linearizable
// reads: answered (null) means it has a leader that confirmed with a quorum;
// -TRYAGAIN/-CLUSTERDOWN means not yet.
const probeKey = "bench:probe"

// fencedNode is one fenced process with fixed ports and data directory, so
// a killed node comes back as the same member.
type fencedNode struct {
	id      string
	addr    string // client address, as the default user (the tool's own calls)
	work    string // what the workloads connect to: addr, or the ACL user's TLS address
	raft    string // Raft (peer) address, which joining nodes dial
	metrics string // --metrics address (pprof), "" when not profiling
	dir     string
	proc    *proc
}

// fencedCluster is 1 or more fenced nodes started by the tool: the first
// bootstraps (fenced's default on an empty data directory without --join),
// the others join it.
type fencedCluster struct {
	name    string // "fenced-1", "fenced-3"
	bin     string
	tmp     string
	metrics bool      // nodes serve /debug/pprof
	extra   []string  // flags of every node (--fenced-flags)
	secure  *security // fenced-3-secure; nil: none
	nodes   []*fencedNode
}

// buildFenced compiles ./cmd/fenced of the module the tool runs in, so the
// numbers are for the code in this tree, not some binary on PATH.
func buildFenced(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("locate module root (go env GOMOD): %v", err)
	}
	bin := filepath.Join(dir, "fenced")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fenced")
	build.Dir = filepath.Dir(gomod)
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fenced: %w\n%s", err, msg)
	}
	return bin, nil
}

// startFenced starts a cluster of size nodes in a fresh directory under
// tmp and returns once all are voters and every node serves reads.
// With metrics, every node also serves /debug/pprof (--pprof).
//
// A secure cluster (fenced-3-secure) has every security feature on, and the
// workloads' ACL user (secure.go).
func startFenced(ctx context.Context, bin, tmp, name string, size int, metrics, secure bool, extra []string) (*fencedCluster, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	c := &fencedCluster{name: name, bin: bin, tmp: dir, metrics: metrics, extra: extra}
	if secure {
		if c.secure, err = newSecurity(ctx, filepath.Join(dir, "pki")); err != nil {
			return nil, err
		}
	}
	for range size {
		join := ""
		if len(c.nodes) > 0 {
			join = c.nodes[0].raft // as make cluster does: n2, n3 join through n1
		}
		if _, err := c.addNode(ctx, join); err != nil {
			c.stop()
			return nil, err
		}
	}
	if err := c.waitVoters(ctx, size); err != nil {
		c.stop()
		return nil, err
	}
	if c.secure != nil {
		if err := c.secure.createUser(ctx, c.nodes[0].addr); err != nil {
			c.stop()
			return nil, fmt.Errorf("%s: ACL SETUSER %s: %w", name, benchUser, err)
		}
	}
	return c, nil
}

// addNode starts node n<k+1>, joining through join unless it is "", and
// waits until it serves reads.
func (c *fencedCluster) addNode(ctx context.Context, join string) (*fencedNode, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("n%d", len(c.nodes)+1)
	n := &fencedNode{id: id, addr: ports[0], work: ports[0], raft: ports[1], dir: filepath.Join(c.tmp, id)}
	args := []string{"--id", id, "--listen", ports[0], "--raft-addr", ports[1], "--data", n.dir}
	if s := c.secure; s != nil {
		// The tool's own calls (readiness, RAFT.STATUS) go as the default
		// user over TLS too; the workloads as the ACL user.
		n.addr, n.work = s.url("default", s.pass, ports[3]), s.url(benchUser, benchUserPass, ports[3])
		args = append(args, s.flags(ports[3])...)
	}
	if c.metrics {
		n.metrics = ports[2]
		args = append(args, "--metrics", n.metrics)
	}
	args = append(args, c.extra...)
	if join != "" {
		args = append(args, "--join", join)
	}
	n.proc = &proc{name: c.name + " " + id, path: c.bin, args: args, logPath: filepath.Join(c.tmp, id+".log")}
	c.nodes = append(c.nodes, n)
	if err := n.proc.start(); err != nil {
		return nil, err
	}
	if err := n.waitServing(ctx, readyTimeout); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, n.proc.logTail())
	}
	return n, nil
}

// restart starts a killed node again on its data directory and waits until
// it serves reads through itself.
func (c *fencedCluster) restart(ctx context.Context, n *fencedNode) error {
	if err := n.proc.start(); err != nil {
		return err
	}
	if err := n.waitServing(ctx, readyTimeout); err != nil {
		return fmt.Errorf("%w\n%s", err, n.proc.logTail())
	}
	return nil
}

// waitServing polls until a linearizable read through this node succeeds.
func (n *fencedNode) waitServing(ctx context.Context, timeout time.Duration) error {
	rdb := newClient(n.addr, 1, time.Second)
	defer rdb.Close()
	return waitFor(ctx, n.proc.name+" serving reads", timeout, 10*time.Millisecond, n.proc.exited(),
		func(ctx context.Context) error { return linearizableRead(ctx, rdb) })
}

// linearizableRead is FENCE on a key nobody locks: any answer but an error
// means the node has a leader that confirmed its leadership.
func linearizableRead(ctx context.Context, rdb *redis.Client) error {
	err := rdb.Do(ctx, "FENCE", probeKey).Err()
	if err == nil || isRedisNil(err) {
		return nil
	}
	return err
}

// status is RAFT.STATUS of one node as strings (without the "nodes" list).
func (n *fencedNode) status(ctx context.Context) (map[string]string, error) {
	rdb := newClient(n.addr, 1, time.Second)
	defer rdb.Close()
	v, err := rdb.Do(ctx, "RAFT.STATUS").Result()
	if err != nil {
		return nil, err
	}
	return flatMap(v)
}

// flatMap turns a RESP3 map (or RESP2 pairs) of scalars into strings.
func flatMap(v any) (map[string]string, error) {
	out := map[string]string{}
	put := func(k, val any) {
		if ks, ok := k.(string); ok {
			if _, nested := val.([]any); !nested {
				out[ks] = fmt.Sprint(val)
			}
		}
	}
	switch m := v.(type) {
	case map[any]any:
		for k, val := range m {
			put(k, val)
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			put(m[i], m[i+1])
		}
	default:
		return nil, fmt.Errorf("RAFT.STATUS: %T is not a map", v)
	}
	return out, nil
}

func statusUint(st map[string]string, key string) (uint64, error) {
	v, err := strconv.ParseUint(st[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("RAFT.STATUS %s=%q: %w", key, st[key], err)
	}
	return v, nil
}

// waitVoters waits until a leader reports want voters.
func (c *fencedCluster) waitVoters(ctx context.Context, want int) error {
	return waitFor(ctx, fmt.Sprintf("%s: %d voters", c.name, want), readyTimeout, 50*time.Millisecond, nil,
		func(ctx context.Context) error {
			l, err := c.leader(ctx)
			if err != nil {
				return err
			}
			st, err := l.status(ctx)
			if err != nil {
				return err
			}
			if st["voters"] != strconv.Itoa(want) {
				return fmt.Errorf("leader %s reports %s voters", l.id, st["voters"])
			}
			return nil
		})
}

// leader is the one running node that reports itself leader; an error if
// none or two do (the old one has not noticed yet).
func (c *fencedCluster) leader(ctx context.Context) (*fencedNode, error) {
	var found *fencedNode
	for _, n := range c.nodes {
		if !n.proc.running() {
			continue
		}
		st, err := n.status(ctx)
		if err != nil || st["role"] != "leader" {
			continue
		}
		if found != nil {
			return nil, errors.New("two nodes claim leadership")
		}
		found = n
	}
	if found == nil {
		return nil, errors.New("no leader")
	}
	return found, nil
}

// waitLeader polls until there is exactly one leader and it serves reads.
func (c *fencedCluster) waitLeader(ctx context.Context) (*fencedNode, error) {
	var l *fencedNode
	err := waitFor(ctx, c.name+": a leader", readyTimeout, 20*time.Millisecond, nil, func(ctx context.Context) error {
		var err error
		if l, err = c.leader(ctx); err != nil {
			return err
		}
		rdb := newClient(l.addr, 1, time.Second)
		defer rdb.Close()
		return linearizableRead(ctx, rdb)
	})
	return l, err
}

// addrs are the client addresses of the nodes, in id order.
func (c *fencedCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.work
	}
	return out
}

// pids of the running nodes, for CPU and memory readings.
func (c *fencedCluster) pids() []int {
	var out []int
	for _, n := range c.nodes {
		if n.proc.running() {
			out = append(out, n.proc.pid())
		}
	}
	return out
}

// serverProcs are the running nodes for the steps' CPU readings, by id
// with the leader marked: its share differs from the followers'.
func (c *fencedCluster) serverProcs(leader *fencedNode) []serverProc {
	var out []serverProc
	for _, n := range c.nodes {
		if n.proc.running() {
			out = append(out, serverProc{name: leaderMark(n.id, n == leader), pid: n.proc.pid()})
		}
	}
	return out
}

// leaderMark is a node's name in the CPU split: "n1 leader", "n2".
func leaderMark(id string, leader bool) string {
	if leader {
		return id + " leader"
	}
	return id
}

// stop shuts every node down and removes the data.
func (c *fencedCluster) stop() {
	for _, n := range c.nodes {
		n.proc.stop(5 * time.Second)
	}
	_ = os.RemoveAll(c.tmp)
}
