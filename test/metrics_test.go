package test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// /metrics passes `promtool check metrics` (lint included) and
// its families show what a scripted workload did on one node: sessions
// opened and one expired with the lock it held, locks held, FLOCKs left
// waiting, a wait granted and one timed out, keys set and one expired,
// commands by name (ran, failed, rejected), error replies by code,
// connections; the leader, its proposals and disk writes; build info, the
// Go and process collectors and raft's own metrics. CONFIG RESETSTAT then
// starts INFO's counts afresh and leaves every counter where it was.
func TestMetricsWorkload(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startNode(t, nodeOpts{args: []string{"--metrics", addr}})
	cl := n.client(t)

	var sessions []string
	for i := range 4 {
		sessions = append(sessions, openSession(t, cl, 60000, fmt.Sprint("s", i)))
	}
	s1, s2, s3, s4 := sessions[0], sessions[1], sessions[2], sessions[3]
	short := openSession(t, cl, 500, "short") // expires, releasing lx
	for _, l := range []string{"l1", "l2", "l3", "lw"} {
		mustInt(t, cl, "FLOCK", l, s1)
	}
	mustInt(t, cl, "FLOCK", "lx", short)
	for i := range 5 {
		mustStr(t, cl, "SET", fmt.Sprint("k", i), "v")
	}
	mustStr(t, cl, "SET", "kx", "v", "PX", 100) // expires
	mustErr(t, cl, "WRONGTYPE", "HSET", "k0", "f", "v")
	mustErr(t, cl, "WRONGTYPE", "HSET", "k1", "f", "v")
	mustErr(t, cl, "ERR", "SET", "k0") // arity: rejected

	// A wait that is granted: s2 queues for lw, s1 lets it go.
	waitersAre := func(want float64) func() bool {
		return func() bool { return metricsOf(t, addr).value(t, "fenced_lock_waiters") == want }
	}
	granted := n.soloClient(t)
	grant := make(chan error, 1)
	go func() {
		_, err := do(context.Background(), granted, "FLOCK", "lw", s2, "WAIT", 0)
		grant <- err
	}()
	eventually(t, 10*time.Second, "s2 queued for lw", waitersAre(1))
	mustInt(t, cl, "FUNLOCK", "lw", s1)
	if err := <-grant; err != nil {
		t.Fatalf("the FLOCK waiting for lw: %v", err)
	}
	// A wait that runs out.
	timedOut := n.soloClient(t)
	mustNil(t, timedOut, "FLOCK", "l2", s4, "WAIT", 100)
	// Two that stay queued, on their own connections.
	for _, s := range []string{s2, s3} {
		c := n.soloClient(t)
		go do(context.Background(), c, "FLOCK", "l1", s, "WAIT", 0)
	}
	eventually(t, 10*time.Second, "two FLOCKs queued for l1", waitersAre(2))
	eventually(t, 10*time.Second, "the short session and kx expired", func() bool {
		m := metricsOf(t, addr)
		return m.value(t, "fenced_expirations_total", "kind", "session") == 1 && m.value(t, "fenced_expirations_total", "kind", "key") == 1
	})
	mustStr(t, cl, "RAFT.SNAPSHOT") // writes the state back to Pebble first
	// Connections: the two waiting, and one more.
	granted.Close()
	timedOut.Close()
	cl.Close()
	idle := n.soloClient(t)
	mustStr(t, idle, "PING")
	eventually(t, 10*time.Second, "3 connections", func() bool {
		return metricsOf(t, addr).value(t, "fenced_connections") == 3
	})
	eventually(t, 10*time.Second, "no pending proposal", func() bool {
		return metricsOf(t, addr).value(t, "fenced_server_proposals_pending") == 0
	})

	m := metricsOf(t, addr)
	promtoolCheck(t, m)
	m.expect(t, 4, "fenced_sessions")
	m.expect(t, 4, "fenced_locks_held") // l1, l2, l3 by s1; lw by s2
	m.expect(t, 2, "fenced_lock_waiters")
	m.expect(t, 2, "fenced_blocked_clients")
	m.expect(t, 5, "fenced_keys")
	for kind, want := range map[string]float64{"session": 1, "lock": 1, "key": 1, "wait": 1} {
		m.expect(t, want, "fenced_expirations_total", "kind", kind)
	}
	m.expect(t, 1, "fenced_lock_wait_duration_seconds", "outcome", "granted")
	m.expect(t, 1, "fenced_lock_wait_duration_seconds", "outcome", "timeout")
	if s := m.series("fenced_lock_wait_duration_seconds", "outcome", "abandoned"); s != nil {
		t.Errorf("an abandoned wait: %v", s)
	}
	// FLOCKs: 5 taken at once, the granted wait, the timed-out one; the
	// two still waiting have not finished.
	for cmd, want := range map[string]float64{"flock": 7, "set": 6, "session.open": 5, "funlock": 1, "hset": 2} {
		m.expect(t, want, "fenced_commands_total", "command", cmd)
		m.expect(t, want, "fenced_command_duration_seconds", "command", cmd)
	}
	m.expect(t, 2, "fenced_commands_failed_total", "command", "hset")
	m.expect(t, 0, "fenced_commands_failed_total", "command", "flock")
	m.expect(t, 1, "fenced_commands_rejected_total", "command", "set")
	m.expect(t, 2, "fenced_error_replies_total", "code", "WRONGTYPE")
	m.expect(t, 3, "fenced_connections")
	if got := m.value(t, "fenced_connections_received_total"); got < 6 {
		t.Errorf("fenced_connections_received_total %v, want at least the test's 6", got)
	}

	m.expect(t, 1, "fenced_server_has_leader")
	m.expect(t, 1, "fenced_server_is_leader")
	m.expect(t, 1, "fenced_server_leader_changes_seen_total")
	m.expect(t, 0, "fenced_server_proposals_failed_total")
	writes := 5 + 5 + 6 + 1 + 3 // sessions, FLOCKs granted at once, SETs, FUNLOCK, FLOCKs that queued
	applied, committed := m.value(t, "fenced_server_proposals_applied_total"), m.value(t, "fenced_server_proposals_committed_total")
	if applied < float64(writes) || committed < applied {
		t.Errorf("proposals applied %v, committed %v: want at least the %d writes, and committed >= applied", applied, committed, writes)
	}
	if got := m.value(t, "fenced_disk_wal_fsync_duration_seconds"); got < float64(writes) {
		t.Errorf("%v log fsyncs for %d writes proposed one by one", got, writes)
	}
	if got := m.value(t, "fenced_disk_backend_commit_duration_seconds"); got < 1 {
		t.Errorf("%v write-backs after RAFT.SNAPSHOT", got)
	}
	if got := m.value(t, "fenced_raft_apply_total"); got < float64(writes) {
		t.Errorf("raft's own apply counter %v, want at least %d", got, writes)
	}
	for _, name := range []string{"fenced_raft_commit_time_seconds", "fenced_raft_fsm_apply_batch_seconds", "fenced_raft_state_leader_total",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "fenced_state_bytes"} {
		if m.value(t, name) <= 0 {
			t.Errorf("%s is not positive", name)
		}
	}
	bi := m.series("fenced_build_info")
	if bi == nil || bi.Gauge.GetValue() != 1 {
		t.Fatalf("fenced_build_info: %v", bi)
	}
	info := map[string]string{"version": infoField(t, idle, "server", "fenced_version"), "git_sha": infoField(t, idle, "server", "git_sha")}
	for _, lp := range bi.Label {
		if want, ok := info[lp.GetName()]; ok && lp.GetValue() != want {
			t.Errorf("fenced_build_info{%s=%q}, INFO says %q", lp.GetName(), lp.GetValue(), want)
		}
	}

	for field, want := range map[string]string{"expired_keys": "1", "expired_sessions": "1"} {
		if got := infoField(t, idle, "stats", field); got != want {
			t.Errorf("INFO stats %s:%s, want %s", field, got, want)
		}
	}

	// CONFIG RESETSTAT: INFO starts again, /metrics does not go back.
	mustStr(t, idle, "CONFIG", "RESETSTAT")
	if v, err := idle.Info(tctx(t), "commandstats").Result(); err != nil || grepLines(v, "cmdstat_set") != "" {
		t.Errorf("INFO commandstats after CONFIG RESETSTAT: %v %q", err, v)
	}
	if got := infoField(t, idle, "stats", "expired_keys"); got != "0" {
		t.Errorf("expired_keys %s after CONFIG RESETSTAT", got)
	}
	after := metricsOf(t, addr)
	checkMonotonic(t, m, after)
	after.expect(t, 6, "fenced_commands_total", "command", "set")
	after.expect(t, 1, "fenced_expirations_total", "kind", "key")
}

