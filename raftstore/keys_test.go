package raftstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/raftstore/raftstoretest"
)

// TestKeysDoesNotHoldUpApply measures what a KEYS * over 200,000 keys
// costs the writes that commit while it runs: one writer commits SETs back
// to back on the leader, which the state machine can only apply with the
// state's write lock, while KEYS runs once in one go under the read lock
// (as before: Node.Read and the one-call KEYS), and once in steps
// (Node.ReadSteps and lockstate.Scan, as the server serves it now). It
// logs, for each, the KEYS's duration and the slowest write that committed
// during it; timings are reported, never asserted. What it asserts is the
// answer: both ways return the 200,000 names, sorted.
//
// On a 2-core machine, with -race: see the figures in the test log.
func TestKeysDoesNotHoldUpApply(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 200,000 keys")
	}
	c := raftstoretest.New(t, 1, nil)
	const n = 200_000
	args := []string{"MSET"}
	for i := range n {
		args = append(args, fmt.Sprintf("key:%07d", i), "v")
		if len(args) > 4000 || i == n-1 {
			if res := c.Propose(lockstate.Entry{Op: lockstate.OpExec, Args: args}); res.Err != nil {
				t.Fatal(res.Err)
			}
			args = []string{"MSET"}
		}
	}
	node := c.Node(c.Leader(leaderWait))
	oneGo := func(ctx context.Context) ([]string, error) {
		var names []string
		err := node.Read(ctx, func(st *lockstate.State, now int64) {
			for _, e := range st.Exec([]string{"KEYS", "*"}, now).Elems {
				names = append(names, e.Str)
			}
		})
		return names, err
	}
	// longest is the longest a step of inSteps held the state's read
	// lock: what an entry to apply waited for at most, on top of its
	// share of the CPU.
	var longest time.Duration
	steps := 0
	inSteps := func(ctx context.Context) ([]string, error) {
		sc := lockstate.NewKeysScan("*")
		longest, steps = 0, 0
		step := func(st *lockstate.State, now int64) bool {
			t0 := time.Now()
			done := sc.Step(st, now)
			longest = max(longest, time.Since(t0))
			steps++
			return done
		}
		if err := node.ReadSteps(ctx, step); err != nil {
			return nil, err
		}
		var names []string
		for _, e := range sc.Finish().Elems {
			names = append(names, e.Str)
		}
		return names, nil
	}
	// The baseline: the same writes while no KEYS runs, for 300 ms.
	idle := func(ctx context.Context) ([]string, error) {
		names := make([]string, 0, n+1)
		for i := range n {
			names = append(names, fmt.Sprintf("key:%07d", i))
		}
		time.Sleep(300 * time.Millisecond)
		return append(names, "w"), nil
	}
	for _, way := range []struct {
		name string
		keys func(context.Context) ([]string, error)
	}{{"none, 300 ms idle (baseline)", idle}, {"in one go (before)", oneGo}, {"in steps", inSteps}} {
		worst, p99, writes, took := keysWhileWriting(t, node, way.keys, n)
		t.Logf("KEYS * over %d keys, %s: took %v; %d writes committed meanwhile, p99 %v, slowest %v",
			n, way.name, took.Round(time.Millisecond), writes, p99.Round(time.Microsecond), worst.Round(time.Microsecond))
	}
	t.Logf("in steps: %d steps, the longest held the state lock for %v", steps, longest.Round(time.Microsecond))
}

// keysWhileWriting runs keys while one goroutine commits SETs, and returns
// the slowest and the p99 commit of those that overlapped it.
func keysWhileWriting(t *testing.T, node *raftstore.Node, keys func(context.Context) ([]string, error), n int) (worst, p99 time.Duration, writes int, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		lat   []time.Duration
		start time.Time
		end   time.Time
		mu    sync.Mutex
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if _, err := node.Propose(ctx, lockstate.Entry{Op: lockstate.OpExec, Args: []string{"SET", "w", fmt.Sprint(i)}}); err != nil {
				t.Error(err)
				return
			}
			t1 := time.Now()
			mu.Lock()
			if !start.IsZero() && t1.After(start) && (end.IsZero() || t0.Before(end)) {
				lat = append(lat, t1.Sub(t0))
			}
			mu.Unlock()
		}
	}()
	time.Sleep(50 * time.Millisecond) // the writer is going
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	names, err := keys(ctx)
	mu.Lock()
	end = time.Now()
	mu.Unlock()
	time.Sleep(50 * time.Millisecond) // the write that overlapped the end commits
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != n+1 || !slices.IsSorted(names) { // the n keys and "w"
		t.Fatalf("KEYS answered %d names (sorted: %v), want %d", len(names), slices.IsSorted(names), n+1)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	if len(lat) > 0 {
		worst, p99 = lat[len(lat)-1], lat[len(lat)*99/100]
	}
	return worst, p99, len(lat), end.Sub(start)
}
