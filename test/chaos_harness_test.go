package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/plant"
)

// The fault tests (see DESIGN.md, Fault tests and planted bugs): real
// fenced processes, each on its own loopback IP behind the proxies of a
// chaosNet, clients of this process (workload), a nemesis that injects
// faults, and the checkers.

// chaosBinary builds fenced once per build tag set, with the race detector
// if race. Only the real fenced of one workload's runs is race-built, and
// only when raceServer says so (make test's fault-test lane sets
// FENCED_SERVER_RACE=1): those runs are where make test runs whole fenced
// processes under the race detector, the black-box tests using plain ones.
// Race-built servers take about twice the CPU, and with all three workloads
// race-built the lane starved its planted bugs' short runs (double-grant and
// memory-tokens were caught only in run 2) and took minutes longer; a
// planted binary is never race-built, as its bug must show within a short
// run's timing.
var (
	chaosBinMu sync.Mutex
	chaosBins  = map[string]string{}
)

func chaosBinary(t testing.TB, tags string, race bool) string {
	t.Helper()
	chaosBinMu.Lock()
	defer chaosBinMu.Unlock()
	key := fmt.Sprintf("%s race=%v", tags, race)
	if p, ok := chaosBins[key]; ok {
		return p
	}
	// Under TestMain's directory, which is removed when the tests end: a
	// binary serves every later test that asks for the same tags, so no
	// one test's cleanup may remove it.
	dir, err := os.MkdirTemp(tmpDir, "fenced-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "fenced")
	args := []string{"build", "-o", p}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/fenced/fenced/cmd/fenced")...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building fenced %s: %v\n%s", tags, err, out)
	}
	chaosBins[key] = p
	return p
}

type chaosOpts struct {
	nodes    int
	plant    plant.Bug       // "" = the real fenced
	race     bool            // the real fenced race-built (chaosBinary)
	offsets  []time.Duration // --clock-offset by node
	extra    []string        // flags of every node
	password string          // --requirepass, which the harness's own clients use
	// ca, if set, turns TLS on: peer mutual TLS between the nodes, and the
	// workload's clients on a TLS client port (the harness's own clients
	// keep the plaintext one). Its certificates name 127.0.0.11-19.
	ca *testCA
}

type chaosCluster struct {
	*cluster
	net   *chaosNet
	names []string    // n1, n2, ...
	addrs []string    // real client addresses, for the clients
	tls   *tls.Config // how the clients connect to addrs; nil = plain TCP
}

func startChaos(t *testing.T, o chaosOpts) *chaosCluster {
	t.Helper()
	bin := chaosBinary(t, "", o.race)
	var env []string
	if o.plant != "" {
		bin = chaosBinary(t, "plant", false)
		env = []string{"FENCED_PLANT=" + string(o.plant)}
	}
	cc := &chaosCluster{cluster: &cluster{t: t}, net: newChaosNet(t)}
	var secure []string
	if o.ca != nil {
		cert, key := o.ca.issue("node")
		secure = []string{"--peer-cert-file", cert, "--peer-key-file", key, "--peer-trusted-ca-file", o.ca.File,
			"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", o.ca.File, "--tls-auth-clients", "no"}
		cc.tls = &tls.Config{RootCAs: o.ca.pool(), MinVersion: tls.VersionTLS12}
	}
	for i := range o.nodes {
		name := fmt.Sprintf("n%d", i+1)
		ip := fmt.Sprintf("127.0.0.%d", 11+i)
		cc.net.addNode(name, ip)
		listen := fmt.Sprintf("%s:%d", ip, freePort(t))
		raft := fmt.Sprintf("%s:%d", ip, freePort(t))
		args := []string{"--id", name, "--listen", listen, "--raft-addr", raft,
			"--advertise", cc.net.proxy(name, listen), "--raft-advertise", cc.net.proxy(name, raft)}
		if i < len(o.offsets) && o.offsets[i] != 0 {
			args = append(args, "--clock-offset", o.offsets[i].String())
		}
		args = append(args, o.extra...)
		tlsListen := ""
		if o.ca != nil {
			tlsListen = fmt.Sprintf("%s:%d", ip, freePort(t))
			args = append(append(args, secure...), "--tls-listen", tlsListen)
		}
		if o.password != "" {
			args = append(args, "--requirepass", o.password)
		}
		if i > 0 {
			args = append(args, "--join", cc.nodes[0].raftAddr)
		}
		n := startNode(t, nodeOpts{args: args, bin: bin, env: env, allowCrash: o.plant != "", password: o.password})
		cc.nodes = append(cc.nodes, n)
		cc.ids = append(cc.ids, name)
		cc.names = append(cc.names, name)
		if tlsListen != "" {
			cc.addrs = append(cc.addrs, tlsListen)
		} else {
			cc.addrs = append(cc.addrs, n.addr)
		}
	}
	cc.waitVoters(o.nodes)
	return cc
}

