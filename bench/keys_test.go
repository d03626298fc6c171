package main

import (
	"testing"
	"time"
)

// TestWindowCountsHeldUpAcquires: an acquire is counted in every window it
// overlaps, so one held up by a whole KEYS shows in that window's
// percentiles whenever it was sent; acquires wholly outside are not.
func TestWindowCountsHeldUpAcquires(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []timedSample{
		{at(0), time.Millisecond},          // before
		{at(95), 500 * time.Millisecond},   // sent before, held up through the window
		{at(150), 2 * time.Millisecond},    // inside
		{at(199), 5 * time.Millisecond},    // sent inside, done after
		{at(300), time.Millisecond},        // after
		{at(90), 10*time.Millisecond - 1},  // done just before the window
		{at(200), 3 * time.Millisecond},    // sent at the window's end: after
		{at(100), 400 * time.Microsecond},  // at its start
		{at(120), 1200 * time.Microsecond}, // inside
		{at(160), 800 * time.Microsecond},  // inside
		{at(170), 900 * time.Microsecond},  // inside
		{at(180), 1100 * time.Microsecond}, // inside
		{at(185), 1000 * time.Microsecond}, // inside
		{at(190), 700 * time.Microsecond},  // inside
		{at(195), 600 * time.Microsecond},  // inside
		{at(196), 1300 * time.Microsecond}, // inside
		{at(197), 1400 * time.Microsecond}, // inside
		{at(198), 1500 * time.Microsecond}, // inside
		{at(198), 1600 * time.Microsecond}, // inside
		{at(198), 1700 * time.Microsecond}, // inside
	}
	w := window(samples, at(100), at(200))
	if w.Samples != 16 {
		t.Fatalf("%d samples in the window, want 16", w.Samples)
	}
	if w.MaxMs != 500 || w.P99Ms != 500 {
		t.Fatalf("max %.3f p99 %.3f ms, want the held-up acquire's 500", w.MaxMs, w.P99Ms)
	}
	if w.Seconds != 0.1 || w.PerSec != 160 {
		t.Fatalf("%.3f s, %.0f/s; want 0.1 s, 160/s", w.Seconds, w.PerSec)
	}
	if e := window(samples, at(1000), at(2000)); e.Samples != 0 || e.P99Ms != 0 {
		t.Fatalf("an empty window: %+v", e)
	}
}
