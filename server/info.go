package server

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// Version is fenced's version; redisVersion is the Redis version whose
// commands and replies it follows, reported to clients that check it.
const (
	Version      = "0.1.0"
	redisVersion = "7.4.0"
)

var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "keyspace", "raft"}

// extraSections are shown only when asked for by name, or by all/everything.
var extraSections = []string{"commandstats", "errorstats"}

// info implements INFO [section ...]; ioredis requires loading:0.
func (s *Server) info(c *resp.Conn, args [][]byte) resp.Value {
	want := map[string]bool{}
	for _, a := range args[1:] {
		sec := strings.ToLower(string(a))
		if sec == "all" || sec == "everything" || sec == "default" {
			for _, n := range infoSections {
				want[n] = true
			}
		}
		if sec == "all" || sec == "everything" {
			for _, n := range extraSections {
				want[n] = true
			}
		}
		want[sec] = true
	}
	if len(args) == 1 {
		for _, n := range infoSections {
			want[n] = true
		}
	}
	var b strings.Builder
	for _, sec := range append(infoSections[:len(infoSections):len(infoSections)], extraSections...) {
		if !want[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", strings.ToUpper(sec[:1])+sec[1:])
		for _, kv := range s.infoSection(sec) {
			fmt.Fprintf(&b, "%s:%s\r\n", kv[0], kv[1])
		}
	}
	if c.Proto() == 3 {
		return resp.Verbatim("txt", b.String())
	}
	return resp.BulkString(b.String())
}

func (s *Server) infoSection(sec string) [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	utoa := func(n uint64) string { return strconv.FormatUint(n, 10) }
	switch sec {
	case "server":
		port := func(ln net.Listener) string { // Redis: 0 for a port that is off
			if ln == nil {
				return "0"
			}
			_, p, _ := net.SplitHostPort(ln.Addr().String())
			return p
		}
		up := time.Since(s.started)
		var cv int64
		s.node.Local(func(st *lockstate.State) { cv = st.Version() })
		return [][2]string{
			{"redis_version", redisVersion}, {"fenced_version", Version}, {"git_sha", s.gitSHA}, {"redis_mode", "standalone"},
			// The semantics the cluster applies entries with, and the
			// newest this binary knows (lockstate/version.go).
			{"cluster_version", itoa(cv)}, {"cluster_version_known", itoa(lockstate.MaxVersion)},
			{"os", runtime.GOOS + " " + runtime.GOARCH}, {"go_version", runtime.Version()},
			{"process_id", strconv.Itoa(os.Getpid())}, {"run_id", s.cfg.ID}, {"tcp_port", port(s.ln)}, {"tls_port", port(s.tlsLn)},
			{"uptime_in_seconds", itoa(int64(up.Seconds()))}, {"uptime_in_days", itoa(int64(up.Hours() / 24))},
		}
	case "clients":
		// blocked_clients: waiting FLOCKs and BLPOPs, as Redis counts
		// clients blocked in BLPOP and the like.
		tracking, _, _, _ := s.tracking.counts()
		return [][2]string{{"connected_clients", strconv.Itoa(len(s.rs.Conns()))}, {"blocked_clients", strconv.Itoa(s.waits.blocked() + s.lists.blocked())},
			{"tracking_clients", strconv.Itoa(tracking)}, {"maxclients", strconv.Itoa(s.cfg.MaxConns)}}
	case "memory":
		// used_memory is the state's size as --maxmemory counts it
		// (lockstate.State.Used), the figure -OOM compares, the same on
		// every replica; used_memory_rss is this process's.
		// number_of_*: the replicated script cache and libraries.
		var used int64
		var scripts, functions, libraries int
		s.node.Local(func(st *lockstate.State) {
			used = st.Used()
			scripts, functions, libraries = st.ScriptCounts()
		})
		rss := rssBytes()
		maxMem := s.node.MaxMemory()
		rc := s.node.Counts()
		input, output := s.clientBuffers()
		return [][2]string{
			{"used_memory", itoa(used)}, {"used_memory_human", humanBytes(used)},
			{"used_memory_rss", itoa(rss)}, {"used_memory_rss_human", humanBytes(rss)},
			{"number_of_cached_scripts", strconv.Itoa(scripts)}, {"number_of_functions", strconv.Itoa(functions)},
			{"number_of_libraries", strconv.Itoa(libraries)},
			{"maxmemory", itoa(maxMem)}, {"maxmemory_human", humanBytes(maxMem)}, {"maxmemory_policy", "noeviction"},
			// What else fills the node's memory budget (README, Memory):
			// Redis's names where it has one.
			{"mem_clients_normal", itoa(input + output)},
			{"fenced_client_input_bytes", itoa(input)}, {"fenced_client_output_bytes", itoa(output)},
			{"fenced_raft_log_cache_bytes", itoa(rc.LogCacheBytes)},
			{"fenced_proposal_bytes", itoa(rc.ProposalBytes)},
			{"fenced_replication_bytes", itoa(rc.ReplicationBytes)},
			{"fenced_tracking_table_bytes", itoa(s.tracking.tableBytes())},
		}
	case "persistence":
		// loading:1 until the node settles (startup.go): its clients'
		// commands wait, then answer -LOADING, as Redis's do while it loads.
		loading := "1"
		if s.start.settled.Load() {
			loading = "0"
		}
		// Redis's fields for a server that cannot save (its MISCONF), and
		// fenced's reason: see DESIGN.md, Disk trouble.
		status, reason := "ok", ""
		if err := s.node.DiskError(); err != nil {
			status, reason = "err", strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
		}
		return [][2]string{
			{"loading", loading}, {"aof_enabled", "0"}, {"raft_log_fsync", "always"},
			{"rdb_last_bgsave_status", status}, {"aof_last_write_status", status},
			{"disk_error", reason},
		}
	case "stats":
		// expired_keys and expired_sessions: what deadlines ended in the
		// entries this node applied.
		st := s.stats.sinceReset()
		_, tkeys, titems, tprefixes := s.tracking.counts() // this node's CLIENT TRACKING table
		return [][2]string{
			{"total_connections_received", itoa(s.rs.Accepted())},
			{"total_commands_processed", itoa(st.commands)},
			{"total_error_replies", itoa(st.errors)},
			{"total_pipelined_writes", itoa(st.pipelinedWrites)},
			{"expired_keys", itoa(st.expiredKeys)},
			{"expired_sessions", itoa(st.expiredSessions)},
			{"tracking_total_keys", strconv.Itoa(tkeys)},
			{"tracking_total_items", strconv.Itoa(titems)},
			{"tracking_total_prefixes", strconv.Itoa(tprefixes)},
		}
	case "replication":
		// As ROLE says it: the leader is the master, every other node a
		// replica of it, whose link is up while it hears from the leader
		// (as /readyz counts it). redis_exporter labels its metrics with
		// the role.
		st := s.node.Status()
		var out [][2]string
		if s.node.IsLeader() {
			// connected_slaves: the other members of the Raft
			// configuration, every one of which the leader replicates to.
			out = [][2]string{{"role", "master"}, {"connected_slaves", strconv.Itoa(max(st.Peers-1, 0))}}
		} else {
			leader, _ := s.leaderAddr()
			host, port, _ := net.SplitHostPort(leader)
			link := "down"
			if leader != "" && time.Since(st.LastContact) <= readyContact {
				link = "up"
			}
			// slave_repl_offset: the log index this node has applied.
			out = [][2]string{{"role", "slave"}, {"master_host", host}, {"master_port", port}, {"master_link_status", link},
				{"slave_repl_offset", utoa(st.Applied)}, {"connected_slaves", "0"}}
		}
		// master_replid names the replication history as Redis's does:
		// one per leadership (the leader's id and term), so it changes
		// with each election as Redis's does when a replica is promoted,
		// and every node that follows the same leader shows the same id.
		// master_repl_offset is the Raft log index this node has applied
		// (ROLE's offset): it only grows, across leaders too, so there is
		// no second history (master_replid2 zeros, second_repl_offset -1).
		return append(out, [][2]string{{"master_failover_state", "no-failover"},
			{"master_replid", replID(st.LeaderID, st.Term)}, {"master_replid2", strings.Repeat("0", 40)},
			{"master_repl_offset", utoa(st.Applied)}, {"second_repl_offset", "-1"}}...)
	case "cpu":
		// This process's CPU time, as Redis reports its own (getrusage);
		// fenced forks no children.
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return nil
		}
		secs := func(tv syscall.Timeval) string {
			return strconv.FormatFloat(time.Duration(tv.Nano()).Seconds(), 'f', 6, 64)
		}
		return [][2]string{{"used_cpu_sys", secs(ru.Stime)}, {"used_cpu_user", secs(ru.Utime)},
			{"used_cpu_sys_children", "0.000000"}, {"used_cpu_user_children", "0.000000"}}
	case "keyspace":
		// Redis's db0 line counts every name (keys and held locks, which
		// share one keyspace), and the keys with a deadline.
		var sessions, keys, expires int
		s.node.Local(func(st *lockstate.State) {
			sessions, _ = st.Counts()
			keys, expires = st.KeyspaceCounts()
		})
		out := [][2]string{{"sessions", strconv.Itoa(sessions)}}
		if keys > 0 {
			out = append(out, [2]string{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", keys, expires)})
		}
		return out
	case "commandstats":
		var out [][2]string
		calls := s.stats.sinceReset().calls
		for _, spec := range s.table.All() {
			if cs := calls[spec.Name]; cs.calls > 0 {
				usec := cs.nsec / 1000
				out = append(out, [2]string{"cmdstat_" + spec.Name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
					cs.calls, usec, float64(usec)/float64(cs.calls), cs.rejected, cs.failed)})
			}
		}
		return out
	case "errorstats":
		errCode := s.stats.sinceReset().errCode
		codes := slices.Sorted(maps.Keys(errCode))
		out := make([][2]string, 0, len(codes))
		for _, code := range codes {
			out = append(out, [2]string{"errorstat_" + code, fmt.Sprintf("count=%d", errCode[code])})
		}
		return out
	case "raft":
		st := s.node.Status()
		contact := "never"
		if st.State == "Leader" {
			contact = "0"
		} else if !st.LastContact.IsZero() {
			contact = itoa(time.Since(st.LastContact).Milliseconds())
		}
		return [][2]string{
			{"raft_node_id", st.ID}, {"raft_role", strings.ToLower(st.State)}, {"raft_term", utoa(st.Term)},
			{"raft_leader", st.Leader}, {"raft_leader_id", st.LeaderID}, {"raft_leader_addr", s.leaderClientAddr(st.LeaderID)},
			{"raft_commit_index", utoa(st.CommitIndex)}, {"raft_applied_index", utoa(st.Applied)},
			{"raft_first_index", utoa(st.FirstIndex)}, {"raft_last_index", utoa(st.LastIndex)},
			{"raft_peers", strconv.Itoa(st.Peers)}, {"raft_voters", strconv.Itoa(st.Voters)},
			{"raft_last_contact_ms", contact},
		}
	}
	return nil
}

// replID is INFO's master_replid for the leadership of leader in term: 40
// hex digits, as Redis's run ids, zeros while no leader is known.
func replID(leader string, term uint64) string {
	if leader == "" {
		return strings.Repeat("0", 40)
	}
	h := sha1.Sum([]byte(leader + "\x00" + strconv.FormatUint(term, 10)))
	return hex.EncodeToString(h[:])
}

// rssBytes is this process's resident set size from /proc (0 where there
// is none).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// humanBytes formats n as Redis's *_human fields do: 1.50M, 512B.
func humanBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "K", "M", "G", "T"} {
		if f < 1024 || u == "T" {
			if u == "B" {
				return strconv.FormatInt(n, 10) + "B"
			}
			return strconv.FormatFloat(f, 'f', 2, 64) + u
		}
		f /= 1024
	}
	return ""
}

