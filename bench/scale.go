package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// scaleSpec is workload f: a large state, then what it costs to hold,
// restart and copy to a new node.
type scaleSpec struct {
	keys       int
	valueBytes int // of each key's value
	sessions   int
}

// scaleResult is workload f's figures for the 3-node cluster.
type scaleResult struct {
	Keys            int              `json:"keys"`
	Sessions        int              `json:"sessions"`
	LoadSeconds     float64          `json:"load_seconds"`
	KeysPerSec      float64          `json:"keys_per_sec"`
	SessionsPerSec  float64          `json:"sessions_per_sec"`
	RSSBytes        map[string]int64 `json:"rss_bytes"`  // per node after loading
	DataBytes       map[string]int64 `json:"data_bytes"` // data directory size per node
	MaxRSSBytes     int64            `json:"max_rss_bytes"`
	RestartNode     string           `json:"restart_node"`
	RestartSeconds  float64          `json:"restart_seconds"` // exec to a linearizable read through it
	SnapshotSeconds float64          `json:"snapshot_seconds"`
	InstallSeconds  float64          `json:"snapshot_install_seconds"` // exec of the new node to applied >= commit at join
	InstallIndex    uint64           `json:"install_target_index"`
	// LogFirstIndex is the leader's first log index after RAFT.SNAPSHOT:
	// above 1, the new node can only catch up by installing the snapshot;
	// at 1 it replays the log instead (too few entries for --trailing-logs).
	LogFirstIndex   uint64 `json:"log_first_index"`
	NewNodeRSSBytes int64  `json:"new_node_rss_bytes"`
	// The new node's peak RSS (VmHWM): the most it held while it installed
	// the snapshot, against the snapshot's size (the records it carries).
	NewNodePeakRSSBytes int64  `json:"new_node_peak_rss_bytes"`
	SnapshotBytes       int64  `json:"snapshot_bytes"`
	Errors              int64  `json:"errors"`
	FirstError          string `json:"first_error,omitempty"`
}

// Loading: fenced answers the commands of one connection in order, each
// after its Raft commit, so a pipeline saves round trips but not commits;
// parallel connections are what let the leader batch many writes into one
// commit. Keys go 1,000 to an MSET (one entry each), sessions one per
// SESSION.OPEN, hence many more connections for those.
const (
	keyConns     = 8
	keyBatch     = 1000 // keys per MSET
	keyDepth     = 4    // MSETs per pipeline
	sessionConns = 64
	sessionBatch = 100 // SESSION.OPENs per pipeline
)

// runScale loads the state through the leader, reads each node's RSS, then
// times a follower's restart and a new node's snapshot install.
func runScale(ctx context.Context, c *fencedCluster, s scaleSpec) (scaleResult, error) {
	r := scaleResult{Keys: s.keys, Sessions: s.sessions, RSSBytes: map[string]int64{}, DataBytes: map[string]int64{}}
	leader, err := c.waitLeader(ctx)
	if err != nil {
		return r, err
	}
	var errs errTally
	t0 := time.Now()
	loadKeys(ctx, leader.addr, s.keys, s.valueBytes, &errs)
	t1 := time.Now()
	_, openErrs := openSessions(ctx, leader.addr, s.sessions, 24*time.Hour) // the largest TTL allowed: none expires during the step
	errs.merge(openErrs)
	t2 := time.Now()
	r.LoadSeconds = t2.Sub(t0).Seconds()
	r.KeysPerSec = float64(s.keys) / t1.Sub(t0).Seconds()
	r.SessionsPerSec = float64(s.sessions) / t2.Sub(t1).Seconds()
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	// Every node must have applied the load before its memory means anything.
	if err := c.waitAllApplied(ctx, leader); err != nil {
		return r, err
	}
	for _, n := range c.nodes {
		rss, err := rssBytes(n.proc.pid())
		if err != nil {
			return r, err
		}
		r.RSSBytes[n.id], r.MaxRSSBytes = rss, max(r.MaxRSSBytes, rss)
		r.DataBytes[n.id] = dirSize(n.dir)
	}

	// Restart: kill -9 a follower, start it again, time exec to serving.
	var follower *fencedNode
	for _, n := range c.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	if follower != nil {
		follower.proc.kill()
		r.RestartNode = follower.id
		start := time.Now()
		if err := c.restart(ctx, follower); err != nil {
			return r, err
		}
		r.RestartSeconds = time.Since(start).Seconds()
	}

	// Snapshot install: snapshot the leader, then a 4th node joins with an
	// empty data directory; timed from its exec until it has applied the
	// leader's commit index at join time.
	if leader, err = c.waitLeader(ctx); err != nil {
		return r, err
	}
	rdb := newClient(leader.addr, 1, 5*time.Minute)
	defer rdb.Close()
	ts := time.Now()
	if err := rdb.Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil {
		return r, fmt.Errorf("RAFT.SNAPSHOT: %w", err)
	}
	r.SnapshotSeconds = time.Since(ts).Seconds()
	st, err := leader.status(ctx)
	if err != nil {
		return r, err
	}
	if r.InstallIndex, err = statusUint(st, "commit_index"); err != nil {
		return r, err
	}
	if r.LogFirstIndex, err = statusUint(st, "first_index"); err != nil {
		return r, err
	}
	r.SnapshotBytes = newestSnapshotBytes(leader.dir)
	start := time.Now()
	n4, err := c.addNode(ctx, leader.raft)
	if err != nil {
		return r, err
	}
	if err := waitApplied(ctx, n4, r.InstallIndex, 5*time.Minute); err != nil {
		return r, err
	}
	r.InstallSeconds = time.Since(start).Seconds()
	r.NewNodeRSSBytes, _ = rssBytes(n4.proc.pid())
	// VmHWM is the peak over the process's life, which so far was the
	// install: no sampling needed.
	r.NewNodePeakRSSBytes, _ = peakRSSBytes(n4.proc.pid())
	r.Errors, r.FirstError = errs.n, errs.first
	return r, nil
}

