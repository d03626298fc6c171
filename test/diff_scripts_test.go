package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
	"github.com/fenced/fenced/script"
)

// The differential test of the lock scripts: every lock script the libraries
// send (testdata/scripts.json) runs on
// fenced and on a real redis-server through the same calls — EVALSHA
// first (NOSCRIPT), then SCRIPT LOAD + EVALSHA or EVAL + EVALSHA — from the
// same starting keys and with the same arguments, and every reply, of the
// scripts and of the commands that look at the keys afterwards, must be
// identical, over RESP2 and RESP3.

type libScript struct {
	SHA1 string `json:"sha1"`
	Text string `json:"text"`
}

func loadLibScripts(t *testing.T) map[string]libScript {
	t.Helper()
	b, err := os.ReadFile("testdata/scripts.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]libScript
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// diffStates are the keys a script may find: none, a lock held with the
// caller's value or another's, with and without a TTL, a Redisson hash
// lock, python-redis-lock keys and signal lists.
var diffStates = [][][]string{
	{},
	{{"SET", "dk", "tok1", "PX", "30000"}},
	{{"SET", "dk", "tok2", "PX", "30000"}},
	{{"SET", "dk", "tok1"}},
	{{"HSET", "dk", "tok1", "1"}, {"PEXPIRE", "dk", "30000"}},
	{{"HSET", "dk", "tok2", "2"}, {"PEXPIRE", "dk", "30000"}, {"RPUSH", "dk:2", "x"}},
	{{"SET", "lock:a", "tok1", "PX", "30000"}, {"SET", "lock:b", "tok2"}, {"RPUSH", "lock-signal:a", "1"}},
}

// diffArgs are the ARGV a script gets: the libraries' orders of token,
// TTL and counts, and one too short.
// Numbers that may land where a TTL goes are large: a key that expires
// between two calls would make the servers' timing, not their behaviour,
// differ.
var diffArgs = [][]string{
	{"tok1", "30000", "7000"},
	{"30000", "tok1", "7000"},
	{"tok2", "30000", "tok1"},
	{"0", "30000", "tok1", "7000"},
	{"tok1"},
}

// diffKeys are the keys every script gets, as many as it uses.
var diffKeys = []string{"dk", "dk:2", "lock:a", "lock-signal:a"}

var keysIndex = regexp.MustCompile(`KEYS\[(\d+)\]`)

func numKeys(src string) int {
	n := 1
	for _, m := range keysIndex.FindAllStringSubmatch(src, -1) {
		if i, _ := strconv.Atoi(m[1]); i > n {
			n = i
		}
	}
	if strings.Contains(src, "#KEYS") || strings.Contains(src, "ipairs(KEYS)") {
		n = max(n, 2)
	}
	return min(n, len(diffKeys))
}

// diffConn is one connection to each server; every command goes to both.
type diffConn struct {
	t      *testing.T
	fenced *resp.Client
	redis  *resp.Client
	proto  int
	calls  int
	// since is when the current case began: a TTL set and read on one
	// server and then the other may differ by at most the time since.
	since time.Time
}

func dialDiff(t *testing.T, fencedAddr, redisAddr string, proto int) *diffConn {
	d := &diffConn{t: t, proto: proto, since: time.Now()}
	for _, p := range []struct {
		c    **resp.Client
		addr string
	}{{&d.fenced, fencedAddr}, {&d.redis, redisAddr}} {
		c, err := resp.Dial(context.Background(), p.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		*p.c = c
		if proto == 3 {
			if v, err := c.Do(context.Background(), []byte("HELLO"), []byte("3")); err != nil || v.IsError() {
				t.Fatalf("HELLO 3 at %s: %v %v", p.addr, v, err)
			}
		}
	}
	return d
}

// do runs args on both and returns the two replies, normalized.
func (d *diffConn) do(args ...string) (fenced, redis string) {
	d.t.Helper()
	f, r := d.doRaw(args...)
	return normalizeReply(f), normalizeReply(r)
}

// doRaw runs args on fenced, then on redis.
func (d *diffConn) doRaw(args ...string) (fenced, redis resp.Value) {
	d.t.Helper()
	d.calls++
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fv, err := d.fenced.Do(ctx, b...)
	if err != nil {
		d.t.Fatalf("fenced %q: %v", args, err)
	}
	rv, err := d.redis.Do(ctx, b...)
	if err != nil {
		d.t.Fatalf("redis %q: %v", args, err)
	}
	return fv, rv
}

// sameWithin reports whether two replies are the same but for integers
// that may be TTLs in milliseconds (over ttlFloor), which may differ by
// up to tol: the two servers were set and read at different moments.
// Rounding both to the second would not do: 29,501 and 29,499 round
// apart. The scripts' other integers (counts, flags, tokens) are small.
func sameWithin(f, r resp.Value, ttlFloor, tol int64) bool {
	if f.Kind() != r.Kind() {
		return false
	}
	switch f.Kind() {
	case resp.KindInt:
		a, b := f.Integer(), r.Integer()
		return a == b || a > ttlFloor && b > ttlFloor && max(a-b, b-a) <= tol
	case resp.KindArray, resp.KindMap, resp.KindSet, resp.KindPush:
		fe, re := f.Elems(), r.Elems()
		if len(fe) != len(re) {
			return false
		}
		for i := range fe {
			if !sameWithin(fe[i], re[i], ttlFloor, tol) {
				return false
			}
		}
		return true
	}
	return normalizeReply(f) == normalizeReply(r)
}

// tolerance is how far apart two TTLs read in the current case may be:
// each server's key was set and read within the time since the case
// began, plus a millisecond of rounding on each.
func (d *diffConn) tolerance() int64 {
	return time.Since(d.since).Milliseconds() + 2
}

// luaRuntimeError is an error raised by Lua itself (not by redis.call),
// e.g. arithmetic on nil. Its position and the script's id are compared;
// its wording is gopher-lua's, not Lua 5.1's ("cannot perform sub
// operation between nil and number" for "attempt to perform arithmetic on
// local 'offset' (a nil value)"), since gopher-lua keeps no variable names
// for its messages. Only malformed calls reach these errors.
var luaRuntimeError = regexp.MustCompile(`^(ERR user_script:\d+: ).*( script: [0-9a-f]{40}, on @user_script:\d+\.)$`)

// normalizeReply writes v with its kinds.
func normalizeReply(v resp.Value) string {
	var b strings.Builder
	var walk func(v resp.Value)
	walk = func(v resp.Value) {
		b.WriteString(v.Kind().String())
		b.WriteByte(':')
		switch v.Kind() {
		case resp.KindInt:
			b.WriteString(strconv.FormatInt(v.Integer(), 10))
		case resp.KindArray, resp.KindMap, resp.KindSet, resp.KindPush:
			b.WriteByte('[')
			for _, e := range v.Elems() {
				walk(e)
				b.WriteByte(' ')
			}
			b.WriteByte(']')
		case resp.KindError:
			b.WriteString(strconv.Quote(luaRuntimeError.ReplaceAllString(v.Text(), "${1}<Lua runtime error>${2}")))
		default:
			b.WriteString(strconv.Quote(v.Text()))
		}
	}
	walk(v)
	return b.String()
}

func (d *diffConn) same(what string, args ...string) {
	d.t.Helper()
	f, r := d.doRaw(args...)
	if !sameWithin(f, r, 100, d.tolerance()) {
		d.t.Errorf("%s: %q\n  fenced: %s\n  redis:  %s", what, args, normalizeReply(f), normalizeReply(r))
	}
}

// inspect compares what the keys hold.
func (d *diffConn) inspect(what string) {
	d.t.Helper()
	for _, k := range diffKeys {
		f, r := d.do("TYPE", k)
		if f != r {
			d.t.Errorf("%s: TYPE %s: fenced %s, redis %s", what, k, f, r)
			continue
		}
		if f, r := d.doRaw("PTTL", k); !sameWithin(f, r, -1, d.tolerance()) {
			d.t.Errorf("%s: PTTL %s: fenced %s, redis %s (%d ms apart at most)", what, k, normalizeReply(f), normalizeReply(r), d.tolerance())
		}
		switch {
		case strings.Contains(f, `"string"`):
			d.same(what, "GET", k)
			d.same(what, "STRLEN", k)
		case strings.Contains(f, `"hash"`):
			d.same(what, "HGETALL", k)
			d.same(what, "HLEN", k)
		case strings.Contains(f, `"list"`):
			d.same(what, "LLEN", k)
		}
	}
}

func TestDiffLibraryScripts(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	scripts := loadLibScripts(t)
	names := make([]string, 0, len(scripts))
	for n := range scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	// Each protocol and a third of the scripts is a parallel subtest with
	// its own redis-server and fenced: the calls are sequential round trips,
	// so the shards wait side by side.
	const shards = 3
	for _, proto := range []int{2, 3} {
		for shard := range shards {
			t.Run(fmt.Sprintf("RESP%d/%d", proto, shard), func(t *testing.T) {
				t.Parallel()
				rd := startRedisServer(t)
				fd := startNode(t, nodeOpts{})
				start := time.Now()
				d := dialDiff(t, fd.addr, rd.leader, proto)
				n := 0
				for i, name := range names {
					if i%shards != shard {
						continue
					}
					n++
					diffScript(t, d, proto, name, scripts[name])
				}
				t.Logf("%d scripts, %d calls on each server in %v", n, d.calls, time.Since(start))
			})
		}
	}
}

// diffScript runs one library script on both servers from every state with
// every argument order, loaded by SCRIPT LOAD or by EVAL, and compares the
// replies and the keys it leaves.
func diffScript(t *testing.T, d *diffConn, proto int, name string, s libScript) {
	t.Helper()
	if got := scriptSHA(t, d, s.Text); got != s.SHA1 {
		t.Errorf("%s: SCRIPT LOAD gave %s, scripts.json says %s", name, got, s.SHA1)
	}
	nk := numKeys(s.Text)
	for si, state := range diffStates {
		for ai, argv := range diffArgs {
			what := fmt.Sprintf("RESP%d %s state %d args %d", proto, name, si, ai)
			d.since = time.Now()
			d.same(what, append([]string{"DEL"}, append(diffKeys, "lock:b")...)...)
			d.same(what, "SCRIPT", "FLUSH")
			for _, c := range state {
				d.same(what, c...)
			}
			call := append([]string{"", "", strconv.Itoa(nk)}, diffKeys[:nk]...)
			call = append(call, argv...)
			call[0], call[1] = "EVALSHA", s.SHA1
			if f, r := d.do(call...); f != r || !strings.Contains(f, "NOSCRIPT No matching script. Please use EVAL.") {
				t.Errorf("%s: first EVALSHA: fenced %s, redis %s", what, f, r)
			}
			if (si+ai)%2 == 0 {
				d.same(what, "SCRIPT", "LOAD", s.Text)
			} else {
				call[0], call[1] = "EVAL", s.Text
				d.same(what+" EVAL", call...)
				call[0], call[1] = "EVALSHA", s.SHA1
			}
			d.same(what+" EVALSHA", call...)
			d.same(what+" EVALSHA again", call...)
			d.same(what, "SCRIPT", "EXISTS", s.SHA1, strings.Repeat("0", 40))
			d.inspect(what)
		}
	}
}

// scriptSHA loads src on both servers and returns fenced's SHA-1 after
// checking that both agree.
func scriptSHA(t *testing.T, d *diffConn, src string) string {
	t.Helper()
	f, r := d.do("SCRIPT", "LOAD", src)
	if f != r {
		t.Fatalf("SCRIPT LOAD: fenced %s, redis %s", f, r)
	}
	return strings.TrimSuffix(strings.TrimPrefix(f, `bulk:"`), `"`)
}

// TestDiffLuaLibraries runs Redis 7's script libraries, the redis.*
// functions, shebang flags and EVAL_RO/EVALSHA_RO on fenced (at cluster
// version 3, which a new node raises) and on redis-server, over RESP2 and
// RESP3: every case of script/testdata/libs.lua as EVAL <case> 0 after a
// SCRIPT FLUSH (cjson's settings last until then in Redis), then the
// command sequences of diffLuaSeqs; every reply must be identical.
func TestDiffLuaLibraries(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	b, err := os.ReadFile("../script/testdata/libs.lua")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]string
	for _, block := range strings.Split(string(b), "\n-- case: ")[1:] {
		name, src, _ := strings.Cut(block, "\n")
		cases = append(cases, [2]string{name, strings.TrimSuffix(src, "\n")})
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			t.Parallel()
			rd := startRedisServer(t)
			fd := startNode(t, nodeOpts{})
			d := dialDiff(t, fd.addr, rd.leader, proto)
			n := 0
			for _, c := range cases {
				d.since = time.Now()
				d.same(c[0], "SCRIPT", "FLUSH")
				d.same(c[0], "EVAL", c[1], "0")
				n++
			}
			for i, seq := range diffLuaSeqs {
				d.since = time.Now()
				d.same("seq", "SCRIPT", "FLUSH")
				d.same("seq", "DEL", "lk", "lh", "ll")
				for _, args := range seq {
					d.same(fmt.Sprintf("seq %d", i), args...)
					n++
				}
			}
			t.Logf("%d cases, %d calls on each server", n, d.calls)
		})
	}
}

