package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeatSpec is workload d: many idle sessions kept alive.
type heartbeatSpec struct {
	sessions int
	conns    int           // connections carrying the heartbeats, pipelined: a few application processes
	interval time.Duration // each session heartbeats this often
	ttl      time.Duration
	window   time.Duration // CPU is measured over this, idle and loaded
}

// heartbeatResult is what the sessions cost the servers. CPU is given in
// core-percent (one core fully busy = 100 %, this 2-core machine = 200 %)
// and as a share of all the cores.
type heartbeatResult struct {
	Sessions       int     `json:"sessions"`
	Conns          int     `json:"connections"`
	IntervalMs     int64   `json:"interval_ms"`
	OfferedPerSec  float64 `json:"offered_heartbeats_per_sec"` // sessions / interval
	OpenSeconds    float64 `json:"open_seconds"`               // time to open the sessions, pipelined
	Seconds        float64 `json:"seconds"`
	Heartbeats     int64   `json:"heartbeats"`
	PerSec         float64 `json:"heartbeats_per_sec"`
	BatchP50Ms     float64 `json:"batch_rtt_p50_ms"`
	BatchP99Ms     float64 `json:"batch_rtt_p99_ms"`
	Errors         int64   `json:"errors"`
	FirstError     string  `json:"first_error,omitempty"`
	Cores          int     `json:"cores"`
	IdleCorePct    float64 `json:"server_cpu_idle_core_pct"`
	LoadedCorePct  float64 `json:"server_cpu_heartbeating_core_pct"`
	CostShare      float64 `json:"cost_share_of_machine_pct"` // (loaded - idle) / (cores * 100 %)
	ClientCorePct  float64 `json:"bench_client_cpu_core_pct"`
	SessionsOpened int     `json:"sessions_opened"`
}

// serverCPU returns the CPU time the processes used over window, as
// core-percent.
func serverCPU(ctx context.Context, pids []int, window time.Duration) (float64, error) {
	before, err := sumCPU(pids)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	after, err := sumCPU(pids)
	if err != nil {
		return 0, err
	}
	return corePct(after-before, time.Since(start)), nil
}

func sumCPU(pids []int) (time.Duration, error) {
	each, err := procsCPU(pids)
	var sum time.Duration
	for _, t := range each {
		sum += t
	}
	return sum, err
}

// corePct is CPU time used over a wall-clock window, in core-percent.
func corePct(used, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * used.Seconds() / wall.Seconds()
}

// dueCount is how many heartbeats are due by elapsed since the start when n
// sessions each beat once per interval, spread evenly: session k's beats are
// at k*interval/n + j*interval. Computed from the elapsed time, so a late
// tick sends the backlog instead of dropping it.
func dueCount(elapsed, interval time.Duration, n int) int64 {
	if elapsed < 0 || n <= 0 || interval <= 0 {
		return 0
	}
	return int64(elapsed)*int64(n)/int64(interval) + 1
}

