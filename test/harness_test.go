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

// tmpDir is TestMain's temporary directory, removed when the tests end;
// what outlives one test (the server binaries) goes there.
var tmpDir string

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
	tmpDir = dir
	return m.Run()
}

// server is the fenced binary the tests run, built on first use so that a
// run of tests that need only their own builds (make test's fault-test
// lane) does not build it too.
var server struct {
	once sync.Once
	path string
	err  error
}

// binPath returns the fenced binary: FENCED_TEST_BIN if set (for example a
// deliberately broken one, to see the tests catch it), else one built from
// this tree. Under `go test -race` it is built with the race detector too
// (raceServer), so a data race inside the server fails the test that
// triggered it (see node.checkLog); FENCED_SERVER_RACE=0 turns this off,
// and FENCED_SERVER_RACE=1 on under a test binary built without -race.
func binPath(t testing.TB) string {
	t.Helper()
	server.once.Do(func() {
		if p := os.Getenv("FENCED_TEST_BIN"); p != "" {
			server.path = p
			return
		}
		server.path = filepath.Join(tmpDir, "fenced")
		args := []string{"build", "-o", server.path}
		if raceServer() {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, "github.com/fenced/fenced/cmd/fenced")...)
		build.Dir = ".." // the module root
		if out, err := build.CombinedOutput(); err != nil {
			server.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if server.err != nil {
		t.Fatalf("building fenced: %v", server.err)
	}
	return server.path
}

// raceServer reports whether binPath's server is race-built: the race
// detector's shadow memory and its slowdown (a -race server takes about
// twice the CPU and several times the memory) are what some bounds allow
// for. make test turns it off for the black-box tests and keeps it for the
// fault tests' runs, which put the whole binary under every fault
// (Makefile, test).
func raceServer() bool {
	if os.Getenv("FENCED_TEST_BIN") != "" {
		return false
	}
	switch os.Getenv("FENCED_SERVER_RACE") {
	case "0":
		return false
	case "1": // a race-built server under a test binary built without -race
		return true
	}
	return raceEnabled
}

// parallelUnlessRaceServer makes t a parallel test, except with a
// race-built server, whose slowness under a busy machine would break the
// time bound the test's comment names.
func parallelUnlessRaceServer(t *testing.T) {
	if !raceServer() {
		t.Parallel()
	}
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
// is down between a kill and its restart, and from FENCED_TEST_PORTS
// (lo-hi, default 20000-31999): test processes that run side by side (make
// test's fault-test lane and the rest) take ranges of their own, or one
// could take a port that a node of the other holds while killed.
func freePort(t testing.TB) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	lo, hi := portRange(t)
	for range 1000 {
		p := lo + rand.IntN(hi-lo+1)
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

// portRange is FENCED_TEST_PORTS's range, or the default.
func portRange(t testing.TB) (lo, hi int) {
	v := os.Getenv("FENCED_TEST_PORTS")
	if v == "" {
		return 20000, 31999
	}
	a, b, ok := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo < 1024 || hi < lo+100 || hi > 32767 {
		t.Fatalf("FENCED_TEST_PORTS=%q: want lo-hi within 1024-32767, at least 100 ports", v)
	}
	return lo, hi
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
	// password is what the tests' clients authenticate with: the node's
	// --requirepass, given in args or env.
	password string
}

// node is one fenced process, restartable on the same data directory and
// ports.
type node struct {
	t          testing.TB
	bin        string
	env        []string
	allowCrash bool
	password   string
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

// servingRE finds the node's addresses in its "fenced serving" line, in
// either --log-format. A node started with --log-level warn or error logs
// no such line (it is Info): start it without the harness (logs_test.go).
var servingRE = regexp.MustCompile(`msg="fenced serving" listen=(\S+) raft=(\S+)|"msg":"fenced serving","listen":"([^"]*)","raft":"([^"]*)"`)

// startNode starts a fresh node on a temporary data directory and waits
// until it leads and serves (a linearizable read succeeds). The node is
// stopped, and its stderr printed if the test failed, when the test ends.
func startNode(t testing.TB, opts nodeOpts) *node {
	t.Helper()
	n := &node{t: t, workDir: opts.workDir, bin: opts.bin, env: opts.env, allowCrash: opts.allowCrash, password: opts.password}
	if n.bin == "" {
		n.bin = binPath(t)
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
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:", "shutdown took longer than"} {
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
	n.startNoWait()
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
				if m[1] == "" && m[2] == "" { // the JSON format's groups
					m[1], m[2] = m[3], m[4]
				}
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
		// (see DESIGN.md, Error replies), nothing else.
		var re redis.Error
		if errors.As(err, &re) && !isCode(err, "TRYAGAIN") && !isCode(err, "CLUSTERDOWN") && !isCode(err, "LOADING") {
			return fmt.Errorf("while not ready the node answered %q, want -TRYAGAIN, -CLUSTERDOWN or -LOADING", err)
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
		Password: n.password,
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