// leaderClientAddr is the client address of the leader id, "" if unknown.
func (s *Server) leaderClientAddr(id string) string {
	var m lockstate.Member
	s.node.Local(func(st *lockstate.State) { m, _ = st.Member(id) })
	return m.Addr
}

// role implements ROLE in Redis's shape: the leader is the master.
func (s *Server) role(_ *resp.Conn, _ [][]byte) resp.Value {
	st := s.node.Status()
	if st.State == "Leader" {
		return resp.Array(resp.BulkString("master"), resp.Int(int64(st.Applied)), resp.Array())
	}
	leader, _ := s.leaderAddr() // the leader's client address, as Redis reports its master
	host, port, _ := net.SplitHostPort(leader)
	p, _ := strconv.Atoi(port)
	state := "connected"
	if leader == "" {
		state = "connect"
	}
	return resp.Array(resp.BulkString("slave"), resp.BulkString(host), resp.Int(int64(p)), resp.BulkString(state), resp.Int(int64(st.Applied)))
}

func (s *Server) raftSnapshot(_ *resp.Conn, _ [][]byte) resp.Value {
	if err := s.node.Snapshot(); err != nil {
		return errorReply(err)
	}
	return resp.SimpleString("OK")
}

// raftStatus is RAFT.STATUS: this node's INFO raft fields, and the members
// of the configuration with their client addresses, as this node sees them.
func (s *Server) raftStatus(_ *resp.Conn, _ [][]byte) resp.Value {
	var kvs []resp.Value
	for _, kv := range s.infoSection("raft") {
		kvs = append(kvs, resp.BulkString(strings.TrimPrefix(kv[0], "raft_")), resp.BulkString(kv[1]))
	}
	servers, _ := s.node.Servers()
	nodes := make([]resp.Value, 0, len(servers))
	for _, sv := range servers {
		var m lockstate.Member
		s.node.Local(func(st *lockstate.State) { m, _ = st.Member(sv.ID) })
		suffrage := "nonvoter"
		if sv.Voter {
			suffrage = "voter"
		}
		nodes = append(nodes, resp.Map(
			resp.BulkString("id"), resp.BulkString(sv.ID),
			resp.BulkString("raft_addr"), resp.BulkString(sv.RaftAddr),
			resp.BulkString("addr"), resp.BulkString(m.Addr),
			resp.BulkString("suffrage"), resp.BulkString(suffrage),
		))
	}
	kvs = append(kvs, resp.BulkString("nodes"), resp.Array(nodes...))
	return resp.Map(kvs...)
}

// raftHash is RAFT.HASH: [applied index, hex SHA-256 of the state], for
// tests that check that the replicas agree.
func (s *Server) raftHash(_ *resp.Conn, _ [][]byte) resp.Value {
	idx, h := s.node.StateHash()
	return resp.Array(resp.Int(int64(idx)), resp.BulkString(hex.EncodeToString(h[:])))
}
