// Command bench is fenced's side-by-side benchmark: it starts fenced (1 node
// and 3 nodes), redis-server (no persistence and appendfsync always) and a
// 3-member etcd on loopback, measures the same lock workloads on each in one
// run, and prints markdown tables with the ratios of fenced to each peer,
// the performance targets P1-P10 (spec.go) met or missed, a JSON file and an
// SVG plot.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is every flag, parsed and checked.
type config struct {
	bin       string
	redisBin  string
	etcdBin   string
	targets   []string
	workloads []string
	clients   []int
	warmup    time.Duration
	duration  time.Duration
	waitMs    int
	rate      int64
	openPool  int
	connect   string // fenced-3: "all" or "leader"
	hb        heartbeatSpec
	kills     int
	settle    time.Duration
	scale     scaleSpec
	keys      keysSpec
	jsonPath  string
	svgPath   string
	pprofDir  string
	extra     []string // flags added to every fenced node's
	runs      int
}

// knownTargets and knownWorkloads are the values --targets and
// --workloads accept, in the order they run.
func knownTargets() []string {
	return []string{"fenced-1", "fenced-3", "fenced-3-secure", "redis", "redis-aof", "etcd-3"}
}
func knownWorkloads() []string {
	return append(defaultWorkloads(), "keys")
}

// defaultWorkloads are what a plain make bench runs; keys (make
// bench-keys) is asked for by name.
func defaultWorkloads() []string {
	return []string{"uncontended", "contended", "openloop", "heartbeat", "failover", "scale"}
}

