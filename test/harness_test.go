// Package test holds fenced's black-box integration tests: each test builds
// nothing itself, starts the fenced binary that TestMain built once, and
// talks to it over TCP with go-redis or raw RESP, like any client would.
package test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// binPath is the fenced binary built by TestMain.
var binPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fenced-itest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdtemp:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// FENCED_TEST_BIN runs the tests against a prebuilt binary instead (for
	// example a deliberately broken one, to see the tests catch it).
	if p := os.Getenv("FENCED_TEST_BIN"); p != "" {
		binPath = p
		return m.Run()
	}
	binPath = filepath.Join(dir, "fenced")
	args := []string{"build", "-o", binPath}
	// Under `go test -race` the server is built with the race detector too,
	// so a data race inside the server fails the test that triggered it
	// (see node.checkLog). FENCED_SERVER_RACE=0 turns this off.
	if raceEnabled && os.Getenv("FENCED_SERVER_RACE") != "0" {
		args = append(args, "-race")
	}
	args = append(args, "github.com/fenced/fenced/cmd/fenced")
	build := exec.Command("go", args...)
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building fenced: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// ---------------------------------------------------------------------------
// Ports

var (
	portMu   sync.Mutex
	usedPort = map[int]bool{}
)

// freePort returns a port that is free now and that no other test of this
// process got. It is drawn below Linux's ephemeral range (32768-60999) so
// that the outgoing connections of other tests cannot take it while a node
// is down between a kill and its restart.
func freePort(t testing.TB) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if usedPort[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		usedPort[p] = true
		return p
	}
	t.Fatal("no free port found")
	return 0
}

// ---------------------------------------------------------------------------
// Nodes

// nodeOpts configure startNode.
type nodeOpts struct {
	// noFlags runs the binary without any flag, in workDir (or a fresh
	// temporary directory): it must use its defaults.
	noFlags bool
	workDir string
	// args are appended to the node's flags (cluster tests: --id, --join,
	// --clock-offset ...).
	args []string
	// noWait starts the process without waiting for it to serve reads
	// (a node whose cluster has no quorum yet).
	noWait bool
	// bin is the binary to run instead of the tests' build (the fault
	// tests' builds), env its extra environment (FENCED_PLANT=...).
	bin string
	env []string
	// allowCrash keeps a panic in the server's stderr from failing the
	// test (a planted bug may crash it; the fault tests count that).
	allowCrash bool
}

// node is one fenced process, restartable on the same data directory and
// ports.
type node struct {
	t          testing.TB
	bin        string
	env        []string
	allowCrash bool
	args       []string
	workDir    string
	dataDir    string
	addr       string // client address, as logged by the server
	raftAddr   string

	logMu sync.Mutex
	log   strings.Builder // stderr of every run of this node

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current run's process has exited
	exitErr error
	runs    int
	stopped bool // SIGSTOPped by the test
}

var servingRE = regexp.MustCompile(`msg="fenced serving" listen=(\S+) raft=(\S+)`)

// startNode starts a fresh node on a temporary data directory and waits
// until it leads and serves (a linearizable read succeeds). The node is
// stopped, and its stderr printed if the test failed, when the test ends.
func startNode(t testing.TB, opts nodeOpts) *node {
	t.Helper()
	n := &node{t: t, workDir: opts.workDir, bin: opts.bin, env: opts.env, allowCrash: opts.allowCrash}
	if n.bin == "" {
		n.bin = binPath
	}
	if n.workDir == "" {
		n.workDir = t.TempDir()
	}
	if opts.noFlags {
		n.dataDir = filepath.Join(n.workDir, "fenced-data")
	} else {
		n.dataDir = filepath.Join(t.TempDir(), "data")
		n.args = []string{
			"--data", n.dataDir,
			"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			"--raft-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		}
		n.args = append(n.args, opts.args...)
	}
	// Registered after the temporary directories, so it runs before they
	// are removed.
	t.Cleanup(n.cleanup)
	if opts.noWait {
		n.startNoWait()
	} else {
		n.start()
	}
	return n
}

func (n *node) cleanup() {
	if n.paused() {
		n.resume() // a stopped process ignores SIGTERM until continued
	}
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd != nil {
		select {
		case <-exited:
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				n.t.Errorf("node %s did not stop within 20s of SIGTERM; killing it", n.addr)
				cmd.Process.Kill()
				<-exited
			}
		}
	}
	n.checkLog()
	if n.t.Failed() {
		n.t.Logf("---- stderr of node %s (%d runs) ----\n%s", n.addr, n.runs, n.stderr())
	}
}

