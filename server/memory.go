package server

import (
	"context"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// Returning memory to the system once a load stops. After a burst of
// large writes the heap holds freed spans that the runtime's background
// scavenger returns only slowly: a node stayed at 430 MB of RSS, idle, for
// minutes after a follower's catch-up had read 256 MB of log. When the
// node has been quiet for a whole interval (it allocated little), and
// enough heap is free but not yet returned, it collects and returns it at
// once. Under load it never does: the collector's own pace and the soft
// memory limit (limitHeap) bound the heap then.
const (
	idleMemInterval = 5 * time.Second
	idleMemAllocs   = 16 << 20 // allocated in an interval: at most this to count as quiet
	idleMemFree     = 32 << 20 // free heap worth returning
)

var idleMemSamples = []rtmetrics.Sample{
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
}

// returnIdleMemory runs until ctx ends.
func returnIdleMemory(ctx context.Context) {
	samples := make([]rtmetrics.Sample, len(idleMemSamples))
	copy(samples, idleMemSamples)
	t := time.NewTicker(idleMemInterval)
	defer t.Stop()
	var lastAllocs uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rtmetrics.Read(samples)
		allocs, free := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		quiet := allocs-lastAllocs < idleMemAllocs
		lastAllocs = allocs
		if quiet && free > idleMemFree {
			debug.FreeOSMemory()
			rtmetrics.Read(samples)
			lastAllocs = samples[0].Value.Uint64()
		}
	}
}

// clientBuffers sums the bytes the connections hold: the arguments of
// commands read and not yet answered, and the output not yet written.
func (s *Server) clientBuffers() (input, output int64) {
	for _, c := range s.rs.Conns() {
		input += c.QueuedInput()
		output += c.PendingOutput()
	}
	return input, output
}
