package test

// Compatibility with real lock client libraries, run as separate programs
// (test/compat/python, test/compat/node) against a 3-node cluster. This file
// holds the Python test and the helpers that the Node test shares.
//
// Environment:
//
//	FENCED_REQUIRE_COMPAT=1  a missing interpreter, library or redis-server
//	                         fails the tests instead of skipping them (CI)
//	FENCED_COMPAT_REDIS=1    run the same programs against a real redis-server
//	                         on a free port instead of fenced (validates the
//	                         programs themselves; FENCE checks are left out)
//	FENCED_COMPAT_PYTHON=p   the Python interpreter (default: the first of
//	                         /usr/bin/python3 and python3 that imports redis)

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// compatTarget is what the client programs are pointed at: a fenced
// cluster, or one redis-server (which then stands for leader and follower).
type compatTarget struct {
	kind      string // "fenced" or "redis-server"
	leader    string
	followers []string
	all       []string // every node, leader first
	fence     bool     // FENCE exists (fenced only)
}

func compatRequired() bool { return os.Getenv("FENCED_REQUIRE_COMPAT") == "1" }

// compatSkip skips the test because a client runtime or library is missing,
// or fails it when FENCED_REQUIRE_COMPAT=1 (CI installs them all).
func compatSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if compatRequired() {
		t.Fatalf("%s (FENCED_REQUIRE_COMPAT=1, so this is a failure; .ci/run installs it)", msg)
	}
	t.Skipf("%s; skipping (set FENCED_REQUIRE_COMPAT=1 to fail instead)", msg)
}

// startCompatTarget starts a 3-node fenced cluster, or a redis-server when
// FENCED_COMPAT_REDIS=1.
func startCompatTarget(t testing.TB) *compatTarget {
	t.Helper()
	if os.Getenv("FENCED_COMPAT_REDIS") == "1" {
		return startRedisServer(t)
	}
	c := startCluster(t, 3)
	l := c.leader(30 * time.Second)
	tgt := &compatTarget{kind: "fenced", leader: l.addr, all: []string{l.addr}, fence: true}
	for _, f := range c.followers(l) {
		tgt.followers = append(tgt.followers, f.addr)
		tgt.all = append(tgt.all, f.addr)
	}
	if len(tgt.followers) == 0 {
		t.Fatal("a 3-node cluster without followers")
	}
	return tgt
}

// startRedisServer starts a redis-server with no persistence, and the
// settings in extra ("--databases", "1").
func startRedisServer(t testing.TB, extra ...string) *compatTarget {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		compatSkip(t, "FENCED_COMPAT_REDIS=1 but there is no redis-server (apt-get install redis-server)")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := strings.Cut(addr, ":")
	var logBuf bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir()}, extra...)...)
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("---- redis-server %s ----\n%s", addr, logBuf.String())
		}
	})
	c := compatClient(t, addr)
	eventually(t, 10*time.Second, "redis-server to answer PING", func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
	return &compatTarget{kind: "redis-server", leader: addr, followers: []string{addr},
		all: []string{addr}}
}

// compatClient is a go-redis client of addr for the test's own checks,
// closed at the end of the test.
func compatClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient((&node{addr: addr}).options(3))
	t.Cleanup(func() { c.Close() })
	return c
}

// compatSummary is the JSON object a compat program prints as its last line.
type compatSummary struct {
	Mode         string     `json:"mode"`
	Checks       int        `json:"checks"`
	Fence        []int64    `json:"fence"`
	Acquisitions int        `json:"acquisitions"`
	Contended    int        `json:"contended"`
	Records      [][2]int64 `json:"records"` // [counter value written, FENCE token or 0]
	Client       string     `json:"client"`
	Redlock      string     `json:"redlock"`
	RedisPy      string     `json:"redis_py"`
	TLS          string     `json:"tls"` // the TLS version negotiated, "" without TLS
	Lib          string     `json:"lib"` // the library a docs driver ran the page on

	elapsed time.Duration
}

// errUnsupported is a program's exit code 3: the installed library cannot
// do what was asked (for example RESP3 with redis-py < 5).
var errUnsupported = errors.New("unsupported by the installed library")

