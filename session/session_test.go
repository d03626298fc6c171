package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeTime is a settable monotonic clock for Clock.
type fakeTime struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeTime) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeTime) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func TestClockAdvancesWithMonotonicTime(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1_000_000, 0)}
	c := newClock(5000, ft.now)
	if got := c.Now(); got != 5000 {
		t.Fatalf("Now at start = %d, want 5000", got)
	}
	ft.advance(1500 * time.Millisecond)
	if got := c.Now(); got != 6500 {
		t.Fatalf("Now after 1.5 s = %d, want 6500", got)
	}
	ft.advance(999 * time.Microsecond) // sub-millisecond: truncated
	if got := c.Now(); got != 6500 {
		t.Fatalf("Now after 1.500999 s = %d, want 6500", got)
	}
}

func TestClockObserve(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1_000_000, 0)}
	c := newClock(1000, ft.now)
	ft.advance(100 * time.Millisecond) // now 1100

	// Following, the clock restarts from every applied entry, earlier ones
	// included: it is the last entry's time plus the time since.
	for _, at := range []int64{5000, 500, 1100} {
		c.Observe(at)
		if got := c.Now(); got != at {
			t.Fatalf("Now after Observe(%d) = %d, want %d", at, got, at)
		}
	}
	ft.advance(250 * time.Millisecond)
	if got := c.Now(); got != 1350 {
		t.Fatalf("Now 250 ms after Observe(1100) = %d, want 1350", got)
	}

	// Leading, it runs on its own: its own entries, applied after it
	// stamped them, do not pull it back.
	c.Lead()
	ft.advance(50 * time.Millisecond)
	c.Observe(1360)
	if got := c.Now(); got != 1400 {
		t.Fatalf("leading: Now after Observe(1360) = %d, want 1400", got)
	}
	// Following again, it falls back to the new leader's stamps even when
	// they are behind: that is what keeps a former leader that ran ahead
	// from expiring early what the new leader renewed.
	c.Follow()
	c.Observe(1300)
	if got := c.Now(); got != 1300 {
		t.Fatalf("following: Now after Observe(1300) = %d, want 1300", got)
	}
}

func TestNewClockRealTime(t *testing.T) {
	c := NewClock(42)
	a := c.Now()
	time.Sleep(20 * time.Millisecond)
	b := c.Now()
	if a < 42 || b < a+15 || b > a+2000 {
		t.Fatalf("Now %d then %d after 20 ms (start 42)", a, b)
	}
}

// fakeNode is a session.Node whose answers a test sets.
type fakeNode struct {
	mu          sync.Mutex
	deadline    int64
	hasDeadline bool
	canPropose  bool
	tickErr     error
	clearOnTick bool // a successful tick clears the deadline, as expiry does
	ticks       []time.Time
	clock       *Clock  // if set, Tick records its cluster time in tickAt
	tickAt      []int64 // cluster times of the ticks
	tickCh      chan struct{}
}

func newFakeNode() *fakeNode { return &fakeNode{tickCh: make(chan struct{}, 1000), clearOnTick: true} }

func (n *fakeNode) NextDeadline() (int64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deadline, n.hasDeadline
}

func (n *fakeNode) CanPropose() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.canPropose
}

func (n *fakeNode) Tick(ctx context.Context) error {
	n.mu.Lock()
	n.ticks = append(n.ticks, time.Now())
	if n.clock != nil {
		n.tickAt = append(n.tickAt, n.clock.Now())
	}
	err := n.tickErr
	if err == nil && n.clearOnTick {
		n.hasDeadline = false
	}
	n.mu.Unlock()
	n.tickCh <- struct{}{}
	return err
}

func (n *fakeNode) set(fn func(n *fakeNode)) {
	n.mu.Lock()
	fn(n)
	n.mu.Unlock()
}

func (n *fakeNode) tickCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ticks)
}

// runTicker runs a ticker over node until the test ends.
func runTicker(t *testing.T, node Node, clock *Clock) *Ticker {
	t.Helper()
	tk := NewTicker(node, clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tk.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return tk
}

func waitTick(t *testing.T, n *fakeNode, within time.Duration) {
	t.Helper()
	select {
	case <-n.tickCh:
	case <-time.After(within):
		t.Fatalf("no tick within %v", within)
	}
}

func noTick(t *testing.T, n *fakeNode, during time.Duration) {
	t.Helper()
	select {
	case <-n.tickCh:
		t.Fatalf("unexpected tick")
	case <-time.After(during):
	}
}

func TestTickerTicksWhenDeadlinePassed(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) { n.canPropose, n.deadline, n.hasDeadline = true, 9_000, true })
	runTicker(t, n, clock)
	waitTick(t, n, 500*time.Millisecond)
	// The tick cleared the deadline: no more ticks.
	noTick(t, n, 100*time.Millisecond)
	if got := n.tickCount(); got != 1 {
		t.Fatalf("%d ticks, want 1", got)
	}
}

