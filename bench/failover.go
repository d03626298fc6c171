package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// failoverClients is the load kept running while the leader is killed.
const failoverClients = 16

// failoverResult is workload e for one target: how long after a kill -9 of
// the leader the first lock was granted again.
type failoverResult struct {
	Target     string    `json:"target"`
	Kills      []float64 `json:"seconds_to_first_grant"` // one per kill
	P50Sec     float64   `json:"p50_seconds"`
	MaxSec     float64   `json:"max_seconds"`
	Grants     int64     `json:"grants"` // over the whole step
	Errors     int64     `json:"errors"` // expected during each election
	FirstError string    `json:"first_error,omitempty"`
	Skipped    string    `json:"skipped,omitempty"`
}

// killableCluster is what the failover step needs of a replicated target:
// find its leader, and bring a killed member back until it serves.
type killableCluster interface {
	leaderProc(ctx context.Context) (*proc, error)
	restartProc(ctx context.Context, p *proc) error
}

func (c *fencedCluster) leaderProc(ctx context.Context) (*proc, error) {
	n, err := c.waitLeader(ctx)
	if err != nil {
		return nil, err
	}
	return n.proc, nil
}

func (c *fencedCluster) restartProc(ctx context.Context, p *proc) error {
	for _, n := range c.nodes {
		if n.proc == p {
			return c.restart(ctx, n)
		}
	}
	return fmt.Errorf("%s is not a node of %s", p.name, c.name)
}

func (c *etcdCluster) leaderProc(ctx context.Context) (*proc, error) {
	m, err := c.waitLeader(ctx)
	if err != nil {
		return nil, err
	}
	return m.proc, nil
}

func (c *etcdCluster) restartProc(ctx context.Context, p *proc) error {
	for _, m := range c.members {
		if m.proc == p {
			return c.restart(ctx, m)
		}
	}
	return fmt.Errorf("%s is not an etcd member", p.name)
}

// killWatch records, for the current kill, the first grant of an acquire
// SENT after it: an acquire already in flight at the kill proves nothing
// about the new leader.
type killWatch struct {
	mu     sync.Mutex
	killAt time.Time
	first  time.Time
}

func (k *killWatch) arm(t time.Time) {
	k.mu.Lock()
	k.killAt, k.first = t, time.Time{}
	k.mu.Unlock()
}

func (k *killWatch) granted(sent, done time.Time) {
	k.mu.Lock()
	if !k.killAt.IsZero() && sent.After(k.killAt) && k.first.IsZero() {
		k.first = done
	}
	k.mu.Unlock()
}

// since is the time from the kill to the first grant, 0 if none yet.
func (k *killWatch) since() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.first.IsZero() {
		return 0
	}
	return k.first.Sub(k.killAt)
}

// runFailover keeps failoverClients workers cycling on their own locks
// (spread over the members by the factory) and kills the leader kills
// times, restarting it and letting the load settle in between.
func runFailover(ctx context.Context, name string, c killableCluster, newLocker lockerFactory, kills int, settle time.Duration) failoverResult {
	r := failoverResult{Target: name}
	var errs errTally
	lockers := openLockers(ctx, failoverClients, func(i int) string { return fmt.Sprintf("bench:failover:%d", i) }, newLocker, &errs)
	var watch killWatch
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers := make([]*worker, len(lockers))
	for i, l := range lockers {
		workers[i] = &worker{l: l}
		w := workers[i]
		wg.Go(func() {
			for ctx.Err() == nil {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if _, err := w.l.Acquire(ctx); err != nil {
					w.errs.add("acquire: %v", err)
					time.Sleep(2 * time.Millisecond) // no busy loop against a dead node
					continue
				}
				watch.granted(t0, time.Now())
				w.cycles++
				if err := w.l.Release(ctx); err != nil {
					w.errs.add("release: %v", err)
				}
			}
		})
	}
	var durations []time.Duration
	for k := 0; k < kills && ctx.Err() == nil; k++ {
		if err := sleepCtx(ctx, settle); err != nil {
			break
		}
		p, err := c.leaderProc(ctx)
		if err != nil {
			errs.add("kill %d: find leader: %v", k+1, err)
			break
		}
		watch.arm(time.Now())
		p.kill()
		var d time.Duration
		err = waitFor(ctx, "first grant after the kill", readyTimeout, time.Millisecond, nil, func(context.Context) error {
			if d = watch.since(); d == 0 {
				return fmt.Errorf("no grant yet")
			}
			return nil
		})
		if err != nil {
			errs.add("kill %d: %v", k+1, err)
			break
		}
		durations = append(durations, d)
		r.Kills = append(r.Kills, d.Seconds())
		if err := c.restartProc(ctx, p); err != nil {
			errs.add("kill %d: restart %s: %v", k+1, p.name, err)
			break
		}
	}
	close(stop)
	wg.Wait()
	closeLockers(lockers, &errs)
	for _, w := range workers {
		r.Grants += w.cycles
		errs.merge(w.errs)
	}
	r.Errors, r.FirstError = errs.n, errs.first
	if len(durations) > 0 {
		var rec Recorder
		for _, d := range durations {
			rec.Record(d)
		}
		sum := rec.Summary()
		r.P50Sec, r.MaxSec = sum.P50.Seconds(), sum.Max.Seconds()
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
