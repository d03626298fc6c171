package raftmetrics

import (
	"sync"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// global is the process's one Sink. hashicorp/raft reports through
// go-metrics' package-level functions, which send to a sink set for the
// whole process (NewGlobal): raft takes no sink of its own, so this is the
// one place fenced keeps process-wide state. A process that runs several
// nodes (the server package's tests) shares it: each node's /metrics then
// shows the raft metrics of them all. A deployed node runs alone.
var global struct {
	once sync.Once
	sink *Sink
	err  error
}

// Install makes a Sink go-metrics' global sink, once per process, and
// returns it: every later call returns the same Sink.
func Install() (*Sink, error) {
	global.once.Do(func() {
		s := NewSink()
		if _, err := metrics.NewGlobal(Config(), s); err != nil {
			global.err = err
			return
		}
		global.sink = s
	})
	return global.sink, global.err
}
