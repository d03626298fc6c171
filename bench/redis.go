package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// redisServer is one redis-server the tool started: the peer a user would
// pick for Redis locks, without persistence or with every write fsynced.
type redisServer struct {
	name string
	addr string
	tmp  string
	proc *proc
}

// startRedis starts redis-server on a free loopback port in a fresh
// directory. aof: --appendonly yes --appendfsync always (durable, one fsync
// per event-loop iteration); otherwise no persistence at all.
func startRedis(ctx context.Context, bin, tmp, name string, aof bool) (*redisServer, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ports[0])
	args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no",
		"--save", "", "--logfile", "", "--protected-mode", "yes"}
	if aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	r := &redisServer{name: name, addr: ports[0], tmp: dir,
		proc: &proc{name: name, path: bin, args: args, logPath: filepath.Join(dir, "redis.log")}}
	if err := r.proc.start(); err != nil {
		return nil, err
	}
	rdb := newClient(r.addr, 1, time.Second)
	defer rdb.Close()
	err = waitFor(ctx, name+" answering PING", readyTimeout, 20*time.Millisecond, r.proc.exited(),
		func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, r.proc.logTail())
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *redisServer) stop() {
	r.proc.stop(5 * time.Second)
	_ = os.RemoveAll(r.tmp)
}

// binaryVersion runs `bin --version` for the report's record of what was
// compared; the first line is enough to identify a Debian build.
func binaryVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}