// leaderNow returns the node that says it leads, or nil; it never fails
// the test (the nemesis runs outside the test's goroutine).
func (cc *chaosCluster) leaderNow() *node {
	for _, n := range cc.nodes {
		if !n.alive() || n.paused() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		st, err := status(ctx, n)
		cancel()
		if err == nil && st["role"] == "leader" {
			return n
		}
	}
	return nil
}

// nemesis injects one fault at a time, each undone before the next.
type nemesis struct {
	cc     *chaosCluster
	w      *workload
	h      *history
	rng    *rand.Rand
	faults []string
	first  []string // injected before the random ones, in this order
	ttl    time.Duration

	replaced int      // nodes replaced so far, for their new ids
	upgrade  *upgrade // the rolling upgrade's state, if the run has one

	logf func(format string, args ...any) // the test's log, or nil

	mu     sync.Mutex
	counts map[string]int
}

func (nm *nemesis) count(f string) {
	nm.mu.Lock()
	nm.counts[f]++
	nm.mu.Unlock()
}

// run injects faults until ctx ends, then heals everything.
func (nm *nemesis) run(ctx context.Context, every time.Duration) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(every / 2):
		}
		if ctx.Err() != nil {
			break
		}
		f := nm.faults[nm.rng.IntN(len(nm.faults))]
		if len(nm.first) > 0 {
			f, nm.first = nm.first[0], nm.first[1:]
		}
		nm.inject(ctx, f, every)
		nm.count(f)
	}
	nm.heal()
}

func (nm *nemesis) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (nm *nemesis) inject(ctx context.Context, f string, every time.Duration) {
	cc := nm.cc
	pick := func() *node { return cc.nodes[nm.rng.IntN(len(cc.nodes))] }
	target := func() *node {
		if l := cc.leaderNow(); l != nil {
			return l
		}
		return pick()
	}
	nameOf := func(n *node) string { return cc.names[slices.Index(cc.nodes, n)] }
	others := func(n *node) []string {
		var o []string
		for _, x := range cc.names {
			if x != nameOf(n) {
				o = append(o, x)
			}
		}
		return o
	}
	switch f {
	case "kill-leader", "kill-random":
		n := target()
		if f == "kill-random" {
			n = pick()
		}
		n.kill()
		nm.sleep(ctx, every/2)
		n.startNoWait()
	case "kill-all":
		for _, n := range cc.nodes {
			n.kill()
		}
		nm.sleep(ctx, every/4)
		for _, n := range cc.nodes {
			n.startNoWait()
		}
	case "pause-leader":
		n := target()
		n.pause()
		nm.sleep(ctx, 2*time.Second) // past the election timeout
		n.resume()
	case "isolate-leader":
		n := target()
		cc.net.partition([]string{nameOf(n)}, others(n))
		nm.sleep(ctx, every)
		cc.net.heal()
	case "isolate-random":
		n := pick()
		cc.net.partition([]string{nameOf(n)}, others(n))
		nm.sleep(ctx, every)
		cc.net.heal()
	case "deaf-leader":
		// The leader's entries reach the followers, which commit them,
		// but their answers never come back: it steps down not knowing.
		n := target()
		cc.net.deafen(nameOf(n))
		nm.sleep(ctx, every)
		cc.net.heal()
	case "bridge":
		p := nm.rng.Perm(len(cc.names))
		cc.net.bridge(cc.names[p[0]], cc.names[p[1]], cc.names[p[2]])
		nm.sleep(ctx, every)
		cc.net.heal()
	case "pause-client":
		nm.w.pauseClient(nm.rng.IntN(nm.w.clients), 3*nm.ttl)
	case "transfer":
		if l := cc.leaderNow(); l != nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			do(cctx, l.client(nm.cc.t), "RAFT.TRANSFER")
			cancel()
		}
	case "kill-session":
		nm.killSession(ctx)
	case "kill-at-deadline":
		nm.killAtDeadline(ctx)
	case "replace-node":
		nm.replaceNode(ctx)
		nm.sleep(ctx, every/2)
	case "upgrade-node":
		nm.upgradeNode(ctx)
	}
}

