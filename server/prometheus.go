package server

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/fenced/fenced/lockstate"
)

// metrics are the node's Prometheus registry (/metrics) and the
// instruments that record as things happen. Everything else is read when
// scraped (serverCollector), from the counters and state the node keeps
// anyway. Names follow etcd's (etcd_server_*, etcd_disk_*).
type metrics struct {
	reg *prometheus.Registry
	// lockWait times the FLOCKs that waited in a queue, from the command's
	// start to its answer, by how the wait ended (waitOutcome).
	lockWait *prometheus.HistogramVec
	// walFsync and backendCommit are raftstore's Meter.
	walFsync, backendCommit prometheus.Histogram
}

// Wait outcomes, the lock wait histogram's outcome label.
const (
	waitGranted   = "granted"
	waitTimedOut  = "timeout"   // its WAIT ran out
	waitError     = "error"     // answered an error: its session ended, ...
	waitAbandoned = "abandoned" // the client went away
	waitShutdown  = "shutdown"  // the node shut down
)

// diskBuckets are etcd's for its WAL fsync and backend commit: 1 ms to 8 s.
var diskBuckets = prometheus.ExponentialBuckets(0.001, 2, 14)

// newMetrics builds s's registry. raft, if not nil, collects
// hashicorp/raft's own metrics (raftmetrics).
func (s *Server) newMetrics(raft prometheus.Collector) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fenced_lock_wait_duration_seconds",
			Help: "How long FLOCKs that queued on this node's connections waited, from the command to its answer, by how the wait ended.",
			// 1 ms to about 70 minutes.
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"outcome"}),
		walFsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fenced_disk_wal_fsync_duration_seconds",
			Help:    "Latency of the Raft log appends, each a Pebble batch committed with its fsync.",
			Buckets: diskBuckets,
		}),
		backendCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fenced_disk_backend_commit_duration_seconds",
			Help:    "Latency of the state machine's write-backs to Pebble (committed without fsync: the Raft log's makes them durable).",
			Buckets: diskBuckets,
		}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "fenced_build_info",
		Help:        "fenced's version, the git commit it was built from, and the Go version: always 1.",
		ConstLabels: prometheus.Labels{"version": Version, "git_sha": s.gitSHA, "go_version": runtime.Version()},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(buildInfo, m.lockWait, m.walFsync, m.backendCommit, serverCollector{s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if raft != nil {
		m.reg.MustRegister(raft)
	}
	return m
}

// LogSynced and StateCommitted are raftstore's Meter.
func (m *metrics) LogSynced(d time.Duration)      { m.walFsync.Observe(d.Seconds()) }
func (m *metrics) StateCommitted(d time.Duration) { m.backendCommit.Observe(d.Seconds()) }

// serverCollector reads, when scraped, what the node already counts: Raft's
// view (raftstore.Counts), the replicated state's sizes (in constant time,
// under its read lock), connections and the command counters (stats).
type serverCollector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descHasLeader     = desc("fenced_server_has_leader", "Whether this node knows a leader: 1 if it does, 0 if not.")
	descIsLeader      = desc("fenced_server_is_leader", "Whether this node is the leader: 1 if it is, 0 if not.")
	descLeaderChanges = desc("fenced_server_leader_changes_seen_total", "Leaders this node saw take over since it started.")
	descTerm          = desc("fenced_server_term", "The current Raft term.")
	descCommitted     = desc("fenced_server_proposals_committed_total", "The Raft commit index: entries committed, by any node, as etcd counts them.")
	descApplied       = desc("fenced_server_proposals_applied_total", "The index of the last entry this node applied.")
	descPending       = desc("fenced_server_proposals_pending", "Entries this node proposed as leader whose outcome it has not seen yet.")
	descFailed        = desc("fenced_server_proposals_failed_total", "Entries this node proposed as leader that Raft answered with an error (leadership lost, a failed append).")
	descSessions      = desc("fenced_sessions", "Open sessions.")
	descLocksHeld     = desc("fenced_locks_held", "Held FLOCK locks.")
	descWaiters       = desc("fenced_lock_waiters", "FLOCKs queued for a lock, on any node.")
	descKeys          = desc("fenced_keys", "Keys (strings, hashes, lists), held locks not included.")
	descStateBytes    = desc("fenced_state_bytes", "The replicated state's size as --maxmemory counts it (INFO's used_memory).")
	descExpirations   = desc("fenced_expirations_total", "What deadlines ended in the entries this node applied: sessions whose TTL ran out, the locks they held, keys, and FLOCK waits whose WAIT ran out.", "kind")
	descConns         = desc("fenced_connections", "Open client connections (INFO's connected_clients).")
	descConnsTotal    = desc("fenced_connections_received_total", "Client connections accepted.")
	descBlocked       = desc("fenced_blocked_clients", "Connections waiting in FLOCK or BLPOP on this node.")
	descCommands      = desc("fenced_commands_total", "Commands that ran, by name (INFO commandstats' calls).", "command")
	descFailedCmds    = desc("fenced_commands_failed_total", "Commands that ran and answered an error, by name.", "command")
	descRejected      = desc("fenced_commands_rejected_total", "Commands refused before they ran (arity, permissions, a node that cannot persist), by name.", "command")
	descCmdDuration   = desc("fenced_command_duration_seconds", "How long commands took to run, by name; a waiting FLOCK's wait included.", "command")
	descErrors        = desc("fenced_error_replies_total", "Error replies, by their code (INFO errorstats).", "code")
	descMemory        = desc("fenced_memory_bytes", "What fills this node's memory besides the state: client input (commands read, not yet answered) and output (replies and messages not yet written), the Raft log cache, the pending proposals, the appends in flight to followers, and the client-side caching table.", "part")
	descPipelined     = desc("fenced_pipelined_writes_total", "Writes the leader proposed while an earlier write of the same connection (a client's, or a follower's forwarding link) was still unanswered.")
)