// runHeartbeat measures the idle cluster's CPU, opens the sessions, lets
// them heartbeat for one interval (every session has renewed once), then
// measures the CPU over the window while they go on.
func runHeartbeat(ctx context.Context, c *fencedCluster, s heartbeatSpec) (heartbeatResult, error) {
	r := heartbeatResult{Sessions: s.sessions, Conns: s.conns, IntervalMs: s.interval.Milliseconds(), Cores: numCores(),
		OfferedPerSec: float64(s.sessions) / s.interval.Seconds()}
	// A moment for the new cluster to finish its start-up work (elections,
	// the joins' catch-up) so the idle figure is the steady state.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return r, err
	}
	var err error
	if r.IdleCorePct, err = serverCPU(ctx, c.pids(), s.window); err != nil {
		return r, err
	}
	// At the leader: it pipelines a connection's heartbeats into shared
	// commits, where a follower forwards them one at a time.
	leader, err := c.waitLeader(ctx)
	if err != nil {
		return r, err
	}
	addrs := []string{leader.addr}
	conns := make([]*redis.Client, s.conns)
	for i := range conns {
		// A heartbeat answered after the TTL is useless, but until then a
		// slow reply is a slow server, not a lost session.
		conns[i] = newClient(addrs[i%len(addrs)], 1, s.ttl)
		defer conns[i].Close()
	}
	// Opened through one node, spread over the heartbeat connections
	// round-robin; a connection then renews only its own sessions.
	t0 := time.Now()
	all, errs := openSessions(ctx, addrs[0], s.sessions, s.ttl)
	r.OpenSeconds = time.Since(t0).Seconds()
	r.SessionsOpened = len(all)
	ids := make([][]string, s.conns)
	for i, id := range all {
		ids[i%s.conns] = append(ids[i%s.conns], id)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}

	start := time.Now()
	measureFrom := start.Add(s.interval)
	end := measureFrom.Add(s.window)
	var wg sync.WaitGroup
	tallies := make([]hbTally, s.conns)
	for i := range conns {
		wg.Go(func() { tallies[i] = heartbeatLoop(ctx, conns[i], ids[i], s.interval, start, measureFrom, end) })
	}
	// The CPU window starts once every session has renewed at least once.
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(measureFrom)):
	}
	selfBefore, _ := cpuTime(os.Getpid())
	loaded, cpuErr := serverCPU(ctx, c.pids(), s.window)
	selfAfter, _ := cpuTime(os.Getpid())
	wg.Wait()
	if cpuErr != nil {
		return r, cpuErr
	}
	var rtt Recorder
	for i := range tallies {
		rtt.Merge(&tallies[i].rtt)
		r.Heartbeats += tallies[i].ok
		errs.merge(tallies[i].errs)
	}
	r.Seconds = s.window.Seconds()
	r.PerSec = float64(r.Heartbeats) / r.Seconds
	sum := rtt.Summary()
	r.BatchP50Ms, r.BatchP99Ms = ms(sum.P50), ms(sum.P99)
	r.Errors, r.FirstError = errs.n, errs.first
	r.LoadedCorePct = loaded
	r.CostShare = (loaded - r.IdleCorePct) / float64(r.Cores)
	r.ClientCorePct = corePct(selfAfter-selfBefore, s.window)
	return r, nil
}

type hbTally struct {
	ok   int64 // heartbeats answered in the measured window
	rtt  Recorder
	errs errTally
}

// heartbeatLoop sends, every few milliseconds, the heartbeats that have
// come due as one pipeline, until end.
func heartbeatLoop(ctx context.Context, rdb *redis.Client, ids []string, interval time.Duration, start, from, end time.Time) hbTally {
	var t hbTally
	if len(ids) == 0 {
		return t
	}
	var sent int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			return t
		}
		due := dueCount(now.Sub(start), interval, len(ids))
		if due > sent {
			pipe := rdb.Pipeline()
			cmds := make([]*redis.Cmd, 0, due-sent)
			for k := sent; k < due; k++ {
				cmds = append(cmds, pipe.Do(ctx, "SESSION.HEARTBEAT", ids[k%int64(len(ids))]))
			}
			t0 := time.Now()
			_, _ = pipe.Exec(ctx)
			t1 := time.Now()
			// Counted by when the answers came, so a backlog sent before
			// the window and answered in it counts, and the rate is what
			// the cluster got through while its CPU was measured.
			inWindow := !t1.Before(from) && t1.Before(end)
			if inWindow {
				t.rtt.Record(t1.Sub(t0))
			}
			for _, c := range cmds {
				if err := c.Err(); err != nil {
					if ctx.Err() == nil {
						t.errs.add("SESSION.HEARTBEAT: %v", err)
					}
				} else if inWindow {
					t.ok++
				}
			}
			sent = due
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	return t
}
