package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// openLoopGrace is how long after an open-loop window operations intended
// inside it may still be sent (see openSpec.grace).
const openLoopGrace = time.Second

// bench runs the whole comparison: each target in turn is started, measured
// and stopped, so no two targets ever share the machine; then the
// fenced-only workloads d-f, each on a fresh cluster.
type bench struct {
	cfg   config
	tmp   string
	runID string // lock names unique per run
	rep   *report
}

// lockPath is one way of locking on a started target: one column of the
// tables. solo serves the uncontended and open-loop workloads (each worker
// its own lock); queue, if not nil, the contended one (all on one lock,
// Acquire waits until granted).
type lockPath struct {
	series   string
	path     string
	solo     lockerFactory
	queue    lockerFactory
	openLoop bool
}

// fenced starts a fenced cluster with this run's binary and node flags.
func (b *bench) fenced(ctx context.Context, name string, size int) (*fencedCluster, error) {
	return startFenced(ctx, b.cfg.bin, b.tmp, name, size, b.cfg.pprofDir != "", name == "fenced-3-secure", b.cfg.extra)
}

func (b *bench) wants(workload string) bool { return slices.Contains(b.cfg.workloads, workload) }

func (b *bench) hasTarget(t string) bool { return slices.Contains(b.cfg.targets, t) }

// phase runs fn and records its wall time, for estimating run lengths.
func (b *bench) phase(name string, fn func()) {
	start := time.Now()
	fn()
	b.rep.Phases = append(b.rep.Phases, phase{Name: name, Seconds: time.Since(start).Seconds()})
}

func (b *bench) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	progress("%s", firstLine(msg))
	b.rep.Errors = append(b.rep.Errors, msg)
}

func (b *bench) runAll(ctx context.Context) {
	stepWorkloads := b.wants("uncontended") || b.wants("contended") || b.wants("openloop")
	for _, t := range b.cfg.targets {
		if ctx.Err() != nil {
			break
		}
		if !stepWorkloads {
			b.rep.Targets = append(b.rep.Targets, b.describe(t))
			continue
		}
		b.phase(t, func() { b.runTarget(ctx, t) })
	}
	if b.wants("heartbeat") && b.hasTarget("fenced-3") && ctx.Err() == nil {
		b.phase("heartbeat", func() { b.runHeartbeat(ctx) })
	}
	if b.wants("failover") && ctx.Err() == nil {
		if b.hasTarget("fenced-3") {
			b.phase("failover fenced-3", func() { b.runFencedFailover(ctx) })
		}
		if b.hasTarget("etcd-3") && ctx.Err() == nil {
			b.phase("failover etcd-3", func() { b.runEtcdFailover(ctx) })
		}
	}
	if b.wants("scale") && b.hasTarget("fenced-3") && ctx.Err() == nil {
		b.phase("scale", func() { b.runScale(ctx) })
	}
	if b.wants("keys") && b.hasTarget("fenced-3") && ctx.Err() == nil {
		b.phase("keys", func() { b.runKeys(ctx) })
	}
}

// describe says what a target is and whether its binary is there.
func (b *bench) describe(t string) targetStatus {
	s := targetStatus{Name: t}
	switch t {
	case "fenced-1":
		s.Desc = "fenced, 1 node, " + b.cfg.bin
	case "fenced-3":
		s.Desc = fmt.Sprintf("fenced, 3 nodes (%s), %s", connectDesc(b.cfg.connect), b.cfg.bin)
	case "fenced-3-secure":
		s.Desc = fmt.Sprintf("fenced-3 with peer mutual TLS, clients over TLS and an ACL user (%s)", connectDesc(b.cfg.connect))
	case "redis", "redis-aof":
		bin := lookBinary(b.cfg.redisBin, "redis-server")
		if bin == "" {
			s.Skipped = "redis-server not found (Debian: apt-get install redis-server; or --redis-bin)"
			return s
		}
		s.Version = binaryVersion(bin)
		s.Desc = "redis-server, no persistence (--save \"\" --appendonly no), redsync path"
		if t == "redis-aof" {
			s.Desc = "redis-server, --appendonly yes --appendfsync always, redsync path"
		}
	case "etcd-3":
		bin := lookBinary(b.cfg.etcdBin, "etcd")
		if bin == "" {
			s.Skipped = "etcd not found (Debian: apt-get install etcd-server; or --etcd-bin)"
			return s
		}
		s.Version = binaryVersion(bin)
		s.Desc = "etcd, 3 members, concurrency.Mutex (client v3.5), every client given all endpoints"
	}
	return s
}

// connectDesc says where fenced-3's clients connect.
func connectDesc(connect string) string {
	if connect == "leader" {
		return "--connect leader: every client at the leader"
	}
	return "--connect all: client i at node i mod 3, as etcd's client spreads them; followers forward"
}