func (serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHasLeader, descIsLeader, descLeaderChanges, descTerm, descCommitted, descApplied,
		descPending, descFailed, descSessions, descLocksHeld, descWaiters, descKeys, descStateBytes, descExpirations,
		descConns, descConnsTotal, descBlocked, descCommands, descFailedCmds, descRejected, descCmdDuration, descErrors, descPipelined, descMemory} {
		ch <- d
	}
}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	bit := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	rc := s.node.Counts()
	gauge(descHasLeader, bit(rc.HasLeader))
	gauge(descIsLeader, bit(rc.IsLeader))
	counter(descLeaderChanges, float64(rc.LeaderChanges))
	gauge(descTerm, float64(rc.Term))
	counter(descCommitted, float64(rc.CommitIndex))
	counter(descApplied, float64(rc.Applied))
	gauge(descPending, float64(rc.ProposalsPending))
	counter(descFailed, float64(rc.ProposalsFailed))

	var sessions, locks, waiters, names int
	var used int64
	s.node.Local(func(st *lockstate.State) {
		sessions, locks = st.Counts()
		waiters = st.Waiters()
		names, _ = st.KeyspaceCounts()
		used = st.Used()
	})
	gauge(descSessions, float64(sessions))
	gauge(descLocksHeld, float64(locks))
	gauge(descWaiters, float64(waiters))
	gauge(descKeys, float64(names-locks))
	gauge(descStateBytes, float64(used))
	input, output := s.clientBuffers()
	for _, m := range []struct {
		part string
		v    int64
	}{{"client_input", input}, {"client_output", output}, {"raft_log_cache", rc.LogCacheBytes}, {"proposals", rc.ProposalBytes}, {"replication", rc.ReplicationBytes}, {"tracking_table", s.tracking.tableBytes()}} {
		gauge(descMemory, float64(m.v), m.part)
	}

	gauge(descConns, float64(len(s.rs.Conns())))
	counter(descConnsTotal, float64(s.rs.Accepted()))
	gauge(descBlocked, float64(s.waits.blocked()+s.lists.blocked()))

	st := s.stats.totals()
	for kind, n := range map[string]int64{"session": st.expiredSessions, "lock": st.expiredLocks, "key": st.expiredKeys, "wait": st.expiredWaits} {
		counter(descExpirations, float64(n), kind)
	}
	counter(descPipelined, float64(st.pipelinedWrites))
	for code, n := range st.errCode {
		counter(descErrors, float64(n), code)
	}
	// Only the commands that were used: the table has about a hundred.
	for name, cc := range st.calls {
		if cc.calls == 0 && cc.rejected == 0 {
			continue
		}
		counter(descCommands, float64(cc.calls), name)
		counter(descFailedCmds, float64(cc.failed), name)
		counter(descRejected, float64(cc.rejected), name)
		ch <- s.stats.calls[name].histogram(name)
	}
}

// histogram is cs's latency histogram. Its count is its buckets' sum,
// read here, so that it always agrees with them; a call that ends while
// they are read may be counted in the sum (nsec) but not yet a bucket.
func (cs *cmdStats) histogram(name string) prometheus.Metric {
	cum := make(map[float64]uint64, len(cmdBuckets))
	var n uint64
	for i, le := range cmdBuckets {
		n += uint64(cs.buckets[i].Load())
		cum[le] = n
	}
	n += uint64(cs.buckets[len(cmdBuckets)].Load())
	return prometheus.MustNewConstHistogram(descCmdDuration, n, float64(cs.nsec.Load())/1e9, cum, name)
}
