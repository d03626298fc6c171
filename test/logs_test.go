package test

// Logs and the operator's flags: every line on
// stderr goes through slog in --log-format, fenced's, Raft's and Pebble's
// alike; a clean single-node start and restart warn of nothing;
// --log-level filters; --help and --version.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// logLines returns n's stderr without the harness's "==== run" lines.
func logLines(n *node) []string {
	var out []string
	for line := range strings.Lines(n.stderr()) {
		line = strings.TrimRight(line, "\n")
		if line != "" && !strings.HasPrefix(line, "==== run ") {
			out = append(out, line)
		}
	}
	return out
}

// writeAndStop sets a key on n, then stops it with SIGTERM (exit 0).
func writeAndStop(t *testing.T, n *node, key string) {
	t.Helper()
	c := n.client(t)
	if err := c.Set(tctx(t), key, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	c.Close()
	n.term()
}

// TestLogsJSON: with --log-format json every line on stderr is a JSON
// object with time, level and msg, Raft's (component raft) and Pebble's
// (component pebble) included, over a start on an empty directory with
// --log-level debug (where Raft and Pebble say most) and a restart at the
// default level; neither logs a warning or an error.
func TestLogsJSON(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--log-format", "json", "--log-level", "debug"}})
	writeAndStop(t, n, "a")
	n.args = append(n.args, "--log-level", "info") // the last one wins
	n.start()
	writeAndStop(t, n, "b")

	components := map[string]int{}
	served := 0
	for _, line := range logLines(n) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("not a JSON object (%v): %s", err, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k].(string); !ok {
				t.Errorf("no string %q: %s", k, line)
			}
		}
		if ts, _ := m["time"].(string); ts != "" {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Errorf("time %q: %v", ts, err)
			}
		}
		switch m["level"] {
		case "DEBUG", "INFO":
		default:
			t.Errorf("a clean single-node start or restart logged at %v: %s", m["level"], line)
		}
		if c, ok := m["component"].(string); ok {
			components[c]++
		}
		if m["msg"] == "fenced serving" {
			served++
		}
	}
	if components["raft"] == 0 || components["pebble"] == 0 {
		t.Errorf("no line from raft or pebble (components %v)", components)
	}
	if served != 2 {
		t.Errorf("%d \"fenced serving\" lines over 2 runs", served)
	}
}

// TestLogsTextNoWarning: in the default text format, a single-node start
// on an empty directory and its restart log no warning or error (Raft's
// heartbeat timeout before the first election used to warn on each).
func TestLogsTextNoWarning(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	writeAndStop(t, n, "a")
	n.start()
	writeAndStop(t, n, "b")
	lineRE := regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)
	for _, line := range logLines(n) {
		m := lineRE.FindStringSubmatch(line)
		switch {
		case m == nil:
			t.Errorf("not a slog text line: %s", line)
		case m[1] == "WARN" || m[1] == "ERROR":
			t.Errorf("a clean single-node start or restart logged: %s", line)
		case strings.Contains(line, "component="):
			t.Errorf("Raft or Pebble logged below Warn at --log-level info: %s", line)
		}
	}
}

// TestLogLevelWarn: --log-level warn leaves out Info, "fenced serving"
// included, so a clean start, a write and a stop print nothing at all. A
// script waits for such a node by probing it (as here), not its log.
func TestLogLevelWarn(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	for _, format := range []string{"text", "json"} {
		data, raftAddr := t.TempDir(), fmt.Sprintf("127.0.0.1:%d", freePort(t))
		for run := range 2 { // an empty directory, then a restart
			var stderr bytes.Buffer
			cmd := exec.Command(binPath(t), "--data", data, "--listen", addr, "--raft-addr", raftAddr,
				"--log-level", "warn", "--log-format", format)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var err error
			for {
				if err = c.Set(ctx, "k", run, 0).Err(); err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
			c.Close()
			cmd.Process.Signal(syscall.SIGTERM)
			var exitErr error
			select {
			case exitErr = <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				exitErr = <-exited
				t.Errorf("%s run %d: no exit within 20s of SIGTERM", format, run)
			}
			if err != nil || exitErr != nil {
				t.Fatalf("%s run %d: SET %v, exit %v; stderr:\n%s", format, run, err, exitErr, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("%s run %d: --log-level warn printed:\n%s", format, run, stderr.String())
			}
		}
	}
}

// TestBadLogFlags: bad values of the log flags refuse to start, naming the
// flag, and serve nothing.
func TestBadLogFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--log-level", "verbose"}, {"--log-level", ""}, {"--log-level", "-4"}, {"--log-level", "DEBUG-4"},
		{"--log-format", "xml"}, {"--log-format", ""}, {"--log-format", "logfmt"},
	} {
		out, err := runFenced(t, append(args, "--listen", "127.0.0.1:0", "--raft-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)))...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || strings.Contains(out, "fenced serving") {
			t.Errorf("%q: exit %v, want a refusal to start\n%s", args, err, out)
		}
		if !strings.Contains(out, args[0]) {
			t.Errorf("%q: the message does not name the flag:\n%s", args, out)
		}
	}
}

// TestVersion: --version prints the version INFO server reports and the git
// revision the go command recorded in the binary ("unknown" without one,
// as with GOFLAGS=-buildvcs=false), exits 0, and starts nothing; INFO
// server's git_sha is the same revision.
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binPath(t), "--version", "--listen", "nonsense").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	meta, err := exec.Command("go", "version", "-m", binPath(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	rev := "unknown"
	if m := regexp.MustCompile(`(?m)^\s*build\s+vcs\.revision=(\S+)`).FindSubmatch(meta); m != nil {
		rev = string(m[1])
	}
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	version := infoField(t, c, "server", "fenced_version")
	if sha := infoField(t, c, "server", "git_sha"); sha != rev {
		t.Errorf("INFO server git_sha:%s, want %s", sha, rev)
	}
	want := fmt.Sprintf("fenced version %s\ngit revision %s", version, rev)
	if !strings.HasPrefix(string(out), want) || version == "" {
		t.Errorf("--version printed %q, want it to start with %q", out, want)
	}
}

// TestHelp: --help, -h and -help print the grouped, double-dash help on
// stdout and exit 0; test-only flags are not shown.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--help", "-h", "-help"} {
		cmd := exec.Command(binPath(t), arg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v, want exit 0; stderr:\n%s", arg, err, stderr.String())
		}
		help := string(out)
		for _, want := range []string{"Usage: fenced", "--listen ADDR", "--log-level LEVEL", "--log-format FORMAT", "--version", "--requirepass",
			"\nNode:\n", "\nCluster:\n", "\nClients & limits:\n", "\nSecurity:\n", "\nOperations:\n", "e.g. --"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s: help lacks %q:\n%s", arg, want, help)
			}
		}
		for _, bad := range []string{"clock-offset", "\n  -listen", "(default true)"} {
			if strings.Contains(help, bad) {
				t.Errorf("%s: help contains %q:\n%s", arg, bad, help)
			}
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: wrote to stderr:\n%s", arg, stderr.String())
		}
	}
	// Hidden is not refused.
	if out, err := runFenced(t, "--clock-offset", "nonsense"); !strings.Contains(out, "--clock-offset") || err == nil {
		t.Errorf("--clock-offset nonsense: %v %s, want refused naming it (the flag exists)", err, out)
	}
}