// runTarget starts one target, runs workloads a-c on each of its paths and
// stops it.
func (b *bench) runTarget(ctx context.Context, t string) {
	status := b.describe(t)
	defer func() { b.rep.Targets = append(b.rep.Targets, status) }()
	if status.Skipped != "" {
		progress("%s: skipped: %s", t, status.Skipped)
		return
	}
	progress("%s: starting", t)
	var paths []lockPath
	var nodes []*fencedNode // profiled with --pprof
	var procs []serverProc  // whose CPU each step measures
	wait := time.Duration(b.cfg.waitMs) * time.Millisecond
	switch t {
	case "fenced-1", "fenced-3", "fenced-3-secure":
		size := map[string]int{"fenced-1": 1, "fenced-3": 3, "fenced-3-secure": 3}[t]
		c, err := b.fenced(ctx, t, size)
		if err != nil {
			status.Failed = err.Error()
			b.fail("%s: %v", t, err)
			return
		}
		defer c.stop()
		nodes = c.nodes
		// The leader is known for every target: the CPU split names it.
		l, err := c.waitLeader(ctx)
		if err != nil {
			status.Failed = err.Error()
			b.fail("%s: %v", t, err)
			return
		}
		procs = c.serverProcs(l)
		addrs := c.addrs()
		if b.cfg.connect == "leader" {
			addrs = []string{l.work}
		}
		paths = []lockPath{
			{series: t, path: "native", solo: fencedNative(addrs, 0), queue: fencedNative(addrs, b.cfg.waitMs), openLoop: true},
			{series: t + " redsync", path: "redsync", solo: redsyncPath(addrs, false)},
		}
	case "redis", "redis-aof":
		r, err := startRedis(ctx, lookBinary(b.cfg.redisBin, "redis-server"), b.tmp, t, t == "redis-aof")
		if err != nil {
			status.Failed = err.Error()
			b.fail("%s: %v", t, err)
			return
		}
		defer r.stop()
		procs = []serverProc{{name: "redis-server", pid: r.proc.pid()}}
		addrs := []string{r.addr}
		// The open-loop step runs on fenced, durable redis and etcd:
		// redis without persistence is no peer for a 5,000/s durable load.
		paths = []lockPath{{series: t, path: "redsync", solo: redsyncPath(addrs, false), queue: redsyncPath(addrs, true), openLoop: t == "redis-aof"}}
	case "etcd-3":
		c, err := startEtcd(ctx, lookBinary(b.cfg.etcdBin, "etcd"), b.tmp, 3)
		if err != nil {
			status.Failed = err.Error()
			b.fail("%s: %v", t, err)
			return
		}
		defer c.stop()
		l, err := c.waitLeader(ctx)
		if err != nil {
			status.Failed = err.Error()
			b.fail("%s: %v", t, err)
			return
		}
		procs = c.serverProcs(l)
		eps := c.endpoints()
		paths = []lockPath{{series: t, path: "mutex", solo: etcdMutex(eps, opTimeout), queue: etcdMutex(eps, opTimeout+wait), openLoop: true}}
	}
	b.runPaths(ctx, t, paths, nodes, procs)
}

// runPaths runs workloads a, b and c on a started target's paths.
func (b *bench) runPaths(ctx context.Context, target string, paths []lockPath, nodes []*fencedNode, procs []serverProc) {
	add := func(p lockPath, r stepResult) {
		r.Series, r.Target, r.Path = p.series, target, p.path
		first := ""
		if r.FirstError != "" {
			first = " (first: " + firstLine(r.FirstError) + ")"
		}
		progress("%s %s, %d workers: %.0f/s, acquire p50 %.3f ms p99 %.3f ms, server CPU %s, %d errors%s", r.Workload, r.Series, r.Clients,
			r.PerSec, r.P50Ms, r.P99Ms, r.serverCPUText(), r.Errors, first)
		b.rep.Steps = append(b.rep.Steps, r)
	}
	key := func(p lockPath, workload string, n int) string {
		return fmt.Sprintf("bench:%s:%s:%s:%d", b.runID, strings.ReplaceAll(p.series, " ", "-"), workload, n)
	}
	if b.wants("uncontended") {
		for _, p := range paths {
			for _, n := range b.cfg.clients {
				if ctx.Err() != nil {
					return
				}
				b.profileStep(ctx, nodes, fmt.Sprintf("uncontended-%s-%d", p.series, n))
				add(p, runClosed(ctx, closedSpec{workload: "uncontended", clients: n, key: key(p, "u", n),
					warmup: b.cfg.warmup, measure: b.cfg.duration, procs: procs}, p.solo))
			}
		}
	}
	if b.wants("contended") {
		for _, p := range paths {
			if p.queue == nil || ctx.Err() != nil {
				continue
			}
			b.profileStep(ctx, nodes, "contended-"+p.series)
			add(p, runClosed(ctx, closedSpec{workload: "contended", clients: contendedClients, shared: true,
				key: key(p, "c", contendedClients), warmup: b.cfg.warmup, measure: b.cfg.duration, procs: procs}, p.queue))
		}
	}
	if b.wants("openloop") {
		for _, p := range paths {
			if !p.openLoop || ctx.Err() != nil {
				continue
			}
			b.profileStep(ctx, nodes, "openloop-"+p.series)
			add(p, runOpenLoop(ctx, openSpec{rate: b.cfg.rate, workers: b.cfg.openPool, key: key(p, "o", b.cfg.openPool),
				warmup: b.cfg.warmup, measure: b.cfg.duration, grace: openLoopGrace, procs: procs}, p.solo))
		}
	}
}

