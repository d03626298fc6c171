package server

import (
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/lockstate"
)

// stats are the node's counters, shown by INFO (stats, commandstats,
// errorstats) and /metrics. They only ever grow, as Prometheus needs its
// counters to: CONFIG RESETSTAT does not zero them but records where they
// stood (base), and INFO shows what they gained since, as Redis's INFO
// counts from its last reset.
type stats struct {
	commands atomic.Int64
	errors   atomic.Int64
	calls    map[string]*cmdStats // per command of the table; INFO commandstats
	// pipelinedWrites counts the writes a leader proposed while an earlier
	// write of the same connection was still unanswered (pipeline.go).
	pipelinedWrites atomic.Int64
	// expired counts what the deadlines of the entries this node applied
	// ended (lockstate.Expirations).
	expiredSessions, expiredLocks, expiredKeys, expiredWaits atomic.Int64

	errMu   sync.Mutex
	errCode map[string]int64 // error replies by code: INFO errorstats

	base atomic.Pointer[statCounts] // at the last CONFIG RESETSTAT; nil: none
}

// cmdStats is one command's line of INFO commandstats, and its latency
// histogram on /metrics (cmdBuckets).
type cmdStats struct {
	calls, nsec atomic.Int64
	// rejected: refused before it ran (arity, permissions, a full disk);
	// failed: it ran and answered an error.
	rejected, failed atomic.Int64
	// buckets[i] counts the calls that took at most cmdBuckets[i] and more
	// than the bound before; the last one, those above every bound.
	buckets [len(cmdBuckets) + 1]atomic.Int64
}

// cmdBuckets are the bounds, in seconds, of the commands' latency
// histograms: from a read served from memory to a FLOCK that waited.
var cmdBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// ran counts a call that ran and took d.
func (cs *cmdStats) ran(d time.Duration) {
	cs.calls.Add(1)
	cs.nsec.Add(d.Nanoseconds())
	cs.buckets[sort.SearchFloat64s(cmdBuckets[:], d.Seconds())].Add(1)
}

// maxErrorCodes bounds INFO errorstats, as Redis does (128): a script may
// make up error codes. Since the counts are never zeroed, a code first seen
// once the bound is reached is not counted until the process restarts.
const maxErrorCodes = 128

// countError counts an error reply under its code (its first word).
func (st *stats) countError(msg string) {
	code, _, _ := strings.Cut(msg, " ")
	st.errMu.Lock()
	defer st.errMu.Unlock()
	if st.errCode == nil {
		st.errCode = make(map[string]int64)
	}
	if _, ok := st.errCode[code]; ok || len(st.errCode) < maxErrorCodes {
		st.errCode[code]++
	}
}

// countExpired counts what applied entries' deadlines ended.
func (st *stats) countExpired(e lockstate.Expirations) {
	st.expiredSessions.Add(int64(e.Sessions))
	st.expiredLocks.Add(int64(e.Locks))
	st.expiredKeys.Add(int64(e.Keys))
	st.expiredWaits.Add(int64(e.Waits))
}

// statCounts are the counters read at one moment, or what they gained
// since the last reset (sinceReset).
type statCounts struct {
	commands, errors, pipelinedWrites int64
	expiredSessions, expiredLocks     int64
	expiredKeys, expiredWaits         int64
	calls                             map[string]cmdCounts
	errCode                           map[string]int64
}

type cmdCounts struct{ calls, nsec, rejected, failed int64 }

// totals reads the counters.
func (st *stats) totals() *statCounts {
	c := &statCounts{
		commands: st.commands.Load(), errors: st.errors.Load(), pipelinedWrites: st.pipelinedWrites.Load(),
		expiredSessions: st.expiredSessions.Load(), expiredLocks: st.expiredLocks.Load(),
		expiredKeys: st.expiredKeys.Load(), expiredWaits: st.expiredWaits.Load(),
		calls: make(map[string]cmdCounts, len(st.calls)),
	}
	for name, cs := range st.calls {
		c.calls[name] = cmdCounts{cs.calls.Load(), cs.nsec.Load(), cs.rejected.Load(), cs.failed.Load()}
	}
	st.errMu.Lock()
	c.errCode = maps.Clone(st.errCode)
	st.errMu.Unlock()
	return c
}

// sinceReset is what the counters gained since the last CONFIG RESETSTAT:
// INFO's figures. The base is read first, so every count is at least its
// base.
func (st *stats) sinceReset() *statCounts {
	base := st.base.Load()
	c := st.totals()
	if base == nil {
		return c
	}
	c.commands -= base.commands
	c.errors -= base.errors
	c.pipelinedWrites -= base.pipelinedWrites
	c.expiredSessions -= base.expiredSessions
	c.expiredLocks -= base.expiredLocks
	c.expiredKeys -= base.expiredKeys
	c.expiredWaits -= base.expiredWaits
	for name, cc := range c.calls {
		b := base.calls[name]
		c.calls[name] = cmdCounts{cc.calls - b.calls, cc.nsec - b.nsec, cc.rejected - b.rejected, cc.failed - b.failed}
	}
	for code, n := range c.errCode {
		if n -= base.errCode[code]; n > 0 {
			c.errCode[code] = n
		} else {
			delete(c.errCode, code)
		}
	}
	return c
}

// reset starts INFO's counts afresh: CONFIG RESETSTAT.
func (st *stats) reset() { st.base.Store(st.totals()) }
