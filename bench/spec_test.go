package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		v    *float64
		op   string
		b    float64
		want string
	}{
		{ptr(10), ">=", 10, "met"},
		{ptr(9.99), ">=", 10, "missed"},
		{ptr(1), "<=", 1, "met"},
		{ptr(1.01), "<=", 1, "missed"},
		{nil, "<=", 1, "not measured"},
	}
	for _, c := range cases {
		if got := evaluate(c.v, c.op, c.b); got != c.want {
			t.Errorf("evaluate(%v %s %v) = %s, want %s", c.v, c.op, c.b, got, c.want)
		}
	}
}

func TestRatio(t *testing.T) {
	if r := ratio(30, 10); r == nil || *r != 3 {
		t.Fatalf("ratio(30, 10) = %v", r)
	}
	for _, pair := range [][2]float64{{0, 1}, {1, 0}, {-1, 1}} {
		if r := ratio(pair[0], pair[1]); r != nil {
			t.Fatalf("ratio%v = %v, want nil", pair, *r)
		}
	}
}

// synthetic is a report with fenced-3 and etcd-3 only: redis checks must come
// out as not measured, never as met.
func synthetic() *report {
	return &report{Steps: []stepResult{
		{Workload: "uncontended", Series: "fenced-3", Clients: 64, PerSec: 25000, Cycles: 1, Samples: 1, ServerCPUPerCycleUs: ptr(50),
			ServerCPUPerProcess: []procCPU{{Name: "n1 leader", PerCycleUs: ptr(30)}, {Name: "n2", PerCycleUs: ptr(10)}, {Name: "n3", PerCycleUs: ptr(10)}}},
		{Workload: "uncontended", Series: "etcd-3", Clients: 64, PerSec: 2000, Cycles: 1, Samples: 1, ServerCPUPerCycleUs: ptr(500)},
		{Workload: "uncontended", Series: "fenced-3-secure", Clients: 64, PerSec: 20000, Cycles: 1, Samples: 1},
		{Workload: "uncontended", Series: "fenced-3", Clients: 1, PerSec: 2000, Cycles: 1, Samples: 1, P50Ms: 0.9},
		{Workload: "uncontended", Series: "fenced-3 redsync", Clients: 1, PerSec: 1500, Cycles: 1, Samples: 1},
		{Workload: "contended", Series: "fenced-3", Clients: 16, PerSec: 3000, Cycles: 1, Samples: 1, P99OverP50: ptr(3.5)},
		{Workload: "contended", Series: "etcd-3", Clients: 16, PerSec: 150, Cycles: 1, Samples: 1},
		{Workload: "openloop", Series: "fenced-3", Clients: 64, PerSec: 4000, OfferedPerSec: 5000, Cycles: 1, Samples: 1, P99Ms: 4, P999Ms: 12},
	}}
}

func TestSpecChecks(t *testing.T) {
	r := synthetic()
	checks := specChecks(r, 5000, scaleSpec{keys: 1000000, sessions: 100000}, heartbeatSpec{sessions: 10000, interval: 3 * time.Second}, "all")
	got := map[string]check{}
	for _, c := range checks {
		got[c.ID+" "+c.What] = c
	}
	expect := map[string]struct {
		status string
		value  float64
	}{
		"P1 64 clients uncontended cycles/s, fenced-3 ÷ etcd-3":                                                {"met", 12.5},
		"P1 64 clients uncontended cycles/s, fenced-3 ÷ redis-aof":                                             {"not measured", 0},
		"P2 1 client acquire p50, fenced-3":                                                                    {"met", 0.9},
		"P2 1 client acquire p50, fenced-1":                                                                    {"not measured", 0},
		"P3 open loop acquire p99 from intended send, fenced-3":                                                {"met", 4},
		"P3 open loop acquire p999 from intended send, fenced-3":                                               {"missed", 12},
		"P4 16 clients one lock grants/s, fenced-3 ÷ etcd-3":                                                   {"met", 20},
		"P4 16 clients one lock wait p99 ÷ p50, fenced-3":                                                      {"missed", 3.5},
		"P5 1 client cycles/s, fenced-3 redsync ÷ native":                                                      {"missed", 0.75},
		"P5 64 clients cycles/s, fenced-3 redsync ÷ native":                                                    {"not measured", 0},
		"P6 heartbeat cost, share of the machine's CPU (heartbeating − idle)":                                  {"not measured", 0},
		"P7 leader killed under load, p50 time to the first FLOCK, fenced-3":                                   {"not measured", 0},
		"P10 64 clients uncontended cycles/s, fenced-3-secure (peer mTLS, client TLS, an ACL user) ÷ fenced-3": {"missed", 0.8},
		"P9 64 clients uncontended server CPU per cycle, fenced-3 (3 nodes summed)":                            {"met", 50},
		"P9 64 clients uncontended server CPU per cycle, fenced-3 ÷ etcd-3":                                    {"met", 0.1},
		"P9 64 clients uncontended server CPU per cycle, fenced-3 ÷ redis-aof":                                 {"not measured", 0},
	}
	for what, e := range expect {
		c, ok := got[what]
		if !ok {
			t.Errorf("no check %q", what)
			continue
		}
		if c.Status != e.status || (c.Measured != nil && *c.Measured != e.value) {
			t.Errorf("%s: status %s value %v; want %s %v", what, c.Status, c.Measured, e.status, e.value)
		}
	}
	// The open loop fell short of the offered rate: the P3 lines say so.
	if c := got["P3 open loop acquire p99 from intended send, fenced-3"]; !strings.Contains(c.Note, "achieved only 4000/s") {
		t.Errorf("P3 note %q", c.Note)
	}
	if n := len(checks); n != 20 {
		t.Errorf("%d checks, want 20 (P1 2, P10, P2 2, P3 2, P4 3, P5 one per client count (2), P6, P7, P8 3, P9 3)", n)
	}
}