const (
	roGet   = "return redis.call('get', KEYS[1])"
	roSet   = "return redis.call('set', KEYS[1], 'x')"
	roPSet  = "return redis.pcall('set', KEYS[1], 'x')"
	nwGet   = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
	nwSet   = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'y')"
	nwPSet  = "#!lua flags=no-writes,allow-oom\nreturn redis.pcall('del', KEYS[1])"
	wFlag   = "#!lua\nreturn redis.call('set', KEYS[1], 'z')"
	allFlag = "#!lua flags=no-writes,allow-oom,no-cluster,allow-cross-slot-keys,allow-stale\nreturn redis.call('get', KEYS[1])"
	resp3   = "redis.setresp(3) local m = redis.call('hgetall', KEYS[1]) local out = {} for k, v in pairs(m.map) do out[#out + 1] = k .. '=' .. v end table.sort(out) return {out, tostring(redis.call('get', 'nokey') == nil)}"
	resp2   = "local m = redis.call('hgetall', KEYS[1]) return {m, redis.call('get', 'nokey')}"
)

// diffLuaSeqs are command sequences about flags and read-only scripts.
var diffLuaSeqs = [][][]string{
	{
		{"SET", "lk", "v"},
		{"EVALSHA_RO", script.SHA1(roGet), "1", "lk"},
		{"EVAL_RO", roGet, "1", "lk"},
		{"SCRIPT", "EXISTS", script.SHA1(roGet)},
		{"EVALSHA_RO", script.SHA1(roGet), "1", "lk"},
		{"EVALSHA_RO", strings.ToUpper(script.SHA1(roGet)), "1", "lk"},
		{"EVALSHA", script.SHA1(roGet), "1", "lk"},
		{"EVAL_RO", roSet, "1", "lk"},
		{"EVAL_RO", roPSet, "1", "lk"},
		{"EVALSHA_RO", script.SHA1(roSet), "1", "lk"},
		{"GET", "lk"},
		{"EVAL_RO", roGet, "-1"},
		{"EVAL_RO", roGet, "2", "lk"},
		{"EVAL_RO", roGet},
		{"EVALSHA_RO", "nosuch", "0"},
	},
	{
		{"SET", "lk", "v"},
		{"EVAL", nwGet, "1", "lk"},
		{"EVAL", nwSet, "1", "lk"},
		{"EVAL", nwPSet, "1", "lk"},
		{"EVAL_RO", nwGet, "1", "lk"},
		{"EVAL_RO", wFlag, "1", "lk"},
		{"EVAL", wFlag, "1", "lk"},
		{"EVAL", allFlag, "1", "lk"},
		{"EVAL_RO", allFlag, "1", "lk"},
		{"GET", "lk"},
		{"SCRIPT", "LOAD", nwSet},
		{"EVALSHA", script.SHA1(nwSet), "1", "lk"},
		{"EVALSHA_RO", script.SHA1(nwSet), "1", "lk"},
		{"SCRIPT", "LOAD", wFlag},
		{"EVALSHA_RO", script.SHA1(wFlag), "1", "lk"},
	},
	{
		{"EVAL", "#!lua name=x\nreturn 1", "0"},
		{"EVAL", "#!lua flags=no-writes,nope\nreturn 1", "0"},
		{"EVAL", "#!lua flags=\nreturn 1", "0"},
		{"EVAL", "#!lua  flags=no-writes  \nreturn 1", "0"},
		{"EVAL", "#!lua flags=\"no-writes\"\nreturn 1", "0"},
		{"EVAL", "#!lua flags=\"no-writes\nreturn 1", "0"},
		{"EVAL", "#!perl\nreturn 1", "0"},
		{"EVAL", "#!lua", "0"},
		{"EVAL", "#!lua\nreturn 1 +", "0"},
		{"SCRIPT", "LOAD", "#!lua flags=bad\nreturn 1"},
		{"EVAL_RO", "#!lua flags=bad\nreturn 1", "0"},
	},
	{
		{"HSET", "lh", "f1", "v1", "f2", "v2"},
		{"EVAL", resp3, "1", "lh"},
		{"EVAL", resp2, "1", "lh"},
		{"EVAL_RO", resp3, "1", "lh"},
		{"EVAL", "redis.setresp(3) return redis.call('hgetall', KEYS[1]).map.f1", "1", "lh"},
		{"EVAL", "redis.setresp(3) return redis.call('get', 'nokey')", "0"},
		{"EVAL", "return redis.pcall('blpop', 'll', '0')", "0"},
		{"EVAL_RO", "return redis.pcall('blpop', 'll', '0')", "0"},
		{"EVAL", "return redis.call('eval_ro', 'return 1', '0')", "0"},
		{"EVAL", "return redis.pcall('evalsha_ro', 'x', '0')", "0"},
		{"EVAL_RO", "return redis.pcall('publish', 'ch', 'm')", "0"},
		{"EVAL", "return {redis.sha1hex(KEYS[1]), cjson.encode({KEYS[1]}), bit.band(#KEYS[1], 3), struct.pack('>H', #KEYS[1])}", "1", "lh"},
		{"EVAL_RO", "return cmsgpack.unpack(cmsgpack.pack(redis.call('hget', KEYS[1], 'f1')))", "1", "lh"},
	},
	{
		// Redis's "allow-oom shebang flag": at maxmemory, allow-oom
		// scripts write (fenced: within its headroom), scripts without a
		// shebang read, a flagged one without allow-oom does not run.
		{"SET", "lk", "123"},
		{"CONFIG", "SET", "maxmemory", "1"},
		{"EVAL", "redis.call('set', KEYS[1], 1) return 1", "1", "lk"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "lk"},
		{"EVAL", "#!lua flags=\nreturn 1", "0"},
		{"EVAL", "#!lua flags=allow-oom\nredis.call('set', KEYS[1], 1) return 1", "1", "lk"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "lk"},
		{"EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "lk"},
		{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "lk"},
		{"GET", "lk"},
		{"CONFIG", "SET", "maxmemory", "0"},
	},
	{
		// Redis's blocking commands that fenced lacks, PING, ACL checks
		// and the read-only metatable of _G, inside scripts.
		{"EVAL", "return redis.pcall('brpop', 'll', 0)", "0"},
		{"EVAL", "return redis.pcall('brpoplpush', 'll', 'l2', 0)", "0"},
		{"EVAL", "return redis.pcall('blmove', 'll', 'l2', 'LEFT', 'LEFT', 0)", "0"},
		{"EVAL", "return redis.pcall('bzpopmin', 'z', 0)", "0"},
		{"EVAL", "return redis.pcall('bzpopmax', 'z', 0)", "0"},
		{"EVAL", "return redis.pcall('brpop', 'll')", "0"},
		{"EVAL", "return redis.call('ping')", "0"},
		{"EVAL", "return redis.call('ping', 'asdf')", "0"},
		{"EVAL", "return redis.pcall('ping', 'a', 'b')", "0"},
		{"EVAL", "return redis.acl_check_cmd('set', 'xx', 1)", "1", "xx"},
		{"EVAL", "return redis.acl_check_cmd('invalid-cmd', 'arg')", "0"},
		{"EVAL", "local g = getmetatable(_G)\ng.__index = {}", "0"},
		{"COMMAND", "GETKEYS", "fcall", "test", "1", "x", "foo"},
		{"COMMAND", "GETKEYS", "fcall_ro", "test", "1", "x", "foo"},
		{"COMMAND", "GETKEYS", "eval", "return 1", "0"},
		{"COMMAND", "GETKEYS", "set", "k", "v"},
		{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"},
		{"COMMAND", "GETKEYS", "del", "a", "b"},
		{"COMMAND", "GETKEYS", "blpop", "a", "b", "0"},
		{"COMMAND", "GETKEYS", "set", "k"},
		{"COMMAND", "GETKEYS", "ping", "x"},
		{"COMMAND", "GETKEYS", "nope", "x"},
		{"COMMAND", "GETKEYS", "set"},
	},
}

// TestSameWithin: TTLs read a moment apart on the two servers are the same
// within the time between, whichever side of a second they fall; other
// integers and TTLs further apart are not.
func TestSameWithin(t *testing.T) {
	for _, c := range []struct {
		f, r resp.Value
		want bool
	}{
		{resp.Int(29501), resp.Int(29499), true},
		{resp.Array(resp.Int(-1), resp.Int(997)), resp.Array(resp.Int(-1), resp.Int(999)), true},
		{resp.Int(29501), resp.Int(29400), false},
		{resp.Int(1), resp.Int(2), false},
		{resp.Array(resp.Int(-1), resp.Int(997)), resp.Array(resp.Int(1), resp.Int(997)), false},
		{resp.Int(997), resp.BulkString("997"), false},
	} {
		if got := sameWithin(c.f, c.r, 100, 5); got != c.want {
			t.Errorf("sameWithin(%s, %s) = %v, want %v", normalizeReply(c.f), normalizeReply(c.r), got, c.want)
		}
	}
}
