package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A rolling upgrade under the fault tests: the "upgrade-node" fault moves
// one node at a time onto a binary that knows a newer cluster version
// (lockstate/version_next.go: version 4, where INCR adds 2), and hands it
// the leadership, so that a new binary leads old followers. The version
// gate must hold the new semantics back until the last node runs the new
// binary; the watch below, the INCR probes and the usual checkers (replicas
// agree, no crash) say whether it did.

// upgrade is the nemesis's side of a rolling upgrade.
type upgrade struct {
	bin string // the newer binary

	mu       sync.Mutex
	done     []*node   // nodes already moved, in order
	last     time.Time // when the last node's new process was started
	problems []string  // what the INCR probes saw wrong
}

func (u *upgrade) problem(format string, args ...any) {
	u.mu.Lock()
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
	u.mu.Unlock()
}

// upgradeNode moves the next node onto the new binary: the leader while it
// runs the old one, so that leadership has to move, else any old node. It
// stops the node gracefully, starts the new binary on its data, hands it
// the leadership, and probes INCR's step, which must stay 1 until every
// node runs the new binary.
func (nm *nemesis) upgradeNode(ctx context.Context) {
	cc, u := nm.cc, nm.upgrade
	u.mu.Lock()
	var old []int
	for i, n := range cc.nodes {
		if !slices.Contains(u.done, n) {
			old = append(old, i)
		}
	}
	u.mu.Unlock()
	if len(old) == 0 {
		return
	}
	i := old[0]
	if l := cc.leaderNow(); l != nil {
		if j := slices.Index(cc.nodes, l); slices.Contains(old, j) {
			i = j
		}
	}
	n := cc.nodes[i]
	if n.alive() {
		n.term()
	}
	n.mu.Lock()
	n.bin = u.bin
	n.mu.Unlock()
	n.startNoWait()
	u.mu.Lock()
	u.done = append(u.done, n)
	lastOne := len(u.done) == len(cc.nodes)
	if lastOne {
		u.last = time.Now()
	}
	u.mu.Unlock()
	nm.logf("upgrade: %s runs the new binary (%d of %d)", cc.names[i], len(cc.nodes)-len(old)+1, len(cc.nodes))
	// Lead with the new binary, so that its gate decides.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		l := cc.leaderNow()
		if l == n {
			break
		}
		if l != nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			do(cctx, l.client(cc.t), "RAFT.TRANSFER", cc.names[i])
			cancel()
		}
	}
	if !lastOne {
		nm.probeIncr(ctx, n, 1)
	}
}

// probeIncr checks, through node n, that one INCR adds want. A probe that
// cannot get a definite answer says nothing; a wrong step is a problem.
func (nm *nemesis) probeIncr(ctx context.Context, n *node, want int64) {
	const key = "upgrade:probe"
	c := redis.NewClient(n.options(3))
	defer c.Close()
	for range 20 {
		if ctx.Err() != nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		before, err := c.Get(cctx, key).Int64()
		if errors.Is(err, redis.Nil) {
			before, err = 0, nil
		}
		var after int64
		if err == nil {
			after, err = c.Incr(cctx, key).Result()
		}
		cancel()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if after-before != want {
			nm.upgrade.problem("INCR added %d, want %d, with %d of %d nodes upgraded", after-before, want, len(nm.upgrade.done), len(nm.cc.nodes))
		}
		return
	}
}

// versionWatch polls every node's INFO for the cluster version while the
// run goes on, and remembers when each node first reported each version.
type versionWatch struct {
	mu    sync.Mutex
	first map[int64]time.Time // version -> first time any node reported it
	stop  context.CancelFunc
	done  chan struct{}
}

func watchVersions(cc *chaosCluster) *versionWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &versionWatch{first: map[int64]time.Time{}, stop: cancel, done: make(chan struct{})}
	var clients []*redis.Client
	for _, n := range cc.nodes {
		clients = append(clients, redis.NewClient(n.options(3)))
	}
	go func() {
		defer close(w.done)
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		for ctx.Err() == nil {
			for _, c := range clients {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				v, _, err := clusterVersion(cctx, c)
				at := time.Now()
				cancel()
				if err != nil {
					continue
				}
				w.mu.Lock()
				if _, ok := w.first[v]; !ok {
					w.first[v] = at
				}
				w.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

// clusterVersion reads INFO server's cluster_version and
// cluster_version_known.
func clusterVersion(ctx context.Context, c *redis.Client) (version, known int64, err error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, 0, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	if version, err = strconv.ParseInt(fields["cluster_version"], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("cluster_version: %w", err)
	}
	if known, err = strconv.ParseInt(fields["cluster_version_known"], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("cluster_version_known: %w", err)
	}
	return version, known, nil
}

// verdict stops the watch and checks the upgrade: every node ends on the
// new binary's version, which no node reported before the last node ran
// the new binary, and INCR's step followed the version.
func (w *versionWatch) verdict(nm *nemesis) (problems []string) {
	cc, u := nm.cc, nm.upgrade
	defer func() { problems = append(slices.Clone(u.problems), problems...) }()
	if len(u.done) < len(cc.nodes) {
		return append(problems, fmt.Sprintf("only %d of %d nodes were upgraded: lengthen the run", len(u.done), len(cc.nodes)))
	}
	// The leader raises the version within a second or so of the last
	// announcement; allow for an election first.
	var want int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		var vs []string
		settled := true
		for _, n := range cc.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			c := redis.NewClient(n.options(3))
			v, known, err := clusterVersion(ctx, c)
			c.Close()
			cancel()
			want = known
			settled = settled && err == nil && v == known && known > 1
			vs = append(vs, fmt.Sprintf("%v/%v/%v", v, known, err))
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			w.stop()
			<-w.done
			return append(problems, fmt.Sprintf("the cluster never moved to the new version (version/known/err by node: %v)", vs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.stop()
	<-w.done
	w.mu.Lock()
	first, seen := w.first[want]
	w.mu.Unlock()
	switch {
	case seen && first.Before(u.last):
		problems = append(problems, fmt.Sprintf("version %d reported %v before the last node ran the new binary", want, u.last.Sub(first).Round(time.Millisecond)))
	case seen:
		nm.logf("upgrade: version %d first reported %v after the last node's new binary started", want, first.Sub(u.last).Round(time.Millisecond))
	}
	if l := cc.leaderNow(); l != nil {
		nm.probeIncr(context.Background(), l, 2)
	}
	return problems
}