// checkMonotonic fails if a counter, or a histogram's count, is lower in
// later than in earlier.
func checkMonotonic(t *testing.T, earlier, later scrape) {
	t.Helper()
	for name, mf := range earlier.fams {
		for _, m := range mf.Metric {
			var labels []string
			for _, lp := range m.Label {
				labels = append(labels, lp.GetName(), lp.GetValue())
			}
			if m.Counter == nil && m.Histogram == nil {
				continue
			}
			before := earlier.value(t, name, labels...)
			if later.series(name, labels...) == nil {
				t.Errorf("%s%v went away", name, labels)
			} else if now := later.value(t, name, labels...); now < before {
				t.Errorf("%s%v went down from %v to %v", name, labels, before, now)
			}
		}
	}
}

// On a 3-node cluster every node knows the leader and exactly
// one is it; RAFT.TRANSFER moves it, and every node counts the change; each
// node's answer, raft's per-peer metrics included, passes promtool.
func TestMetricsCluster(t *testing.T) {
	t.Parallel()
	addrs := make([]string, 3)
	extra := make([][]string, 3)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		extra[i] = []string{"--metrics", addrs[i]}
	}
	c := startCluster(t, 3, extra...)
	leader := c.leader(30 * time.Second)
	changes := make([]float64, 3)
	terms := make([]float64, 3)
	for i, addr := range addrs {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d knows the leader", i), func() bool {
			return metricsOf(t, addr).value(t, "fenced_server_has_leader") == 1
		})
		m := metricsOf(t, addr)
		m.expect(t, bit(c.nodes[i] == leader), "fenced_server_is_leader")
		changes[i] = m.value(t, "fenced_server_leader_changes_seen_total")
		terms[i] = m.value(t, "fenced_server_term")
		if changes[i] < 1 {
			t.Errorf("node %d saw %v leaders", i, changes[i])
		}
		if m.value(t, "fenced_server_proposals_committed_total") < 1 {
			t.Errorf("node %d: nothing committed", i)
		}
	}
	target := c.followers(leader)[0]
	transferLeadership(t, c, target)
	for i, addr := range addrs {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d follows %s", i, c.id(target)), func() bool {
			m := metricsOf(t, addr)
			return m.value(t, "fenced_server_is_leader") == bit(c.nodes[i] == target) &&
				m.value(t, "fenced_server_has_leader") == 1 && m.value(t, "fenced_server_leader_changes_seen_total") > changes[i]
		})
		m := metricsOf(t, addr)
		if got := m.value(t, "fenced_server_term"); got <= terms[i] {
			t.Errorf("node %d: term %v after the transfer, %v before", i, got, terms[i])
		}
		promtoolCheck(t, m)
	}
	// raft's own metrics: the new leader's heartbeats, by peer; a
	// follower's appends.
	m := metricsOf(t, addrs[nodeIndex(c, target)])
	for _, f := range c.followers(target) {
		if m.value(t, "fenced_raft_replication_heartbeat_seconds", "peer_id", c.id(f)) < 1 {
			t.Errorf("the leader's heartbeats to %s are not counted", c.id(f))
		}
	}
	m.expect(t, 3, "fenced_raft_peers")
	if got := metricsOf(t, addrs[nodeIndex(c, leader)]).value(t, "fenced_raft_rpc_append_entries_seconds"); got < 1 {
		t.Errorf("the old leader, now a follower, counts %v appends", got)
	}
	// INFO replication says the same: the leader is the master, the
	// others replicas of it.
	cl := redis.NewClient(target.options(3))
	defer cl.Close()
	if got := infoField(t, cl, "replication", "role"); got != "master" {
		t.Errorf("the leader's INFO replication role:%s", got)
	}
	// Redis's replication fields: the leader replicates to the two
	// others; the replication id is the leadership's, the same on every
	// node and new since the transfer; the offset is the applied index,
	// which only grows.
	if got := infoField(t, cl, "replication", "connected_slaves"); got != "2" {
		t.Errorf("the leader's INFO replication connected_slaves:%s, want 2", got)
	}
	replid := infoField(t, cl, "replication", "master_replid")
	if len(replid) != 40 || strings.Trim(replid, "0123456789abcdef") != "" || replid == strings.Repeat("0", 40) {
		t.Errorf("the leader's master_replid:%s is not 40 hex digits", replid)
	}
	offset := func(c *redis.Client, field string) int64 {
		n, err := strconv.ParseInt(infoField(t, c, "replication", field), 10, 64)
		if err != nil {
			t.Fatalf("INFO replication %s: %v", field, err)
		}
		return n
	}
	before := offset(cl, "master_repl_offset")
	if err := cl.Set(tctx(t), "after-transfer", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if after := offset(cl, "master_repl_offset"); before < 1 || after <= before {
		t.Errorf("the leader's master_repl_offset went from %d to %d across a write", before, after)
	}
	_, leaderPort, _ := strings.Cut(target.addr, ":")
	for _, f := range c.followers(target) {
		fc := redis.NewClient(f.options(3))
		defer fc.Close()
		eventually(t, 10*time.Second, c.id(f)+"'s INFO replication naming the new leader", func() bool {
			return infoField(t, fc, "replication", "master_port") == leaderPort
		})
		for field, want := range map[string]string{"role": "slave", "master_link_status": "up", "master_replid": replid, "connected_slaves": "0"} {
			if got := infoField(t, fc, "replication", field); got != want {
				t.Errorf("%s's INFO replication %s:%s, want %s", c.id(f), field, got, want)
			}
		}
		if got := offset(fc, "slave_repl_offset"); got < before {
			t.Errorf("%s's slave_repl_offset %d is below the leader's %d before the last write", c.id(f), got, before)
		}
	}
}

