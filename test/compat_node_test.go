package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nodeCompatDir holds the Node programs, package.json and package-lock.json;
// `npm ci` there installs node_modules (.ci/run does).
const nodeCompatDir = "compat/node"

// findNode returns the node binary and its major version, skipping (or
// failing, with FENCED_REQUIRE_COMPAT=1) when node or the installed
// packages are missing.
func findNode(t testing.TB) (string, int) {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		compatSkip(t, "no node in PATH (apt-get install nodejs npm)")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		compatSkip(t, "node --version: %v", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		t.Fatalf("node --version answered %q", out)
	}
	for _, pkg := range []string{"ioredis", "ioredis5", "redlock", "redlock4"} {
		if _, err := os.Stat(filepath.Join(nodeCompatDir, "node_modules", pkg, "package.json")); err != nil {
			compatSkip(t, "npm package %s is not installed (run `npm ci` in test/%s)", pkg, nodeCompatDir)
		}
	}
	return bin, major
}

// TestCompatNodeRedlock runs node-redlock (5.0.0-beta.2, and 4.2.0, npm's
// "latest") on ioredis (6.0.0 with RESP3 and RESP2, and 5.x with RESP2)
// against the leader and a follower, then several concurrent Redlock
// clients in two processes, spread over all nodes, contending for one lock.
func TestCompatNodeRedlock(t *testing.T) {
	t.Parallel()
	node, major := findNode(t)
	tgt := startCompatTarget(t)
	t.Logf("node v%d against %s %v", major, tgt.kind, tgt.all)
	const prog = "redlock_workload.js"

	type variant struct {
		client   string // ioredis (6.x) or ioredis5
		protocol int
		redlock  string
	}
	label := func(v variant) string {
		c := "ioredis6"
		if v.client == "ioredis5" {
			c = "ioredis5"
		}
		return fmt.Sprintf("redlock%s/%s/resp%d", v.redlock, c, v.protocol)
	}
	// ioredis 6 requires node >= 20 (its package.json engines); Debian 12's
	// own nodejs is 18.
	usable := func(t *testing.T, v variant) {
		if v.client == "ioredis" && major < 20 {
			t.Skipf("ioredis 6 needs node >= 20, this is node v%d", major)
		}
	}

	basics := []struct {
		v  variant
		at string
	}{
		{variant{"ioredis", 3, "5"}, "leader"},
		{variant{"ioredis", 3, "5"}, "follower"},
		{variant{"ioredis", 2, "5"}, "follower"},
		{variant{"ioredis5", 2, "5"}, "leader"},
		{variant{"ioredis", 3, "4"}, "follower"},
		{variant{"ioredis5", 2, "4"}, "leader"},
	}
	for _, b := range basics {
		name := fmt.Sprintf("basic/%s/%s", label(b.v), b.at)
		t.Run(name, func(t *testing.T) {
			usable(t, b.v)
			addr := tgt.leader
			if b.at == "follower" {
				addr = tgt.followers[len(tgt.followers)-1]
			}
			args := []string{prog, "basic", "--addr", addr, "--client", b.v.client,
				"--protocol", strconv.Itoa(b.v.protocol), "--redlock", b.v.redlock,
				"--prefix", strings.ReplaceAll(name, "/", "-")}
			if tgt.fence {
				args = append(args, "--fence")
			}
			sum := runCompat(t, 2*time.Minute, nodeCompatDir, node, args...)
			checkFenceTokens(t, tgt, sum, 4)
		})
	}

	for _, v := range []variant{{"ioredis", 3, "5"}, {"ioredis5", 2, "4"}} {
		name := "contention/" + label(v)
		t.Run(name, func(t *testing.T) {
			usable(t, v)
			const procs, workers, iterations = 2, 3, 12
			prefix := strings.ReplaceAll(name, "/", "-")
			var argvs [][]string
			for p := range procs {
				// Each process's workers connect to the nodes round-robin,
				// starting at a different node.
				var addrs []string
				for i := range tgt.all {
					addrs = append(addrs, tgt.all[(p+i)%len(tgt.all)])
				}
				a := []string{prog, "contention", "--addr", strings.Join(addrs, ","),
					"--client", v.client, "--protocol", strconv.Itoa(v.protocol),
					"--redlock", v.redlock, "--prefix", prefix,
					"--workers", strconv.Itoa(workers), "--iterations", strconv.Itoa(iterations),
					"--announce", prefix + ":waiting"}
				if tgt.fence {
					a = append(a, "--fence")
				}
				argvs = append(argvs, a)
			}
			sums := runContending(t, compatClient(t, tgt.leader), prefix+":lock", prefix+":waiting", procs*workers,
				3*time.Minute, nodeCompatDir, node, argvs)
			checkContention(t, tgt, sums, prefix+":counter", procs*workers*iterations, procs*workers)
		})
	}
}
