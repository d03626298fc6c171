package raftstore

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Bounds of what the leader sends a follower, in bytes. hashicorp/raft
// bounds an append by its count of entries (Config.MaxAppendEntries) only:
// 512 entries of 4 MiB MSETs made one append of 2 GiB, and a pipeline
// keeps up to 128 appends in flight to a follower that does not answer (a
// paused process, a full socket), all of it on the leader's heap. An
// append is trimmed to appendBytes of entries (at least one entry), and a
// pipeline sends no more while pipelineBytes are unanswered (at least one
// append).
const (
	appendBytes   = 8 << 20
	pipelineBytes = 32 << 20
	// maxAppendEntries is raft's count bound, which still decides how many
	// entries the leader reads from its log to build one append before
	// trimAppend sees it, and how many a follower hands its state machine
	// at once.
	maxAppendEntries = 16
)

// appendSize is the bytes of entries an append carries.
func appendSize(args *raft.AppendEntriesRequest) int64 {
	if args == nil {
		return 0
	}
	var n int64
	for _, l := range args.Entries {
		n += int64(len(l.Data)+len(l.Extensions)) + logOverhead
	}
	return n
}

// trimAppend cuts args to its first entries that fit in appendBytes, at
// least one. Raft reads the request's entries again after the send to
// learn what it sent (updateLastAppended, pipelineSend), so the rest is
// sent by its next append, as if it had been proposed later.
func trimAppend(args *raft.AppendEntriesRequest) {
	var n int64
	for i, l := range args.Entries {
		n += int64(len(l.Data)+len(l.Extensions)) + logOverhead
		if n > appendBytes && i > 0 {
			clear(args.Entries[i:]) // the dropped entries' data may be collected now
			args.Entries = args.Entries[:i]
			return
		}
	}
}

// inflight bounds bytes in flight: acquire waits for room, release gives
// it back. Whatever is asked is let in when nothing is in flight.
type inflight struct {
	max   int64
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced whenever bytes come back
	total *atomic.Int64 // a sum over several, if not nil
}

func newInflight(max int64, total *atomic.Int64) *inflight {
	return &inflight{max: max, freed: make(chan struct{}), total: total}
}

func (f *inflight) count(n int64) {
	if f.total != nil {
		f.total.Add(n)
	}
}

// tryAcquire takes room for size bytes if there is some now.
func (f *inflight) tryAcquire(size int64) bool {
	f.mu.Lock()
	if f.used != 0 && f.used+size > f.max {
		f.mu.Unlock()
		return false
	}
	f.used += size
	f.mu.Unlock()
	f.count(size)
	return true
}

// acquire waits for room for size bytes; false if closed was closed first.
func (f *inflight) acquire(size int64, closed <-chan struct{}) bool {
	ok, _ := f.acquireUntil(size, closed, nil)
	return ok
}

// acquireUntil waits for room for size bytes until stop is closed or
// expired fires (timedOut).
func (f *inflight) acquireUntil(size int64, stop <-chan struct{}, expired <-chan time.Time) (ok, timedOut bool) {
	for {
		if f.tryAcquire(size) {
			return true, false
		}
		f.mu.Lock()
		freed := f.freed
		f.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false, false
		case <-expired:
			return false, true
		}
	}
}

// Used is the bytes in flight.
func (f *inflight) Used() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

func (f *inflight) release(size int64) {
	f.mu.Lock()
	size = min(size, f.used) // after drain, nothing is left to give back
	f.used -= size
	close(f.freed)
	f.freed = make(chan struct{})
	f.mu.Unlock()
	f.count(-size)
}

// drain gives back everything in flight: the pipeline closed, and its
// unanswered appends will never be answered.
func (f *inflight) drain() {
	f.mu.Lock()
	size := f.used
	f.mu.Unlock()
	f.release(size)
}
