package session

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/fenced/fenced/internal/ms"
)

// Node is what the ticker needs from the Raft node. It is declared here, by
// its user.
type Node interface {
	// NextDeadline reports the state machine's earliest pending deadline in
	// cluster ms.
	NextDeadline() (int64, bool)
	// CanPropose reports whether this node leads and has applied its term's
	// barrier, so a tick it proposes can commit.
	CanPropose() bool
	// Tick proposes a tick entry and waits until it is applied.
	Tick(ctx context.Context) error
}

// Ticker proposes a tick when the earliest deadline has passed on the
// cluster clock. No deadline pending means no ticks.
type Ticker struct {
	node   Node
	clock  *Clock
	kick   chan struct{}
	logger *slog.Logger
}

// NewTicker returns a ticker; Run drives it.
func NewTicker(node Node, clock *Clock, logger *slog.Logger) *Ticker {
	return &Ticker{node: node, clock: clock, kick: make(chan struct{}, 1), logger: logger}
}

// Kick tells the ticker that deadlines or leadership may have changed. It
// never blocks; the raft apply path calls it after every batch.
func (t *Ticker) Kick() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// idle is how long the ticker sleeps when it has nothing due and no kick
// arrives; kicks normally wake it sooner.
const idle = time.Second

// plan decides the ticker's next step at cluster time now, for the earliest
// deadline d (ok false: none): tick at once, or sleep for wait. ticked is
// the deadline the last successful tick was for: a deadline that a tick
// left in place is not ticked for again, so nothing makes the ticker spin.
// A deadline too far away to matter (up to the end of the int64 range)
// only ever means sleeping for idle.
func plan(now, d int64, ok bool, ticked int64) (tick bool, wait time.Duration) {
	if !ok || d == ticked {
		return false, idle
	}
	if due := time.Duration(ms.Nanos(ms.Sub(d, now))); due > 0 {
		return false, min(due, idle)
	}
	return true, 0
}

// Run proposes ticks until ctx is done. It checks ctx on every iteration,
// so a node stops promptly whatever its state holds.
func (t *Ticker) Run(ctx context.Context) {
	timer := time.NewTimer(idle)
	defer timer.Stop()
	backoff := time.Duration(0)
	// NextDeadline is a deadline plus 1 ms, so never MinInt64: no tick yet.
	ticked := int64(math.MinInt64)
	for ctx.Err() == nil {
		wait := idle
		if t.node.CanPropose() {
			d, ok := t.node.NextDeadline()
			tick, w := plan(t.clock.Now(), d, ok, ticked)
			wait = w
			if tick {
				err := t.node.Tick(ctx)
				if err == nil {
					backoff, ticked = 0, d
					continue
				}
				if ctx.Err() != nil {
					return
				}
				// Lost leadership or the log is slow: try again soon,
				// without spinning.
				backoff = min(max(2*backoff, 5*time.Millisecond), 200*time.Millisecond)
				t.logger.Debug("tick failed", "err", err, "retry", backoff)
				wait = backoff
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		case <-timer.C:
		}
	}
}
