package server

import (
	"context"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// gcHeadroom is the least the heap may grow between two garbage
// collections. Go's default (GOGC=100) lets it grow by the live heap, and a
// node's live heap is small beside what its command path allocates: at
// 64 clients the collector's marking was 5-6 % of a node's CPU with a live
// heap of a few tens of MiB. A larger state keeps the default, so the
// headroom costs at most this much memory, and only under load.
const gcHeadroom = 64 << 20

// tuneGC sets GOGC, once a second until ctx ends, so that the heap may grow
// by max(live heap, gcHeadroom) between collections. GOGC set in the
// environment wins; the memory limit (limitHeap) still bounds the heap.
func tuneGC(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	go func() {
		sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := 100
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rtmetrics.Read(sample)
			if sample[0].Value.Kind() != rtmetrics.KindUint64 {
				return
			}
			if pct := gcPercent(sample[0].Value.Uint64()); pct != last {
				debug.SetGCPercent(pct)
				last = pct
			}
		}
	}()
}

// gcPercent is the GOGC that lets a heap of live bytes grow by
// max(live, gcHeadroom): from 100 up to 1,000 (for a live heap of 6.4 MiB
// or less), in steps of 50 so that it changes seldom.
func gcPercent(live uint64) int {
	if live == 0 {
		return 1000
	}
	pct := min(uint64(1000), gcHeadroom*100/live)
	return max(100, int(pct/50*50))
}
