package session

import (
	"context"
	"log/slog"
	"time"
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

// Run proposes ticks until ctx is done.
func (t *Ticker) Run(ctx context.Context) {
	timer := time.NewTimer(idle)
	defer timer.Stop()
	backoff := time.Duration(0)
	for {
		wait := idle
		if t.node.CanPropose() {
			if d, ok := t.node.NextDeadline(); ok {
				if due := time.Duration(d-t.clock.Now()) * time.Millisecond; due > 0 {
					wait = min(due, idle)
				} else {
					err := t.node.Tick(ctx)
					if err == nil {
						backoff = 0
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
