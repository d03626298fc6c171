package commands

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCheckKeyspace(t *testing.T) {
	tab := New()
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"set k", false}, {"set k v", true}, {"SET k v NX EX 1", true},
		{"get", false}, {"get k", true}, {"get k v", false},
		{"getdel k", true}, {"mget", false}, {"mget a b", true}, {"mset k", false}, {"mset k v", true},
		{"msetnx k v", true}, {"getrange k 0", false}, {"getrange k 0 1", true}, {"incr k", true},
		{"del", false}, {"del a b", true}, {"unlink a", true}, {"exists a", true},
		{"expire k", false}, {"expire k 1", true}, {"pexpire k 1 NX", true}, {"pexpireat k 1", true}, {"expireat k 1 GT", true}, {"expireat k", false},
		{"ttl k", true}, {"pttl k", true}, {"persist k", true}, {"keys *", true}, {"keys", false},
		{"delex k", true}, {"delex", false}, {"delifeq k v", true}, {"delifeq k", false},
		{"hset k f", false}, {"hset k f v", true}, {"hget k f", true}, {"hincrby k f 1", true},
		{"hexists k f", true}, {"hdel k", false}, {"hdel k f", true}, {"hgetall k", true},
		{"lpush k", false}, {"lpush k a", true}, {"rpush k a b", true}, {"lpop k", true}, {"llen k", true},
	} {
		_, err := tab.Check(args(tc.line))
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tc.line, err, tc.ok)
		}
	}
	s, _ := tab.Lookup([]byte("get"))
	if !s.Has(Read) || s.Has(Write) {
		t.Error("get is a Read command")
	}
	s, _ = tab.Lookup([]byte("set"))
	if !s.Has(Write) {
		t.Error("set is a Write command")
	}
	_, err := tab.Check(args("get"))
	if err.Error() != "ERR wrong number of arguments for 'get' command" {
		t.Errorf("error = %q", err.Error())
	}
}