// crashed reports whether the server panicked in any run.
func (n *node) crashed() bool {
	s := n.stderr()
	return strings.Contains(s, "panic:") || strings.Contains(s, "fatal error:")
}

// checkLog fails the test if the server reported a data race or a panic.
func (n *node) checkLog() {
	s := n.stderr()
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if strings.Contains(s, bad) && !(n.allowCrash && bad != "WARNING: DATA RACE") {
			n.t.Errorf("server stderr contains %q", bad)
		}
	}
}

func (n *node) stderr() string {
	n.logMu.Lock()
	defer n.logMu.Unlock()
	return n.log.String()
}

func (n *node) logLine(line string) {
	n.logMu.Lock()
	defer n.logMu.Unlock()
	n.log.WriteString(line)
	n.log.WriteByte('\n')
}

// start runs the binary once more and waits until it serves. A listen
// address still held by the previous run is retried for a few seconds.
func (n *node) start() {
	t := n.t
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := n.startOnce()
		if err == nil {
			break
		}
		if strings.Contains(err.Error(), "address already in use") && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		t.Fatalf("starting fenced: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		t.Fatalf("fenced at %s never became ready: %v", n.addr, err)
	}
}

// startNoWait runs the binary once more and waits only for its "serving"
// line, not for reads to succeed.
func (n *node) startNoWait() {
	n.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := n.startOnce()
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "address already in use") && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		n.t.Fatalf("starting fenced: %v", err)
	}
}

func (n *node) startOnce() error {
	cmd := exec.Command(n.bin, n.args...)
	cmd.Dir = n.workDir
	if len(n.env) > 0 {
		cmd.Env = append(os.Environ(), n.env...)
	}
	pr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	n.mu.Lock()
	n.runs++
	run := n.runs
	exited := make(chan struct{})
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	n.logLine(fmt.Sprintf("==== run %d: %s %s %s (pid %d)", run, strings.Join(n.env, " "), n.bin, strings.Join(n.args, " "), cmd.Process.Pid))

	serving := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			n.logLine(line)
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case serving <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
		err := cmd.Wait()
		n.mu.Lock()
		n.exitErr = err
		n.mu.Unlock()
		n.logLine(fmt.Sprintf("==== run %d exited: %v", run, err))
		close(exited)
	}()

	select {
	case a := <-serving:
		if n.addr != "" && (a[0] != n.addr || a[1] != n.raftAddr) {
			return fmt.Errorf("restarted node serves %s (raft %s), want %s (raft %s)", a[0], a[1], n.addr, n.raftAddr)
		}
		n.addr, n.raftAddr = a[0], a[1]
		return nil
	case <-exited:
		n.mu.Lock()
		err := n.exitErr
		n.mu.Unlock()
		return fmt.Errorf("fenced exited before serving (%v); stderr:\n%s", err, n.stderr())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("no %q line within 30s; stderr:\n%s", "fenced serving", n.stderr())
	}
}