// replaceNode is a membership change under load, as an operator replaces a
// machine: a follower is removed from the cluster, killed and its data
// wiped, and it comes back under a new id, joining through the leader. It
// starts as a non-voter and catches up, by snapshot once the leader's log
// was compacted, until the leader promotes it. It keeps its addresses and
// its place in the chaosNet, so later faults can cut it off.
func (nm *nemesis) replaceNode(ctx context.Context) {
	cc := nm.cc
	l := cc.leaderNow()
	if l == nil {
		return
	}
	var cands []int
	for i, n := range cc.nodes {
		if n != l && n.alive() && !n.paused() {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return
	}
	i := cands[nm.rng.IntN(len(cands))]
	n := cc.nodes[i]
	nm.replaced++
	id := fmt.Sprintf("%sr%d", cc.names[i], nm.replaced)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := do(rctx, l.client(cc.t), "RAFT.REMOVE", cc.ids[i])
	cancel()
	if err != nil {
		return // refused or unknown: the node stays a member as it was
	}
	n.kill()
	if err := os.RemoveAll(n.dataDir); err != nil {
		cc.t.Errorf("wiping %s: %v", n.dataDir, err)
	}
	setFlag(&n.args, "--id", id)
	setFlag(&n.args, "--join", l.raftAddr)
	cc.ids[i] = id
	n.startNoWait()
}

// setFlag sets a flag's value in args, appending it if absent.
func setFlag(args *[]string, flag, value string) {
	if i := slices.Index(*args, flag); i >= 0 && i+1 < len(*args) {
		(*args)[i+1] = value
		return
	}
	*args = append(*args, flag, value)
}

// killSession ends a session some client uses, as an operator would, and
// records it: the model frees its locks.
func (nm *nemesis) killSession(ctx context.Context) {
	ops := nm.h.all()
	var open []string
	for _, op := range ops {
		if op.Kind == "open" && op.Outcome == outOK && op.Err == "" {
			open = append(open, op.Session)
		}
	}
	if len(open) == 0 {
		return
	}
	s := open[len(open)-1-nm.rng.IntN(min(len(open), nm.w.clients))]
	cc := newChaosConn(nm.cc.addrs, nm.rng).as(nm.w.admin()).over(nm.cc.tls)
	defer cc.close()
	op := histOp{Client: nm.w.clients, Kind: "kill", Session: s, Call: nm.h.now()}
	v, o := cc.do(ctx, cc.pick(), 2*time.Second, "SESSION.KILL", s)
	op.Return, op.Outcome = nm.h.now(), o
	if o == outOK && v.IsError() {
		op.Outcome = outFail
	}
	nm.h.add(op)
}

// heal undoes every fault: links, paused and dead nodes.
func (nm *nemesis) heal() {
	nm.cc.net.heal()
	for _, n := range nm.cc.nodes {
		if n.paused() {
			n.resume()
		}
		if !n.alive() {
			n.startNoWait()
		}
	}
}

// chaosReport is one run's figures.
type chaosReport struct {
	seed       uint64
	ops        string
	faults     map[string]int
	elections  int
	gapP50     time.Duration // unavailability windows (no success anywhere for >= 200 ms)
	gapMax     time.Duration
	gaps       int
	snapshots  int    // snapshots installed on nodes that lagged or joined
	fenced     [2]int // anomalies, rejected
	conflicts  int    // fenced store: a token another holder had used
	control    int    // anomalies
	dedup      int64
	verdicts   []string
	violations []string
}

func (r chaosReport) String() string {
	faults := make([]string, 0, len(r.faults))
	for f, n := range r.faults {
		faults = append(faults, f+"="+strconv.Itoa(n))
	}
	slices.Sort(faults)
	return fmt.Sprintf("seed %d\n  ops: %s\n  faults: %v; elections: %d; unavailable windows: %d, p50 %v, max %v; snapshots installed: %d\n  fenced store: %d anomalies, %d stale tokens refused, %d tokens of another holder; control store: %d anomalies; resent REQs answered differently: %d\n  checkers: %v",
		r.seed, r.ops, faults, r.elections, r.gaps, r.gapP50.Round(time.Millisecond), r.gapMax.Round(time.Millisecond), r.snapshots, r.fenced[0], r.fenced[1], r.conflicts, r.control, r.dedup, r.verdicts)
}
