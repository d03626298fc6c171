package main

import (
	"context"
	"testing"
	"time"
)

func TestScheduleIntendedTimes(t *testing.T) {
	start := time.Unix(1000, 0)
	s := schedule{start: start, rate: 3000}
	// 1/3000 s is not a whole number of nanoseconds: each time is computed
	// from the index, so operation 3000 is exactly one second in, no drift.
	if got := s.at(3000).Sub(start); got != time.Second {
		t.Fatalf("at(3000) = start+%v, want start+1s", got)
	}
	if got := s.at(1).Sub(start); got != 333333*time.Nanosecond {
		t.Fatalf("at(1) = start+%v", got)
	}
	for _, i := range []int64{0, 1, 2, 7, 2999, 3000, 123456} {
		if got := s.firstAtOrAfter(s.at(i)); got != i {
			t.Fatalf("firstAtOrAfter(at(%d)) = %d", i, got)
		}
		if got := s.firstAtOrAfter(s.at(i).Add(time.Nanosecond)); got != i+1 {
			t.Fatalf("firstAtOrAfter(at(%d)+1ns) = %d, want %d", i, got, i+1)
		}
	}
	if got := s.firstAtOrAfter(start.Add(-time.Hour)); got != 0 {
		t.Fatalf("before the start: %d", got)
	}
	// [1s, 3s) holds operations 3000..8999.
	if got := s.countIn(start.Add(time.Second), start.Add(3*time.Second)); got != 6000 {
		t.Fatalf("countIn = %d, want 6000", got)
	}
	if got := s.countIn(start.Add(3*time.Second), start.Add(time.Second)); got != 0 {
		t.Fatalf("reversed countIn = %d, want 0", got)
	}
}

// sleepLocker takes d to acquire: a stand-in server with a fixed service time.
type sleepLocker struct{ d time.Duration }

func (l sleepLocker) Acquire(ctx context.Context) (int64, error) { time.Sleep(l.d); return 1, nil }
func (l sleepLocker) Release(ctx context.Context) error          { return nil }
func (l sleepLocker) Close() error                               { return nil }

func sleepFactory(d time.Duration) lockerFactory {
	return func(context.Context, int, string) (locker, error) { return sleepLocker{d}, nil }
}

// One worker whose every acquire takes 4 ms, offered 500/s (one every 2 ms):
// it can only do half. Measured from the intended send time, the latency
// grows with the backlog - operation i waits about 2i ms - which a closed
// loop measuring from the actual send would report as a steady 4 ms.
func TestOpenLoopCountsQueueingFromIntendedTime(t *testing.T) {
	r := runOpenLoop(context.Background(), openSpec{rate: 500, workers: 1, key: "k", measure: 200 * time.Millisecond, grace: 5 * time.Second}, sleepFactory(4*time.Millisecond))
	if r.Cycles != 100 || r.NotSent != 0 {
		t.Fatalf("cycles=%d not sent=%d; want all 100 operations of the window sent within the grace", r.Cycles, r.NotSent)
	}
	if r.P50Ms < 60 || r.MaxMs < 150 {
		t.Fatalf("p50=%.1f ms max=%.1f ms: the backlog's queueing is missing from the latency", r.P50Ms, r.MaxMs)
	}
	if r.OfferedPerSec != 500 {
		t.Fatalf("offered %v", r.OfferedPerSec)
	}
}

// Without grace the backlog at the end of the window is counted as not
// sent rather than stretching the step.
func TestOpenLoopCountsWhatWasNeverSent(t *testing.T) {
	r := runOpenLoop(context.Background(), openSpec{rate: 500, workers: 1, key: "k", measure: 200 * time.Millisecond}, sleepFactory(4*time.Millisecond))
	if r.NotSent < 20 || r.Cycles+r.NotSent != 100 {
		t.Fatalf("cycles=%d not sent=%d; want about half of 100 not sent, together 100", r.Cycles, r.NotSent)
	}
	if r.PerSec >= 400 {
		t.Fatalf("achieved %.0f/s from a worker that can do 250/s", r.PerSec)
	}
}

// A fast target keeps up: every operation in the window, latency small.
func TestOpenLoopKeepsUp(t *testing.T) {
	r := runOpenLoop(context.Background(), openSpec{rate: 1000, workers: 4, key: "k", warmup: 50 * time.Millisecond, measure: 300 * time.Millisecond, grace: time.Second}, sleepFactory(0))
	if r.Cycles != 300 || r.NotSent != 0 || r.Errors != 0 {
		t.Fatalf("cycles=%d not sent=%d errors=%d; want 300, 0, 0", r.Cycles, r.NotSent, r.Errors)
	}
	if r.PerSec != 1000 {
		t.Fatalf("achieved %.1f/s, want 1000", r.PerSec)
	}
	if r.P50Ms > 20 {
		t.Fatalf("p50 %.1f ms for a target with no service time", r.P50Ms)
	}
}
