package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// stepResult is one measured step of workloads a, b or c for one series; the
// JSON names say what each figure is so a script can compare runs without
// parsing markdown.
type stepResult struct {
	Workload string  `json:"workload"` // uncontended, contended, openloop
	Series   string  `json:"series"`   // column of the tables: "fenced-3", "fenced-3 redsync", "redis", ...
	Target   string  `json:"target"`   // the server(s): fenced-1, fenced-3, redis, redis-aof, etcd-3
	Path     string  `json:"path"`     // native, redsync, mutex
	Clients  int     `json:"clients"`  // workers (the pool size, open loop)
	Seconds  float64 `json:"seconds"`
	Cycles   int64   `json:"cycles"`  // acquire+release cycles whose acquire completed in the window (grants, contended)
	PerSec   float64 `json:"per_sec"` // cycles/s; grants/s contended; achieved acquisitions/s open loop
	Samples  int     `json:"acquire_samples"`
	// Acquire latency: the round trip; the wait from the first attempt
	// when contended; from the intended send time in the open loop.
	P50Ms      float64 `json:"acquire_p50_ms"`
	P99Ms      float64 `json:"acquire_p99_ms"`
	P999Ms     float64 `json:"acquire_p999_ms"`
	MaxMs      float64 `json:"acquire_max_ms"`
	Errors     int64   `json:"errors"` // includes warm-up and setup/teardown
	FirstError string  `json:"first_error,omitempty"`
	// Contended only. Pointers: an undefined figure (p50 of 0, or a client
	// with no grant) is null rather than a misleading number or +Inf.
	P99OverP50          *float64 `json:"wait_p99_over_p50,omitempty"`
	Fairness            *float64 `json:"fairness_max_over_min,omitempty"`
	GrantsPerClient     []int64  `json:"grants_per_client,omitempty"`
	ExclusionViolations int64    `json:"exclusion_violations,omitempty"`
	TokenRegressions    int64    `json:"token_regressions,omitempty"`
	// Open loop only.
	OfferedPerSec float64 `json:"offered_per_sec,omitempty"`
	NotSent       int64   `json:"not_sent,omitempty"` // intended in the window but never sent: the target fell that far behind
	// Share of all the machine's cores busy in the window (servers, load
	// generator and kernel together); negative when unknown.
	MachineBusy float64 `json:"machine_cpu_busy"`
	// CPU (user+system) of the target's server processes in the window,
	// summed over them and per cycle; null when unknown (or, per cycle, no
	// cycles). Per process too where the target has several, since where
	// a cluster spends it (leader or followers) is half the story.
	ServerCPUSeconds    *float64  `json:"server_cpu_seconds"`
	ServerCPUPerCycleUs *float64  `json:"server_cpu_per_cycle_us"`
	ServerCPUPerProcess []procCPU `json:"server_cpu_per_process,omitempty"`
}

// procCPU is one server process's share of a step's server CPU.
type procCPU struct {
	Name       string   `json:"name"`
	Seconds    float64  `json:"cpu_seconds"`
	PerCycleUs *float64 `json:"per_cycle_us"`
}

// setLatency fills the percentiles from a recorder.
func (r *stepResult) setLatency(rec *Recorder) {
	sum := rec.Summary()
	r.Samples = sum.Count
	r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = ms(sum.P50), ms(sum.P99), ms(sum.P999), ms(sum.Max)
}

// setWindowUse fills the machine and server CPU figures of the window,
// procs naming the processes of u.procs. Set after the cycles are counted.
func (r *stepResult) setWindowUse(u windowUse, procs []serverProc) {
	r.MachineBusy = u.busy
	if u.procs == nil || len(u.procs) != len(procs) || len(procs) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range u.procs {
		sum += d
	}
	r.ServerCPUSeconds = ptr(sum.Seconds())
	r.ServerCPUPerCycleUs = perCycleUs(sum, r.Cycles)
	if len(procs) == 1 {
		return
	}
	for i, p := range procs {
		r.ServerCPUPerProcess = append(r.ServerCPUPerProcess, procCPU{Name: p.name, Seconds: u.procs[i].Seconds(), PerCycleUs: perCycleUs(u.procs[i], r.Cycles)})
	}
}

