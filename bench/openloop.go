package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// schedule is the open-loop timetable: operation i is meant to be sent at
// start + i/rate, whatever happened to the operations before it. Times are
// computed from the index in integer nanoseconds, never by adding up
// intervals, so a long run does not drift.
type schedule struct {
	start time.Time
	rate  int64 // operations per second
}

// at is operation i's intended send time.
func (s schedule) at(i int64) time.Time {
	return s.start.Add(time.Duration(i * int64(time.Second) / s.rate))
}

// firstAtOrAfter is the index of the first operation intended at or after t.
func (s schedule) firstAtOrAfter(t time.Time) int64 {
	d := int64(t.Sub(s.start))
	if d <= 0 {
		return 0
	}
	// ceil(d*rate/1e9) without floating point.
	return (d*s.rate + int64(time.Second) - 1) / int64(time.Second)
}

// countIn is how many operations are intended in [from, to).
func (s schedule) countIn(from, to time.Time) int64 {
	return max(0, s.firstAtOrAfter(to)-s.firstAtOrAfter(from))
}

// openSpec is one open-loop step: rate acquire+release operations a second
// spread over a pool of workers, each with its own lock and connection.
type openSpec struct {
	rate    int64
	workers int
	key     string
	warmup  time.Duration
	measure time.Duration
	// grace is how long after the window a backlog of operations intended
	// inside it is still sent. A target that falls further behind than that
	// gets the rest counted as not sent rather than stretching the step.
	grace time.Duration
	procs []serverProc // as closedSpec's
}

// runOpenLoop issues operations at their scheduled times and measures each
// acquire from its INTENDED send time, not from when a worker got round to
// it. A closed loop that waits for the slow reply before sending the next
// would let a stall hide every operation that should have been sent during
// it (coordinated omission); here those operations queue and their latency
// includes the queueing, as a real client's would.
func runOpenLoop(ctx context.Context, s openSpec, newLocker lockerFactory) stepResult {
	var setup errTally
	lockers := openLockers(ctx, s.workers, func(i int) string { return fmt.Sprintf("%s:%d", s.key, i) }, newLocker, &setup)
	// A small lead so the first operations are not late because the
	// workers were still starting.
	sched := schedule{start: time.Now().Add(10 * time.Millisecond), rate: s.rate}
	from, end := sched.start.Add(s.warmup), sched.start.Add(s.warmup+s.measure)
	cutoff := end.Add(s.grace)
	// The server CPU of a backlog sent in the grace period after the window
	// is not counted though its cycles are: that matters only for a target
	// that fell behind, which its not-sent count shows.
	use := measureWindow(ctx, from, end, pidsOf(s.procs))
	var next, sent atomic.Int64
	workers := make([]*worker, len(lockers))
	var wg sync.WaitGroup
	for i, l := range lockers {
		workers[i] = &worker{l: l}
		w := workers[i]
		wg.Go(func() {
			for ctx.Err() == nil {
				idx := next.Add(1) - 1
				due := sched.at(idx)
				if !due.Before(end) || time.Now().After(cutoff) {
					return
				}
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				inWindow := !due.Before(from)
				if inWindow {
					sent.Add(1)
				}
				_, err := w.l.Acquire(ctx)
				done := time.Now()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					w.errs.add("acquire: %v", err)
					continue
				}
				if err := w.l.Release(ctx); err != nil {
					w.errs.add("release: %v", err)
					continue
				}
				if inWindow {
					w.lat.Record(done.Sub(due))
					w.cycles++
				}
			}
		})
	}
	wg.Wait()
	closeLockers(lockers, &setup)
	r := summarize(closedSpec{workload: "openloop", clients: s.workers}, workers, setup, s.measure)
	r.OfferedPerSec = float64(s.rate)
	r.NotSent = sched.countIn(from, end) - sent.Load()
	r.setWindowUse(use(), s.procs)
	if ctx.Err() != nil {
		r.NotSent = 0 // interrupted: the missing operations are the user's doing
	}
	return r
}