func (b *bench) runHeartbeat(ctx context.Context) {
	progress("heartbeat: starting fenced-3")
	c, err := b.fenced(ctx, "fenced-3", 3)
	if err != nil {
		b.fail("heartbeat: %v", err)
		return
	}
	defer c.stop()
	r, err := runHeartbeat(ctx, c, b.cfg.hb)
	if err != nil {
		b.fail("heartbeat: %v", err)
		return
	}
	progress("heartbeat: %d sessions, %.0f heartbeats/s, server CPU idle %.1f %% heartbeating %.1f %%, %d errors",
		r.SessionsOpened, r.PerSec, r.IdleCorePct, r.LoadedCorePct, r.Errors)
	b.rep.Heartbeat = &r
}

func (b *bench) runFencedFailover(ctx context.Context) {
	progress("failover: starting fenced-3")
	c, err := b.fenced(ctx, "fenced-3", 3)
	if err != nil {
		b.fail("failover fenced-3: %v", err)
		return
	}
	defer c.stop()
	r := runFailover(ctx, "fenced-3", c, fencedNative(c.addrs(), 0), b.cfg.kills, b.cfg.settle)
	progress("failover fenced-3: %v s to the first grant", r.Kills)
	b.rep.Failover = append(b.rep.Failover, r)
}

func (b *bench) runEtcdFailover(ctx context.Context) {
	bin := lookBinary(b.cfg.etcdBin, "etcd")
	if bin == "" {
		b.rep.Failover = append(b.rep.Failover, failoverResult{Target: "etcd-3", Skipped: "etcd not found"})
		return
	}
	progress("failover: starting etcd-3")
	c, err := startEtcd(ctx, bin, b.tmp, 3)
	if err != nil {
		b.fail("failover etcd-3: %v", err)
		return
	}
	defer c.stop()
	// A Lock stuck on the killed member gives up after a second and tries
	// again, as a client with a deadline would.
	r := runFailover(ctx, "etcd-3", c, etcdMutex(c.endpoints(), time.Second), b.cfg.kills, b.cfg.settle)
	progress("failover etcd-3: %v s to the first grant", r.Kills)
	b.rep.Failover = append(b.rep.Failover, r)
}

func (b *bench) runScale(ctx context.Context) {
	progress("scale: starting fenced-3, loading %d keys and %d sessions", b.cfg.scale.keys, b.cfg.scale.sessions)
	c, err := b.fenced(ctx, "fenced-3", 3)
	if err != nil {
		b.fail("scale: %v", err)
		return
	}
	defer c.stop()
	r, err := runScale(ctx, c, b.cfg.scale)
	if err != nil {
		b.fail("scale: %v", err)
	}
	progress("scale: load %.1f s, max RSS %.0f MiB, restart %.3f s, snapshot install %.3f s", r.LoadSeconds, mib(r.MaxRSSBytes), r.RestartSeconds, r.InstallSeconds)
	b.rep.Scale = &r
}

func (b *bench) runKeys(ctx context.Context) {
	progress("keys: starting fenced-3, loading %d keys", b.cfg.keys.keys)
	c, err := b.fenced(ctx, "fenced-3", 3)
	if err != nil {
		b.fail("keys: %v", err)
		return
	}
	defer c.stop()
	r, err := runKeys(ctx, c, b.cfg.keys)
	if err != nil {
		b.fail("keys: %v", err)
	}
	progress("keys: KEYS * %.3f s, SCAN %.3f s; lock p99 %.3f ms alone, %.3f ms during KEYS, %.3f ms during SCAN",
		r.KeysSeconds, r.ScanSeconds, r.Baseline.P99Ms, r.DuringKeys.P99Ms, r.DuringScan.P99Ms)
	b.rep.Keys = &r
}
