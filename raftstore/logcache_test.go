package raftstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the store beneath the cache.
type countingStore struct {
	*LogStore
	gets int
}

func (s *countingStore) GetLog(idx uint64, l *raft.Log) error {
	s.gets++
	return s.LogStore.GetLog(idx, l)
}

func sizedLog(idx uint64, size int, gen int) *raft.Log {
	data := bytes.Repeat([]byte{byte(idx)}, size)
	copy(data, fmt.Sprintf("%d/%d/", idx, gen))
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}
}

// The cache answers what the store holds, whatever was appended, deleted
// or overwritten, and never holds more than its bytes or entries: a model
// (a map of what was stored last at each index) is checked after every
// step of a random sequence.
func TestLogCacheModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			store, _ := newMemStore(t)
			const entries, budget = 8, 64 << 10
			c := newLogCache(store, entries, budget)
			model := map[uint64][]byte{}
			first, last, gen := uint64(1), uint64(0), 0
			for step := range 200 {
				gen++
				switch op := rng.IntN(10); {
				case op < 6 || last < first: // append a few entries
					var logs []*raft.Log
					for range 1 + rng.IntN(4) {
						last++
						size := rng.IntN(budget / 4)
						if rng.IntN(10) == 0 {
							size = budget + rng.IntN(budget) // larger than the whole cache
						}
						logs = append(logs, sizedLog(last, size, gen))
					}
					if err := c.StoreLogs(logs); err != nil {
						t.Fatal(err)
					}
					for _, l := range logs {
						model[l.Index] = l.Data
						l.Data = nil // the cache keeps its own copy of the raft.Log
					}
				case op < 8: // a follower replaces a conflicting suffix
					from := first + uint64(rng.IntN(int(last-first+1)))
					if err := c.DeleteRange(from, last); err != nil {
						t.Fatal(err)
					}
					for i := from; i <= last; i++ {
						delete(model, i)
					}
					last = from - 1
				default: // compaction after a snapshot
					to := first + uint64(rng.IntN(int(last-first+1)))
					if err := c.DeleteRange(first, to); err != nil {
						t.Fatal(err)
					}
					for i := first; i <= to; i++ {
						delete(model, i)
					}
					first = to + 1
				}
				if b := c.Bytes(); b > budget || b < 0 {
					t.Fatalf("step %d: cache holds %d bytes, budget %d", step, b, budget)
				}
				if c.hi >= c.lo && c.hi-c.lo+1 > entries {
					t.Fatalf("step %d: cache holds %d entries, at most %d", step, c.hi-c.lo+1, entries)
				}
				var held int64
				for i := c.lo; i <= c.hi; i++ {
					held += logSize(&c.ring[i%entries])
				}
				if held != c.Bytes() {
					t.Fatalf("step %d: cache counts %d bytes, its entries hold %d", step, c.Bytes(), held)
				}
				for i := first; i <= last; i++ {
					var l raft.Log
					if err := c.GetLog(i, &l); err != nil {
						t.Fatalf("step %d: GetLog(%d): %v", step, i, err)
					}
					if l.Index != i || !bytes.Equal(l.Data, model[i]) {
						t.Fatalf("step %d: GetLog(%d) = index %d, %d bytes %.12q; want %d bytes %.12q", step, i, l.Index, len(l.Data), l.Data, len(model[i]), model[i])
					}
				}
			}
		})
	}
}

// Recent entries are read from memory, not from the store, while they fit.
func TestLogCacheServesRecent(t *testing.T) {
	store, _ := newMemStore(t)
	cs := &countingStore{LogStore: store}
	c := newLogCache(cs, 4096, 1<<20)
	var logs []*raft.Log
	for i := uint64(1); i <= 100; i++ {
		logs = append(logs, sizedLog(i, 100<<10, 0)) // 100 KiB: the last 10 fit
	}
	if err := c.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	for i := uint64(91); i <= 100; i++ {
		if err := c.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
	}
	if cs.gets != 0 {
		t.Fatalf("%d reads of the last 10 entries reached the store", cs.gets)
	}
	if err := c.GetLog(50, &l); err != nil || l.Index != 50 {
		t.Fatalf("GetLog(50) = %d, %v", l.Index, err)
	}
	if cs.gets != 1 {
		t.Fatalf("an evicted entry was read %d times from the store, want 1", cs.gets)
	}
	if b := c.Bytes(); b > 1<<20 || b < 9*100<<10 {
		t.Fatalf("cache holds %d bytes, want the last 9 or 10 entries' within 1 MiB", b)
	}
}
