package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// check is one performance target (P1-P10) against what this run
// measured. The ratios, not the absolute figures, are the targets: absolute
// numbers on a shared machine drift by ±30 %.
type check struct {
	ID       string   `json:"id"`
	What     string   `json:"what"`
	Measured *float64 `json:"measured"` // null: not measured in this run
	Op       string   `json:"op"`       // ">=" or "<="
	Bound    float64  `json:"bound"`
	Unit     string   `json:"unit"`
	Status   string   `json:"status"` // met, missed, not measured
	Note     string   `json:"note,omitempty"`
}

// evaluate compares a measured figure with a bound.
func evaluate(measured *float64, op string, bound float64) string {
	if measured == nil || math.IsNaN(*measured) {
		return "not measured"
	}
	ok := false
	switch op {
	case ">=":
		ok = *measured >= bound
	case "<=":
		ok = *measured <= bound
	default:
		panic("evaluate: unknown op " + op)
	}
	if ok {
		return "met"
	}
	return "missed"
}

func newCheck(id, what string, measured *float64, op string, bound float64, unit, note string) check {
	return check{ID: id, What: what, Measured: measured, Op: op, Bound: bound, Unit: unit,
		Status: evaluate(measured, op, bound), Note: note}
}

// line is the check as one report line: id, what, measured, target, verdict.
func (c check) line() string {
	got := "–"
	if c.Measured != nil {
		got = sig3(*c.Measured) + c.Unit
	}
	op := map[string]string{">=": "≥", "<=": "≤"}[c.Op]
	return fmt.Sprintf("- %s %s: %s (target %s %g%s): **%s**%s", c.ID, c.What, got, op, c.Bound, c.Unit, c.Status, suffix("; ", c.Note))
}

// stepValue is a figure of one step, nil if that step did not run or
// produced nothing.
func (r *report) stepValue(workload, series string, clients int, get func(stepResult) (float64, bool)) *float64 {
	s, ok := r.find(workload, series, clients)
	if !ok {
		return nil
	}
	if v, ok := get(s); ok {
		return &v
	}
	return nil
}

// stepRatio is a/b of the same figure for two series, nil unless both ran.
func (r *report) stepRatio(workload, a, b string, clients int, get func(stepResult) (float64, bool)) *float64 {
	x, y := r.stepValue(workload, a, clients, get), r.stepValue(workload, b, clients, get)
	if x == nil || y == nil {
		return nil
	}
	return ratio(*x, *y)
}

// specChecks evaluates every performance target this run has figures
// for; one that lacks them is listed as not measured, never dropped.
func specChecks(r *report, offeredRate int64, scale scaleSpec, hb heartbeatSpec, connect string) []check {
	var out []check
	add := func(c check) { out = append(out, c) }

	add(newCheck("P1", "64 clients uncontended cycles/s, fenced-3 ÷ etcd-3", r.stepRatio("uncontended", "fenced-3", "etcd-3", 64, perSec), ">=", 10, "×", ""))
	add(newCheck("P1", "64 clients uncontended cycles/s, fenced-3 ÷ redis-aof", r.stepRatio("uncontended", "fenced-3", "redis-aof", 64, perSec), ">=", 1, "×", ""))
	add(newCheck("P2", "1 client acquire p50, fenced-3", r.stepValue("uncontended", "fenced-3", 1, p50), "<=", 1, " ms", ""))
	// P10 is reported under P1's numbers, before the rest, where it is read
	// beside them.
	add(newCheck("P10", "64 clients uncontended cycles/s, fenced-3-secure (peer mTLS, client TLS, an ACL user) ÷ fenced-3", r.stepRatio("uncontended", "fenced-3-secure", "fenced-3", 64, perSec), ">=", 0.85, "×", ""))
	add(newCheck("P2", "1 client acquire p50, fenced-1", r.stepValue("uncontended", "fenced-1", 1, p50), "<=", 0.4, " ms", ""))

	note := ""
	if offeredRate != 5000 {
		note = fmt.Sprintf("offered %d/s, not the spec's 5,000/s", offeredRate)
	}
	if s, ok := r.find("openloop", "fenced-3", 0); ok && s.PerSec < 0.95*s.OfferedPerSec {
		note = joinNotes(note, fmt.Sprintf("achieved only %.0f/s", s.PerSec))
	}
	add(newCheck("P3", "open loop acquire p99 from intended send, fenced-3", r.stepValue("openloop", "fenced-3", 0, p99), "<=", 5, " ms", note))
	add(newCheck("P3", "open loop acquire p999 from intended send, fenced-3", r.stepValue("openloop", "fenced-3", 0, p999), "<=", 10, " ms", note))

	add(newCheck("P4", "16 clients one lock grants/s, fenced-3 ÷ etcd-3", r.stepRatio("contended", "fenced-3", "etcd-3", 0, perSec), ">=", 20, "×", ""))
	add(newCheck("P4", "16 clients one lock grants/s, fenced-3 ÷ redis", r.stepRatio("contended", "fenced-3", "redis", 0, perSec), ">=", 1, "×", ""))
	add(newCheck("P4", "16 clients one lock wait p99 ÷ p50, fenced-3", r.stepValue("contended", "fenced-3", 0, optional(func(s stepResult) *float64 { return s.P99OverP50 })), "<=", 3, "×", ""))

	for _, n := range r.clientCounts() {
		add(newCheck("P5", clientsLabel(n)+" cycles/s, fenced-3 redsync ÷ native", r.stepRatio("uncontended", "fenced-3 redsync", "fenced-3", n, perSec), ">=", 0.8, "×", ""))
	}
	if len(r.clientCounts()) == 0 {
		add(newCheck("P5", "cycles/s, fenced-3 redsync ÷ native", nil, ">=", 0.8, "×", ""))
	}

	var hbCost *float64
	hbNote := ""
	if h := r.Heartbeat; h != nil {
		hbCost = ptr(h.CostShare)
		hbNote = fmt.Sprintf("idle %.1f %%, heartbeating %.1f %% of one core", h.IdleCorePct, h.LoadedCorePct)
		if h.PerSec < 0.95*h.OfferedPerSec {
			hbNote = joinNotes(hbNote, fmt.Sprintf("answered only %.0f of %.0f heartbeats/s offered", h.PerSec, h.OfferedPerSec))
		}
		if hb.sessions != 10000 || hb.interval.Milliseconds() != 3000 {
			hbNote = joinNotes(hbNote, fmt.Sprintf("%d sessions every %v, not the spec's 10,000 every 3s", hb.sessions, hb.interval))
		}
	}
	add(newCheck("P6", "heartbeat cost, share of the machine's CPU (heartbeating − idle)", hbCost, "<=", 20, " %", hbNote))

	var p7 *float64
	if f := r.failover("fenced-3"); f != nil && len(f.Kills) > 0 {
		p7 = ptr(f.P50Sec)
	}
	add(newCheck("P7", "leader killed under load, p50 time to the first FLOCK, fenced-3", p7, "<=", 2, " s", ""))

	var rss, restart, install *float64
	scaleNote := ""
	if s := r.Scale; s != nil {
		if s.MaxRSSBytes > 0 {
			rss = ptr(mib(s.MaxRSSBytes))
		}
		if s.RestartSeconds > 0 {
			restart = ptr(s.RestartSeconds)
		}
		if s.InstallSeconds > 0 {
			install = ptr(s.InstallSeconds)
		}
		if scale.keys != 1000000 || scale.sessions != 100000 {
			scaleNote = fmt.Sprintf("at %d keys / %d sessions, not the spec's 1,000,000 / 100,000", scale.keys, scale.sessions)
		}
	}
	add(newCheck("P8", "RSS per node (max)", rss, "<=", 1024, " MiB", scaleNote))
	add(newCheck("P8", "restart of a node to serving", restart, "<=", 10, " s", scaleNote))
	add(newCheck("P8", "snapshot install on a new node", install, "<=", 30, " s", scaleNote))

	for _, c := range p9Checks(r, connect) {
		add(c)
	}
	return out
}

