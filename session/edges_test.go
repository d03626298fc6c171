package session

import (
	"context"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestPlanAtTheEdges decides the ticker's step for deadlines and clocks at
// the ends of the int64 range, with no clock and no sleeping: a deadline
// too far away to matter is a sleep of idle, never a tick (an overflowing
// ns conversion once made SET k v EX 10000000000 tick the leader thousands
// of times a second).
func TestPlanAtTheEdges(t *testing.T) {
	const never = math.MinInt64
	for _, c := range []struct {
		now, d   int64
		ok       bool
		ticked   int64
		tick     bool
		wait     time.Duration
		describe string
	}{
		{0, math.MaxInt64, true, never, false, idle, "deadline at the end of the range, young cluster"},
		{1 << 40, math.MaxInt64, true, never, false, idle, "deadline at the end of the range"},
		{0, 10_000_000_000_000 + 1, true, never, false, idle, "EX 10000000000"},
		{math.MinInt64, math.MaxInt64, true, never, false, idle, "widest gap"},
		{0, int64(math.MaxInt64/time.Millisecond) + 1, true, never, false, idle, "just past time.Duration's range"},
		{1000, 1500, true, never, false, 500 * time.Millisecond, "due in 500 ms"},
		{1000, 1000, true, never, true, 0, "due now"},
		{math.MaxInt64, math.MinInt64 + 1, true, never, true, 0, "long overdue"},
		{math.MaxInt64, math.MaxInt64, true, never, true, 0, "due at the end of time"},
		{5000, 1000, true, 1000, false, idle, "overdue, but a tick already left it in place"},
		{5000, 1001, true, 1000, true, 0, "overdue, another deadline"},
		{5000, 0, false, never, false, idle, "no deadline"},
	} {
		tick, wait := plan(c.now, c.d, c.ok, c.ticked)
		if tick != c.tick || wait != c.wait {
			t.Errorf("%s: plan(%d, %d, %v, %d) = %v, %v; want %v, %v", c.describe, c.now, c.d, c.ok, c.ticked, tick, wait, c.tick, c.wait)
		}
	}
}

// TestClockSaturates: a clock started near the end of the range stays there
// instead of wrapping into the past.
func TestClockSaturates(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1_000_000, 0)}
	c := newClock(math.MaxInt64-5, ft.now)
	ft.advance(time.Hour)
	if got := c.Now(); got != math.MaxInt64 {
		t.Fatalf("Now = %d, want %d", got, int64(math.MaxInt64))
	}
}

// TestTickerOneTickPerStuckDeadline: a tick that expires nothing does not
// lead to another tick for the same deadline.
func TestTickerOneTickPerStuckDeadline(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) { n.canPropose, n.deadline, n.hasDeadline, n.clearOnTick = true, 9_000, true, false })
	tk := runTicker(t, n, clock)
	waitTick(t, n, 500*time.Millisecond)
	for range 20 {
		tk.Kick() // what every applied batch does
	}
	noTick(t, n, 100*time.Millisecond)
	// A new deadline is ticked for.
	n.set(func(n *fakeNode) { n.deadline = 9_001 })
	tk.Kick()
	waitTick(t, n, 500*time.Millisecond)
}

// spinNode always has a due deadline, a new one each time, and ticks
// succeed at once: the busiest a ticker can be.
type spinNode struct{ n atomic.Int64 }

func (s *spinNode) NextDeadline() (int64, bool)  { return s.n.Add(1), true }
func (*spinNode) CanPropose() bool               { return true }
func (*spinNode) Tick(ctx context.Context) error { return nil }

// TestTickerStopsWhileTicking: Run returns once ctx is done even when every
// tick succeeds and another is due at once (a loop that skipped the check
// after a successful tick once kept SIGTERM from returning).
func TestTickerStopsWhileTicking(t *testing.T) {
	node := &spinNode{}
	tk := NewTicker(node, NewClock(1<<40), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tk.Run(ctx) }()
	for node.n.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel while ticking")
	}
}
