package test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The differential test of SORT and SORT_RO (cluster version 3) against
// redis-server 7.0.15: lists and sets of numbers and words, sorted by
// themselves or by weight keys and hash fields (BY), ALPHA, DESC, LIMIT at
// its edges, GET patterns, STORE (then the stored list), bad options and
// scores, wrong types, and inside EVAL, over RESP2 and RESP3. Replies are
// compared in order, except a set left unsorted (BY a constant, no STORE,
// outside a script), whose order is each server's own: compared sorted.

var dsoSetup = [][]string{
	{"DEL", "nl", "wl", "ns", "ws", "str", "empty", "w_1", "w_2", "w_3", "w_10", "w_a", "w_b", "w_c", "o_1", "o_2", "o_3", "o_10", "dst", "fl"},
	{"RPUSH", "nl", "3", "1", "10", "2", "-5", "1.5"},
	{"RPUSH", "wl", "banana", "apple", "cherry", "Apple", "10", "9"},
	{"SADD", "ns", "3", "1", "10", "2"},
	{"SADD", "ws", "b", "a", "c"},
	{"RPUSH", "fl", "1", "x", "2"},
	{"SET", "str", "v"},
	{"MSET", "w_1", "30", "w_2", "20", "w_3", "10", "w_10", "5", "w_a", "z", "w_b", "y", "w_c", "x"},
	{"HSET", "o_1", "n", "one", "w", "4"}, {"HSET", "o_2", "n", "two", "w", "3"},
	{"HSET", "o_3", "n", "three", "w", "2"}, {"HSET", "o_10", "n", "ten", "w", "1"},
}

func dsoCases() (cases [][]string, unordered map[int]bool) {
	unordered = map[int]bool{}
	add := func(c ...string) { cases = append(cases, c) }
	for _, key := range []string{"nl", "ns", "wl", "ws", "missing", "str", "fl"} {
		for _, opts := range [][]string{{}, {"DESC"}, {"ALPHA"}, {"ALPHA", "DESC"}, {"LIMIT", "1", "2"}, {"LIMIT", "0", "0"},
			{"LIMIT", "-1", "2"}, {"LIMIT", "2", "-1"}, {"LIMIT", "10", "2"}, {"LIMIT", "1", "100"}, {"BY", "w_*"}, {"BY", "w_*", "DESC"},
			{"BY", "o_*->w"}, {"BY", "w_*", "GET", "#", "GET", "o_*->n"}, {"GET", "o_*->n", "GET", "w_*"}, {"GET", "#"},
			{"BY", "nosort"}, {"BY", "nosort", "DESC"}, {"BY", "nosort", "LIMIT", "1", "2"}, {"BY", "nosort", "DESC", "LIMIT", "1", "2"},
			{"BY", "nosort", "GET", "o_*->n"}, {"LIMIT", "x", "1"}, {"LIMIT", "1"}, {"FOO"}, {"GET"}, {"ALPHA", "STORE"}} {
			if strings.HasPrefix(key, "w") && len(opts) > 0 && opts[0] == "BY" && opts[1] != "nosort" {
				continue // words have no weight keys: their ties would be each server's own
			}
			setNoSort := (key == "ns" || key == "ws") && len(opts) > 1 && opts[1] == "nosort"
			if setNoSort && slices.Contains(opts, "LIMIT") {
				continue // which members a LIMIT keeps is each server's own order
			}
			for _, cmd := range []string{"SORT", "SORT_RO"} {
				c := append([]string{cmd, key}, opts...)
				if setNoSort {
					unordered[len(cases)] = true
				}
				add(c...)
			}
		}
	}
	for _, st := range [][]string{{"nl"}, {"nl", "DESC", "LIMIT", "0", "3"}, {"ws", "ALPHA"}, {"ns", "BY", "nosort"}, {"nl", "GET", "o_*->n"},
		{"missing"}, {"str"}, {"nl", "BY", "w_*", "GET", "w_*"}} {
		add(append(append([]string{"SORT"}, st...), "STORE", "dst")...)
		add("LRANGE", "dst", "0", "-1")
		add("TYPE", "dst")
	}
	add("SORT_RO", "nl", "STORE", "dst")
	// Inside a script: a set left unsorted comes out ALPHA in both.
	for _, fn := range []string{"call", "pcall"} {
		add("EVAL", "return redis."+fn+"('sort', KEYS[1], 'by', 'nosort')", "1", "ws")
		add("EVAL", "return redis."+fn+"('sort', KEYS[1], 'desc')", "1", "ns")
		add("EVAL", "return redis."+fn+"('sort', KEYS[1], 'by', '_', 'get', '#', 'get', '_:*')", "1", "ws")
		add("EVAL", "return redis."+fn+"('sort_ro', KEYS[1], 'alpha', 'limit', '1', '1')", "1", "wl")
	}
	return cases, unordered
}

func TestDiffSort(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	cases, unordered := dsoCases()
	for _, proto := range []int{2, 3} {
		d := dialDiff(t, fd.addr, rd.leader, proto)
		f, r := d.pipeExact(append(slices.Clone(dsoSetup), cases...))
		f, r = f[len(dsoSetup):], r[len(dsoSetup):]
		for i, c := range cases {
			fc, rc := dsReply(f[i]), dsReply(r[i])
			if unordered[i] {
				fc, rc = dzReply(f[i]), dzReply(r[i])
			}
			if fc != rc {
				t.Errorf("RESP%d %q\n  fenced: %s\n  redis:  %s", proto, c, fc, rc)
			}
		}
	}
	t.Logf("%d cases, over RESP2 and RESP3", len(cases))
}

// TestSortPatternsNeedAllKeys: a user limited to some keys may SORT them,
// but BY a pattern and GET reach keys the command does not name: Redis
// 7.0's errors, in the options' order, directly and from a script; STORE's
// key is checked as any key.
func TestSortPatternsNeedAllKeys(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	admin := n.client(t)
	ctx := tctx(t)
	setUser(t, admin, "lim", "on", ">p", "~s*", "+@all")
	if err := admin.RPush(ctx, "sl", "2", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c := userClient(t, n, "lim", "p")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"SORT", "sl", "BY", "w_*"}, "ERR BY option of SORT denied due to insufficient ACL permissions."},
		{[]any{"SORT", "sl", "GET", "#"}, "ERR GET option of SORT denied due to insufficient ACL permissions."},
		{[]any{"SORT_RO", "sl", "GET", "x", "BY", "w_*"}, "ERR GET option of SORT denied due to insufficient ACL permissions."},
		{[]any{"SORT", "sl", "BY", "nosort"}, "[2 1]"},
		{[]any{"SORT", "sl"}, "[1 2]"},
		{[]any{"SORT", "sl", "STORE", "other"}, "NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]any{"EVAL", "return redis.pcall('sort', KEYS[1], 'get', '#')", "1", "sl"}, "ERR GET option of SORT denied due to insufficient ACL permissions."},
		{[]any{"SORT", "sl", "STORE", "s2"}, "2"},
	} {
		v, err := c.Do(ctx, tc.args...).Result()
		got := fmt.Sprint(v)
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v as a user limited to ~s*: %q, want %q", tc.args, got, tc.want)
		}
	}
	// The same with access to every key.
	if v, err := admin.Do(ctx, "SORT", "sl", "BY", "w_*", "GET", "#").StringSlice(); err != nil || strings.Join(v, " ") != "1 2" {
		t.Errorf("SORT with BY and GET as the default user: %v, %v", v, err)
	}
}
