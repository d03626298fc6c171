package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// contendedClients is fixed by target P4 (16 clients, one lock; spec.go).
const contendedClients = 16

// closedSpec is one closed-loop step: each worker acquires, releases and
// goes again at once, so throughput is what the target sustains.
type closedSpec struct {
	workload string // "uncontended" or "contended"
	clients  int
	shared   bool   // every worker on one lock (contended)
	key      string // lock-name prefix, unique per step so steps never meet
	warmup   time.Duration
	measure  time.Duration
	procs    []serverProc // the target's server processes, whose CPU the window costs
}

// errTally counts errors and keeps the earliest one's text, so nothing is
// silently dropped yet a failing server doesn't flood the output. The time
// lets merged tallies report the error that really came first, not a
// consequence of it (a failed SESSION.KILL after the server died).
type errTally struct {
	n     int64
	first string
	at    time.Time
}

func (e *errTally) add(format string, args ...any) {
	if e.n == 0 {
		e.first, e.at = fmt.Sprintf(format, args...), time.Now()
	}
	e.n++
}

func (e *errTally) merge(o errTally) {
	if o.n > 0 && (e.n == 0 || o.at.Before(e.at)) {
		e.first, e.at = o.first, o.at
	}
	e.n += o.n
}

// worker is one client's private tally; workers share nothing in the hot
// loop except, when contended, the exclusion check below.
type worker struct {
	l      locker
	lat    Recorder
	cycles int64
	errs   errTally
}

// exclusion checks, while contended, that no two workers hold the lock at
// once and that fencing tokens increase in grant order: a benchmark of a
// lock that does not exclude would be measuring nothing.
type exclusion struct {
	holders     atomic.Int32
	lastToken   atomic.Int64
	violations  atomic.Int64
	regressions atomic.Int64
}

func (x *exclusion) enter(tok int64) {
	if x.holders.Add(1) != 1 {
		x.violations.Add(1)
	}
	// Tokens are compared only while held, so the swaps happen in grant order.
	if tok > 0 {
		if prev := x.lastToken.Swap(tok); tok <= prev {
			x.regressions.Add(1)
		}
	}
}

func (x *exclusion) leave() { x.holders.Add(-1) }

// openLockers makes one locker per worker; a worker whose setup failed is
// left out and the failure counted.
func openLockers(ctx context.Context, n int, key func(i int) string, newLocker lockerFactory, errs *errTally) []locker {
	var out []locker
	for i := range n {
		l, err := newLocker(ctx, i, key(i))
		if err != nil {
			errs.add("setup: %v", err)
			continue
		}
		out = append(out, l)
	}
	return out
}

func closeLockers(ls []locker, errs *errTally) {
	for _, l := range ls {
		if err := l.Close(); err != nil {
			errs.add("close: %v", err)
		}
	}
}

// runClosed runs one closed-loop step and summarises it.
func runClosed(ctx context.Context, s closedSpec, newLocker lockerFactory) stepResult {
	var setup errTally
	key := func(i int) string { return fmt.Sprintf("%s:%d", s.key, i) }
	if s.shared {
		key = func(int) string { return s.key + ":shared" }
	}
	lockers := openLockers(ctx, s.clients, key, newLocker, &setup)
	workers := make([]*worker, len(lockers))
	var x exclusion
	start := time.Now()
	from, to := start.Add(s.warmup), start.Add(s.warmup+s.measure)
	use := measureWindow(ctx, from, to, pidsOf(s.procs))
	var wg sync.WaitGroup
	for i, l := range lockers {
		workers[i] = &worker{l: l}
		w := workers[i]
		wg.Go(func() { w.loop(ctx, from, to, s.shared, &x) })
	}
	wg.Wait()
	// The window is shorter than asked only if the run was interrupted.
	window := min(time.Since(from), s.measure)
	closeLockers(lockers, &setup)
	r := summarize(s, workers, setup, window)
	r.ExclusionViolations, r.TokenRegressions = x.violations.Load(), x.regressions.Load()
	r.setWindowUse(use(), s.procs)
	return r
}

func pidsOf(procs []serverProc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.pid
	}
	return out
}

func (w *worker) loop(ctx context.Context, from, to time.Time, shared bool, x *exclusion) {
	for ctx.Err() == nil && time.Now().Before(to) {
		t0 := time.Now()
		tok, err := w.l.Acquire(ctx)
		t1 := time.Now()
		switch {
		case ctx.Err() != nil:
			return // interrupted by the user, not a server error
		case errors.Is(err, errNotGranted) && shared:
			// A timed-out wait is a failure, not a grant: counted as an
			// error and kept out of the wait percentiles.
			w.errs.add("acquire: the wait timed out")
			continue
		case err != nil:
			w.errs.add("acquire: %v", err)
			pause()
			continue
		}
		if shared {
			x.enter(tok)
			x.leave() // zero hold time; the check is that enter saw no other holder
		}
		// A cycle belongs to the window its acquire completed in, so
		// latency samples and cycles count the same operations.
		inWindow := !t1.Before(from) && t1.Before(to)
		err = w.l.Release(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.errs.add("release: %v", err)
			pause()
		case inWindow:
			w.lat.Record(t1.Sub(t0))
			w.cycles++
		}
	}
}

// pause keeps a worker from spinning at full speed on a hard error such as a
// refused connection, which would drown the figures in error counts.
func pause() { time.Sleep(time.Millisecond) }

func summarize(s closedSpec, workers []*worker, setup errTally, window time.Duration) stepResult {
	var all Recorder
	errs := setup
	r := stepResult{Workload: s.workload, Clients: s.clients, Seconds: max(0, window.Seconds())}
	var grants []int64
	for _, w := range workers {
		all.Merge(&w.lat)
		errs.merge(w.errs)
		r.Cycles += w.cycles
		grants = append(grants, w.cycles)
	}
	r.setLatency(&all)
	if r.Seconds > 0 {
		r.PerSec = float64(r.Cycles) / r.Seconds
	}
	r.Errors, r.FirstError = errs.n, errs.first
	if !s.shared {
		return r // per-client counts and fairness only mean something on a shared lock
	}
	r.GrantsPerClient = grants
	if r.P50Ms > 0 {
		r.P99OverP50 = ptr(r.P99Ms / r.P50Ms)
	}
	r.Fairness = fairness(grants, s.clients)
	return r
}

// fairness is max/min grants per client; nil when undefined (a client that
// never got the lock, or one that never started).
func fairness(grants []int64, clients int) *float64 {
	if len(grants) != clients || len(grants) == 0 {
		return nil
	}
	lo, hi := grants[0], grants[0]
	for _, g := range grants {
		lo, hi = min(lo, g), max(hi, g)
	}
	if lo <= 0 {
		return nil
	}
	return ptr(float64(hi) / float64(lo))
}

func ptr(f float64) *float64 { return &f }

// parseClients parses "1,16,64".
func parseClients(spec string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad --clients entry %q: want a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
