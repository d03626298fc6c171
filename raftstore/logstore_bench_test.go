package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs measures synced appends on disk (b.TempDir) against
// raft.InmemStore, which shows the cost of durability itself.
func BenchmarkStoreLogs(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) raft.LogStore
	}{
		{"pebble", func(b *testing.B) raft.LogStore {
			s, db := openDiskStore(b, b.TempDir())
			b.Cleanup(func() { db.Close() })
			return s
		}},
		{"inmem", func(*testing.B) raft.LogStore { return raft.NewInmemStore() }},
	}
	for _, st := range stores {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", st.name, batch), func(b *testing.B) {
				benchStoreLogs(b, st.open(b), batch)
			})
		}
	}
}

func benchStoreLogs(b *testing.B, s raft.LogStore, batch int) {
	data := make([]byte, 100)
	logs := make([]*raft.Log, batch)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
	}
	b.SetBytes(int64(batch * len(data)))
	b.ReportAllocs()
	next := uint64(1)
	var iters int
	for b.Loop() {
		for _, l := range logs {
			l.Index = next
			next++
		}
		if err := s.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
		iters++
	}
	b.ReportMetric(float64(iters*batch)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkGetLog reads random entries of a 10k-entry log that is partly in
// the memtable and partly flushed, as after a restart.
func BenchmarkGetLog(b *testing.B) {
	const n = 10_000
	s, db := openDiskStore(b, b.TempDir())
	defer db.Close()
	logs := make([]*raft.Log, 0, 100)
	for i := uint64(1); i <= n; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Data: make([]byte, 100)})
		if len(logs) == cap(logs) {
			if err := s.StoreLogs(logs); err != nil {
				b.Fatal(err)
			}
			logs = logs[:0]
		}
		if i == n/2 {
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	var l raft.Log
	idx := uint64(1)
	for b.Loop() {
		// A multiplicative step visits indexes in a scattered order
		// without a random source in the loop.
		idx = (idx*7919)%n + 1
		if err := s.GetLog(idx, &l); err != nil {
			b.Fatal(err)
		}
	}
}
