package test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// The differential test of time: every command that takes or
// reports a time — SET EX/PX/EXAT/PXAT (with GET, NX, XX, KEEPTTL),
// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT (with NX/XX/GT/LT), TTL, PTTL,
// PERSIST, BLPOP's timeout, the same inside EVAL through redis.call and
// redis.pcall, and TIME in and out of a script — runs on a fenced node and
// on a real redis-server with the same arguments, drawn from the edges of
// the time range. Each case starts from a known state of its key; the two
// must take the same decision with the same reply (the same error text),
// and leave the key in the same TTL class (PTTL -2, -1, or >= 0). TTL and
// PTTL replies are compared by class too: the numbers differ by the time
// between the two calls.

// dtKey is the one key every case works on; each case sets its state first.
const dtKey = "dt"

// dtStates are the states a case may start from. Each setup replies the
// same whatever the case before left (a DEL only after a SET).
var dtStates = []struct {
	name  string
	setup [][]string
}{
	{"missing", [][]string{{"SET", dtKey, "old"}, {"DEL", dtKey}}},
	{"no TTL", [][]string{{"SET", dtKey, "old"}}},
	// About 20 min: no value below, relative or absolute, comes within a
	// second of this deadline, so GT/LT never compare two deadlines that
	// are equal or not depending on the millisecond.
	{"TTL", [][]string{{"SET", dtKey, "old", "PX", "1234567"}}},
	{"far TTL", [][]string{{"SET", dtKey, "old", "PXAT", "9223372036854775807"}}},
	{"list", [][]string{{"SET", dtKey, "old"}, {"DEL", dtKey}, {"RPUSH", dtKey, "a", "b"}}},
}

func dtState(name string) [][]string {
	for _, s := range dtStates {
		if s.name == name {
			return s.setup
		}
	}
	panic("no state " + name)
}

// dtIntValues are the integer-like arguments: the Redis limits and one
// past them, ±2^63 as text, far past and far future, the current Unix
// time in s and ms (± 100 s, so that nothing depends on the
// milliseconds a case takes), and what Redis's string2ll refuses.
func dtIntValues(now time.Time) []string {
	s, ms := now.Unix(), now.UnixMilli()
	f := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []string{
		"0", "1", "-1", "2", "-2", "1000",
		f(math.MaxInt64 / 1000), f(math.MaxInt64/1000 + 1),
		f(math.MinInt64 / 1000), f(math.MinInt64/1000 - 1),
		f(math.MaxInt64), f(math.MinInt64), f(math.MaxInt64 - 1), f(math.MinInt64 + 1),
		"9223372036854775808", "-9223372036854775809", "99999999999999999999",
		"10000000000", "9223370399119966", "9223372036854770000", "-9223372036854770000",
		"253402300799", "253402300799000", "-1000000000",
		f(s), f(s + 100), f(s - 100), f(ms), f(ms + 100000), f(ms - 100000),
		" 1", "1 ", "0x10", "1e3", "1.5", "+1", "01", "-0", "", "abc", "1\x00",
	}
}

// dtFloatValues are BLPOP's timeouts (seconds, a float).
var dtFloatValues = []string{
	"0", "0.001", "0.0001", "1", "-1", "-0", "-0.0", "0.0", "-0.0001", "-0.001", "-0.0015",
	".5", "5.", "1.5",
	"1e400", "-1e400", "1e-400", "inf", "-inf", "+inf", "infinity", "nan", "NaN", "-nan",
	" 1", "1 ", "0x10", "1e3", "1E3", "+1", "01", "", "abc",
	"9223372036854775", "9223372036854776", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "10000000000", "9223370399119966", "1.7976931348623157e308",
}

// dtTwice are the values tried in an option given twice.
var dtTwice = map[string]bool{"0": true, "-1": true, "1000": true, "abc": true, "9223372036854775807": true}

// dtShort reports whether a relative TTL argument comes due within 5 s:
// whether the key still exists when PTTL looks then depends on timing.
func dtShort(v string, seconds bool) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > 5000 {
		return false
	}
	return !seconds || n <= 5
}

// dtCase is one command from one state.
type dtCase struct {
	what  string
	setup [][]string
	cmd   []string
	ttl   bool // the reply is a TTL: compare its class
	short bool // the key may expire any moment: PTTL -2 and >= 0 are alike
	resp3 bool // run over RESP3 too: the reply may be a nil or an array
}

// ttlClass is a normalized reply with a non-negative integer replaced by
// its class.
func ttlClass(s string) string {
	if n, ok := strings.CutPrefix(s, "integer:"); ok {
		if i, err := strconv.ParseInt(n, 10, 64); err == nil && i >= 0 {
			return "integer:>=0"
		}
	}
	return s
}

// dtScripts run one command given as ARGV on KEYS[1], through redis.call
// and redis.pcall.
var dtScripts = []string{
	"return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))",
	"return redis.pcall(ARGV[1], KEYS[1], unpack(ARGV, 2))",
}

// The cases are a product of commands, values, options and states, pruned
// where a dimension cannot matter (an option on a missing key), so that
// both passes run in a few seconds.
func dtCases(now time.Time) []dtCase {
	var cases []dtCase
	// add adds c, and the same command inside the first n of dtScripts.
	add := func(c dtCase, n int) {
		cases = append(cases, c)
		for i, src := range dtScripts[:n] {
			sc := c
			sc.what = fmt.Sprintf("%s (script %d)", c.what, i)
			sc.cmd = append([]string{"EVAL", src, "1", dtKey, c.cmd[0]}, c.cmd[2:]...)
			sc.resp3 = true
			cases = append(cases, sc)
		}
	}
	ints := dtIntValues(now)

	// SET with a TTL option, alone and with the other options.
	for _, unit := range []string{"EX", "PX", "EXAT", "PXAT"} {
		rel := unit == "EX" || unit == "PX"
		for _, v := range ints {
			short := rel && dtShort(v, unit == "EX")
			forms := []struct {
				state   string
				args    []string
				scripts int
			}{
				{"missing", []string{unit, v}, 1},
				{"TTL", []string{unit, v}, 2},
				{"TTL", []string{unit, v, "GET"}, 1},
				{"list", []string{"GET", unit, v}, 0},
				{"TTL", []string{"NX", unit, v}, 0},
				{"missing", []string{unit, v, "XX"}, 0},
				{"no TTL", []string{unit, v, "KEEPTTL"}, 0},
			}
			if dtTwice[v] {
				// The same option twice: Redis takes the last, and
				// does not parse the first.
				forms = append(forms, []struct {
					state   string
					args    []string
					scripts int
				}{
					{"no TTL", []string{strings.ToLower(unit), v, unit, "100000"}, 0},
					{"no TTL", []string{unit, "100000", unit, v}, 0},
				}...)
			}
			for _, f := range forms {
				cmd := append([]string{"SET", dtKey, "v"}, f.args...)
				resp3 := f.args[len(f.args)-1] == "GET" || f.args[0] == "GET" || f.args[0] == "NX"
				add(dtCase{what: f.state, setup: dtState(f.state), cmd: cmd, short: short, resp3: resp3}, f.scripts)
			}
		}
		add(dtCase{what: "TTL", setup: dtState("TTL"), cmd: []string{"SET", dtKey, "v", unit}}, 1)
		add(dtCase{what: "no TTL", setup: dtState("no TTL"), cmd: []string{"SET", dtKey, "v", unit, "100000", "KEEPTTL"}}, 0)
	}
	for _, st := range dtStates {
		for _, args := range [][]string{{"KEEPTTL"}, {"KEEPTTL", "GET"}, {"GET", "KEEPTTL", "XX"}, {"KEEPTTL", "NX"}} {
			add(dtCase{what: st.name, setup: st.setup, cmd: append([]string{"SET", dtKey, "v"}, args...), resp3: true}, 1)
		}
	}

	// EXPIRE and friends: each option from the states where it decides
	// something, and odd spellings and bad combinations from a missing
	// key (Redis 7.0 checks the options before the number, and both
	// before looking at the key).
	type optStates struct {
		opts   []string
		states []string
	}
	opts := []optStates{
		{[]string{}, []string{"missing", "no TTL", "TTL", "far TTL", "list"}},
		{[]string{"NX"}, []string{"no TTL", "TTL"}},
		{[]string{"XX"}, []string{"no TTL", "TTL"}},
		{[]string{"GT"}, []string{"missing", "no TTL", "TTL", "far TTL"}},
		{[]string{"LT"}, []string{"no TTL", "TTL", "far TTL"}},
		{[]string{"gt"}, []string{"TTL"}},
		{[]string{"XX", "LT"}, []string{"TTL"}},
		{[]string{"NX", "XX"}, []string{"missing"}},
		{[]string{"GT", "LT"}, []string{"missing"}},
		{[]string{"NX", "GT"}, []string{"missing"}},
		{[]string{"FOO"}, []string{"missing"}},
	}
	for _, cmd := range []string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"} {
		rel := cmd == "EXPIRE" || cmd == "PEXPIRE"
		for _, v := range ints {
			for _, o := range opts {
				for _, st := range o.states {
					scripts := 0
					if len(o.opts) == 0 && (st == "TTL" || st == "missing") {
						scripts = 1
						if st == "TTL" {
							scripts = 2
						}
					}
					add(dtCase{
						what:  st,
						setup: dtState(st),
						cmd:   append([]string{cmd, dtKey, v}, o.opts...),
						short: rel && dtShort(v, cmd == "EXPIRE"),
					}, scripts)
				}
			}
		}
		add(dtCase{what: "TTL", setup: dtState("TTL"), cmd: []string{cmd, dtKey}}, 1)
	}

	// TTL, PTTL, PERSIST from every state, and after the far-future
	// deadlines the other commands can set.
	farSetups := [][]string{
		{"SET", dtKey, "v", "EX", strconv.FormatInt(math.MaxInt64/1000-now.Unix()-100, 10)},
		{"SET", dtKey, "v", "EXAT", strconv.FormatInt(math.MaxInt64/1000, 10)},
		{"SET", dtKey, "v", "PX", "10000000000000"},
		{"SET", dtKey, "v", "EX", "10000000000"},
		{"EXPIREAT", dtKey, "9223372036854775"},
		{"PEXPIREAT", dtKey, "9223372036854775807"},
		{"PEXPIRE", dtKey, strconv.FormatInt(math.MaxInt64-now.UnixMilli()-100000, 10)},
	}
	for _, cmd := range []string{"TTL", "PTTL", "PERSIST"} {
		for _, st := range dtStates {
			add(dtCase{what: st.name, setup: st.setup, cmd: []string{cmd, dtKey}, ttl: cmd != "PERSIST", resp3: true}, 2)
		}
		for _, fs := range farSetups {
			add(dtCase{what: "far", setup: [][]string{{"SET", dtKey, "old"}, fs}, cmd: []string{cmd, dtKey}, ttl: cmd != "PERSIST"}, 1)
		}
	}

	// BLPOP on a list that has elements, so that it never blocks. Redis 7
	// refuses it in a script whatever the timeout: a few suffice.
	for _, v := range dtFloatValues {
		scripts := 0
		if v == "0" || v == "1" || v == "-1" || v == "abc" {
			scripts = 2
		}
		add(dtCase{what: "list", setup: dtState("list"), cmd: []string{"BLPOP", dtKey, v}, resp3: true}, scripts)
	}
	return cases
}

// byteCmds is cmds as a pipeline's arguments.
func byteCmds(cmds [][]string) [][][]byte {
	b := make([][][]byte, len(cmds))
	for i, c := range cmds {
		for _, a := range c {
			b[i] = append(b[i], []byte(a))
		}
	}
	return b
}

// pipe runs cmds on both servers, pipelined, and returns the replies,
// normalized.
func (d *diffConn) pipe(cmds [][]string) (fenced, redis []string) {
	d.t.Helper()
	d.calls += len(cmds)
	b := byteCmds(cmds)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []struct {
		name string
		c    *resp.Client
		out  *[]string
	}{{"fenced", d.fenced, &fenced}, {"redis", d.redis, &redis}} {
		vs, err := p.c.Pipeline(ctx, b)
		if err != nil {
			d.t.Fatalf("%s: pipeline of %d: %v", p.name, len(cmds), err)
		}
		for _, v := range vs {
			*p.out = append(*p.out, normalizeReply(v))
		}
	}
	return fenced, redis
}

// runTimeCases runs the cases in pipelined batches and compares.
func runTimeCases(t *testing.T, d *diffConn, cases []dtCase) {
	const batch = 100
	for lo := 0; lo < len(cases); lo += batch {
		part := cases[lo:min(lo+batch, len(cases))]
		var cmds [][]string
		for _, c := range part {
			cmds = append(cmds, c.setup...)
			cmds = append(cmds, c.cmd, []string{"PTTL", dtKey})
		}
		f, r := d.pipe(cmds)
		i := 0
		for _, c := range part {
			what := fmt.Sprintf("RESP%d from %s", d.proto, c.what)
			for _, s := range c.setup {
				if f[i] != r[i] {
					t.Errorf("%s: setup %q: fenced %s, redis %s", what, s, f[i], r[i])
				}
				i++
			}
			fc, rc := f[i], r[i]
			if c.ttl {
				fc, rc = ttlClass(fc), ttlClass(rc)
			}
			if fc != rc {
				t.Errorf("%s: %q\n  fenced: %s\n  redis:  %s", what, c.cmd, f[i], r[i])
			}
			i++
			fc, rc = ttlClass(f[i]), ttlClass(r[i])
			if fc != rc && !(c.short && fc != "integer:-1" && rc != "integer:-1") {
				t.Errorf("%s: %q, then PTTL: fenced %s, redis %s", what, c.cmd, f[i], r[i])
			}
			i++
		}
	}
}

// timeSeconds is the seconds of a TIME reply.
func timeSeconds(t *testing.T, who string, v resp.Value) int64 {
	t.Helper()
	if e := v.Elems(); len(e) == 2 {
		if s, err := strconv.ParseInt(e[0].Text(), 10, 64); err == nil {
			return s
		}
	}
	t.Fatalf("%s: TIME replied %s", who, v)
	return 0
}

func TestDiffTime(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	start := time.Now()
	cases := dtCases(start)
	total, calls := 0, 0
	var perProto []string
	for _, proto := range []int{2, 3} {
		d := dialDiff(t, fd.addr, rd.leader, proto)
		run := cases
		if proto == 3 {
			run = nil
			for _, c := range cases {
				if c.resp3 {
					run = append(run, c)
				}
			}
		}
		runTimeCases(t, d, run)
		total += len(run)

		// TIME, plain and in a script: Unix time on both.
		for _, cmd := range [][]string{{"TIME"}, {"EVAL", "return redis.call('TIME')", "0"}} {
			b := make([][]byte, len(cmd))
			for i, a := range cmd {
				b[i] = []byte(a)
			}
			fv, err := d.fenced.Do(tctx(t), b...)
			if err != nil {
				t.Fatal(err)
			}
			rv, err := d.redis.Do(tctx(t), b...)
			if err != nil {
				t.Fatal(err)
			}
			fs, rs := timeSeconds(t, "fenced", fv), timeSeconds(t, "redis", rv)
			if fs-rs > 2 || rs-fs > 2 {
				t.Errorf("RESP%d %q: fenced %d s, redis %d s", proto, cmd, fs, rs)
			}
			d.calls++
			total++
		}
		calls += d.calls
		perProto = append(perProto, fmt.Sprintf("RESP%d %d", proto, len(run)+2))
	}
	t.Logf("%d cases (%s; %d commands on each server) in %v",
		total, strings.Join(perProto, ", "), calls, time.Since(start))
}