// p9Checks is P9, efficiency: fenced-3's server CPU per cycle (summed over
// the nodes) in the 64-client uncontended step, on its own and against
// etcd-3's and redis-aof's in the same run. A target not run makes its
// comparison n/a (not measured), never met.
func p9Checks(r *report, connect string) []check {
	const clients = 64
	absent := func(series ...string) string {
		var out []string
		for _, s := range series {
			if r.stepValue("uncontended", s, clients, cpuPerCycle) == nil {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return ""
		}
		return "n/a: no " + strings.Join(out, " or ") + " figure in this run"
	}
	note := ""
	if s, ok := r.find("uncontended", "fenced-3", clients); ok {
		note = suffix("by node ", s.perProcessText())
	}
	if connect == "leader" {
		note = joinNotes(note, "clients at the leader (--connect leader), not spread over the nodes as P9 asks")
	}
	what := "64 clients uncontended server CPU per cycle"
	return []check{
		newCheck("P9", what+", fenced-3 (3 nodes summed)", r.stepValue("uncontended", "fenced-3", clients, cpuPerCycle), "<=", 60, " µs",
			joinNotes(note, absent("fenced-3"))),
		newCheck("P9", what+", fenced-3 ÷ etcd-3", r.stepRatio("uncontended", "fenced-3", "etcd-3", clients, cpuPerCycle), "<=", 0.12, "×",
			absent("fenced-3", "etcd-3")),
		newCheck("P9", what+", fenced-3 ÷ redis-aof", r.stepRatio("uncontended", "fenced-3", "redis-aof", clients, cpuPerCycle), "<=", 4, "×",
			absent("fenced-3", "redis-aof")),
	}
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// sig3 shows 3 significant digits without switching to exponent notation.
func sig3(v float64) string {
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// medianChecks is the targets over several runs of the same checks: each
// figure is the median of the runs that measured it (the targets are
// judged on the median of 3), with every run's figure in the note.
func medianChecks(runs [][]check) []check {
	if len(runs) == 0 {
		return nil
	}
	out := make([]check, 0, len(runs[0]))
	for i, c := range runs[0] {
		var vals []float64
		var each []string
		for _, r := range runs {
			if i >= len(r) || r[i].Measured == nil {
				each = append(each, "–")
				continue
			}
			vals = append(vals, *r[i].Measured)
			each = append(each, sig3(*r[i].Measured))
		}
		var med *float64
		if len(vals) > 0 {
			slices.Sort(vals)
			m := vals[len(vals)/2]
			if len(vals)%2 == 0 {
				m = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
			}
			med = &m
		}
		out = append(out, newCheck(c.ID, c.What, med, c.Op, c.Bound, c.Unit, "runs: "+strings.Join(each, " / ")))
	}
	return out
}
