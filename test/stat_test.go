package test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redis-cli --stat: against a node with
// known keys, locks and traffic, redis-cli --stat prints the true key count
// (it used to print 0: INFO's db0 line counted held locks only), a memory
// figure (it printed --9223372036854775808B: there was no used_memory), and
// a request count that grows with the traffic (no garbage: every field it
// reads is there). INFO keyspace's db0 counts the keys with a deadline too.
func TestRedisCliStat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		compatSkip(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	n := startNode(t, nodeOpts{})
	cl := n.client(t)
	for i := range 50 {
		var ttl time.Duration
		if i < 5 {
			ttl = time.Hour
		}
		if err := cl.Set(tctx(t), fmt.Sprint("stat", i), "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := openSession(t, cl, 60000, "stat")
	for i := range 3 {
		mustInt(t, cl, "FLOCK", fmt.Sprint("statlock", i), s)
	}
	if got := infoField(t, cl, "keyspace", "db0"); got != "keys=53,expires=5,avg_ttl=0" {
		t.Fatalf("INFO keyspace db0:%s, want keys=53,expires=5,avg_ttl=0", got)
	}

	// Traffic while redis-cli watches: GETs, one every 10 ms.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.Get(ctx, "stat1")
			time.Sleep(10 * time.Millisecond)
		}
	}()
	host, port, _ := strings.Cut(n.addr, ":")
	// stdbuf: redis-cli buffers its output when it is not a terminal, and
	// the kill at the deadline would lose it.
	out, _ := exec.CommandContext(ctx, "stdbuf", "-oL", "redis-cli", "-h", host, "-p", port, "--stat", "-i", "0.5").CombinedOutput()
	// keys mem clients blocked requests connections
	row := regexp.MustCompile(`^(\d+)\s+(\d+(?:\.\d+)?[BKMGT])\s+(\d+)\s+(\d+)\s+(\d+) \(\+(\d+)\)\s+(\d+)\s*$`)
	var rows [][]string
	for _, line := range strings.Split(string(out), "\n") {
		if m := row.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			rows = append(rows, m)
		}
	}
	if len(rows) < 3 {
		t.Fatalf("redis-cli --stat printed %d rows in 3 s, want at least 3:\n%s", len(rows), out)
	}
	first, _ := strconv.Atoi(rows[0][5])
	last, _ := strconv.Atoi(rows[len(rows)-1][5])
	for _, r := range rows {
		if r[1] != "53" {
			t.Errorf("keys column %s, want 53: %q", r[1], r[0])
		}
	}
	if last <= first {
		t.Errorf("requests column went from %d to %d under traffic", first, last)
	}
	t.Logf("redis-cli --stat rows: first %q, last %q", rows[0][0], rows[len(rows)-1][0])
}

// INFO commandstats and errorstats, as Redis's: calls with
// the time they took, failed calls (ran, answered an error) and rejected
// ones (arity) per command, and error replies by code.
func TestInfoCommandAndErrorStats(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	for range 3 {
		mustStr(t, c, "SET", "cs", "v")
	}
	mustErr(t, c, "WRONGTYPE", "HSET", "cs", "f", "v") // ran, failed
	mustErr(t, c, "ERR", "SET", "cs")                  // arity: rejected
	mustErr(t, c, "ERR", "NOSUCHCOMMAND")
	stat := infoField(t, c, "commandstats", "cmdstat_set")
	m := regexp.MustCompile(`^calls=3,usec=(\d+),usec_per_call=[\d.]+,rejected_calls=1,failed_calls=0$`).FindStringSubmatch(stat)
	if m == nil || m[1] == "0" {
		t.Errorf("cmdstat_set:%s, want 3 calls taking some time and 1 rejected", stat)
	}
	if got := infoField(t, c, "commandstats", "cmdstat_hset"); !strings.HasPrefix(got, "calls=1,") || !strings.HasSuffix(got, "rejected_calls=0,failed_calls=1") {
		t.Errorf("cmdstat_hset:%s, want 1 call, failed", got)
	}
	if got := infoField(t, c, "errorstats", "errorstat_WRONGTYPE"); got != "count=1" {
		t.Errorf("errorstat_WRONGTYPE:%s", got)
	}
	if got := infoField(t, c, "errorstats", "errorstat_ERR"); got != "count=2" {
		t.Errorf("errorstat_ERR:%s, want the arity error and the unknown command", got)
	}
}

// redis-cli --bigkeys reads each key's size with STRLEN, HLEN and LLEN:
// without them it would find every string empty and every hash without
// fields. A held lock is not a string: its
// STRLEN is WRONGTYPE, as for any key of another type.
func TestRedisCliBigkeys(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		compatSkip(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	n := startNode(t, nodeOpts{})
	cl := n.client(t)
	mustStr(t, cl, "SET", "big-string", "hello")
	mustInt(t, cl, "HSET", "big-hash", "f1", "v", "f2", "v")
	mustInt(t, cl, "RPUSH", "big-list", "a", "b", "c")
	if got := mustInt(t, cl, "STRLEN", "big-string"); got != 5 {
		t.Errorf("STRLEN %d", got)
	}
	if got := mustInt(t, cl, "HLEN", "big-hash"); got != 2 {
		t.Errorf("HLEN %d", got)
	}
	if got := mustInt(t, cl, "STRLEN", "nothing"); got != 0 {
		t.Errorf("STRLEN of a missing key: %d", got)
	}
	mustErr(t, cl, "WRONGTYPE", "HLEN", "big-string")
	s := openSession(t, cl, 60000, "bigkeys")
	mustInt(t, cl, "FLOCK", "big-lock", s)
	mustErr(t, cl, "WRONGTYPE", "STRLEN", "big-lock")
	host, port, _ := strings.Cut(n.addr, ":")
	out, err := exec.Command("redis-cli", "-h", host, "-p", port, "--bigkeys").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --bigkeys: %v\n%s", err, out)
	}
	for _, want := range []string{"1 strings with 5 bytes", "1 hashs with 2 fields", "1 lists with 3 items"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("redis-cli --bigkeys does not say %q:\n%s", want, out)
		}
	}
}

// INFO cpu is the node's own CPU time, as Redis reports its own: it grows
// with work, and the default INFO includes it.
func TestInfoCPU(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	cpu := func() float64 {
		u, err := strconv.ParseFloat(infoField(t, c, "cpu", "used_cpu_user"), 64)
		if err != nil {
			t.Fatal(err)
		}
		s, err := strconv.ParseFloat(infoField(t, c, "cpu", "used_cpu_sys"), 64)
		if err != nil {
			t.Fatal(err)
		}
		return u + s
	}
	before := cpu()
	for i := range 2000 {
		mustStr(t, c, "SET", fmt.Sprintf("cpu%d", i), "v")
	}
	if after := cpu(); after <= before {
		t.Errorf("used CPU %.6f s after 2,000 writes, %.6f s before", after, before)
	}
	if all := mustStr(t, c, "INFO"); !strings.Contains(all, "# Cpu\r\nused_cpu_sys:") {
		t.Errorf("the default INFO has no cpu section:\n%s", all)
	}
}