// execCompat runs one compat program in dir and decodes its summary. Any
// failure is returned with the program's output; exit code 3 is
// errUnsupported.
func execCompat(timeout time.Duration, dir, name string, args ...string) (compatSummary, error) {
	var sum compatSummary
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	sum.elapsed = time.Since(start).Round(time.Millisecond)
	desc := name + " " + strings.Join(args, " ")
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return sum, fmt.Errorf("%w: %s", errUnsupported, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%v (killed after %v)", err, timeout)
		}
		return sum, fmt.Errorf("%s: %v after %v\n---- stdout ----\n%s---- stderr ----\n%s",
			desc, err, sum.elapsed, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		return sum, fmt.Errorf("%s: last line of stdout is not a summary: %v\n%s", desc, err, stdout.String())
	}
	if sum.Checks == 0 {
		return sum, fmt.Errorf("%s: ran no checks: %s", desc, stdout.String())
	}
	return sum, nil
}

// runCompat runs one program on the test goroutine: a failure fails the
// test, exit code 3 skips it (a property of the installed library, not of
// the server, so it skips even when FENCED_REQUIRE_COMPAT=1).
func runCompat(t testing.TB, timeout time.Duration, dir, name string, args ...string) compatSummary {
	t.Helper()
	sum, err := execCompat(timeout, dir, name, args...)
	if errors.Is(err, errUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	lib := strings.TrimSpace(strings.Join([]string{sum.Client, sum.Redlock}, " "))
	if sum.RedisPy != "" {
		lib = "redis-py " + sum.RedisPy
	}
	if sum.Lib != "" {
		lib = sum.Lib
	}
	t.Logf("%s: %d checks passed in %v (%s)", strings.Join(args, " "), sum.Checks, sum.elapsed, lib)
	return sum
}

// checkFenceTokens checks the tokens a basic run read after successive
// acquisitions of one key: as many as expected (none on redis-server), and
// strictly increasing.
func checkFenceTokens(t testing.TB, tgt *compatTarget, sum compatSummary, want int) {
	t.Helper()
	if !tgt.fence {
		if len(sum.Fence) != 0 {
			t.Errorf("FENCE tokens %v read from %s", sum.Fence, tgt.kind)
		}
		return
	}
	if len(sum.Fence) != want {
		t.Fatalf("%d FENCE tokens %v, want %d", len(sum.Fence), sum.Fence, want)
	}
	for i := 1; i < len(sum.Fence); i++ {
		if sum.Fence[i] <= sum.Fence[i-1] {
			t.Errorf("FENCE tokens %v are not strictly increasing", sum.Fence)
		}
	}
}

// checkContention checks the summaries of the workers that took one lock
// and incremented counter inside it with GET then SET: every acquisition
// read the value the previous holder wrote (the values written are exactly
// 1..total, and the key holds total), on fenced the fencing tokens
// increase in the order the holders held the lock, and at least
// minContended acquisitions found the lock held first (runContending
// makes sure some must have).
func checkContention(t testing.TB, tgt *compatTarget, sums []compatSummary, counter string, want, minContended int) {
	t.Helper()
	got, err := compatClient(t, tgt.leader).Get(tctx(t), counter).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", counter, err)
	}
	checkContentionValue(t, tgt, sums, counter, got, want, minContended)
}