// bit is a Prometheus boolean: 1 or 0.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// The metrics port with odd requests: /metrics answers GET and HEAD only
// (405 naming them otherwise), a path beside it is 404, a query or an
// Accept it does not know changes nothing, a compressed answer is gzip,
// an oversized header and a garbage request line are refused; and the
// port still serves valid metrics and health afterwards.
func TestMetricsBadInput(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startNode(t, nodeOpts{args: []string{"--metrics", addr}})
	base := "http://" + addr
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	send := func(method, path string, header http.Header) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		resp, body := send(method, "/metrics", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: %d, Allow %q: %s", method, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
	for _, path := range []string{"/metrics/", "/metrics/x", "/metricsx", "/METRICS", "/nosuch", "/%2e%2e/metrics"} {
		if resp, body := send("GET", path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d %.100s", path, resp.StatusCode, body)
		}
	}
	if resp, body := send("HEAD", "/metrics", nil); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /metrics: %d %q", resp.StatusCode, body)
	}
	for _, h := range []http.Header{
		{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=bogus"}},
		{"Accept": {"garbage;;;=,, */*;q=nonsense"}},
		{"Accept": {"application/openmetrics-text; version=9.9.9"}},
	} {
		resp, body := send("GET", "/metrics?name[]=x&%zz", h)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(body, "fenced_server_is_leader 1") {
			t.Errorf("GET /metrics, Accept %q: %d %s", h.Get("Accept"), resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	resp, body := send("GET", "/metrics", http.Header{"Accept-Encoding": {"gzip"}})
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("GET /metrics with gzip accepted: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	} else if zr, err := gzip.NewReader(strings.NewReader(body)); err != nil {
		t.Errorf("the gzip answer: %v", err)
	} else if b, err := io.ReadAll(zr); err != nil || !strings.Contains(string(b), "fenced_build_info") {
		t.Errorf("the gzip answer: %v %.200s", err, b)
	}
	if resp, _ := send("GET", "/metrics", http.Header{"X-Big": {strings.Repeat("x", 64<<10)}}); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("GET /metrics with a 64 KiB header: %d", resp.StatusCode)
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(nc, "\x00\xffGARBAGE / HTTP/9\r\n\r\n")
	if line, err := bufio.NewReader(nc).ReadString('\n'); err != nil || !strings.Contains(line, " 400 ") {
		t.Errorf("a garbage request line: %q %v", line, err)
	}
	nc.Close()

	promtoolCheck(t, metricsOf(t, addr))
	if resp, body := send("GET", "/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz after the bad requests: %d %s", resp.StatusCode, body)
	}
}