// perCycleUs is CPU time per cycle in µs; nil without cycles.
func perCycleUs(used time.Duration, cycles int64) *float64 {
	if cycles <= 0 {
		return nil
	}
	return ptr(float64(used.Nanoseconds()) / 1e3 / float64(cycles))
}

// perProcessText is the per-process split of a step's server CPU per
// cycle, "n1 leader 80 / n2 41 / n3 41"; "" for one process or unknown.
func (r stepResult) perProcessText() string {
	var parts []string
	for _, p := range r.ServerCPUPerProcess {
		if p.PerCycleUs == nil {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, *p.PerCycleUs))
	}
	return strings.Join(parts, " / ")
}

// serverCPUText is the step's server CPU per cycle for the progress line,
// with the per-process split.
func (r stepResult) serverCPUText() string {
	if r.ServerCPUPerCycleUs == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f µs/cycle", *r.ServerCPUPerCycleUs) + suffix(" ", parenthesize(r.perProcessText()))
}

func parenthesize(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

type machine struct {
	CPU      string `json:"cpu"`
	Cores    int    `json:"cores"`
	RAMBytes int64  `json:"ram_bytes"`
	Kernel   string `json:"kernel"`
	GOOS     string `json:"goos"`
	GOARCH   string `json:"goarch"`
	Go       string `json:"go"`
}

// targetStatus says what each target was and whether it ran.
type targetStatus struct {
	Name    string `json:"name"`
	Desc    string `json:"desc"`
	Version string `json:"version,omitempty"`
	Skipped string `json:"skipped,omitempty"` // why it did not run (binary missing)
	Failed  string `json:"failed,omitempty"`  // it should have run but could not start
}

// phase is the wall time of one part of the run, for planning run lengths.
type phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

type report struct {
	Machine   machine          `json:"machine"`
	Settings  map[string]any   `json:"settings"`
	Targets   []targetStatus   `json:"targets"`
	Steps     []stepResult     `json:"steps"`
	Heartbeat *heartbeatResult `json:"heartbeat,omitempty"`
	Failover  []failoverResult `json:"failover,omitempty"`
	Scale     *scaleResult     `json:"scale,omitempty"`
	Keys      *keysResult      `json:"keys,omitempty"`
	Checks    []check          `json:"spec_targets"`
	Phases    []phase          `json:"phases"`
	Errors    []string         `json:"errors,omitempty"` // workloads that could not run
}

func numCores() int { return runtime.NumCPU() }

func machineInfo() machine {
	m := machine{CPU: cpuModel(), Cores: numCores(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version(), Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.RAMBytes, _ = parseKBField(string(b), "MemTotal")
	}
	return m
}

// cpuModel reads the first "model name" from /proc/cpuinfo; numbers from
// different machines must not be compared by accident.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// seriesOrder fixes the column order: fenced first, then the peers.
func seriesOrder() []string {
	return []string{"fenced-1", "fenced-1 redsync", "fenced-3", "fenced-3 redsync", "redis", "redis-aof", "etcd-3"}
}

// fencedSeries are the series whose ratios to the peers are given (the
// native path; the 3-node cluster first, as the targets measure it),
// and peerSeries the peers they are divided by.
func fencedSeries() []string { return []string{"fenced-3", "fenced-1"} }
func peerSeries() []string   { return []string{"redis", "redis-aof", "etcd-3"} }

// metric is one row of a comparison table.
type metric struct {
	label   string
	clients int // 0: any (the workload has one step per series)
	format  string
	get     func(stepResult) (float64, bool)
	noRatio bool                    // a tally or a setting: printed, never divided
	text    func(stepResult) string // if set, the cell's text instead of get's figure ("" = none), never divided
}

func perSec(r stepResult) (float64, bool) { return r.PerSec, r.Cycles > 0 }
func cpuPerCycle(r stepResult) (float64, bool) {
	if r.ServerCPUPerCycleUs == nil {
		return 0, false
	}
	return *r.ServerCPUPerCycleUs, true
}
func p50(r stepResult) (float64, bool)   { return r.P50Ms, r.Samples > 0 }
func p99(r stepResult) (float64, bool)   { return r.P99Ms, r.Samples > 0 }
func p999(r stepResult) (float64, bool)  { return r.P999Ms, r.Samples > 0 }
func maxMs(r stepResult) (float64, bool) { return r.MaxMs, r.Samples > 0 }
func optional(p func(stepResult) *float64) func(stepResult) (float64, bool) {
	return func(r stepResult) (float64, bool) {
		if v := p(r); v != nil {
			return *v, true
		}
		return 0, false
	}
}

// find returns the step of a workload, series and client count (0: any).
func (r *report) find(workload, series string, clients int) (stepResult, bool) {
	for _, s := range r.Steps {
		if s.Workload == workload && s.Series == series && (clients == 0 || s.Clients == clients) {
			return s, true
		}
	}
	return stepResult{}, false
}

// value is a metric's figure for one series, if measured.
func (r *report) value(workload, series string, m metric) (float64, bool) {
	s, ok := r.find(workload, series, m.clients)
	if !ok {
		return 0, false
	}
	return m.get(s)
}

// text is a text metric's cell for one series, "–" if none.
func (r *report) text(workload, series string, m metric) string {
	s, ok := r.find(workload, series, m.clients)
	if !ok {
		return "–"
	}
	if t := m.text(s); t != "" {
		return t
	}
	return "–"
}

// ratio is a/b, nil unless both are positive figures.
func ratio(a, b float64) *float64 {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil
	}
	return ptr(a / b)
}

// comparison renders one workload as a table: a row per metric, a column
// per series that ran it, then fenced ÷ peer for every pair present.
func (r *report) comparison(w io.Writer, workload string, metrics []metric) {
	var cols []string
	for _, s := range seriesOrder() {
		for _, st := range r.Steps {
			if st.Workload == workload && st.Series == s {
				cols = append(cols, s)
				break
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	type pair struct{ f, p string }
	var pairs []pair
	for _, f := range fencedSeries() {
		for _, p := range peerSeries() {
			if slices.Contains(cols, f) && slices.Contains(cols, p) {
				pairs = append(pairs, pair{f, p})
			}
		}
	}
	header := append([]string{"metric"}, cols...)
	for _, p := range pairs {
		header = append(header, p.f+" ÷ "+p.p)
	}
	var rows [][]string
	for _, m := range metrics {
		row := []string{m.label}
		for _, c := range cols {
			if m.text != nil {
				row = append(row, r.text(workload, c, m))
				continue
			}
			if v, ok := r.value(workload, c, m); ok {
				row = append(row, fmt.Sprintf(m.format, v))
			} else {
				row = append(row, "–")
			}
		}
		for _, p := range pairs {
			if m.noRatio || m.text != nil {
				row = append(row, "")
				continue
			}
			a, okA := r.value(workload, p.f, m)
			b, okB := r.value(workload, p.p, m)
			if q := ratio(a, b); okA && okB && q != nil {
				row = append(row, ratioText(*q))
			} else {
				row = append(row, "")
			}
		}
		rows = append(rows, row)
	}
	writeTable(w, header, rows)
}

// ratioText shows a ratio with enough digits to tell it from 0 or 1.
func ratioText(q float64) string {
	switch {
	case q >= 10:
		return fmt.Sprintf("%.1f", q)
	case q >= 0.1:
		return fmt.Sprintf("%.2f", q)
	default:
		return fmt.Sprintf("%.4f", q)
	}
}

// writeTable prints a markdown table, numbers right-aligned.
func writeTable(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---:"
	}
	seps[0] = "---"
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// clientsLabel is "1 client", "16 clients".
func clientsLabel(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// num is a figure row (a ratio column divides it), tally a count row.
func num(label string, clients int, format string, get func(stepResult) (float64, bool)) metric {
	return metric{label: label, clients: clients, format: format, get: get}
}

// busyPct is a step's machine CPU, printed but never divided: it is the
// context of a row, not a figure of the target.
func busyPct(label string, clients int) metric {
	return metric{label: label, clients: clients, format: "%.0f", noRatio: true,
		get: func(r stepResult) (float64, bool) { return 100 * r.MachineBusy, r.MachineBusy >= 0 }}
}

// serverCPURows are the rows of a step's server CPU per cycle: summed over the
// target's processes, and split by process where it has several.
func serverCPURows(label string, clients int) []metric {
	return []metric{
		num(label+"server CPU/cycle µs", clients, "%.1f", cpuPerCycle),
		{label: label + "server CPU/cycle µs by process", clients: clients, text: stepResult.perProcessText},
	}
}

func tally(label string, get func(stepResult) int64) metric {
	return metric{label: label, format: "%.0f", noRatio: true,
		get: func(r stepResult) (float64, bool) { return float64(get(r)), true }}
}

func uncontendedMetrics(clients []int) []metric {
	var out []metric
	for _, n := range clients {
		who := clientsLabel(n)
		errs := tally(who+": errors", func(r stepResult) int64 { return r.Errors })
		errs.clients = n
		out = append(out,
			num(who+": cycles/s", n, "%.0f", perSec),
			num(who+": acquire p50 ms", n, "%.3f", p50),
			num(who+": acquire p99 ms", n, "%.3f", p99),
			num(who+": acquire p999 ms", n, "%.3f", p999),
			busyPct(who+": machine CPU busy %", n),
		)
		out = append(out, serverCPURows(who+": ", n)...)
		out = append(out, errs)
	}
	return out
}

func contendedMetrics() []metric {
	out := []metric{
		num("grants/s", 0, "%.0f", perSec),
		num("wait p50 ms", 0, "%.3f", p50),
		num("wait p99 ms", 0, "%.3f", p99),
		num("wait p99 / p50", 0, "%.2f", optional(func(r stepResult) *float64 { return r.P99OverP50 })),
		busyPct("machine CPU busy %", 0),
	}
	// Per grant: a cycle here is one grant, and a spinning client's
	// failed attempts are part of what it costs.
	out = append(out, serverCPURows("", 0)...)
	return append(out,
		num("fairness: max/min grants per client", 0, "%.2f", optional(func(r stepResult) *float64 { return r.Fairness })),
		tally("exclusion violations", func(r stepResult) int64 { return r.ExclusionViolations }),
		tally("token regressions", func(r stepResult) int64 { return r.TokenRegressions }),
		tally("errors", func(r stepResult) int64 { return r.Errors }),
	)
}

func openLoopMetrics() []metric {
	out := []metric{
		tally("offered acquisitions/s", func(r stepResult) int64 { return int64(r.OfferedPerSec) }),
		num("achieved acquisitions/s", 0, "%.0f", perSec),
		num("acquire p50 ms (from intended send)", 0, "%.3f", p50),
		num("acquire p99 ms", 0, "%.3f", p99),
		num("acquire p999 ms", 0, "%.3f", p999),
		num("acquire max ms", 0, "%.3f", maxMs),
		tally("not sent (fell behind)", func(r stepResult) int64 { return r.NotSent }),
		busyPct("machine CPU busy %", 0),
	}
	out = append(out, serverCPURows("", 0)...)
	return append(out, tally("errors", func(r stepResult) int64 { return r.Errors }))
}

// markdown prints the whole report.
func (r *report) markdown(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "# fenced vs Redis vs etcd\n\n")
	fmt.Fprintf(w, "machine: %s, %d cores, %.1f GiB RAM, kernel %s, %s/%s, %s\n\n", m.CPU, m.Cores,
		float64(m.RAMBytes)/(1<<30), m.Kernel, m.GOOS, m.GOARCH, m.Go)
	fmt.Fprintf(w, "settings: %s\n\n", settingsLine(r.Settings))
	for _, t := range r.Targets {
		switch {
		case t.Skipped != "":
			fmt.Fprintf(w, "- %s: SKIPPED: %s\n", t.Name, t.Skipped)
		case t.Failed != "":
			fmt.Fprintf(w, "- %s: FAILED to start: %s\n", t.Name, firstLine(t.Failed))
		default:
			fmt.Fprintf(w, "- %s: %s%s\n", t.Name, t.Desc, suffix(", ", t.Version))
		}
	}
	fmt.Fprintln(w, "\nRatios are fenced ÷ peer: above 1 is better for cycles/s and grants/s, below 1 is better for latencies and server CPU per cycle.")
	fmt.Fprintln(w, "Server CPU/cycle is the user+system CPU of the target's server processes (all nodes or members) over the measured window, divided by its cycles (grants, contended); by process, the nodes' shares of it.")
	section := func(title string, workload string, metrics []metric) {
		for _, s := range r.Steps {
			if s.Workload == workload {
				fmt.Fprintf(w, "\n## %s\n\n", title)
				r.comparison(w, workload, metrics)
				return
			}
		}
	}
	section("a. Uncontended acquire+release, each client its own lock and connection", "uncontended", uncontendedMetrics(r.clientCounts()))
	section("b. 16 clients on one lock (fenced: FLOCK WAIT; redis: SET NX retry loop; etcd: Mutex.Lock)", "contended", contendedMetrics())
	section("c. Open loop, fixed offered load, latency from the intended send time", "openloop", openLoopMetrics())
	r.heartbeatTable(w)
	r.failoverTable(w)
	r.scaleTable(w)
	r.keysTable(w)
	r.checksSection(w)
	r.errorLines(w)
	if len(r.Phases) > 0 {
		fmt.Fprintf(w, "\nwall time:")
		var total float64
		for _, p := range r.Phases {
			fmt.Fprintf(w, " %s %.0fs;", p.Name, p.Seconds)
			total += p.Seconds
		}
		fmt.Fprintf(w, " total %.0fs\n", total)
	}
}

// clientCounts are the uncontended client counts that were run, in order.
func (r *report) clientCounts() []int {
	var out []int
	for _, s := range r.Steps {
		if s.Workload == "uncontended" && !slices.Contains(out, s.Clients) {
			out = append(out, s.Clients)
		}
	}
	slices.Sort(out)
	return out
}

func (r *report) heartbeatTable(w io.Writer) {
	h := r.Heartbeat
	if h == nil {
		return
	}
	fmt.Fprintf(w, "\n## d. %d sessions heartbeating every %d ms, pipelined over %d connections (fenced-3)\n\n", h.Sessions, h.IntervalMs, h.Conns)
	fmt.Fprintf(w, "CPU in core-percent: one core fully busy = 100 %%, this %d-core machine = %d %%.\n\n", h.Cores, 100*h.Cores)
	writeTable(w, []string{"metric", "fenced-3"}, [][]string{
		{"sessions opened", fmt.Sprintf("%d (in %.1f s, pipelined)", h.SessionsOpened, h.OpenSeconds)},
		{"heartbeats/s offered / answered", fmt.Sprintf("%.0f / %.0f", h.OfferedPerSec, h.PerSec)},
		{"pipelined batch round trip p50 / p99 ms", fmt.Sprintf("%.3f / %.3f", h.BatchP50Ms, h.BatchP99Ms)},
		{"server CPU, idle cluster", fmt.Sprintf("%.1f %%", h.IdleCorePct)},
		{"server CPU, heartbeating", fmt.Sprintf("%.1f %%", h.LoadedCorePct)},
		{"cost (heartbeating − idle) as share of the machine", fmt.Sprintf("%.1f %%", h.CostShare)},
		{"bench client CPU (not counted above)", fmt.Sprintf("%.1f %%", h.ClientCorePct)},
		{"errors", fmt.Sprintf("%d%s", h.Errors, suffix("; first: ", h.FirstError))},
	})
}

func (r *report) failoverTable(w io.Writer) {
	if len(r.Failover) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## e. Leader killed (kill -9) under load of %d clients: seconds to the first grant\n\n", failoverClients)
	header := []string{"metric"}
	for _, f := range r.Failover {
		header = append(header, f.Target)
	}
	var ratioCol bool
	fen, etcd := r.failover("fenced-3"), r.failover("etcd-3")
	if fen != nil && etcd != nil && fen.P50Sec > 0 && etcd.P50Sec > 0 {
		header, ratioCol = append(header, "fenced-3 ÷ etcd-3"), true
	}
	kills := 0
	for _, f := range r.Failover {
		kills = max(kills, len(f.Kills))
	}
	var rows [][]string
	for k := range kills {
		row := []string{fmt.Sprintf("kill %d", k+1)}
		for _, f := range r.Failover {
			row = append(row, cell(k < len(f.Kills), func() float64 { return f.Kills[k] }, "%.3f"))
		}
		if ratioCol {
			row = append(row, "")
		}
		rows = append(rows, row)
	}
	p50Row, grantsRow, errRow := []string{"p50 s"}, []string{"grants during the step"}, []string{"errors (expected during elections)"}
	for _, f := range r.Failover {
		if f.Skipped != "" {
			p50Row = append(p50Row, "skipped: "+f.Skipped)
		} else {
			p50Row = append(p50Row, cell(len(f.Kills) > 0, func() float64 { return f.P50Sec }, "%.3f"))
		}
		grantsRow = append(grantsRow, fmt.Sprint(f.Grants))
		errRow = append(errRow, fmt.Sprint(f.Errors))
	}
	if ratioCol {
		p50Row = append(p50Row, fmt.Sprintf("%.2f", fen.P50Sec/etcd.P50Sec))
		grantsRow, errRow = append(grantsRow, ""), append(errRow, "")
	}
	writeTable(w, header, append(rows, p50Row, grantsRow, errRow))
}

func (r *report) failover(target string) *failoverResult {
	for i := range r.Failover {
		if r.Failover[i].Target == target && r.Failover[i].Skipped == "" {
			return &r.Failover[i]
		}
	}
	return nil
}

func (r *report) scaleTable(w io.Writer) {
	s := r.Scale
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\n## f. %d keys and %d sessions (fenced-3)\n\n", s.Keys, s.Sessions)
	rows := [][]string{
		{"load time (pipelined MSET, SESSION.OPEN)", fmt.Sprintf("%.1f s (%.0f keys/s, %.0f sessions/s)", s.LoadSeconds, s.KeysPerSec, s.SessionsPerSec)},
	}
	ids := make([]string, 0, len(s.RSSBytes))
	for id := range s.RSSBytes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rows = append(rows, []string{"RSS / data dir " + id, fmt.Sprintf("%.0f MiB / %.0f MiB", mib(s.RSSBytes[id]), mib(s.DataBytes[id]))})
	}
	rows = append(rows,
		[]string{"restart of follower " + s.RestartNode + " (kill -9, exec to a linearizable read through it)", fmt.Sprintf("%.3f s", s.RestartSeconds)},
		[]string{"RAFT.SNAPSHOT on the leader", fmt.Sprintf("%.3f s", s.SnapshotSeconds)},
		[]string{fmt.Sprintf("snapshot install on a new node (exec to applied ≥ %d)%s", s.InstallIndex, installNote(s.LogFirstIndex)), fmt.Sprintf("%.3f s", s.InstallSeconds)},
		[]string{"RSS of the new node", fmt.Sprintf("%.0f MiB", mib(s.NewNodeRSSBytes))},
		[]string{"peak RSS of the new node (VmHWM) / snapshot size", fmt.Sprintf("%.0f MiB / %.0f MiB (%s)", mib(s.NewNodePeakRSSBytes), mib(s.SnapshotBytes), ratioText(float64(s.NewNodePeakRSSBytes)/max(1, float64(s.SnapshotBytes)))+"x")},
		[]string{"errors", fmt.Sprintf("%d%s", s.Errors, suffix("; first: ", s.FirstError))},
	)
	writeTable(w, []string{"metric", "fenced-3"}, rows)
}

func (r *report) keysTable(w io.Writer) {
	k := r.Keys
	if k == nil {
		return
	}
	fmt.Fprintf(w, "\n## g. KEYS * and a whole SCAN over %d keys while %d clients lock (%s, all on the leader)\n\n", k.Keys, k.Lockers, k.Target)
	lat := func(l windowLatency) []string {
		return []string{fmt.Sprintf("%.1f s", l.Seconds), fmt.Sprintf("%.0f", l.PerSec), fmt.Sprintf("%.3f", l.P50Ms), fmt.Sprintf("%.3f", l.P99Ms), fmt.Sprintf("%.3f", l.MaxMs)}
	}
	rows := [][]string{
		append([]string{"lockers alone"}, lat(k.Baseline)...),
		append([]string{fmt.Sprintf("during KEYS * (%d names)", k.KeysFound)}, lat(k.DuringKeys)...),
		append([]string{fmt.Sprintf("during SCAN COUNT %d to the end (%d calls, %d names)", k.ScanCount, k.ScanCalls, k.ScanFound)}, lat(k.DuringScan)...),
	}
	writeTable(w, []string{"window", "length", "acquires/s", "FLOCK p50 ms", "p99 ms", "max ms"}, rows)
	fmt.Fprintf(w, "\nload %.1f s; p99 during KEYS / alone: %s; errors: %d%s\n", k.LoadSeconds,
		ratioText(k.DuringKeys.P99Ms/max(k.Baseline.P99Ms, 1e-9)), k.Errors, suffix("; first: ", k.FirstError))
}

// installNote says when the new node of workload f did not install a
// snapshot: the leader still had its whole log, which it sent instead.
func installNote(first uint64) string {
	if first > 1 {
		return ""
	}
	return " (NOT an install: the leader kept its whole log and sent it; lower --trailing-logs through --fenced-flags)"
}

func (r *report) checksSection(w io.Writer) {
	if len(r.Checks) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## SPEC section 10 targets\n\n")
	for _, c := range r.Checks {
		fmt.Fprintln(w, c.line())
	}
}

// errorLines lists the first error of every step that had any, so a
// number is never read without knowing it came with failures.
func (r *report) errorLines(w io.Writer) {
	var lines []string
	for _, s := range r.Steps {
		if s.Errors > 0 {
			lines = append(lines, fmt.Sprintf("- %s %s, %d clients: %d errors; first: %s", s.Workload, s.Series, s.Clients, s.Errors, s.FirstError))
		}
	}
	for _, e := range r.Errors {
		lines = append(lines, "- "+e)
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Errors\n\n%s\n", strings.Join(lines, "\n"))
}

func cell(ok bool, v func() float64, format string) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf(format, v())
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func settingsLine(s map[string]any) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, s[k])
	}
	return strings.Join(parts, " ")
}

// writeJSON writes v (a report, or the runs and their medians) indented.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