// waitReady polls a linearizable read, which is served only once the node
// leads and has applied its term's barrier (the same gate as writes), so
// the wait itself changes no state.
func (n *node) waitReady(ctx context.Context) error {
	c := redis.NewClient(n.options(3))
	defer c.Close()
	var last error
	for {
		err := c.Do(ctx, "FENCE", "__itest_ready_probe__").Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err == nil {
			return errors.New("FENCE of a lock never taken is not null")
		}
		if isCode(err, "MOVED") {
			return nil // a follower in redirect mode that knows the leader
		}
		// Before it leads, the node must say so with a retryable code
		// (SPEC section 6), nothing else.
		var re redis.Error
		if errors.As(err, &re) && !isCode(err, "TRYAGAIN") && !isCode(err, "CLUSTERDOWN") {
			return fmt.Errorf("while not ready the node answered %q, want -TRYAGAIN or -CLUSTERDOWN", err)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-n.exitedCh():
			return fmt.Errorf("process exited while waiting (last error: %v)", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *node) exitedCh() chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exited
}

// alive reports whether the current run's process is still running.
func (n *node) alive() bool {
	select {
	case <-n.exitedCh():
		return false
	default:
		return true
	}
}

// kill is a crash: SIGKILL, then wait for the process to be gone.
func (n *node) kill() {
	n.t.Helper()
	n.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

// term is a graceful shutdown; the process must exit with status 0.
func (n *node) term() {
	n.t.Helper()
	n.signalAndWait(syscall.SIGTERM, 20*time.Second)
	n.mu.Lock()
	err := n.exitErr
	n.mu.Unlock()
	if err != nil {
		n.t.Errorf("fenced exited with %v after SIGTERM, want status 0", err)
	}
}

func (n *node) signalAndWait(sig syscall.Signal, timeout time.Duration) {
	n.t.Helper()
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		n.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-exited:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		n.t.Fatalf("fenced did not exit within %v of %v", timeout, sig)
	}
}

// restart starts the node again on the same data directory and ports.
func (n *node) restart() {
	n.t.Helper()
	if n.alive() {
		n.t.Fatal("restart of a running node")
	}
	n.start()
}

func (n *node) options(proto int) *redis.Options {
	return &redis.Options{
		Addr:     n.addr,
		Protocol: proto,
		// Never resend a command: a write whose reply was lost must stay
		// lost for the tests to reason about it.
		MaxRetries:   -1,
		DialTimeout:  5 * time.Second,
		ReadTimeout:  60 * time.Second, // blocking FLOCKs wait long
		WriteTimeout: 10 * time.Second,
		PoolSize:     8,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// client returns a RESP3 go-redis client of the node, closed at the end of
// the test. It reconnects by itself after a restart.
func (n *node) client(t testing.TB) *redis.Client {
	return n.clientProto(t, 3)
}

func (n *node) clientProto(t testing.TB, proto int) *redis.Client {
	c := redis.NewClient(n.options(proto))
	t.Cleanup(func() { c.Close() })
	return c
}

// soloClient is a client with exactly one connection, for tests that need
// "its own connection".
func (n *node) soloClient(t testing.TB) *redis.Client {
	o := n.options(3)
	o.PoolSize = 1
	o.MinIdleConns = 0
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// ---------------------------------------------------------------------------
// Replies

// tctx is a context that ends with a generous bound, so that a test that
// would hang fails instead.
func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func do(ctx context.Context, c *redis.Client, args ...any) (any, error) {
	return c.Do(ctx, args...).Result()
}

// isCode reports whether err is a RESP error reply with this code word.
func isCode(err error, code string) bool {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	return msg == code || strings.HasPrefix(msg, code+" ")
}

// mustInt runs a command that must answer an integer.
func mustInt(t testing.TB, c *redis.Client, args ...any) int64 {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if err != nil {
		t.Fatalf("%v: %v, want an integer", args, err)
	}
	i, ok := v.(int64)
	if !ok {
		t.Fatalf("%v: %T %v, want an integer", args, v, v)
	}
	return i
}

// mustStr runs a command that must answer a (bulk or simple) string.
func mustStr(t testing.TB, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if err != nil {
		t.Fatalf("%v: %v, want a string", args, err)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v: %T %v, want a string", args, v, v)
	}
	return s
}

// mustNil runs a command that must answer null.
func mustNil(t testing.TB, c *redis.Client, args ...any) {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("%v: (%T %v, %v), want null", args, v, v, err)
	}
}

// mustErr runs a command that must answer an error with this code.
func mustErr(t testing.TB, c *redis.Client, code string, args ...any) {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if !isCode(err, code) {
		t.Fatalf("%v: (%T %v, %v), want -%s", args, v, v, err, code)
	}
}

// openSession opens a session with this TTL (ms; 0 = default).
func openSession(t testing.TB, c *redis.Client, ttl int, name string) string {
	t.Helper()
	args := []any{"SESSION.OPEN"}
	if ttl > 0 {
		args = append(args, "TTL", ttl)
	}
	if name != "" {
		args = append(args, "NAME", name)
	}
	id := mustStr(t, c, args...)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("SESSION.OPEN answered %q, want 32 hex characters", id)
	}
	return id
}

// asMap turns a RESP3 map, or a RESP2 flat array of pairs, into a Go map.
func asMap(v any) (map[string]any, error) {
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, val := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %T %v is not a string", k, k)
			}
			out[ks] = val
		}
	case map[string]any:
		return m, nil
	case []any:
		if len(m)%2 != 0 {
			return nil, fmt.Errorf("flat map of odd length %d", len(m))
		}
		for i := 0; i < len(m); i += 2 {
			ks, ok := m[i].(string)
			if !ok {
				return nil, fmt.Errorf("map key %T %v is not a string", m[i], m[i])
			}
			out[ks] = m[i+1]
		}
	default:
		return nil, fmt.Errorf("%T %v is not a map", v, v)
	}
	return out, nil
}

