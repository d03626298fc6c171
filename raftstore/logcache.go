package raftstore

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Bounds of the log cache. The cache spares Pebble reads when the leader
// sends fresh entries to its followers and when a follower applies what it
// just appended: the last few hundred entries are enough for both. A
// count alone bounded nothing useful: raft.LogCache's 4,096 slots held
// 4,096 entries whatever their size, gigabytes of 4 MiB MSETs, on every
// replica.
const (
	logCacheEntries = 4096
	logCacheBytes   = 16 << 20
	// logOverhead is what a cached entry costs besides its payload: the
	// raft.Log and the slot that points at it.
	logOverhead = 96
)

// logCache is a raft.LogStore that keeps the most recently stored entries
// in memory in front of the store, bounded by count and by bytes. It holds
// the newest contiguous run of entries and forgets the oldest first; an
// entry larger than the whole budget is not cached. It keeps a copy of
// each raft.Log, never the pointer raft hands it: the leader's pointer is
// a field of the proposal's future, which would keep that future's
// decoded result alive as long as the entry stays cached.
type logCache struct {
	store    raft.LogStore
	maxBytes int64

	mu   sync.RWMutex
	ring []raft.Log // entry i is at i % len(ring) while lo <= i <= hi
	lo   uint64     // lowest cached index; the cache is empty when lo > hi
	hi   uint64
	size atomic.Int64 // bytes of the cached entries (logSize)
}

var (
	_ raft.LogStore          = (*logCache)(nil)
	_ raft.MonotonicLogStore = (*logCache)(nil)
)

func newLogCache(store raft.LogStore, entries int, maxBytes int64) *logCache {
	return &logCache{store: store, maxBytes: maxBytes, ring: make([]raft.Log, entries), lo: 1}
}

// logSize is what an entry counts against the cache's bytes.
func logSize(l *raft.Log) int64 {
	return int64(len(l.Data)+len(l.Extensions)) + logOverhead
}

// Bytes is the memory the cached entries hold.
func (c *logCache) Bytes() int64 { return c.size.Load() }

// IsMonotonic implements raft.MonotonicLogStore for the store beneath.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.store.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// GetLog implements raft.LogStore.
func (c *logCache) GetLog(idx uint64, l *raft.Log) error {
	c.mu.RLock()
	if c.lo <= idx && idx <= c.hi {
		*l = c.ring[idx%uint64(len(c.ring))]
		c.mu.RUnlock()
		return nil
	}
	c.mu.RUnlock()
	return c.store.GetLog(idx, l)
}

// StoreLog implements raft.LogStore.
func (c *logCache) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: the entries are cached only once the
// store has them. The error keeps raft.LogCache's words, which Node.result
// recognises as a failed append.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return fmt.Errorf("unable to store logs within log store, err: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		c.add(l)
	}
	return nil
}

// add caches a copy of l, the newest entry; the caller holds mu.
func (c *logCache) add(l *raft.Log) {
	n := logSize(l)
	if l.Index != c.hi+1 || n > c.maxBytes {
		// Not the next entry (a follower overwrote a conflicting suffix,
		// or a snapshot left a gap), or too large to keep: what is cached
		// is no longer one run ending at the newest entry.
		c.clear()
		if n > c.maxBytes {
			c.lo, c.hi = l.Index+1, l.Index
			return
		}
		c.lo, c.hi = l.Index, l.Index-1
	}
	for c.hi >= c.lo && (c.hi-c.lo+1 >= uint64(len(c.ring)) || c.size.Load()+n > c.maxBytes) {
		c.evictOldest()
	}
	c.hi = l.Index
	c.ring[l.Index%uint64(len(c.ring))] = *l
	c.size.Add(n)
}

func (c *logCache) evictOldest() {
	slot := &c.ring[c.lo%uint64(len(c.ring))]
	c.size.Add(-logSize(slot))
	*slot = raft.Log{}
	c.lo++
}

// clear forgets every cached entry; the caller holds mu.
func (c *logCache) clear() {
	for c.hi >= c.lo {
		c.evictOldest()
	}
}

// FirstIndex implements raft.LogStore.
func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

// LastIndex implements raft.LogStore.
func (c *logCache) LastIndex() (uint64, error) { return c.store.LastIndex() }

// DeleteRange implements raft.LogStore. Raft deletes the oldest entries
// after a snapshot and a conflicting suffix on a follower; either way the
// cache is emptied, as raft.LogCache does, and refills from the next
// append.
func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	c.clear()
	c.mu.Unlock()
	return c.store.DeleteRange(lo, hi)
}
