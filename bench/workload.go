package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sessionTTL is long enough that no session expires during a step even if a
// worker stalls; every FLOCK/FUNLOCK renews it anyway.
const sessionTTL = 30000

// opTimeout bounds one non-waiting command; a hung server shows up as an error.
const opTimeout = 5 * time.Second

// contendedClients is fixed by SPEC section 10 (P4: 16 clients, one lock).
const contendedClients = 16

// step describes one measured run of one workload.
type step struct {
	addr      string
	workload  string // "uncontended" or "contended"
	clients   int
	waitMs    int // > 0: FLOCK ... WAIT waitMs on one shared lock
	run       string
	warmup    time.Duration
	measure   time.Duration
	startedAt time.Time // set when workers start; window = [startedAt+warmup, +measure)
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

// worker is one client's private tally; workers share nothing while running.
type worker struct {
	session string
	lock    string
	lat     Recorder
	cycles  int64
	errs    errTally
}

// runUncontended runs one step per client count.
func runUncontended(ctx context.Context, addr, run string, clients []int, warmup, measure time.Duration) []stepResult {
	var out []stepResult
	for _, n := range clients {
		if ctx.Err() != nil {
			break // interrupted: report what was measured
		}
		out = append(out, runStep(ctx, &step{addr: addr, workload: "uncontended", clients: n,
			run: fmt.Sprintf("%s-%d", run, n), warmup: warmup, measure: measure}))
	}
	return out
}

// runContended runs the 16-clients-one-lock WAIT step.
func runContended(ctx context.Context, addr, run string, waitMs int, warmup, measure time.Duration) stepResult {
	return runStep(ctx, &step{addr: addr, workload: "contended WAIT", clients: contendedClients,
		waitMs: waitMs, run: run + "-contended", warmup: warmup, measure: measure})
}

func runStep(ctx context.Context, s *step) stepResult {
	// A waiting FLOCK may legitimately block for waitMs, so the read timeout
	// must outlast it or go-redis would cut the wait short.
	rdb := newClient(s.addr, s.clients, opTimeout+time.Duration(s.waitMs)*time.Millisecond)
	defer rdb.Close()
	var setup errTally
	workers := make([]*worker, 0, s.clients)
	for i := range s.clients {
		lock := fmt.Sprintf("bench:%s:%d", s.run, i)
		if s.waitMs > 0 {
			lock = fmt.Sprintf("bench:%s:shared", s.run)
		}
		id, err := rdb.Do(ctx, "SESSION.OPEN", "TTL", sessionTTL, "NAME", fmt.Sprintf("bench-%s-%d", s.run, i)).Text()
		if err != nil {
			setup.add("SESSION.OPEN: %v", err)
			continue
		}
		workers = append(workers, &worker{session: id, lock: lock})
	}
	s.startedAt = time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.loop(ctx, rdb, s) })
	}
	wg.Wait()
	// The window is shorter than asked only if the run was interrupted.
	from := s.startedAt.Add(s.warmup)
	window := min(time.Since(from), s.measure)
	killSessions(rdb, workers, &setup)
	return summarize(s, workers, setup, window)
}

func (w *worker) loop(ctx context.Context, rdb *redis.Client, s *step) {
	from := s.startedAt.Add(s.warmup)
	to := from.Add(s.measure)
	flock := []any{"FLOCK", w.lock, w.session}
	if s.waitMs > 0 {
		flock = append(flock, "WAIT", s.waitMs)
	}
	unlock := []any{"FUNLOCK", w.lock, w.session}
	for ctx.Err() == nil && time.Now().Before(to) {
		t0 := time.Now()
		tok, err := rdb.Do(ctx, flock...).Int64()
		t1 := time.Now()
		switch {
		case ctx.Err() != nil:
			return // interrupted by the user, not a server error
		case isRedisNil(err) && s.waitMs > 0:
			// A timed-out wait is a failure, not a grant: counted as an
			// error and kept out of the wait percentiles.
			w.errs.add("FLOCK WAIT %d timed out (null reply)", s.waitMs)
			continue
		case isRedisNil(err):
			w.errs.add("FLOCK returned null on a lock only this client uses")
			pause()
			continue
		case err != nil:
			w.errs.add("FLOCK: %v", err)
			pause()
			continue
		case tok <= 0:
			w.errs.add("FLOCK: token %d, want > 0", tok)
		}
		// A cycle belongs to the window its FLOCK completed in, so acquire
		// samples and cycles count the same operations.
		inWindow := !t1.Before(from) && t1.Before(to)
		if inWindow {
			w.lat.Record(t1.Sub(t0))
		}
		left, err := rdb.Do(ctx, unlock...).Int64()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.errs.add("FUNLOCK: %v", err)
			pause()
		case left != 0:
			w.errs.add("FUNLOCK: remaining hold count %d, want 0", left)
		case inWindow:
			w.cycles++
		}
	}
}

// pause keeps a worker from spinning at full speed on a hard error such as a
// refused connection, which would drown the figures in error counts.
func pause() { time.Sleep(time.Millisecond) }

// killSessions ends every session of the step (releasing anything still held)
// and reports any that had already expired, since that means lost locks.
func killSessions(rdb *redis.Client, workers []*worker, errs *errTally) {
	// A fresh context: the sessions must go even if the run was interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, w := range workers {
		n, err := rdb.Do(ctx, "SESSION.KILL", w.session).Int64()
		switch {
		case err != nil:
			errs.add("SESSION.KILL: %v", err)
		case n != 1:
			errs.add("SESSION.KILL: session %s was no longer open (expired during the step)", w.session)
		}
	}
}

func summarize(s *step, workers []*worker, setup errTally, window time.Duration) stepResult {
	var all Recorder
	errs := setup
	r := stepResult{Workload: s.workload, Clients: s.clients, Seconds: max(0, window.Seconds())}
	for _, w := range workers {
		all.Merge(&w.lat)
		errs.merge(w.errs)
		r.Cycles += w.cycles
		r.GrantsPerClient = append(r.GrantsPerClient, w.cycles)
	}
	sum := all.Summary()
	r.Samples = sum.Count
	if r.Seconds > 0 {
		r.PerSec = float64(r.Cycles) / r.Seconds
	}
	r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = ms(sum.P50), ms(sum.P99), ms(sum.P999), ms(sum.Max)
	r.Errors, r.FirstError = errs.n, errs.first
	if s.waitMs == 0 {
		r.GrantsPerClient = nil // per-client counts only mean something on a shared lock
		return r
	}
	if sum.P50 > 0 {
		ratio := float64(sum.P99) / float64(sum.P50)
		r.P99OverP50 = &ratio
	}
	lo, hi := int64(-1), int64(0)
	for _, g := range r.GrantsPerClient {
		hi = max(hi, g)
		if lo < 0 || g < lo {
			lo = g
		}
	}
	if lo > 0 && len(r.GrantsPerClient) == s.clients {
		f := float64(hi) / float64(lo)
		r.Fairness = &f
	}
	return r
}

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