func TestTickerWaitsForFutureDeadline(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	due := clock.Now() + 80
	n.set(func(n *fakeNode) { n.canPropose, n.deadline, n.hasDeadline, n.clock = true, due, true, clock })
	runTicker(t, n, clock)
	waitTick(t, n, 900*time.Millisecond)
	n.mu.Lock()
	at := n.tickAt[0]
	n.mu.Unlock()
	if at < due {
		t.Fatalf("ticked at cluster time %d, before the deadline %d", at, due)
	}
}

func TestTickerNoTickWhenNotLeader(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) { n.canPropose, n.deadline, n.hasDeadline = false, 1, true })
	tk := runTicker(t, n, clock)
	noTick(t, n, 150*time.Millisecond)
	tk.Kick()
	noTick(t, n, 50*time.Millisecond)
	// Becoming leader (the node kicks the ticker when it is ready) starts
	// the ticks.
	n.set(func(n *fakeNode) { n.canPropose = true })
	tk.Kick()
	waitTick(t, n, 100*time.Millisecond)
}

func TestTickerNoTickWithoutDeadline(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) { n.canPropose = true })
	tk := runTicker(t, n, clock)
	noTick(t, n, 150*time.Millisecond)
	for i := 0; i < 10; i++ {
		tk.Kick()
	}
	noTick(t, n, 50*time.Millisecond)
}

func TestTickerKickWakesPromptly(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) { n.canPropose = true })
	tk := runTicker(t, n, clock)
	time.Sleep(30 * time.Millisecond) // the ticker is now asleep for its idle second
	n.set(func(n *fakeNode) { n.deadline, n.hasDeadline = clock.Now()-1, true })
	start := time.Now()
	tk.Kick()
	waitTick(t, n, 300*time.Millisecond) // well under the idle second
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("kick took %v to wake the ticker", d)
	}
}

func TestKickNeverBlocks(t *testing.T) {
	tk := NewTicker(newFakeNode(), NewClock(0), slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i++ {
			tk.Kick()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Kick blocked without a running ticker")
	}
}

func TestTickerBacksOffOnError(t *testing.T) {
	clock := NewClock(10_000)
	n := newFakeNode()
	n.set(func(n *fakeNode) {
		n.canPropose, n.deadline, n.hasDeadline = true, 1, true
		n.tickErr = errors.New("leadership lost")
	})
	tk := runTicker(t, n, clock)
	waitTick(t, n, 500*time.Millisecond)
	start := time.Now()
	time.Sleep(100 * time.Millisecond)
	got := n.tickCount()
	// Backoff 5, 10, 20, 40, 80 ms: about 5 tries in the first 100 ms. A
	// spinning ticker would make thousands.
	if got < 2 || got > 12 {
		t.Fatalf("%d ticks in the %v after a first failure, want a few retries with backoff", got, time.Since(start))
	}
	// Kicks (every applied batch) do not defeat the backoff.
	for i := 0; i < 50; i++ {
		tk.Kick()
		time.Sleep(time.Millisecond)
	}
	if more := n.tickCount() - got; more > 50 {
		t.Fatalf("%d ticks during 50 kicks", more)
	}
	// Once a tick succeeds the retries stop.
	n.set(func(n *fakeNode) { n.tickErr = nil })
	deadline := time.Now().Add(2 * time.Second)
	for {
		n.mu.Lock()
		cleared := !n.hasDeadline
		n.mu.Unlock()
		if cleared {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no successful tick within 2 s (backoff is capped at 200 ms)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	settled := n.tickCount()
	time.Sleep(100 * time.Millisecond)
	if extra := n.tickCount() - settled; extra != 0 {
		t.Fatalf("%d ticks after the successful one", extra)
	}
}

// TestTickerStopsOnCancelDuringTick: a tick that fails because the context
// was cancelled ends Run.
func TestTickerStopsOnCancelDuringTick(t *testing.T) {
	n := &ctxNode{}
	tk := NewTicker(n, NewClock(10_000), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tk.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run did not return after cancel during a tick")
	}
}

// ctxNode's Tick blocks until its context ends.
type ctxNode struct{}

func (ctxNode) NextDeadline() (int64, bool) { return 1, true }
func (ctxNode) CanPropose() bool            { return true }
func (ctxNode) Tick(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
