package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// scanAll runs a full SCAN iteration (cursor 0 to 0) with opts on c and
// returns the names it returned, sorted and without repeats, and the calls.
func scanAll(t *testing.T, c *resp.Client, opts ...string) ([]string, int) {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for calls := 1; ; calls++ {
		v := doResp(t, c, append([]string{"SCAN", cursor}, opts...)...)
		e := v.Elems()
		if v.IsError() || len(e) != 2 {
			t.Fatalf("SCAN %s %q: %v", cursor, opts, v)
		}
		for _, n := range e[1].Elems() {
			seen[n.Text()] = true
		}
		if cursor = e[0].Text(); cursor == "0" {
			names := make([]string, 0, len(seen))
			for n := range seen {
				names = append(names, n)
			}
			slices.Sort(names)
			return names, calls
		}
		if calls > 100000 {
			t.Fatalf("SCAN %q does not end", opts)
		}
	}
}

func doResp(t *testing.T, c *resp.Client, args ...string) resp.Value {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Do(ctx, b...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return v
}

// TestDiffScan: the same keys (strings, hashes, lists, keys that have
// expired, keys deleted) on a fenced node and on redis-server; full SCAN
// iterations with MATCH, COUNT and TYPE combinations return the same set
// of keys on both (order, repeats and cursors legitimately differ), and
// bad input answers the same error texts.
func TestDiffScan(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	d := dialDiff(t, fd.addr, rd.leader, 2)
	var setup [][]string
	for i := range 300 {
		switch i % 5 {
		case 0, 1:
			setup = append(setup, []string{"SET", fmt.Sprintf("user:%d", i), "v"})
		case 2:
			setup = append(setup, []string{"HSET", fmt.Sprintf("h:%d", i), "f", "v"})
		case 3:
			setup = append(setup, []string{"RPUSH", fmt.Sprintf("list:%d", i), "a", "b"})
		case 4:
			setup = append(setup, []string{"SET", fmt.Sprintf("gone:%d", i), "v", "PX", "1"})
		}
	}
	setup = append(setup, []string{"SET", "", "empty name"}, []string{"SET", "a*b", "v"}, []string{"SET", "ünï", "v"},
		[]string{"SET", "user:0:del", "v"}, []string{"DEL", "user:0:del"})
	for _, c := range setup {
		d.same("setup", c...)
	}
	time.Sleep(20 * time.Millisecond) // the PX 1 keys expire on both
	combos := 0
	for _, match := range []string{"", "*", "user:*", "*:1?", "h:[0-4]*", "a\\*b", "nomatch*", "ü*"} {
		for _, count := range []string{"", "1", "7", "1000", "9223372036854775807"} {
			for _, typ := range []string{"", "string", "HASH", "list", "nosuchtype", "none"} {
				var opts []string
				if match != "" {
					opts = append(opts, "MATCH", match)
				}
				if count != "" {
					opts = append(opts, "COUNT", count)
				}
				if typ != "" {
					opts = append(opts, "TYPE", typ)
				}
				fn, _ := scanAll(t, d.fenced, opts...)
				rn, _ := scanAll(t, d.redis, opts...)
				if !slices.Equal(fn, rn) {
					t.Errorf("SCAN %q: fenced returned %d keys, redis %d\nfenced %q\nredis  %q", opts, len(fn), len(rn), fn, rn)
				}
				combos++
			}
		}
	}
	// Errors, and the replies whose cursor and keys both servers agree on
	// (a cursor past every key, an empty keyspace answer shape).
	for _, c := range [][]string{
		{"SCAN"}, {"SCAN", "x"}, {"SCAN", "1.5"}, {"SCAN", " 1"}, {"SCAN", "1 "}, {"SCAN", "0x10"},
		{"SCAN", "18446744073709551616"}, {"SCAN", "-18446744073709551616"}, {"SCAN", "-"}, {"SCAN", "+"},
		{"SCAN", "99999999999999999999999"}, {"SCAN", "x", "COUNT", "0"},
		{"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "COUNT", "-1"}, {"SCAN", "0", "COUNT", "x"},
		{"SCAN", "0", "COUNT", "1.5"}, {"SCAN", "0", "COUNT", "+1"}, {"SCAN", "0", "COUNT", "01"},
		{"SCAN", "0", "COUNT", "9223372036854775808"}, {"SCAN", "0", "COUNT"}, {"SCAN", "0", "MATCH"},
		{"SCAN", "0", "TYPE"}, {"SCAN", "0", "FOO", "1"}, {"SCAN", "0", "FOO"}, {"SCAN", "0", "MATCH", "*", "FOO", "1"},
		{"SCAN", "0", "FOO", "1", "COUNT", "x"}, {"SCAN", "0", "COUNT", "x", "FOO", "1"},
		{"SCAN", "0", "TYPE", "nosuchtype", "COUNT", "1000"}, {"scan", "0", "match", "nomatch", "count", "1000"},
	} {
		d.same("SCAN errors", c...)
	}
	// Valid cursors other than 0 (strtoul's: signs, leading zeros, the
	// empty string) are accepted by both.
	for _, c := range []string{"", "-1", "+5", "007", "18446744073709551615", "-0"} {
		fv, rv := d.do("SCAN", c, "COUNT", "1000")
		if strings.HasPrefix(fv, "error") || strings.HasPrefix(rv, "error") {
			t.Errorf("SCAN %q: fenced %s, redis %s", c, fv, rv)
		}
	}
	t.Logf("%d SCAN iterations compared, and %d other commands on each server", combos, d.calls)
}

// TestScanFollowerAndFailover: on a 3-node cluster, an iteration started on the
// leader goes on through a follower and then, after a leadership
// transfer, through the new leader and the old one, with the cursors it
// was given; keys are added and deleted between the calls. Every key
// present throughout is returned.
func TestScanFollowerAndFailover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	fol := c.followers(leader)
	conns := map[*node]*resp.Client{}
	dial := func(n *node) *resp.Client {
		if conns[n] == nil {
			cl, err := resp.Dial(context.Background(), n.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Close() })
			conns[n] = cl
		}
		return conns[n]
	}
	lc := dial(leader)
	args := []string{"MSET"}
	for i := range 500 {
		args = append(args, fmt.Sprintf("k%d", i), "v")
	}
	if v := doResp(t, lc, args...); v.IsError() {
		t.Fatal(v)
	}
	sess := doResp(t, lc, "SESSION.OPEN", "TTL", "60000").Text()
	if v := doResp(t, lc, "FLOCK", "lock:1", sess); v.IsError() {
		t.Fatal(v)
	}
	throughout := map[string]bool{"lock:1": true}
	for i := 50; i < 500; i++ {
		throughout[fmt.Sprintf("k%d", i)] = true
	}
	seen := map[string]bool{}
	cursor := "0"
	transferred := false
	for call := 0; ; call++ {
		// Calls 0-4 on the leader, then a follower, then after the
		// transfer on every node in turn.
		var n *node
		switch {
		case call < 5:
			n = leader
		case call < 10:
			n = fol[0]
		default:
			if !transferred {
				if v := doResp(t, dial(fol[1]), "RAFT.TRANSFER"); v.IsError() {
					t.Fatalf("RAFT.TRANSFER: %v", v)
				}
				transferred = true
			}
			n = c.nodes[call%len(c.nodes)]
		}
		var v resp.Value
		eventually(t, 20*time.Second, "SCAN to answer", func() bool {
			v = doResp(t, dial(n), "SCAN", cursor, "COUNT", "20")
			return !v.IsError()
		})
		e := v.Elems()
		for _, k := range e[1].Elems() {
			seen[k.Text()] = true
		}
		// Churn between calls: delete k0-k49 one by one, add new keys.
		if call < 50 {
			doResp(t, dial(n), "DEL", fmt.Sprintf("k%d", call))
			doResp(t, dial(n), "SET", fmt.Sprintf("new%d", call), "v")
		}
		if cursor = e[0].Text(); cursor == "0" {
			break
		}
	}
	if !transferred {
		t.Fatal("the iteration ended before the leadership transfer; use a smaller COUNT")
	}
	for k := range throughout {
		if !seen[k] {
			t.Errorf("%q was present throughout but not returned", k)
		}
	}
}

// TestScanRedisCli: redis-cli --scan, plain and with --pattern, lists a
// fenced node's keys and locks.
func TestScanRedisCli(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		compatSkip(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	n := startNode(t, nodeOpts{})
	cl := n.client(t)
	var want, wantP []string
	for i := range 250 {
		k := fmt.Sprintf("%c%d", "pq"[i%2], i)
		if err := cl.Set(tctx(t), k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
		if k[0] == 'p' {
			wantP = append(wantP, k)
		}
	}
	sess := openSession(t, cl, 60000, "cli")
	if err := cl.Do(tctx(t), "FLOCK", "plock", sess).Err(); err != nil {
		t.Fatal(err)
	}
	want, wantP = append(want, "plock"), append(wantP, "plock")
	slices.Sort(want)
	slices.Sort(wantP)
	host, port, _ := strings.Cut(n.addr, ":")
	for _, tc := range []struct {
		args []string
		want []string
	}{{[]string{"--scan"}, want}, {[]string{"--scan", "--pattern", "p*"}, wantP}} {
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, tc.args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %q: %v\n%s", tc.args, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("redis-cli %q: %d keys, want %d\n%s", tc.args, len(got), len(tc.want), out)
		}
	}
}