// checkContentionValue is checkContention given the counter's value.
func checkContentionValue(t testing.TB, tgt *compatTarget, sums []compatSummary, counter, got string, want, minContended int) {
	t.Helper()
	total, contended := 0, 0
	var recs [][2]int64
	for _, s := range sums {
		total += s.Acquisitions
		contended += s.Contended
		if len(s.Records) != s.Acquisitions {
			t.Fatalf("worker reported %d acquisitions but %d records", s.Acquisitions, len(s.Records))
		}
		recs = append(recs, s.Records...)
	}
	if total != want {
		t.Fatalf("%d acquisitions, want %d", total, want)
	}
	if got != strconv.Itoa(total) {
		t.Errorf("counter %s = %s after %d lock-protected increments: holders overlapped", counter, got, total)
	}
	slices.SortFunc(recs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for i, r := range recs {
		if r[0] != int64(i+1) {
			t.Fatalf("values written, in order, are not 1..%d: at %d got %d (two holders read the same value)",
				total, i, r[0])
		}
		if tgt.fence {
			if r[1] <= 0 {
				t.Fatalf("acquisition %d: FENCE token %d", i+1, r[1])
			}
			if i > 0 && r[1] <= recs[i-1][1] {
				t.Fatalf("FENCE token of holder %d is %d, of holder %d is %d: not increasing in lock order",
					i, recs[i-1][1], i+1, r[1])
			}
		}
	}
	if contended < minContended {
		t.Errorf("%d acquisitions found the lock held first, want at least %d: the workload did not contend", contended, minContended)
	}
	t.Logf("%d acquisitions, %d of them found the lock held first; counter %s", total, contended, got)
}

// runWorkers runs the programs concurrently and returns their summaries.
func runWorkers(t testing.TB, timeout time.Duration, dir, name string, argvs [][]string) []compatSummary {
	t.Helper()
	sums := make([]compatSummary, len(argvs))
	errs := make([]error, len(argvs))
	var wg sync.WaitGroup
	for i, argv := range argvs {
		wg.Go(func() { sums[i], errs[i] = execCompat(timeout, dir, name, argv...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("worker failed: %v", err)
	}
	logWorkers(t, sums)
	return sums
}

func logWorkers(t testing.TB, sums []compatSummary) {
	t.Helper()
	for i, s := range sums {
		t.Logf("worker %d: %d acquisitions (%d found the lock held) in %v", i, s.Acquisitions, s.Contended, s.elapsed)
	}
}

// runContending runs lock workers (argvs, each given --announce announce)
// so that they contend for certain rather than by how the machine happens
// to schedule them: the test takes lock itself first (SET NX with no TTL,
// so that no slow start outlasts it) and lets it go only once waiters
// workers have INCRed announce, which each does when its first try finds
// the lock held. Those waiters then queue for it together. c is a client
// of the node the workers' lock lives on. That the lock still holds the
// test's value when it lets go is checked too: no worker took a held lock.
func runContending(t testing.TB, c *redis.Client, lock, announce string, waiters int, timeout time.Duration, dir, name string, argvs [][]string) []compatSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const holder = "held-by-the-test"
	if ok, err := c.SetNX(ctx, lock, holder, 0).Result(); err != nil || !ok {
		t.Fatalf("SET %s NX before the workers start: %v, %v", lock, ok, err)
	}
	sums := make([]compatSummary, len(argvs))
	errs := make([]error, len(argvs))
	exited := make(chan int, len(argvs))
	for i, argv := range argvs {
		go func() {
			sums[i], errs[i] = execCompat(timeout, dir, name, argv...)
			exited <- i
		}()
	}
	running := len(argvs)
	var problems []string
	announced, lastErr := 0, error(nil)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// No worker can finish while the test holds the lock: one that ends
	// failed, and holding on would only make the others time out too.
wait:
	for announced < waiters {
		select {
		case i := <-exited:
			running--
			problems = append(problems, fmt.Sprintf("worker %d ended while the test held %s, %d of %d workers having found it held (last GET %s error: %v)",
				i, lock, announced, waiters, announce, lastErr))
			break wait
		case <-tick.C:
		}
		n, err := c.Get(ctx, announce).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			lastErr = err
			continue
		}
		announced = n
	}
	// Let go, retrying through a lost leader: the workers wait for it. The
	// lock is checked once, before any DEL (whose reply may be lost).
	for checked := false; ; {
		v, err := c.Get(ctx, lock).Result()
		if err == nil || errors.Is(err, redis.Nil) {
			if !checked && v != holder {
				problems = append(problems, fmt.Sprintf("%s, held by the test, holds %q (%v) when the test lets it go, not %q: a worker took a held lock",
					lock, v, err, holder))
			}
			checked = true
			err = c.Del(ctx, lock).Err()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			problems = append(problems, fmt.Sprintf("letting %s go: %v", lock, err))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for ; running > 0; running-- {
		<-exited
	}
	for _, p := range problems {
		t.Error(p)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("worker failed: %v", err)
	}
	logWorkers(t, sums)
	return sums
}

// findPython returns an interpreter that imports redis (redis-py).
func findPython(t testing.TB) (string, string) {
	t.Helper()
	cands := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("FENCED_COMPAT_PYTHON"); p != "" {
		cands = []string{p}
	}
	for _, c := range cands {
		out, err := exec.Command(c, "-c", "import redis; print(redis.__version__)").Output()
		if err == nil {
			return c, strings.TrimSpace(string(out))
		}
	}
	compatSkip(t, "no Python interpreter with the redis module (tried %v; apt-get install python3-redis)", cands)
	return "", ""
}

// TestCompatPythonRedisPyLock runs redis-py's redis.lock.Lock against the leader
// and a follower (RESP2, and RESP3 where the installed redis-py has
// protocol=3), then 4 worker processes spread over all nodes contending
// for one lock.
func TestCompatPythonRedisPyLock(t *testing.T) {
	t.Parallel()
	py, version := findPython(t)
	tgt := startCompatTarget(t)
	t.Logf("redis-py %s (%s) against %s %v", version, py, tgt.kind, tgt.all)
	const dir, prog = "compat/python", "redis_py_lock.py"

	for _, proto := range []string{"2", "3"} {
		for _, at := range []struct{ name, addr string }{
			{"leader", tgt.leader}, {"follower", tgt.followers[0]},
		} {
			t.Run(fmt.Sprintf("basic/resp%s/%s", proto, at.name), func(t *testing.T) {
				args := []string{prog, "basic", "--addr", at.addr, "--protocol", proto,
					"--prefix", fmt.Sprintf("py-basic-%s-%s", proto, at.name)}
				if tgt.fence {
					args = append(args, "--fence")
				}
				sum := runCompat(t, 2*time.Minute, dir, py, args...)
				checkFenceTokens(t, tgt, sum, 5)
			})
		}
	}

	t.Run("contention", func(t *testing.T) {
		const workers, iterations = 4, 25
		prefix := "py-contention"
		var argvs [][]string
		for i := range workers {
			a := []string{prog, "worker", "--addr", tgt.all[i%len(tgt.all)], "--prefix", prefix,
				"--id", strconv.Itoa(i), "--iterations", strconv.Itoa(iterations), "--announce", prefix + ":waiting"}
			if tgt.fence {
				a = append(a, "--fence")
			}
			argvs = append(argvs, a)
		}
		sums := runContending(t, compatClient(t, tgt.leader), prefix+":lock", prefix+":waiting", workers, 3*time.Minute, dir, py, argvs)
		checkContention(t, tgt, sums, prefix+":counter", workers*iterations, workers)
	})
}

// TestCompatPythonRedisPyTransactions runs redis-py's pipeline() (MULTI ...
// EXEC by default) and its WATCH recipe against the leader and a follower
// (a key changed through another node fails the EXEC with WatchError),
// then 4 worker processes on every node incrementing one counter by
// check-and-set: it ends at exactly the transactions that succeeded.
func TestCompatPythonRedisPyTransactions(t *testing.T) {
	t.Parallel()
	py, version := findPython(t)
	tgt := startCompatTarget(t)
	t.Logf("redis-py %s (%s) against %s %v", version, py, tgt.kind, tgt.all)
	const dir, prog = "compat/python", "redis_py_tx.py"
	for _, proto := range []string{"2", "3"} {
		for _, at := range []struct{ name, addr, other string }{
			{"leader", tgt.leader, tgt.followers[0]}, {"follower", tgt.followers[0], tgt.all[len(tgt.all)-1]},
		} {
			t.Run(fmt.Sprintf("basic/resp%s/%s", proto, at.name), func(t *testing.T) {
				runCompat(t, 2*time.Minute, dir, py, prog, "basic", "--addr", at.addr, "--other", at.other,
					"--protocol", proto, "--prefix", fmt.Sprintf("py-tx-%s-%s", proto, at.name))
			})
		}
	}
	t.Run("check-and-set", func(t *testing.T) {
		const workers, iterations = 4, 25
		var argvs [][]string
		for i := range workers {
			argvs = append(argvs, []string{prog, "worker", "--addr", tgt.all[i%len(tgt.all)], "--prefix", "py-tx-cas",
				"--iterations", strconv.Itoa(iterations)})
		}
		sums := runWorkers(t, 3*time.Minute, dir, py, argvs)
		ok, retried := 0, 0
		for _, s := range sums {
			ok += s.Acquisitions
			retried += s.Contended
		}
		got, err := compatClient(t, tgt.leader).Get(tctx(t), "py-tx-cas:counter").Int()
		if err != nil || got != ok || ok != workers*iterations {
			t.Fatalf("counter %d (%v), %d transactions succeeded, want %d", got, err, ok, workers*iterations)
		}
		t.Logf("%d transactions, %d retried after a WatchError", ok, retried)
	})
}
