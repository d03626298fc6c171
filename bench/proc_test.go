package main

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (fen ced) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 0 0\n"
	got, err := parseStatCPU(line)
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("parseStatCPU = %v, %v; want 3.25s (325 ticks)", got, err)
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Fatal("no error for a line without ')'")
	}
}

func TestParseCPULine(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 40 800 30 2 8 15 50 0\ncpu0 50 2 20 400 15 1 4 7 25 0\n"
	busy, total, err := parseCPULine(stat)
	if err != nil || busy != 170 || total != 1000 {
		t.Fatalf("parseCPULine = %d, %d, %v; want 170 busy of 1000 (guest not counted twice)", busy, total, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 x 5 6 7 8\n", "cpu  1 2 3\n"} {
		if _, _, err := parseCPULine(bad); err == nil {
			t.Errorf("parseCPULine(%q): no error", bad)
		}
	}
}

func TestMeasureWindow(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc")
	}
	now := time.Now()
	got := measureWindow(context.Background(), now, now.Add(50*time.Millisecond), []int{os.Getpid()})()
	if got.busy < 0 || got.busy > 1 {
		t.Fatalf("busy = %v, want a share in [0, 1]", got.busy)
	}
	if len(got.procs) != 1 || got.procs[0] < 0 {
		t.Fatalf("procs = %v, want one non-negative reading", got.procs)
	}
	if got := measureWindow(context.Background(), now, now, []int{-1})(); got.procs != nil {
		t.Fatalf("procs of a missing pid = %v, want nil (unknown)", got.procs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := measureWindow(ctx, now, now.Add(time.Hour), []int{os.Getpid()})(); got.busy >= 0 || got.procs != nil {
		t.Fatalf("a cancelled window = %+v, want unknown", got)
	}
}

func TestCPUDeltas(t *testing.T) {
	ms := time.Millisecond
	got := cpuDeltas([]time.Duration{10 * ms, 20 * ms}, []time.Duration{15 * ms, 50 * ms})
	if len(got) != 2 || got[0] != 5*ms || got[1] != 30*ms {
		t.Fatalf("cpuDeltas = %v, want [5ms 30ms]", got)
	}
	if got := cpuDeltas([]time.Duration{10 * ms}, []time.Duration{5 * ms}); got != nil {
		t.Fatalf("a counter that went back gave %v, want nil", got)
	}
	if got := cpuDeltas([]time.Duration{ms}, nil); got != nil {
		t.Fatalf("unpaired readings gave %v, want nil", got)
	}
}

func TestOwnCPUAndRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, err := rssBytes(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("rss = %d, %v", rss, err)
	}
}

func TestParseKBField(t *testing.T) {
	text := "Name:\tfenced\nVmPeak:\t  2000 kB\nVmRSS:\t  1536 kB\n"
	if got, err := parseKBField(text, "VmRSS"); err != nil || got != 1536<<10 {
		t.Fatalf("VmRSS = %d, %v", got, err)
	}
	if _, err := parseKBField(text, "VmSwap"); err == nil {
		t.Fatal("missing field gave no error")
	}
}

func TestDueCount(t *testing.T) {
	// 3 sessions every 3 s: beats at 0, 1, 2, 3, 4 ... s.
	cases := []struct {
		elapsed time.Duration
		want    int64
	}{{-time.Second, 0}, {0, 1}, {999 * time.Millisecond, 1}, {time.Second, 2}, {3 * time.Second, 4}, {10 * time.Second, 11}}
	for _, c := range cases {
		if got := dueCount(c.elapsed, 3*time.Second, 3); got != c.want {
			t.Errorf("dueCount(%v) = %d, want %d", c.elapsed, got, c.want)
		}
	}
	// 10,000 sessions every 3 s: 3,333 a second.
	if got := dueCount(3*time.Second-time.Nanosecond, 3*time.Second, 10000); got != 10000 {
		t.Errorf("one interval covers every session once: %d", got)
	}
}

func TestCorePct(t *testing.T) {
	if got := corePct(1500*time.Millisecond, time.Second); got != 150 {
		t.Fatalf("corePct = %v, want 150", got)
	}
	if got := corePct(time.Second, 0); got != 0 {
		t.Fatalf("corePct over no time = %v", got)
	}
}