func parseConfig() (config, error) {
	var c config
	var targets, workloads, clients string
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: go run ./bench [flags]

Starts each target in turn on loopback and measures the same lock workloads
on it. Prints markdown tables, per step: cycles/s, acquire latency, the
machine's CPU busy, and the server processes' CPU (user+system) per cycle
over the measured window, summed and per node for the clusters; then the
SPEC section 10 targets (P9: fenced-3's server CPU per 64-client uncontended
cycle against 60 µs, etcd-3's and redis-aof's). --json and --svg write the
results and a plot.

flags:
`)
		flag.PrintDefaults()
	}
	flag.StringVar(&c.bin, "bin", "", "fenced binary (default: go build ./cmd/fenced of this module)")
	flag.StringVar(&c.redisBin, "redis-bin", "", "redis-server binary (default: PATH, then /usr/bin/redis-server; missing = skipped)")
	flag.StringVar(&c.etcdBin, "etcd-bin", "", "etcd binary (default: PATH, then /usr/bin/etcd; missing = skipped)")
	flag.StringVar(&targets, "targets", strings.Join(knownTargets(), ","), "targets to start and measure")
	flag.StringVar(&workloads, "workloads", strings.Join(defaultWorkloads(), ","), "workloads to run (known: "+strings.Join(knownWorkloads(), ",")+")")
	flag.StringVar(&clients, "clients", "1,16,64", "client counts of the uncontended workload")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured time before each step's window")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "measured window of each uncontended, contended and open-loop step")
	flag.IntVar(&c.waitMs, "wait-ms", 10000, "FLOCK ... WAIT of the contended workload, ms (also etcd's Lock timeout)")
	flag.Int64Var(&c.rate, "rate", 5000, "offered acquisitions/s of the open-loop workload")
	flag.IntVar(&c.openPool, "openloop-workers", 64, "workers (each its own lock and connection) of the open-loop workload")
	connectHelp := "where fenced-3's clients connect: all (client i to node i mod 3, as etcd's client spreads them; followers forward; P9's setting), or leader (every client at the leader, as Redis clients at their one server)"
	flag.StringVar(&c.connect, "connect", "all", connectHelp)
	// The flag's earlier name, so scripts that pass it keep working.
	flag.StringVar(&c.connect, "fenced-via", "all", "the same as --connect")
	flag.IntVar(&c.hb.sessions, "heartbeat-sessions", 10000, "sessions of the heartbeat workload")
	flag.IntVar(&c.hb.conns, "heartbeat-conns", 4, "connections the heartbeats are pipelined over, spread over the nodes")
	flag.DurationVar(&c.hb.interval, "heartbeat-interval", 3*time.Second, "each session's heartbeat interval")
	flag.DurationVar(&c.hb.window, "heartbeat-window", 10*time.Second, "CPU measuring window, idle and heartbeating")
	flag.IntVar(&c.kills, "kills", 3, "leader kills of the failover workload")
	flag.DurationVar(&c.settle, "failover-settle", 2*time.Second, "load before each leader kill")
	flag.IntVar(&c.scale.keys, "keys", 1000000, "keys of the scale and keys workloads")
	flag.IntVar(&c.keys.lockers, "keys-lockers", contendedClients, "lockers of the keys workload, each its own lock")
	flag.DurationVar(&c.keys.baseline, "keys-baseline", 5*time.Second, "the keys workload's lockers alone, before KEYS *")
	flag.IntVar(&c.keys.scanCount, "scan-count", 1000, "COUNT of the keys workload's SCAN")
	flag.IntVar(&c.scale.valueBytes, "value-bytes", 16, "bytes of each key's value in the scale workload")
	flag.IntVar(&c.scale.sessions, "sessions", 100000, "sessions of the scale workload")
	flag.StringVar(&c.jsonPath, "json", "", "write all results as JSON to this file")
	flag.StringVar(&c.svgPath, "svg", "", "write the plot to this file (default: next to --json, .svg)")
	var extra string
	flag.IntVar(&c.runs, "runs", 1, "run everything this many times; with more than one, the SPEC targets are also given as the median of the runs")
	flag.StringVar(&extra, "fenced-flags", "", "extra flags for every fenced node, space-separated (e.g. \"--snapshot-threshold 100000\"), for what-if runs")
	flag.StringVar(&c.pprofDir, "pprof", "", "write a CPU profile of every fenced node for each measured window of workloads a-c into this directory")
	flag.Parse()
	var err error
	if c.targets, err = parseList(targets, knownTargets(), "--targets"); err != nil {
		return c, err
	}
	if c.workloads, err = parseList(workloads, knownWorkloads(), "--workloads"); err != nil {
		return c, err
	}
	if c.clients, err = parseClients(clients); err != nil {
		return c, err
	}
	c.extra = strings.Fields(extra)
	c.hb.ttl = 10 * time.Second
	c.keys.keys = c.scale.keys
	switch {
	case c.duration <= 0 || c.warmup < 0 || c.waitMs <= 0:
		return c, errors.New("need --duration > 0, --warmup >= 0, --wait-ms > 0")
	case c.rate <= 0 || c.openPool <= 0:
		return c, errors.New("need --rate > 0 and --openloop-workers > 0")
	case c.connect != "all" && c.connect != "leader":
		return c, errors.New("--connect is all or leader")
	case c.hb.sessions <= 0 || c.hb.conns <= 0 || c.hb.interval <= 0 || c.hb.window <= 0 || c.hb.interval >= c.hb.ttl:
		return c, fmt.Errorf("need --heartbeat-sessions > 0 and 0 < --heartbeat-interval < the sessions' TTL (%v)", c.hb.ttl)
	case c.runs < 1:
		return c, errors.New("need --runs >= 1")
	case c.keys.lockers < 1 || c.keys.baseline <= 0 || c.keys.scanCount < 1:
		return c, errors.New("need --keys-lockers >= 1, --keys-baseline > 0, --scan-count >= 1")
	case c.kills < 0 || c.scale.keys < 0 || c.scale.sessions < 0 || c.scale.valueBytes < 0 || c.scale.valueBytes > 4096:
		return c, errors.New("need --kills, --keys, --sessions >= 0 and 0 <= --value-bytes <= 4096")
	}
	if c.svgPath == "" && c.jsonPath != "" {
		c.svgPath = strings.TrimSuffix(c.jsonPath, ".json") + ".svg"
	}
	return c, nil
}

// parseList parses a comma-separated subset of known, keeping known's order.
func parseList(spec string, known []string, name string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("%s: unknown %q (known: %s)", name, f, strings.Join(known, ","))
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(known, a) - slices.Index(known, b) })
	return slices.Compact(out), nil
}

func (c config) settings() map[string]any {
	return map[string]any{
		"warmup": c.warmup.String(), "duration": c.duration.String(), "clients": c.clients,
		"wait_ms": c.waitMs, "rate": c.rate, "openloop_workers": c.openPool, "connect": c.connect,
		"heartbeat_sessions": c.hb.sessions, "heartbeat_conns": c.hb.conns, "heartbeat_interval": c.hb.interval.String(), "heartbeat_window": c.hb.window.String(),
		"kills": c.kills, "keys": c.scale.keys, "value_bytes": c.scale.valueBytes, "sessions": c.scale.sessions, "keys_lockers": c.keys.lockers, "keys_baseline": c.keys.baseline.String(), "scan_count": c.keys.scanCount, "runs": c.runs, "fenced_flags": c.extra,
	}
}

func run() error {
	cfg, err := parseConfig()
	if err != nil {
		return err
	}
	// Ctrl-C cancels ctx: every step returns, and the deferred stops end
	// every server before the partial report is printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "fenced-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cfg.bin == "" {
		progress("building ./cmd/fenced")
		if cfg.bin, err = buildFenced(ctx, tmp); err != nil {
			return err
		}
	}
	var reps []*report
	for i := range cfg.runs {
		if ctx.Err() != nil {
			break
		}
		if cfg.runs > 1 {
			progress("run %d of %d", i+1, cfg.runs)
			fmt.Printf("# Run %d of %d\n\n", i+1, cfg.runs)
		}
		b := &bench{cfg: cfg, tmp: tmp, runID: strconv.FormatInt(time.Now().UnixNano(), 36),
			rep: &report{Machine: machineInfo(), Settings: cfg.settings()}}
		b.runAll(ctx)
		b.rep.Checks = specChecks(b.rep, cfg.rate, cfg.scale, cfg.hb, cfg.connect)
		b.rep.markdown(os.Stdout)
		reps = append(reps, b.rep)
	}
	if len(reps) == 0 {
		return ctx.Err()
	}
	var out any = reps[0]
	if cfg.runs > 1 {
		var all [][]check
		for _, r := range reps {
			all = append(all, r.Checks)
		}
		med := medianChecks(all)
		fmt.Printf("\n# SPEC section 10 targets, median of %d runs\n\n", len(reps))
		for _, c := range med {
			fmt.Println(c.line())
		}
		out = struct {
			Runs   []*report `json:"runs"`
			Median []check   `json:"median_spec_targets"`
		}{reps, med}
	}
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, out); err != nil {
			return err
		}
	}
	// The plot shows one run, the last.
	if cfg.svgPath != "" {
		if err := reps[len(reps)-1].writeSVGFile(cfg.svgPath); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted; the figures above cover only what was measured")
	}
	var failed []string
	errs := 0
	for _, rep := range reps {
		for _, t := range rep.Targets {
			if t.Failed != "" {
				failed = append(failed, t.Name)
			}
		}
		errs += len(rep.Errors)
	}
	if len(failed) > 0 || errs > 0 {
		return fmt.Errorf("not every target or workload ran (failed to start: %v; workload errors: %d)", failed, errs)
	}
	return nil
}

// progress tells the person watching what the tool is doing; the report
// itself goes to stdout.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
