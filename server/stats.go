package server

import (
	"strings"
	"sync"
	"sync/atomic"
)

// stats are the node's counters, shown by INFO (stats, commandstats,
// errorstats) and /metrics, and zeroed by CONFIG RESETSTAT.
type stats struct {
	commands atomic.Int64
	errors   atomic.Int64
	calls    map[string]*cmdStats // per command of the table; INFO commandstats
	// pipelinedWrites counts the writes a leader proposed while an earlier
	// write of the same connection was still unanswered (pipeline.go).
	pipelinedWrites atomic.Int64

	errMu   sync.Mutex
	errCode map[string]int64 // error replies by code: INFO errorstats
}

// cmdStats is one command's line of INFO commandstats.
type cmdStats struct {
	calls, usec atomic.Int64
	// rejected: refused before it ran (arity, permissions, a full disk);
	// failed: it ran and answered an error.
	rejected, failed atomic.Int64
}

// maxErrorCodes bounds INFO errorstats, as Redis does (128): a script may
// make up error codes.
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

// reset zeroes the counters: CONFIG RESETSTAT.
func (st *stats) reset() {
	st.commands.Store(0)
	st.errors.Store(0)
	st.pipelinedWrites.Store(0)
	for _, c := range st.calls {
		c.calls.Store(0)
		c.usec.Store(0)
		c.rejected.Store(0)
		c.failed.Store(0)
	}
	st.errMu.Lock()
	st.errCode = nil
	st.errMu.Unlock()
}
