package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// keysSpec is workload g: a large keyspace read whole (KEYS *, then a SCAN
// to the end) while lockers take and release their locks, so that the
// cost of a long read to the writes beside it shows: a long read must
// never hold up writes (the server reads in bounded steps,
// raftstore.Node.ReadSteps).
type keysSpec struct {
	keys      int
	lockers   int
	baseline  time.Duration // lockers alone, before the reads
	scanCount int           // SCAN's COUNT
}

// keysResult is workload g's figures.
type keysResult struct {
	Target      string  `json:"target"`
	Keys        int     `json:"keys"`
	Lockers     int     `json:"lockers"`
	LoadSeconds float64 `json:"load_seconds"`
	// Lock latency (FLOCK, each locker its own lock) in three windows: the
	// lockers alone, during KEYS *, during the SCAN to the end.
	Baseline    windowLatency `json:"baseline"`
	DuringKeys  windowLatency `json:"during_keys"`
	DuringScan  windowLatency `json:"during_scan"`
	KeysSeconds float64       `json:"keys_seconds"`
	KeysFound   int           `json:"keys_found"`
	ScanSeconds float64       `json:"scan_seconds"`
	ScanCalls   int           `json:"scan_calls"`
	ScanFound   int           `json:"scan_found"`
	ScanCount   int           `json:"scan_count"`
	Errors      int64         `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
}

// windowLatency is the acquires of one window.
type windowLatency struct {
	Seconds float64 `json:"seconds"`
	Samples int     `json:"samples"`
	PerSec  float64 `json:"acquires_per_sec"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// timedSample is one acquire: when it was sent and how long it took.
type timedSample struct {
	at  time.Time
	lat time.Duration
}

// window summarises the samples whose acquire overlapped [from, to): an
// acquire held up by the whole read is counted, whenever it started.
func window(samples []timedSample, from, to time.Time) windowLatency {
	var rec Recorder
	for _, s := range samples {
		if s.at.Before(to) && s.at.Add(s.lat).After(from) {
			rec.Record(s.lat)
		}
	}
	sum := rec.Summary()
	w := windowLatency{Seconds: to.Sub(from).Seconds(), Samples: sum.Count, P50Ms: ms(sum.P50), P99Ms: ms(sum.P99), MaxMs: ms(sum.Max)}
	if w.Seconds > 0 {
		w.PerSec = float64(sum.Count) / w.Seconds
	}
	return w
}

// runKeys loads the keys through the leader, starts the lockers on it,
// and reads the keyspace there twice while they run.
func runKeys(ctx context.Context, c *fencedCluster, s keysSpec) (keysResult, error) {
	r := keysResult{Target: c.name, Keys: s.keys, Lockers: s.lockers, ScanCount: s.scanCount}
	leader, err := c.waitLeader(ctx)
	if err != nil {
		return r, err
	}
	var errs errTally
	t0 := time.Now()
	loadKeys(ctx, leader.addr, s.keys, 16, &errs)
	r.LoadSeconds = time.Since(t0).Seconds()
	if err := c.waitAllApplied(ctx, leader); err != nil {
		return r, err
	}

	newLocker := fencedNative([]string{leader.work}, 0)
	lockers := openLockers(ctx, s.lockers, func(i int) string { return fmt.Sprintf("bench:keys:lock:%d", i) }, newLocker, &errs)
	lctx, stop := context.WithCancel(ctx)
	samples := make([][]timedSample, len(lockers))
	tallies := make([]errTally, len(lockers))
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() { samples[i] = lockLoop(lctx, l, &tallies[i]) })
	}

	rdb := newClient(leader.addr, 1, 5*time.Minute)
	defer rdb.Close()
	b0 := time.Now()
	sleepCtx(ctx, s.baseline)
	b1 := time.Now()
	k0 := time.Now()
	names, err := rdb.Keys(ctx, "*").Result()
	k1 := time.Now()
	if err != nil {
		errs.add("KEYS: %v", err)
	}
	r.KeysFound = len(names)
	names = nil
	sleepCtx(ctx, time.Second) // the KEYS reply's garbage, off the scan's window
	s0 := time.Now()
	var cursor uint64
	for {
		page, next, err := rdb.Scan(ctx, cursor, "*", int64(s.scanCount)).Result()
		if err != nil {
			errs.add("SCAN: %v", err)
			break
		}
		r.ScanCalls++
		r.ScanFound += len(page)
		if cursor = next; cursor == 0 {
			break
		}
	}
	s1 := time.Now()
	stop()
	wg.Wait()
	closeLockers(lockers, &errs)

	var all []timedSample
	for i := range lockers {
		all = append(all, samples[i]...)
		errs.merge(tallies[i])
	}
	r.Baseline = window(all, b0, b1)
	r.DuringKeys = window(all, k0, k1)
	r.DuringScan = window(all, s0, s1)
	r.KeysSeconds, r.ScanSeconds = k1.Sub(k0).Seconds(), s1.Sub(s0).Seconds()
	r.Errors, r.FirstError = errs.n, errs.first
	return r, ctx.Err()
}

// lockLoop acquires and releases its lock until ctx ends, timing each
// acquire.
func lockLoop(ctx context.Context, l locker, errs *errTally) []timedSample {
	var out []timedSample
	for ctx.Err() == nil {
		at := time.Now()
		_, err := l.Acquire(ctx)
		lat := time.Since(at)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			errs.add("acquire: %v", err)
			pause()
			continue
		}
		out = append(out, timedSample{at, lat})
		if err := l.Release(ctx); err != nil && ctx.Err() == nil {
			errs.add("release: %v", err)
			pause()
		}
	}
	return out
}