func checkKeys(m map[string]any, keys ...string) error {
	if len(m) != len(keys) {
		return fmt.Errorf("map has keys %v, want exactly %v", mapKeys(m), keys)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("map has keys %v, want exactly %v", mapKeys(m), keys)
		}
	}
	return nil
}

func mapKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// waiterInfo is one waiter of LOCK.INFO.
type waiterInfo struct {
	Session, Owner string
	Remaining      int64
}

// lockInfo is a parsed LOCK.INFO reply. Held is false when holder is null;
// the token is then null too.
type lockInfo struct {
	Held          bool
	Holder, Owner string
	Count, Limit  int64
	Token         int64
	Waiters       []waiterInfo
}

func (li lockInfo) waiterSessions() []string {
	var ss []string
	for _, w := range li.Waiters {
		ss = append(ss, w.Session)
	}
	return ss
}

// withoutRemaining drops the waiters' remaining times, which change by
// themselves, for comparisons.
func (li lockInfo) withoutRemaining() lockInfo {
	c := li
	c.Waiters = nil
	for _, w := range li.Waiters {
		w.Remaining = 0
		c.Waiters = append(c.Waiters, w)
	}
	return c
}

func parseLockInfo(v any) (lockInfo, error) {
	var li lockInfo
	m, err := asMap(v)
	if err != nil {
		return li, err
	}
	if err := checkKeys(m, "holder", "owner", "count", "limit", "token", "waiters"); err != nil {
		return li, err
	}
	var ok bool
	switch h := m["holder"].(type) {
	case nil:
		if m["owner"] != nil || m["token"] != nil {
			return li, fmt.Errorf("holder is null but owner %v, token %v", m["owner"], m["token"])
		}
	case string:
		li.Held, li.Holder = true, h
		if li.Owner, ok = m["owner"].(string); !ok {
			return li, fmt.Errorf("owner is %T %v, want a string", m["owner"], m["owner"])
		}
		if li.Token, ok = m["token"].(int64); !ok {
			return li, fmt.Errorf("token is %T %v, want an integer", m["token"], m["token"])
		}
	default:
		return li, fmt.Errorf("holder is %T %v", h, h)
	}
	if li.Count, ok = m["count"].(int64); !ok {
		return li, fmt.Errorf("count is %T %v, want an integer", m["count"], m["count"])
	}
	if li.Limit, ok = m["limit"].(int64); !ok {
		return li, fmt.Errorf("limit is %T %v, want an integer", m["limit"], m["limit"])
	}
	ws, ok := m["waiters"].([]any)
	if !ok {
		return li, fmt.Errorf("waiters is %T %v, want an array", m["waiters"], m["waiters"])
	}
	for _, wv := range ws {
		wm, err := asMap(wv)
		if err != nil {
			return li, fmt.Errorf("waiter: %v", err)
		}
		if err := checkKeys(wm, "session", "owner", "remaining"); err != nil {
			return li, fmt.Errorf("waiter: %v", err)
		}
		var w waiterInfo
		s, ok1 := wm["session"].(string)
		o, ok2 := wm["owner"].(string)
		r, ok3 := wm["remaining"].(int64)
		if !ok1 || !ok2 || !ok3 {
			return li, fmt.Errorf("waiter fields have wrong types: %v", wm)
		}
		w.Session, w.Owner, w.Remaining = s, o, r
		li.Waiters = append(li.Waiters, w)
	}
	return li, nil
}

func getLockInfo(t testing.TB, c *redis.Client, lock string) lockInfo {
	t.Helper()
	v, err := do(tctx(t), c, "LOCK.INFO", lock)
	if err != nil {
		t.Fatalf("LOCK.INFO %s: %v", lock, err)
	}
	li, err := parseLockInfo(v)
	if err != nil {
		t.Fatalf("LOCK.INFO %s: %v (reply %v)", lock, err, v)
	}
	return li
}

// sessionInfo is a parsed SESSION.INFO reply.
type sessionInfo struct {
	ID, Name       string
	TTL, Remaining int64
	Created        string
	Locks, Waiting []string
}