func TestP9(t *testing.T) {
	step := func(series string, us float64) stepResult {
		return stepResult{Workload: "uncontended", Series: series, Clients: 64, Cycles: 1, ServerCPUPerCycleUs: ptr(us)}
	}
	fenced := step("fenced-3", 162)
	fenced.ServerCPUPerProcess = []procCPU{{Name: "n1 leader", PerCycleUs: ptr(80)}, {Name: "n2", PerCycleUs: ptr(41)}, {Name: "n3", PerCycleUs: ptr(41)}}
	// The figures of SPEC P9's 2026-11-24 measurement: every part missed.
	r := &report{Steps: []stepResult{fenced, step("etcd-3", 501), step("redis-aof", 16), step("fenced-1", 40)}}
	got := p9Checks(r, "all")
	want := []struct {
		line string
	}{
		{"- P9 64 clients uncontended server CPU per cycle, fenced-3 (3 nodes summed): 162 µs (target ≤ 60 µs): **missed**; by node n1 leader 80 / n2 41 / n3 41"},
		{"- P9 64 clients uncontended server CPU per cycle, fenced-3 ÷ etcd-3: 0.323× (target ≤ 0.12×): **missed**"},
		{"- P9 64 clients uncontended server CPU per cycle, fenced-3 ÷ redis-aof: 10.1× (target ≤ 4×): **missed**"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d P9 checks, want %d", len(got), len(want))
	}
	for i, w := range want {
		if l := got[i].line(); l != w.line {
			t.Errorf("P9 line %d:\n got %s\nwant %s", i, l, w.line)
		}
	}

	// Within every bound.
	r = &report{Steps: []stepResult{step("fenced-3", 60), step("etcd-3", 500), step("redis-aof", 15)}}
	for _, c := range p9Checks(r, "all") {
		if c.Status != "met" {
			t.Errorf("%s: %s, want met", c.What, c.Status)
		}
	}

	// Peers not run: their comparisons are n/a, never met.
	r = &report{Steps: []stepResult{step("fenced-3", 50)}}
	got = p9Checks(r, "leader")
	if got[0].Status != "met" || !strings.Contains(got[0].Note, "--connect leader") {
		t.Errorf("absolute: %+v, want met with a note that the clients were at the leader", got[0])
	}
	for i, peer := range []string{"etcd-3", "redis-aof"} {
		c := got[i+1]
		if c.Status != "not measured" || c.Measured != nil || c.Note != "n/a: no "+peer+" figure in this run" {
			t.Errorf("without %s: %+v", peer, c)
		}
	}

	// fenced-3 not run (or its CPU unknown): all three n/a.
	unknown := step("fenced-3", 0)
	unknown.ServerCPUPerCycleUs = nil
	r = &report{Steps: []stepResult{unknown, step("etcd-3", 500)}}
	for _, c := range p9Checks(r, "all") {
		if c.Status != "not measured" || !strings.HasPrefix(c.Note, "n/a: no fenced-3") {
			t.Errorf("without fenced-3's figure: %+v", c)
		}
	}
}

func TestComparisonTableRatios(t *testing.T) {
	r := synthetic()
	var buf bytes.Buffer
	r.comparison(&buf, "uncontended", uncontendedMetrics([]int{64}))
	out := buf.String()
	if !strings.Contains(out, "| metric | fenced-3 | fenced-3 redsync | etcd-3 | fenced-3 ÷ etcd-3 |") {
		t.Fatalf("header:\n%s", out)
	}
	if !strings.Contains(out, "| 64 clients: cycles/s | 25000 | – | 2000 | 12.5 |") {
		t.Fatalf("ratio row:\n%s", out)
	}
	// Counts are never divided.
	if !strings.Contains(out, "| 64 clients: errors | 0 | – | 0 |  |") {
		t.Fatalf("errors row:\n%s", out)
	}
}

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{1187.6: "1188", 0.955: "0.955", 12.34: "12.3", 100: "100"} {
		if got := sig3(v); got != want {
			t.Errorf("sig3(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestMedianChecks(t *testing.T) {
	mk := func(v *float64) []check {
		return []check{newCheck("P1", "x", v, ">=", 2, "×", ""), newCheck("P7", "y", nil, "<=", 2, " s", "")}
	}
	one, three, two := 1.0, 3.0, 2.5
	got := medianChecks([][]check{mk(&one), mk(&three), mk(&two)})
	if len(got) != 2 {
		t.Fatalf("%d checks, want 2", len(got))
	}
	if got[0].Measured == nil || *got[0].Measured != 2.5 || got[0].Status != "met" {
		t.Errorf("median of 1, 3, 2.5 = %+v, want 2.5 met", got[0])
	}
	if got[0].Note != "runs: 1 / 3 / 2.5" {
		t.Errorf("note %q", got[0].Note)
	}
	if got[1].Measured != nil || got[1].Status != "not measured" {
		t.Errorf("a check no run measured: %+v", got[1])
	}
	if even := medianChecks([][]check{mk(&one), mk(&three)}); *even[0].Measured != 2 {
		t.Errorf("median of 1 and 3 = %v, want 2", *even[0].Measured)
	}
}