// waitAllApplied waits until every node has applied what the leader had
// committed when asked.
func (c *fencedCluster) waitAllApplied(ctx context.Context, leader *fencedNode) error {
	st, err := leader.status(ctx)
	if err != nil {
		return err
	}
	commit, err := statusUint(st, "commit_index")
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := waitApplied(ctx, n, commit, readyTimeout); err != nil {
			return err
		}
	}
	return nil
}

// waitApplied polls the node's own RAFT.STATUS until its applied index
// reaches index.
func waitApplied(ctx context.Context, n *fencedNode, index uint64, timeout time.Duration) error {
	return waitFor(ctx, fmt.Sprintf("%s applied index %d", n.proc.name, index), timeout, 5*time.Millisecond, n.proc.exited(),
		func(ctx context.Context) error {
			st, err := n.status(ctx)
			if err != nil {
				return err
			}
			applied, err := statusUint(st, "applied_index")
			if err != nil {
				return err
			}
			if applied < index {
				return fmt.Errorf("applied %d", applied)
			}
			return nil
		})
}

// loadKeys writes keys bench:k:<i> with a value of size bytes (at least
// 16) in MSET batches.
func loadKeys(ctx context.Context, addr string, keys, size int, errs *errTally) {
	var mu sync.Mutex
	parallelBatches(ctx, addr, keys, keyBatch*keyDepth, keyConns, func(rdb *redis.Client, from, to int) {
		pipe := rdb.Pipeline()
		for lo := from; lo < to; lo += keyBatch {
			args := make([]any, 0, 1+2*keyBatch)
			args = append(args, "MSET")
			for i := lo; i < min(lo+keyBatch, to); i++ {
				args = append(args, fmt.Sprintf("bench:k:%d", i), fmt.Sprintf("%0*d", max(16, size), i))
			}
			pipe.Do(ctx, args...)
		}
		cmds, _ := pipe.Exec(ctx)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			if c.Err() != nil {
				errs.add("MSET: %v", c.Err())
			}
		}
	})
}

// openSessions opens n sessions with ttl through addr, pipelined over
// sessionConns connections, and returns their ids.
func openSessions(ctx context.Context, addr string, n int, ttl time.Duration) ([]string, errTally) {
	var mu sync.Mutex
	var ids []string
	var errs errTally
	parallelBatches(ctx, addr, n, sessionBatch, sessionConns, func(rdb *redis.Client, from, to int) {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, to-from)
		for range to - from {
			cmds = append(cmds, pipe.Do(ctx, "SESSION.OPEN", "TTL", ttl.Milliseconds()))
		}
		_, _ = pipe.Exec(ctx)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			if id, err := c.Text(); err != nil {
				errs.add("SESSION.OPEN: %v", err)
			} else {
				ids = append(ids, id)
			}
		}
	})
	return ids, errs
}

// parallelBatches splits [0, total) into batches and hands them to conns
// connections, each sending one batch at a time.
func parallelBatches(ctx context.Context, addr string, total, batch, conns int, send func(rdb *redis.Client, from, to int)) {
	batches := make(chan int)
	var wg sync.WaitGroup
	for range min(conns, (total+batch-1)/batch) {
		wg.Go(func() {
			rdb := newClient(addr, 1, time.Minute)
			defer rdb.Close()
			for from := range batches {
				send(rdb, from, min(from+batch, total))
			}
		})
	}
	for from := 0; from < total && ctx.Err() == nil; from += batch {
		batches <- from
	}
	close(batches)
	wg.Wait()
}

// newestSnapshotBytes is the size of the newest snapshot in a node's data
// directory (raft's file snapshot store: snapshots/<term-index-ms>/state.bin,
// whose names sort by time); 0 if there is none.
func newestSnapshotBytes(dir string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(files) == 0 {
		return 0
	}
	slices.Sort(files)
	info, err := os.Stat(files[len(files)-1])
	if err != nil {
		return 0
	}
	return info.Size()
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var sum int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				sum += info.Size()
			}
		}
		return nil
	})
	return sum
}