func TestParseSet(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Set
		err  error
		msg  string
	}{
		{line: "SET k v", want: Set{Key: "k", Value: "v"}},
		{line: "set k v nx", want: Set{Key: "k", Value: "v", NX: true}},
		{line: "SET k v XX GET", want: Set{Key: "k", Value: "v", XX: true, Get: true}},
		{line: "SET k v NX GET", want: Set{Key: "k", Value: "v", NX: true, Get: true}},
		{line: "SET k v EX 10", want: Set{Key: "k", Value: "v", Expire: SetEX, Millis: 10000}},
		{line: "SET k v px 10 nx", want: Set{Key: "k", Value: "v", NX: true, Expire: SetPX, Millis: 10}},
		{line: "SET k v GET PX 10 XX", want: Set{Key: "k", Value: "v", XX: true, Get: true, Expire: SetPX, Millis: 10}},
		{line: "SET k v EXAT 5", want: Set{Key: "k", Value: "v", Expire: SetEXAT, Millis: 5000}},
		{line: "SET k v PXAT 5", want: Set{Key: "k", Value: "v", Expire: SetPXAT, Millis: 5}},
		{line: "SET k v KEEPTTL", want: Set{Key: "k", Value: "v", Expire: SetKeepTTL}},
		{line: "SET k v NX NX", want: Set{Key: "k", Value: "v", NX: true}}, // Redis accepts a repeat
		{line: "SET k v PX 9223372036854775807", want: Set{Key: "k", Value: "v", Expire: SetPX, Millis: 1<<63 - 1}},
		{line: "SET k v EX 9223372036854775", want: Set{Key: "k", Value: "v", Expire: SetEX, Millis: 9223372036854775000}},
		{line: "SET NX NX", want: Set{Key: "NX", Value: "NX"}},
		{line: "SET k v NX XX", err: ErrSyntax, msg: "syntax error"},
		{line: "SET k v XX NX", err: ErrSyntax},
		{line: "SET k v EX 1 PX 1", err: ErrSyntax},
		{line: "SET k v EX 1 KEEPTTL", err: ErrSyntax},
		{line: "SET k v KEEPTTL PX 1", err: ErrSyntax},
		{line: "SET k v EX", err: ErrSyntax},
		{line: "SET k v FOO", err: ErrSyntax},
		{line: "SET k v EX x", err: ErrNotInteger, msg: "value is not an integer or out of range"},
		{line: "SET k v PX 9223372036854775808", err: ErrNotInteger},
		{line: "SET k v EX 0", err: ErrInvalidExpire, msg: "invalid expire time in 'set' command"},
		{line: "SET k v PX -1", err: ErrInvalidExpire},
		{line: "SET k v EX 9223372036854776", err: ErrInvalidExpire},
		{line: "SET k v EXAT 9223372036854776", err: ErrInvalidExpire},
	} {
		got, err := ParseSet(args(tc.line))
		if tc.err != nil {
			if !errors.Is(err, tc.err) || (tc.msg != "" && msg(err) != tc.msg) {
				t.Errorf("ParseSet(%q) error %v, want %v %q", tc.line, err, tc.err, tc.msg)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSet(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestParseExpire(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Expire
		err  error
		msg  string
	}{
		{line: "EXPIRE k 10", want: Expire{Key: "k", Millis: 10000}},
		{line: "PEXPIRE k 10 nx", want: Expire{Key: "k", Millis: 10, NX: true}},
		{line: "PEXPIRE k -5 XX GT", want: Expire{Key: "k", Millis: -5, XX: true, GT: true}},
		{line: "PEXPIRE k 0 LT XX", want: Expire{Key: "k", Millis: 0, XX: true, LT: true}},
		{line: "PEXPIREAT k 123 GT", want: Expire{Key: "k", Millis: 123, GT: true}},
		{line: "EXPIREAT k 123", want: Expire{Key: "k", Millis: 123000}},
		{line: "EXPIREAT k 9223372036854776", err: ErrInvalidExpire, msg: "invalid expire time in 'expireat' command"},
		{line: "EXPIRE k 9223372036854775", want: Expire{Key: "k", Millis: 9223372036854775000}},
		{line: "EXPIRE k x", err: ErrNotInteger},
		{line: "EXPIRE k 1 FOO", err: ErrUnsupportedOption, msg: "Unsupported option FOO"},
		{line: "EXPIRE k 1 NX XX", err: ErrExpireNX, msg: "NX and XX, GT or LT options at the same time are not compatible"},
		{line: "EXPIRE k 1 GT NX", err: ErrExpireNX},
		{line: "EXPIRE k 1 NX LT", err: ErrExpireNX},
		{line: "EXPIRE k 1 GT LT", err: ErrExpireGTLT, msg: "GT and LT options at the same time are not compatible"},
		{line: "EXPIRE k 9223372036854776", err: ErrInvalidExpire, msg: "invalid expire time in 'expire' command"},
		{line: "EXPIRE k -9223372036854776", err: ErrInvalidExpire},
	} {
		got, err := ParseExpire(args(tc.line))
		if tc.err != nil {
			if !errors.Is(err, tc.err) || (tc.msg != "" && msg(err) != tc.msg) {
				t.Errorf("ParseExpire(%q) error %v, want %v %q", tc.line, err, tc.err, tc.msg)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseExpire(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestParseOthers(t *testing.T) {
	p, err := ParsePairs(args("HSET k a 1 b 2"), 2)
	if err != nil || !reflect.DeepEqual(p, [][2]string{{"a", "1"}, {"b", "2"}}) {
		t.Errorf("ParsePairs = %v, %v", p, err)
	}
	if _, err := ParsePairs(args("HSET k a 1 b"), 2); !errors.Is(err, ErrArity) || msg(err) != "wrong number of arguments for 'hset' command" {
		t.Errorf("odd HSET: %v", err)
	}
	if _, err := ParsePairs(args("MSET a 1 b"), 1); msg(err) != "wrong number of arguments for 'mset' command" {
		t.Errorf("odd MSET: %v", err)
	}
	if g, err := ParseGetRange(args("GETRANGE k -3 -1")); err != nil || g != (GetRange{"k", -3, -1}) {
		t.Errorf("GETRANGE = %v, %v", g, err)
	}
	if _, err := ParseGetRange(args("GETRANGE k a 1")); !errors.Is(err, ErrNotInteger) {
		t.Errorf("GETRANGE bad start: %v", err)
	}
	if _, err := ParseGetRange(args("GETRANGE k 1 01")); !errors.Is(err, ErrNotInteger) {
		t.Errorf("GETRANGE bad end: %v", err)
	}
	if h, err := ParseHIncrBy(args("HINCRBY k f -9223372036854775808")); err != nil || h != (HIncrBy{"k", "f", -1 << 63}) {
		t.Errorf("HINCRBY = %v, %v", h, err)
	}
	if _, err := ParseHIncrBy(args("HINCRBY k f 1.5")); !errors.Is(err, ErrNotInteger) {
		t.Errorf("HINCRBY bad: %v", err)
	}
	for line, want := range map[string]DelEx{
		"DELEX k":         {Key: "k"},
		"DELEX k ifeq v":  {Key: "k", Cond: "IFEQ", Value: "v"},
		"DELEX k IFNE ''": {Key: "k", Cond: "IFNE"},
	} {
		if got, err := ParseDelEx(args(line)); err != nil || got != want {
			t.Errorf("ParseDelEx(%q) = %+v, %v", line, got, err)
		}
	}
	for _, line := range []string{"DELEX k IFEQ", "DELEX k IFXX v", "DELEX k IFEQ v w"} {
		if _, err := ParseDelEx(args(line)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDelEx(%q): %v", line, err)
		}
	}
	if k, els := ParsePush(args("LPUSH k a b")); k != "k" || !reflect.DeepEqual(els, []string{"a", "b"}) {
		t.Errorf("ParsePush = %q %q", k, els)
	}
	for line, want := range map[string]int64{"LPOP k": -1, "LPOP k 0": 0, "LPOP k 3": 3} {
		if n, err := ParseCount(args(line)); err != nil || n != want {
			t.Errorf("ParseCount(%q) = %d, %v", line, n, err)
		}
	}
	for _, line := range []string{"LPOP k -1", "LPOP k x"} {
		if _, err := ParseCount(args(line)); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ParseCount(%q): %v", line, err)
		}
	}
	// Redis's words: the arity error, though the table's arity passed it.
	for _, line := range []string{"LPOP k 1 2", "LPOP k x y", "lpop k 1 2 3"} {
		if _, err := ParseCount(args(line)); !errors.Is(err, ErrArity) ||
			err.Error() != "ERR wrong number of arguments for 'lpop' command" {
			t.Errorf("ParseCount(%q): %v", line, err)
		}
	}
}

// TestParseWholeKeys: COPY's options in Redis 7.0's order, MOVE and SWAPDB
// as one database answers them, FLUSHALL's one optional word; and the keys
// an ACL key pattern must cover.
func TestParseWholeKeys(t *testing.T) {
	args := func(line string) [][]byte {
		var out [][]byte
		for _, w := range strings.Split(line, " ") {
			out = append(out, []byte(w))
		}
		return out
	}
	for line, want := range map[string]error{
		"COPY a b": nil, "COPY a b REPLACE db 0": nil, "COPY a a": ErrSameObject, "COPY a a DB 1": ErrDBRange,
		"COPY a b DB 1 FOO": ErrDBRange, "COPY a b FOO DB 1": ErrSyntax, "COPY a b DB": ErrSyntax, "COPY a b DB x": ErrNotInteger,
		"COPY a b DB 2147483648": ErrIntRange, "COPY a b DB -2147483648": ErrDBRange,
	} {
		_, err := ParseCopy(args(line))
		if !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Errorf("%s: %v, want %v", line, err, want)
		}
	}
	if c, err := ParseCopy(args("COPY a b replace")); err != nil || !c.Replace || c.Src != "a" || c.Dst != "b" {
		t.Errorf("COPY a b replace = %+v, %v", c, err)
	}
	for line, want := range map[string]error{"MOVE k 0": ErrSameObject, "MOVE k 1": ErrDBRange, "MOVE k 01": ErrNotInteger,
		"MOVE k -2147483649": ErrIntRange, "SWAPDB 0 0": nil, "SWAPDB 0 1": ErrDBRange, "SWAPDB x 1": ErrFirstDB,
		"SWAPDB 1 x": ErrSecondDB, "SWAPDB 2147483648 0": ErrFirstDB, "FLUSHALL": nil, "FLUSHALL async": nil,
		"FLUSHALL SYNC": nil, "FLUSHALL now": ErrSyntax, "FLUSHALL ASYNC SYNC": ErrSyntax} {
		var err error
		switch a := args(line); string(a[0]) {
		case "MOVE":
			err = ParseMove(a)
		case "SWAPDB":
			err = ParseSwapDB(a)
		default:
			err = ParseFlush(a)
		}
		if !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Errorf("%s: %v, want %v", line, err, want)
		}
	}
	tab := New()
	for line, want := range map[string]string{
		"RENAME a b": "a b", "RENAMENX a b": "a b", "COPY a b DB 0 REPLACE": "a b", "TOUCH a b c": "a b c",
		"OBJECT ENCODING k": "k", "OBJECT HELP": "", "MOVE k 0": "k", "FLUSHALL ASYNC": "", "SWAPDB 0 0": "", "RANDOMKEY": "",
	} {
		a := args(line)
		spec, err := tab.Check(a)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if got := string(bytes.Join(spec.KeysOf(a), []byte(" "))); got != want {
			t.Errorf("KeysOf(%s) = %q, want %q", line, got, want)
		}
	}
}
