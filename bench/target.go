package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// readyTimeout bounds how long a node may take to elect itself and serve.
const readyTimeout = 30 * time.Second

// target is the server under test: either a fenced node this tool started
// (cmd != nil) or an address given with --addr.
type target struct {
	addr    string
	desc    string
	tmp     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the started process has exited
	waitErr error         // valid after done is closed
}

// startTarget returns a ready target. With addr set it only waits for that
// server; otherwise it builds (or takes bin), starts and waits for a node.
func startTarget(ctx context.Context, addr, bin string) (*target, error) {
	if addr != "" {
		t := &target{addr: addr, desc: "external server at " + addr}
		return t, waitReady(ctx, addr, nil)
	}
	tmp, err := os.MkdirTemp("", "fenced-bench-")
	if err != nil {
		return nil, err
	}
	t := &target{tmp: tmp}
	if err := t.start(ctx, bin); err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
}

func (t *target) start(ctx context.Context, bin string) error {
	if bin == "" {
		var err error
		if bin, err = buildServer(ctx, t.tmp); err != nil {
			return err
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	t.addr = ports[0]
	logPath := filepath.Join(t.tmp, "fenced.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	t.cmd = exec.Command(bin, "--listen", ports[0], "--raft-addr", ports[1], "--data", filepath.Join(t.tmp, "data"))
	t.cmd.Stdout, t.cmd.Stderr = logFile, logFile
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	t.done = make(chan struct{})
	go func() { t.waitErr = t.cmd.Wait(); close(t.done) }()
	t.desc = fmt.Sprintf("single fenced node started by bench (%s, listen %s)", bin, t.addr)
	if err := waitReady(ctx, t.addr, t.done); err != nil {
		return fmt.Errorf("%w\n--- server log (%s) ---\n%s", err, logPath, tail(logPath, 40))
	}
	return nil
}

// buildServer compiles ./cmd/fenced of the module the tool runs in, so the
// numbers are for the code in this tree, not some binary on PATH.
func buildServer(ctx context.Context, tmp string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("locate module root (go env GOMOD): %v", err)
	}
	bin := filepath.Join(tmp, "fenced")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fenced")
	build.Dir = filepath.Dir(gomod)
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fenced: %w\n%s", err, msg)
	}
	return bin, nil
}

// freePorts asks the kernel for n distinct free loopback ports. All listeners
// stay open until every port is chosen so the same port can't come back twice.
func freePorts(n int) ([]string, error) {
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// waitReady polls until PING answers PONG and a session can be opened (a
// fresh node answers -TRYAGAIN/-CLUSTERDOWN while it elects itself). exited,
// if not nil, aborts the wait when the started process dies.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}) error {
	rdb := newClient(addr, 1, time.Second)
	defer rdb.Close()
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		if last = probe(ctx, rdb); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("server at %s exited before it was ready (last probe: %v)", addr, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("server at %s not ready after %v: %v", addr, readyTimeout, last)
}

func probe(ctx context.Context, rdb *redis.Client) error {
	if pong, err := rdb.Ping(ctx).Result(); err != nil || pong != "PONG" {
		return fmt.Errorf("PING: %q %v", pong, err)
	}
	id, err := rdb.Do(ctx, "SESSION.OPEN", "TTL", 1000, "NAME", "bench-ready").Text()
	if err != nil {
		return fmt.Errorf("SESSION.OPEN: %w", err)
	}
	return rdb.Do(ctx, "SESSION.KILL", id).Err()
}

// stop ends a started node: SIGTERM for its graceful shutdown, SIGKILL if it
// is still running after 5 s. It also removes the temporary directory.
func (t *target) stop() {
	if t.cmd != nil && t.done != nil {
		_ = t.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-t.done:
		case <-time.After(5 * time.Second):
			fmt.Fprintln(os.Stderr, "bench: server ignored SIGTERM for 5s; killing it")
			_ = t.cmd.Process.Kill()
			<-t.done
		}
	}
	if t.tmp != "" {
		_ = os.RemoveAll(t.tmp)
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// newClient is the one place client options are set, so every workload runs
// with the same settings: no retries (a retry would hide an error and skew
// latency), context deadlines honoured, and no connect-time extras
// (CLIENT SETINFO, maintenance notifications) that fenced need not support.
func newClient(addr string, poolSize int, readTimeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		PoolSize:                 poolSize,
		MaxRetries:               -1,
		ContextTimeoutEnabled:    true,
		ReadTimeout:              readTimeout,
		WriteTimeout:             5 * time.Second,
		DialTimeout:              2 * time.Second,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// isRedisNil reports a null reply.
func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }
