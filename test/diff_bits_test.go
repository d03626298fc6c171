package test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The differential test of the bit commands, LCS, RPOP and HMSET (cluster
// version 3): SETBIT, GETBIT, BITCOUNT, BITPOS, LCS, RPOP (and LPOP, which
// shares its code), HMSET run on a fenced node and on a real redis-server
// 7.0.15 from known states of two keys, with good and bad arguments, wrong
// arities, and inside EVAL through redis.call and redis.pcall. The replies
// must be the same byte for byte (integers exact), error texts included,
// and so must what both keys hold afterwards (type and whole value, a
// list's elements in order) and their TTL class.

const (
	dbKey  = "bk"
	dbKey2 = "bk2"
)

// dbStates are the states a case starts from, after a FLUSHALL.
var dbStates = map[string][][]string{
	"none":   {},
	"at":     {{"SET", dbKey, "@"}},
	"int":    {{"SET", dbKey, "1"}},
	"empty":  {{"SET", dbKey, ""}},
	"foobar": {{"SET", dbKey, "foobar"}},
	"bytes":  {{"SET", dbKey, "\xff\xf0\x00\x01\x80\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfe"}},
	"ones":   {{"SET", dbKey, "\xff\xff\xff"}},
	"zeros":  {{"SET", dbKey, "\x00\x00\x00"}},
	"ttl":    {{"SET", dbKey, "`", "PX", "1234567"}},
	"list":   {{"RPUSH", dbKey, "a", "b", "c", "d"}},
	"one":    {{"RPUSH", dbKey, "x"}},
	"listtl": {{"RPUSH", dbKey, "a", "b"}, {"PEXPIRE", dbKey, "2345678"}},
	"hash":   {{"HSET", dbKey, "f1", "v1", "f2", "v2"}},
	"hashtl": {{"HSET", dbKey, "f", "v"}, {"PEXPIRE", dbKey, "2345678"}},
	// LCS's pairs: Redis's documented example, one side empty or
	// missing, and the other key of another type.
	"texts":  {{"SET", dbKey, "ohmytext"}, {"SET", dbKey2, "mynewtext"}},
	"rna":    {{"SET", dbKey, dbRNA1}, {"SET", dbKey2, dbRNA2}},
	"same":   {{"SET", dbKey, "abcabc"}, {"SET", dbKey2, "abcabc"}},
	"apart":  {{"SET", dbKey, "abc"}, {"SET", dbKey2, "xyz"}},
	"half":   {{"SET", dbKey, "abcdef"}},
	"other":  {{"SET", dbKey, "abc"}, {"RPUSH", dbKey2, "abc"}},
	"other2": {{"HSET", dbKey, "f", "v"}, {"SET", dbKey2, "abc"}},
}

// The RNA strings of Redis's own LCS test (unit/type/string.tcl).
const (
	dbRNA1 = "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG"
	dbRNA2 = "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT"
)

// dbInspect answers what each key holds: its type and whole value (a
// string), its sorted field=value pairs (a hash), its elements in order
// (a list).
const dbInspect = `local out = {}
for _, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k).ok
  if t == 'string' then out[#out+1] = 'string:' .. redis.call('GET', k)
  elseif t == 'hash' then
    local h, pairs = redis.call('HGETALL', k), {}
    for i = 1, #h, 2 do pairs[#pairs+1] = h[i] .. '=' .. h[i+1] end
    table.sort(pairs)
    out[#out+1] = 'hash:' .. table.concat(pairs, ',')
  elseif t == 'list' then out[#out+1] = 'list:' .. table.concat(redis.call('LRANGE', k, 0, -1), ',')
  else out[#out+1] = t end
end
return out`

func dbCases() []dkCase {
	var cases []dkCase
	add := func(states string, cmd ...string) {
		for _, st := range strings.Fields(states) {
			cases = append(cases, dkCase{state: st, cmd: cmd})
		}
	}
	// scripted adds cmd and the same through redis.call and redis.pcall,
	// its first nkeys arguments as KEYS and the rest as ARGV.
	scripted := func(states string, nkeys int, cmd ...string) {
		add(states, cmd...)
		for _, fn := range []string{"call", "pcall"} {
			keys := ""
			for k := range nkeys {
				keys += fmt.Sprintf("KEYS[%d], ", k+1)
			}
			src := fmt.Sprintf("return redis.%s(ARGV[1], %sunpack(ARGV, 2))", fn, keys)
			a := append([]string{"EVAL", src, fmt.Sprint(nkeys)}, cmd[1:1+nkeys]...)
			add(states, append(append(a, cmd[0]), cmd[1+nkeys:]...)...)
		}
	}

	// Arity.
	for _, c := range [][]string{{"SETBIT"}, {"SETBIT", dbKey}, {"SETBIT", dbKey, "0"}, {"SETBIT", dbKey, "0", "1", "x"},
		{"GETBIT", dbKey}, {"GETBIT", dbKey, "0", "x"}, {"BITCOUNT"}, {"BITPOS", dbKey}, {"LCS", dbKey}, {"RPOP"},
		{"HMSET", dbKey, "f"}, {"HMSET", dbKey}} {
		add("at none", c...)
	}

	// SETBIT: each offset and value shape from each state; the string
	// grows zero-padded, keeps its TTL, and a bit set to what it is
	// changes nothing.
	strs := "none at int empty ttl list hash"
	for _, off := range []string{"0", "1", "2", "6", "7", "8", "15", "100", "8000", "4294967296", "-1", "x", "01", "", "1.5",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808"} {
		for _, v := range []string{"0", "1"} {
			add(strs, "SETBIT", dbKey, off, v)
		}
	}
	for _, v := range []string{"2", "-1", "10", "x", "", "01", "1.0", " 1", "9223372036854775808"} {
		add("none at list", "SETBIT", dbKey, "0", v)
	}
	add("list", "SETBIT", dbKey, "-1", "2") // the offset is checked first, then the value, then the type
	add("list", "SETBIT", dbKey, "0", "2")
	scripted("none at ttl list", 1, "SETBIT", dbKey, "9", "1")
	scripted("at", 1, "SETBIT", dbKey, "1", "1")

	// GETBIT: inside, past the end, bad offsets, other types.
	for _, off := range []string{"0", "1", "2", "3", "7", "8", "100", "10000", "4294967295", "4294967296", "-1", "x", "01", ""} {
		add("none at int empty list", "GETBIT", dbKey, off)
	}
	scripted("at list", 1, "GETBIT", dbKey, "1")

	// BITCOUNT: every clipping of a range, both units, bad arguments.
	bitStates := "foobar bytes empty"
	add(bitStates+" none list", "BITCOUNT", dbKey)
	idx := []string{"-100", "-9", "-2", "-1", "0", "1", "3", "7", "9", "100"}
	for _, s := range idx {
		for _, e := range idx {
			add(bitStates, "BITCOUNT", dbKey, s, e)
			add(bitStates, "BITCOUNT", dbKey, s, e, "BIT")
		}
	}
	for _, args := range [][]string{{"0", "-1", "byte"}, {"0", "-1", "bit"}, {"0", "-1", "FOO"}, {"-1", "-2", "FOO"},
		{"0"}, {"0", "1", "BIT", "x"}, {"x", "1"}, {"0", "x"}, {"", "0"}, {"-9223372036854775808", "9223372036854775807"},
		{"-9223372036854775808", "9223372036854775807", "BIT"}, {"9223372036854775807", "-9223372036854775808", "BIT"}} {
		add("foobar none list", append([]string{"BITCOUNT", dbKey}, args...)...)
	}
	scripted("foobar list", 1, "BITCOUNT", dbKey, "1", "-2", "BIT")

	// BITPOS: each bit over the same ranges, with and without an end.
	posStates := "foobar bytes ones zeros empty"
	for _, bit := range []string{"0", "1"} {
		add(posStates+" none list", "BITPOS", dbKey, bit)
		for _, s := range idx {
			add(posStates, "BITPOS", dbKey, bit, s)
			for _, e := range idx {
				add(posStates, "BITPOS", dbKey, bit, s, e)
				add(posStates, "BITPOS", dbKey, bit, s, e, "BIT")
			}
		}
	}
	for _, args := range [][]string{{"2"}, {"-1"}, {"x"}, {""}, {"01"}, {"1", "x"}, {"0", "0", "x"}, {"1", "0", "-1", "FOO"},
		{"1", "0", "-1", "byte"}, {"0", "0", "-1", "bit"}, {"1", "0", "-1", "BIT", "x"}, {"1", "0", "x", "BIT"},
		{"0", "-9223372036854775808", "9223372036854775807", "BIT"}, {"0", "9223372036854775807"}} {
		add("foobar none list", append([]string{"BITPOS", dbKey}, args...)...)
	}
	scripted("foobar list", 1, "BITPOS", dbKey, "0", "3", "-1", "BIT")

	// LCS: each option shape over each pair.
	pairs := "texts rna same apart half none other other2"
	for _, opts := range [][]string{{}, {"LEN"}, {"len"}, {"IDX"}, {"IDX", "WITHMATCHLEN"}, {"WITHMATCHLEN", "IDX"},
		{"IDX", "MINMATCHLEN", "4"}, {"IDX", "MINMATCHLEN", "-1"}, {"IDX", "WITHMATCHLEN", "MINMATCHLEN", "5"},
		{"IDX", "MINMATCHLEN", "0", "WITHMATCHLEN"}, {"WITHMATCHLEN"}, {"LEN", "WITHMATCHLEN"}, {"MINMATCHLEN", "3"},
		{"LEN", "IDX"}, {"IDX", "LEN"}, {"MINMATCHLEN"}, {"MINMATCHLEN", "x"}, {"IDX", "MINMATCHLEN", ""}, {"FOO"},
		{"IDX", "FOO"}, {"LEN", "LEN"}, {"MINMATCHLEN", "9223372036854775808"}} {
		add(pairs, append([]string{"LCS", dbKey, dbKey2}, opts...)...)
	}
	add("texts", "LCS", dbKey, dbKey)
	add("texts", "LCS", dbKey2, dbKey, "IDX", "WITHMATCHLEN")
	scripted("texts other", 2, "LCS", dbKey, dbKey2, "IDX", "WITHMATCHLEN")
	scripted("rna", 2, "LCS", dbKey, dbKey2)

	// RPOP and LPOP: each count from each state.
	lists := "list one listtl none at hash"
	for _, cmd := range []string{"RPOP", "LPOP"} {
		add(lists, cmd, dbKey)
		for _, n := range []string{"0", "1", "2", "3", "4", "10", "-1", "x", "", "01", "1.5", "9223372036854775807", "-9223372036854775808"} {
			add(lists, cmd, dbKey, n)
		}
		add("list none at", cmd, dbKey, "1", "2")
		add("list none at", cmd, dbKey, "x", "2")
		scripted("list one none at", 1, cmd, dbKey)
		scripted("list one none at", 1, cmd, dbKey, "2")
	}

	// HMSET: as HSET, answering OK.
	hashes := "hash hashtl none at list"
	for _, args := range [][]string{{"f", "v"}, {"f1", "x", "g", "y"}, {"f", "v", "f", "w"}, {"f", "v", "g"}, {"", ""}} {
		add(hashes, append([]string{"HMSET", dbKey}, args...)...)
	}
	scripted("hash none at", 1, "HMSET", dbKey, "f", "v", "g", "w")
	scripted("hash", 1, "HMSET", dbKey, "f")
	return cases
}

func runBitCases(t *testing.T, d *diffConn, cases []dkCase) {
	const batch = 100
	for lo := 0; lo < len(cases); lo += batch {
		part := cases[lo:min(lo+batch, len(cases))]
		var cmds [][]string
		for _, c := range part {
			cmds = append(cmds, []string{"FLUSHALL"})
			cmds = append(cmds, dbStates[c.state]...)
			cmds = append(cmds, c.cmd, []string{"EVAL", dbInspect, "2", dbKey, dbKey2}, []string{"PTTL", dbKey})
		}
		f, r := d.pipeExact(cmds)
		i := 0
		for _, c := range part {
			what := fmt.Sprintf("RESP%d from %s", d.proto, c.state)
			for _, s := range append([][]string{{"FLUSHALL"}}, dbStates[c.state]...) {
				if a, b := dsReply(f[i]), dsReply(r[i]); a != b {
					t.Errorf("%s: setup %.60q: fenced %s, redis %s", what, s, a, b)
				}
				i++
			}
			if fc, rc := dsReply(f[i]), dsReply(r[i]); fc != rc {
				t.Errorf("%s: %.200q\n  fenced: %.500s\n  redis:  %.500s", what, c.cmd, fc, rc)
			}
			if fc, rc := dsReply(f[i+1]), dsReply(r[i+1]); fc != rc {
				t.Errorf("%s: %.200q, then inspect: fenced %.300s, redis %.300s", what, c.cmd, fc, rc)
			}
			if fc, rc := ttlClass(dsReply(f[i+2])), ttlClass(dsReply(r[i+2])); fc != rc {
				t.Errorf("%s: %.200q, then PTTL: fenced %s, redis %s", what, c.cmd, fc, rc)
			}
			i += 3
		}
	}
}

func TestDiffBits(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t, "--databases", "1")
	fd := startNode(t, nodeOpts{})
	cases := dbCases()
	for _, proto := range []int{2, 3} {
		d := dialDiff(t, fd.addr, rd.leader, proto)
		runBitCases(t, d, cases)
	}
	t.Logf("%d cases, over RESP2 and RESP3", len(cases))
}

// The keyspace notifications of SETBIT, RPOP and HMSET, byte for byte
// against redis-server 7.0.15 (TestDiffKeyspaceNotifications' harness):
// setbit only when the string changed, rpop once per pop (then del for an
// emptied list), hset for HMSET, new for a created key; none for the reads.
func TestDiffBitsNotifications(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	steps := [][]string{
		{"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "0"}, {"SETBIT", "b", "100", "0"},
		{"SETBIT", "b", "-1", "1"}, {"SETBIT", "b", "0", "2"}, {"GETBIT", "b", "7"}, {"BITCOUNT", "b"}, {"BITPOS", "b", "1"},
		{"RPUSH", "l", "a", "b", "c", "d"}, {"RPOP", "l"}, {"RPOP", "l", "0"}, {"RPOP", "l", "2"}, {"RPOP", "l", "5"}, {"RPOP", "l"},
		{"SETBIT", "l", "1", "1"}, {"RPOP", "b"},
		{"HMSET", "h", "a", "1", "b", "2"}, {"HMSET", "h", "a", "1"}, {"HMSET", "b", "a", "1"}, {"HMSET", "h", "a"},
		{"SET", "s", "ohmytext"}, {"LCS", "s", "b", "IDX"},
		{"EVAL", "redis.call('setbit', KEYS[1], 3, 1) redis.call('hmset', KEYS[2], 'f', 'v') return redis.call('rpop', KEYS[3])", "3", "s1", "s2", "l"},
		{"DEL", "b", "h", "s", "s1", "s2"},
	}
	cases := 0
	for _, proto := range []int{2, 3} {
		for _, flags := range []string{"KEA", "AKEn", "K$", "El", "Eh", "Kg"} {
			t.Run(fmt.Sprintf("RESP%d/%q", proto, flags), func(t *testing.T) {
				cmd := dialPair(t, fa, ra, 2, &cases)
				sub := dialPair(t, fa, ra, proto, &cases)
				cmd.do("config set", 1, "CONFIG", "SET", "notify-keyspace-events", flags)
				sub.do("psubscribe", 1, "PSUBSCRIBE", "__key*__:*")
				sub.do("sync channel", 1, "SUBSCRIBE", "sync")
				for i, step := range steps {
					cmd.do("step", 1, step...)
					cmd.do("sync", 1, "PUBLISH", "sync", fmt.Sprint(i))
					sub.drainUntil(fmt.Sprintf("events of %q", step), "$4\r\nsync\r\n")
				}
				sub.do("punsubscribe", 1, "PUNSUBSCRIBE")
			})
		}
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}
