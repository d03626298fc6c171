package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSetWindowUse(t *testing.T) {
	procs := []serverProc{{name: "n1 leader"}, {name: "n2"}, {name: "n3"}}
	r := stepResult{Cycles: 1000}
	r.setWindowUse(windowUse{busy: 0.9, procs: []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 42 * time.Millisecond}}, procs)
	if r.MachineBusy != 0.9 {
		t.Errorf("machine busy %v", r.MachineBusy)
	}
	// 162 ms over 1,000 cycles: 162 µs a cycle.
	if r.ServerCPUSeconds == nil || *r.ServerCPUSeconds != 0.162 || r.ServerCPUPerCycleUs == nil || *r.ServerCPUPerCycleUs != 162 {
		t.Fatalf("server CPU %v s, %v µs/cycle; want 0.162 s, 162", r.ServerCPUSeconds, r.ServerCPUPerCycleUs)
	}
	if got := r.perProcessText(); got != "n1 leader 80 / n2 40 / n3 42" {
		t.Errorf("per process %q", got)
	}
	if got := r.serverCPUText(); got != "162.0 µs/cycle (n1 leader 80 / n2 40 / n3 42)" {
		t.Errorf("progress text %q", got)
	}

	// One process: no split.
	one := stepResult{Cycles: 4}
	one.setWindowUse(windowUse{procs: []time.Duration{time.Millisecond}}, []serverProc{{name: "redis-server"}})
	if one.ServerCPUPerCycleUs == nil || *one.ServerCPUPerCycleUs != 250 || one.ServerCPUPerProcess != nil || one.serverCPUText() != "250.0 µs/cycle" {
		t.Errorf("one process: %v µs/cycle, split %v, text %q", one.ServerCPUPerCycleUs, one.ServerCPUPerProcess, one.serverCPUText())
	}

	// No cycles: CPU seconds known, per cycle undefined.
	idle := stepResult{}
	idle.setWindowUse(windowUse{procs: []time.Duration{time.Second}}, []serverProc{{name: "redis-server"}})
	if idle.ServerCPUSeconds == nil || idle.ServerCPUPerCycleUs != nil || idle.serverCPUText() != "unknown" {
		t.Errorf("no cycles: %v s, %v µs/cycle", idle.ServerCPUSeconds, idle.ServerCPUPerCycleUs)
	}

	// Unreadable processes: unknown, never zero.
	lost := stepResult{Cycles: 10}
	lost.setWindowUse(windowUse{busy: -1}, procs)
	if lost.ServerCPUSeconds != nil || lost.ServerCPUPerCycleUs != nil || lost.ServerCPUPerProcess != nil {
		t.Errorf("unknown readings gave %+v", lost)
	}
}

func TestServerCPURows(t *testing.T) {
	r := synthetic()
	var buf bytes.Buffer
	r.comparison(&buf, "uncontended", uncontendedMetrics([]int{64}))
	out := buf.String()
	// Lower is better, and the ratio column divides it like a latency.
	if !strings.Contains(out, "| 64 clients: server CPU/cycle µs | 50.0 | – | 500.0 | 0.10 |") {
		t.Fatalf("server CPU row:\n%s", out)
	}
	// The split is text, never divided; a single-figure series shows none.
	if !strings.Contains(out, "| 64 clients: server CPU/cycle µs by process | n1 leader 30 / n2 10 / n3 10 | – | – |  |") {
		t.Fatalf("by process row:\n%s", out)
	}
}