func parseSessionInfo(v any) (sessionInfo, error) {
	var si sessionInfo
	m, err := asMap(v)
	if err != nil {
		return si, err
	}
	if err := checkKeys(m, "id", "name", "ttl", "remaining", "created", "locks", "waiting"); err != nil {
		return si, err
	}
	var ok [5]bool
	si.ID, ok[0] = m["id"].(string)
	si.Name, ok[1] = m["name"].(string)
	si.TTL, ok[2] = m["ttl"].(int64)
	si.Remaining, ok[3] = m["remaining"].(int64)
	si.Created, ok[4] = m["created"].(string)
	for i, o := range ok {
		if !o {
			return si, fmt.Errorf("field %d of %v has the wrong type", i, m)
		}
	}
	if si.Locks, err = stringArray(m["locks"]); err != nil {
		return si, fmt.Errorf("locks: %v", err)
	}
	if si.Waiting, err = stringArray(m["waiting"]); err != nil {
		return si, fmt.Errorf("waiting: %v", err)
	}
	return si, nil
}

func stringArray(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%T %v is not an array", v, v)
	}
	out := []string{}
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %T %v is not a string", e, e)
		}
		out = append(out, s)
	}
	return out, nil
}

func getSessionInfo(t testing.TB, c *redis.Client, id string) sessionInfo {
	t.Helper()
	v, err := do(tctx(t), c, "SESSION.INFO", id)
	if err != nil {
		t.Fatalf("SESSION.INFO %s: %v", id, err)
	}
	si, err := parseSessionInfo(v)
	if err != nil {
		t.Fatalf("SESSION.INFO %s: %v (reply %v)", id, err, v)
	}
	return si
}

func sessionList(t testing.TB, c *redis.Client) []string {
	t.Helper()
	v, err := do(tctx(t), c, "SESSION.LIST")
	if err != nil {
		t.Fatalf("SESSION.LIST: %v", err)
	}
	ss, err := stringArray(v)
	if err != nil {
		t.Fatalf("SESSION.LIST: %v", err)
	}
	return ss
}

// infoRaft returns the fields of INFO raft.
func infoRaft(t testing.TB, c *redis.Client) map[string]string {
	t.Helper()
	s, err := c.Info(tctx(t), "raft").Result()
	if err != nil {
		t.Fatalf("INFO raft: %v", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

func infoInt(t testing.TB, m map[string]string, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(m[key], 10, 64)
	if err != nil {
		t.Fatalf("INFO raft %s = %q: %v", key, m[key], err)
	}
	return v
}

// eventually polls cond every 10 ms until it holds, failing the test after
// timeout. It is for waiting on state that changes asynchronously (a wait
// being queued, a cancellation going through Raft), never to assert how long
// that takes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitQueued waits until LOCK.INFO shows exactly these waiter sessions, in
// this order.
func waitQueued(t testing.TB, c *redis.Client, lock string, sessions ...string) lockInfo {
	t.Helper()
	var li lockInfo
	eventually(t, 10*time.Second, fmt.Sprintf("waiters of %s to be %v", lock, sessions), func() bool {
		li = getLockInfo(t, c, lock)
		got := li.waiterSessions()
		if len(got) != len(sessions) {
			return false
		}
		for i := range got {
			if got[i] != sessions[i] {
				return false
			}
		}
		return true
	})
	return li
}

// reply is the outcome of a command run in the background.
type reply struct {
	val  any
	err  error
	sent time.Time
	done time.Time
}

// async runs a command on c in a goroutine; its reply arrives on the
// channel.
func async(c *redis.Client, args ...any) <-chan reply {
	ch := make(chan reply, 1)
	sent := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		v, err := c.Do(ctx, args...).Result()
		ch <- reply{val: v, err: err, sent: sent, done: time.Now()}
	}()
	return ch
}

// await takes the reply of an async command, failing after 15 s.
func await(t testing.TB, ch <-chan reply, what string) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("no reply to %s within 15s", what)
		return reply{}
	}
}

// pending reports whether an async command has not been answered yet.
func pending(ch <-chan reply) (reply, bool) {
	select {
	case r := <-ch:
		return r, false
	default:
		return reply{}, true
	}
}

func replyInt(t testing.TB, r reply, what string) int64 {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v, want an integer", what, r.err)
	}
	i, ok := r.val.(int64)
	if !ok {
		t.Fatalf("%s: %T %v, want an integer", what, r.val, r.val)
	}
	return i
}

// appliedIndex is INFO raft's raft_applied_index.
func appliedIndex(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	return infoInt(t, infoRaft(t, c), "raft_applied_index")
}
