package script

import (
	"github.com/fenced/fenced/resp"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/fenced/fenced/reply"
)

// run runs src with default limits on env (a fresh fake if nil).
func run(t *testing.T, src string, keys, argv []string, env Env) reply.Value {
	t.Helper()
	if env == nil {
		env = newFakeEnv()
	}
	return runLim(src, keys, argv, env, 0, DefaultLimits())
}

func eq(a, b reply.Value) bool {
	if a.Kind != b.Kind || a.Str != b.Str || a.Int != b.Int || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !eq(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

func wantReply(t *testing.T, src string, got, want reply.Value) {
	t.Helper()
	if !eq(got, want) {
		t.Errorf("%q:\n got  %v (kind %d)\n want %v (kind %d)", src, got, got.Kind, want, want.Kind)
	}
}

// suffix is the end Redis gives a runtime error of src at line.
func suffix(src string, line string) string {
	return " script: " + SHA1(src) + ", on @user_script:" + line + "."
}

func TestSHA1(t *testing.T) {
	for src, want := range map[string]string{
		"":                                "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"abc":                             "a9993e364706816aba3e25717850c26c9cd0d89d",
		"return 42":                       "1fa00e76656cc152ad327c13fe365858fd7be306",
		"return 'Immabe a cached script'": "c664a3bf70bd1d45c4284ffebb65a6f2299bfc9f",
		"The quick brown fox jumps over the lazy dog": "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
	} {
		if got := SHA1(src); got != want {
			t.Errorf("SHA1(%q) = %s, want %s", src, got, want)
		}
	}
	// redis.sha1hex is the same function.
	got := run(t, "return redis.sha1hex(ARGV[1])", nil, []string{"abc"}, nil)
	wantReply(t, "sha1hex", got, reply.BulkString("a9993e364706816aba3e25717850c26c9cd0d89d"))
	got = run(t, "return redis.sha1hex()", nil, nil, nil)
	wantReply(t, "sha1hex()", got, reply.Error("ERR wrong number of arguments"+suffix("return redis.sha1hex()", "1")))
}

// Lua to RESP: what a script returns.
func TestLuaToReply(t *testing.T) {
	nilv, minInt := reply.Null(), reply.Int(math.MinInt64)
	arr := func(vs ...reply.Value) reply.Value {
		if vs == nil {
			vs = []reply.Value{}
		}
		return reply.Array(vs...)
	}
	for src, want := range map[string]reply.Value{
		"return 1":                            reply.Int(1),
		"return 1.9":                          reply.Int(1),
		"return -1.9":                         reply.Int(-1),
		"return 0.5":                          reply.Int(0),
		"return -0":                           reply.Int(0),
		"return 2^53":                         reply.Int(1 << 53),
		"return 1e300":                        minInt,
		"return -1e300":                       minInt,
		"return 0/0":                          minInt,
		"return math.huge":                    minInt,
		"return 'abc'":                        reply.BulkString("abc"),
		"return ''":                           reply.BulkString(""),
		"return 'a\\0b'":                      reply.BulkString("a\x00b"),
		"return true":                         reply.Int(1),
		"return false":                        nilv,
		"return nil":                          nilv,
		"return":                              nilv,
		"return function() end":               nilv,
		"return {}":                           arr(),
		"return {1, 'two', true, false}":      arr(reply.Int(1), reply.BulkString("two"), reply.Int(1), nilv),
		"return {1, nil, 3}":                  arr(reply.Int(1)),
		"return {a = 1}":                      arr(),
		"return {[2] = 'b'}":                  arr(),
		"return {[0] = 'z', [1] = 'a'}":       arr(reply.BulkString("a")),
		"return {1, {2, {3}}}":                arr(reply.Int(1), arr(reply.Int(2), arr(reply.Int(3)))),
		"return {err = 'MY error'}":           reply.Error("MY error"),
		"return {err = 'x\\r\\ny\\n'}":        reply.Error("x  y"),
		"return {ok = 'FINE'}":                reply.SimpleString("FINE"),
		"return {ok = 'a\\r\\nb'}":            reply.SimpleString("a  b"),
		"return {ok = ''}":                    reply.SimpleString(""),
		"return {ok = 'a', err = 'b'}":        reply.Error("b"),
		"return {err = 42}":                   arr(),
		"return {ok = 42}":                    arr(),
		"return {err = 'x', 1}":               reply.Error("x"),
		"return {{err = 'e'}, {ok = 's'}}":    arr(reply.Error("e"), reply.SimpleString("s")),
		"return {double = 2.5}":               reply.BulkString("2.5"),
		"return {double = 2}":                 reply.BulkString("2"),
		"return {map = {a = 1}}":              reply.Map(reply.BulkString("a"), reply.Int(1)),
		"return {set = {a = true}}":           arr(reply.BulkString("a")),
		"return {map = 'x'}":                  arr(),
		"return 1, 2, 3":                      reply.Int(1),
		"return KEYS":                         arr(),
		"return redis.status_reply('PONG')":   reply.SimpleString("PONG"),
		"return redis.error_reply('MY bad')":  reply.Error("MY bad"),
		"return redis.error_reply('bad')":     reply.Error("ERR bad"),
		"return redis.error_reply('-X y')":    reply.Error("X y"),
		"return redis.error_reply('')":        reply.Error("ERR "),
		"return redis.error_reply(1)":         reply.Error("ERR wrong number or type of arguments"),
		"return redis.status_reply()":         reply.Error("ERR wrong number or type of arguments"),
		"return redis.status_reply('a', 'b')": reply.Error("ERR wrong number or type of arguments"),
		"return _G":                           arr(),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
	// A table that contains itself ends in an error element, not a hang.
	got := run(t, "local t = {} t[1] = t return t", nil, nil, nil)
	for d := 0; got.Kind == reply.KindArray; d++ {
		got = got.Elems[0]
	}
	wantReply(t, "self-reference", got, reply.Error("ERR reached lua stack limit"))
	// After redis.setresp(3) a boolean is a RESP3 boolean (:1 / :0 in RESP2).
	wantReply(t, "resp3 false", run(t, "redis.setresp(3) return false", nil, nil, nil), reply.Int(0))
}

// replyEnv answers every command with one reply and records the last.
type replyEnv struct {
	v    reply.Value
	last []string
}

// ACLCheck allows every command it knows.
func (e *replyEnv) ACLCheck(args []string) (allowed, known bool) {
	return true, true
}

func (e *replyEnv) Call(args []string) reply.Value {
	e.last = args
	return e.v
}

// describe serializes any Lua value deterministically.
const describe = `
local function d(v)
  local t = type(v)
  if t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. '=' .. d(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  elseif t == 'string' then
    return string.format('%q', v)
  end
  return t .. ':' .. tostring(v)
end
`

// RESP to Lua: what redis.call returns.
func TestReplyToLua(t *testing.T) {
	bulk, i := reply.BulkString, reply.Int
	for _, c := range []struct {
		v    reply.Value
		resp string // "" or "redis.setresp(3)"
		want string
	}{
		{i(5), "", `number:5`},
		{i(-7), "", `number:-7`},
		{i(1 << 60), "", `number:1.1529215046068e+18`},
		{bulk("a b"), "", `"a b"`},
		{bulk(""), "", `""`},
		{reply.Null(), "", `boolean:false`},
		{reply.NullArray(), "", `boolean:false`},
		{reply.OK(), "", `{ok="OK"}`},
		{reply.SimpleString("QUEUED"), "", `{ok="QUEUED"}`},
		{reply.Error("ERR bad thing"), "", `{err="ERR bad thing",ignore_error_stats_update=boolean:true}`},
		{reply.Error("WRONGTYPE Operation"), "", `{err="WRONGTYPE Operation",ignore_error_stats_update=boolean:true}`},
		{reply.Error("NOCODE"), "", `{err="ERR NOCODE",ignore_error_stats_update=boolean:true}`},
		{reply.Array(), "", `{}`},
		{reply.Array(i(1), bulk("x"), reply.Null(), reply.Array(i(2))), "", `{1=number:1,2="x",3=boolean:false,4={1=number:2}}`},
		{reply.Map(bulk("f1"), bulk("v1"), bulk("f2"), i(2)), "", `{1="f1",2="v1",3="f2",4=number:2}`},
		{reply.Null(), "redis.setresp(3)", `nil:nil`},
		{reply.Map(bulk("f1"), bulk("v1")), "redis.setresp(3)", `{map={f1="v1"}}`},
		{reply.Map(bulk("f1"), bulk("v1")), "redis.setresp(3) redis.setresp(2)", `{1="f1",2="v1"}`},
	} {
		src := describe + c.resp + "\nreturn d(redis.pcall('x'))"
		got := run(t, src, nil, nil, &replyEnv{v: c.v})
		wantReply(t, resp.FromReply(c.v).String(), got, reply.BulkString(c.want))
	}
}

func TestCallErrors(t *testing.T) {
	env := func() *fakeEnv {
		e := newFakeEnv()
		e.strs["s"] = "text"
		e.hashes["h"] = map[string]string{"f": "v"}
		return e
	}
	errs := map[string]string{
		"return redis.call('incr', 's')":                           "ERR value is not an integer or out of range",
		"return redis.call('get', 'h')":                            "WRONGTYPE Operation against a key holding the wrong kind of value",
		"return redis.call('nosuchcmd', 'a')":                      ErrUnknownCommand,
		"return redis.call('get')":                                 ErrWrongArity,
		"return redis.call('eval', 'return 1', 0)":                 ErrNotAllowed,
		"return redis.call()":                                      "ERR Please specify at least one argument for this redis lib call",
		"return redis.call('get', {})":                             "ERR Lua redis lib command arguments must be strings or integers",
		"return redis.call('get', nil)":                            "ERR Lua redis lib command arguments must be strings or integers",
		"return redis.call('set', 'k', true)":                      "ERR Lua redis lib command arguments must be strings or integers",
		"local x = 1\nlocal y = 2\nreturn redis.call('incr', 's')": "ERR value is not an integer or out of range",
	}
	for src, msg := range errs {
		line := "1"
		if strings.Count(src, "\n") == 2 {
			line = "3"
		}
		// redis.call raises: the reply is the error with Redis's suffix.
		wantReply(t, src, run(t, src, nil, nil, env()), reply.Error(msg+suffix(src, line)))
		// redis.pcall returns the error table: no suffix.
		psrc := strings.Replace(src, "redis.call", "redis.pcall", 1)
		wantReply(t, psrc, run(t, psrc, nil, nil, env()), reply.Error(msg))
	}
	for src, want := range map[string]reply.Value{
		// Lua's pcall around redis.call gives the error text (Redis 7).
		"local ok, e = pcall(redis.call, 'incr', 's') return {tostring(ok), e}":             reply.Array(reply.BulkString("false"), reply.BulkString("ERR value is not an integer or out of range")),
		"local ok, e = pcall(function() return redis.call('incr', 's') end) return type(e)": reply.BulkString("string"),
		// The table from redis.pcall can be inspected and returned.
		"local r = redis.pcall('incr', 's') return r.err":                      reply.BulkString("ERR value is not an integer or out of range"),
		"local r = redis.pcall('incr', 's') if r.err then return 'caught' end": reply.BulkString("caught"),
		// A status reply is a table with ok.
		"return redis.call('set', 'k', 'v').ok":        reply.BulkString("OK"),
		"return type(redis.call('set', 'k', 'v'))":     reply.BulkString("table"),
		"return redis.call('get', 'missing') == false": reply.Int(1),
		// Errors raised by the script itself.
		"error('boom')":                   reply.Error("ERR user_script:1: boom" + suffix("error('boom')", "1")),
		"\n\nerror('boom3')":              reply.Error("ERR user_script:3: boom3" + suffix("\n\nerror('boom3')", "3")),
		"error('boom', 0)":                reply.Error("ERR boom" + suffix("error('boom', 0)", "1")),
		"error(42)":                       reply.Error("ERR user_script:1: 42" + suffix("error(42)", "1")),
		"error(nil)":                      reply.Error("ERR nil" + suffix("error(nil)", "1")),
		"error(true)":                     reply.Error("ERR true" + suffix("error(true)", "1")),
		"error({err = 'MY code'})":        reply.Error("MY code" + suffix("error({err = 'MY code'})", "1")),
		"error(redis.error_reply('X y'))": reply.Error("X y" + suffix("error(redis.error_reply('X y'))", "1")),
		"local function f()\n error('in f', 2)\nend\nf()": reply.Error("ERR user_script:4: in f" + suffix("local function f()\n error('in f', 2)\nend\nf()", "2")),
		"local t = nil\nreturn t.x":                       reply.Error("ERR user_script:2: attempt to index a non-table object(nil) with key 'x'" + suffix("local t = nil\nreturn t.x", "2")),
		"return 1 < 'x'":                                  reply.Error("ERR user_script:1: attempt to compare number with string" + suffix("return 1 < 'x'", "1")),
		"return {} < {}":                                  reply.Error("ERR user_script:1: attempt to compare two table values" + suffix("return {} < {}", "1")),
		"return nil .. 'x'":                               reply.Error("ERR user_script:1: attempt to concatenate a nil value" + suffix("return nil .. 'x'", "1")),
		"return 'x' + 1":                                  reply.Error("ERR user_script:1: attempt to perform arithmetic on a string value" + suffix("return 'x' + 1", "1")),
		"return #nil":                                     reply.Error("ERR user_script:1: attempt to get length of a nil value" + suffix("return #nil", "1")),
		"return ('x'):rep(2, 3) .. string.rep()":          reply.Error("ERR user_script:1: bad argument #1 to 'rep' (string expected, got no value)" + suffix("return ('x'):rep(2, 3) .. string.rep()", "1")),
	} {
		wantReply(t, src, run(t, src, nil, nil, env()), want)
	}
}

func TestRedisLib(t *testing.T) {
	for src, want := range map[string]reply.Value{
		"redis.log(redis.LOG_WARNING, 'x', 1) return 1":                                    reply.Int(1),
		"return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}": reply.Array(reply.Int(0), reply.Int(1), reply.Int(2), reply.Int(3)),
		"redis.log(1)":              reply.Error("ERR redis.log() requires two arguments or more." + suffix("redis.log(1)", "1")),
		"redis.log('x', 'y')":       reply.Error("ERR First argument must be a number (log level)." + suffix("redis.log('x', 'y')", "1")),
		"redis.log(9, 'y')":         reply.Error("ERR Invalid debug level." + suffix("redis.log(9, 'y')", "1")),
		"redis.setresp(2) return 1": reply.Int(1),
		"redis.setresp(4)":          reply.Error("ERR RESP version must be 2 or 3." + suffix("redis.setresp(4)", "1")),
		"redis.setresp()":           reply.Error("ERR redis.setresp() requires one argument." + suffix("redis.setresp()", "1")),
		"redis.set_repl(redis.REPL_ALL) redis.set_repl(redis.REPL_NONE) return redis.REPL_AOF + redis.REPL_REPLICA": reply.Int(3),
		"redis.set_repl(8)":                 reply.Error("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE." + suffix("redis.set_repl(8)", "1")),
		"return redis.replicate_commands()": reply.Int(1),
		"return redis.REDIS_VERSION":        reply.BulkString(RedisVersion),
		"return redis.REDIS_VERSION_NUM":    reply.Int(RedisVersionNum),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
}

func TestKeysArgv(t *testing.T) {
	src := "return {#KEYS, #ARGV, KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]}"
	got := run(t, src, []string{"k1", "k2"}, []string{"a\x00b", "", "3"}, nil)
	want := reply.Array(reply.Int(2), reply.Int(3), reply.BulkString("k1"), reply.BulkString("k2"),
		reply.BulkString("a\x00b"), reply.BulkString(""), reply.BulkString("3"))
	wantReply(t, src, got, want)
	wantReply(t, "empty", run(t, "return {#KEYS, #ARGV, KEYS[1] == nil}", nil, nil, nil),
		reply.Array(reply.Int(0), reply.Int(0), reply.Int(1)))
	// KEYS and ARGV belong to the run: a script may change them.
	wantReply(t, "mutate", run(t, "KEYS[1] = 'x' table.insert(ARGV, 'y') return {KEYS[1], ARGV[2]}", []string{"k"}, []string{"a"}, nil),
		reply.Array(reply.BulkString("x"), reply.BulkString("y")))
	wantReply(t, "next run", run(t, "return {KEYS[1], #ARGV}", []string{"k"}, []string{"a"}, nil),
		reply.Array(reply.BulkString("k"), reply.Int(1)))
	// ARGV arithmetic coerces strings to numbers, as redis-py's extend does.
	wantReply(t, "coerce", run(t, "return ARGV[1] + 1", nil, []string{" 41 "}, nil), reply.Int(42))
}

func TestDynamicCommandsAndArguments(t *testing.T) {
	env := newFakeEnv()
	src := "return redis.call(ARGV[1], KEYS[1], ARGV[2])"
	wantReply(t, src, run(t, src, []string{"chan"}, []string{"PUBLISH", "0"}, env), reply.Int(0))
	wantReply(t, src, run(t, src, []string{"k"}, []string{"sEt", "v"}, env), reply.OK())
	if len(env.pubs) != 1 || env.pubs[0] != "chan=0" || env.strs["k"] != "v" {
		t.Fatalf("pubs %v strs %v", env.pubs, env.strs)
	}
	if got := env.log[1][0]; got != "sEt" {
		t.Errorf("command name passed as %q, want it as the script wrote it", got)
	}
	// Numbers become strings as Redis renders them.
	env = newFakeEnv()
	run(t, "redis.call('echo', 1500, 1.5, -0, 1e20, 2^53, 1/3, 0.1, -2^62, 2^63, math.huge, -math.huge, 'x')", nil, nil, env)
	want := []string{"echo", "1500", "1.5", "0", "1e+20", "9007199254740992", "0.3333333333333333",
		"0.1", "-4611686018427387904", "9223372036854776000", "inf", "-inf", "x"}
	if got := env.log[0]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("arguments\n got  %q\n want %q", got, want)
	}
}

func TestCompile(t *testing.T) {
	if err := compileSrc("return 1"); err != nil {
		t.Fatalf("Compile: %v", err)
	}
	for src, msg := range map[string]string{
		"return 1 +":    "user_script:1: unexpected symbol near '<eof>'",
		"x = = 1":       "user_script:1: unexpected symbol near '='",
		"return 'abc":   "user_script:1: unfinished string near '<eof>'",
		"\n\nlocal = 1": "user_script:3: unexpected symbol near '='",
		"goto done":     "user_script:1: '=' expected near 'done'",
		"::done::":      "user_script:1: unexpected symbol near ':'",
		"return " + strings.Repeat("{", 1100) + strings.Repeat("}", 1100): "user_script:1: chunk has too many syntax levels",
	} {
		want := "ERR Error compiling script (new function): " + msg
		err := compileSrc(src)
		if err == nil || err.Error() != want {
			t.Errorf("compileSrc(%.40q) = %v, want %q", src, err, want)
		}
		wantReply(t, src, run(t, src, nil, nil, nil), reply.Error(want))
	}
	if err := compileSrc(strings.Repeat(" ", DefaultMaxSource+1)); err == nil || err.Error() != ErrTooLarge {
		t.Errorf("oversized source: %v", err)
	}
	// Redis 7's shebang line: checked, removed, line numbers kept.
	for src, want := range map[string]reply.Value{
		"#!lua\nreturn 1": reply.Int(1),
		"#!lua flags=no-writes,allow-oom\nerror('x')": reply.Error("ERR user_script:2: x" + suffix("#!lua flags=no-writes,allow-oom\nerror('x')", "2")),
		"#!lua flags=bogus\nreturn 1":                 reply.Error("ERR Unexpected flag in script shebang: bogus"),
		"#!python\nreturn 1":                          reply.Error("ERR Unexpected engine in script shebang: #!python"),
		"#!lua name=x\nreturn 1":                      reply.Error("ERR Unknown lua shebang option: name=x"),
		"#!lua":                                       reply.Error("ERR Invalid script shebang"),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
		wantReply(t, src+" (v3)", runV3(src, nil, nil, nil), want)
	}
}

func TestStringLibrary(t *testing.T) {
	for src, want := range map[string]reply.Value{
		"return string.format('%5.2f|%d|%s|%q|%x|%5s|%-5s|%c|%%', 3.14159, 42.9, 'hi', 'a\\nb\\0', 255, 'ab', 'ab', 65)":        reply.BulkString(" 3.14|42|hi|\"a\\\nb\\000\"|ff|   ab|ab   |A|%"),
		"return string.format('%g %g %g %e %G', 1e20, 0.1, 100, 12345.678, 1e-10)":                                              reply.BulkString("1e+20 0.1 100 1.234568e+04 1E-10"),
		"return string.format('%5.1s|%.0f|%+d|%05d|%o|%X|%u', 'abc', 2.5, 3, -42, 8, 255, 7)":                                   reply.BulkString("    a|2|+3|-0042|10|FF|7"),
		"return string.format('%d', -1) .. string.format('%x', -1)":                                                             reply.BulkString("-1ffffffffffffffff"),
		"return string.format('%s %s', 1, 1.5)":                                                                                 reply.BulkString("1 1.5"),
		"return string.format('%f', 1/0)":                                                                                       reply.BulkString("inf"),
		"return string.format('%100d', 1)":                                                                                      reply.Error("ERR user_script:1: invalid format (width or precision too long)" + suffix("return string.format('%100d', 1)", "1")),
		"return string.format('%y', 1)":                                                                                         reply.Error("ERR user_script:1: invalid option '%y' to 'format'" + suffix("return string.format('%y', 1)", "1")),
		"return string.format('%d')":                                                                                            reply.Error("ERR user_script:1: bad argument #2 to 'format' (no value)" + suffix("return string.format('%d')", "1")),
		"return {string.find('hello world', 'o w')}":                                                                            reply.Array(reply.Int(5), reply.Int(7)),
		"return {string.find('hello world', 'l', 5)}":                                                                           reply.Array(reply.Int(10), reply.Int(10)),
		"return {string.find('a.b', '.', 1, true)}":                                                                             reply.Array(reply.Int(2), reply.Int(2)),
		"return {string.find('hello', '(l)(l)')}":                                                                               reply.Array(reply.Int(3), reply.Int(4), reply.BulkString("l"), reply.BulkString("l")),
		"return string.find('hello', 'z')":                                                                                      reply.Null(),
		"return {string.match('key:123', '^(%a+):(%d+)$')}":                                                                     reply.Array(reply.BulkString("key"), reply.BulkString("123")),
		"return {string.match('  x  ', '^%s*(.-)%s*$'), string.match('abc', '()b()')}":                                          reply.Array(reply.BulkString("x"), reply.Int(2), reply.Int(3)),
		"return string.match('THE (quick) fox', '%((%a+)%)')":                                                                   reply.BulkString("quick"),
		"return string.match('f(a(b)c)d', '%b()')":                                                                              reply.BulkString("(a(b)c)"),
		"return string.match('THE quick', '%f[%a]%a+', 4)":                                                                      reply.BulkString("quick"),
		"return {string.gsub('hello world', 'o', '0')}":                                                                         reply.Array(reply.BulkString("hell0 w0rld"), reply.Int(2)),
		"return {string.gsub('hello', '', '-')}":                                                                                reply.Array(reply.BulkString("-h-e-l-l-o-"), reply.Int(6)),
		"return (string.gsub('abc', '%w', '%0%0'))":                                                                             reply.BulkString("aabbcc"),
		"return (string.gsub('hello world', '(%w+)', '<%1>'))":                                                                  reply.BulkString("<hello> <world>"),
		"return (string.gsub('$name is $age', '%$(%w+)', {name='bob', age=7}))":                                                 reply.BulkString("bob is 7"),
		"return (string.gsub('abc', '.', function(c) return c:upper() end, 2))":                                                 reply.BulkString("ABc"),
		"return (string.gsub('abc', '^.', 'X'))":                                                                                reply.BulkString("Xbc"),
		"local r = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do r[#r+1] = k .. v end return r":                    reply.Array(reply.BulkString("a1"), reply.BulkString("b2")),
		"return string.find('a', '[a')":                                                                                         reply.Error("ERR user_script:1: malformed pattern (missing ']')" + suffix("return string.find('a', '[a')", "1")),
		"return string.rep('ab', 3) .. string.rep('x', 0) .. string.rep('x', -1)":                                               reply.BulkString("ababab"),
		"return {string.byte('ABC', 1, -1)}":                                                                                    reply.Array(reply.Int(65), reply.Int(66), reply.Int(67)),
		"return string.char(72, 105)":                                                                                           reply.BulkString("Hi"),
		"return string.char(256)":                                                                                               reply.Error("ERR user_script:1: bad argument #1 to 'char' (invalid value)" + suffix("return string.char(256)", "1")),
		"return string.sub('hello', 2, -2) .. string.sub('hello', -3) .. string.sub('hello', 10)":                               reply.BulkString("ellllo"),
		"return string.sub('hello', '2', '3')":                                                                                  reply.BulkString("el"),
		"return ('Hello'):upper() .. ('Hello'):lower() .. ('abc'):reverse() .. #('abc') .. ('abc'):len()":                       reply.BulkString("HELLOhellocba33"),
		"return string.upper('\\195\\169')":                                                                                     reply.BulkString("\xc3\xa9"),
		"return tostring(1e15) .. ' ' .. tostring(0.1) .. ' ' .. tostring(1/3) .. ' ' .. tostring(2^63) .. ' ' .. tostring(-0)": reply.BulkString("1e+15 0.1 0.33333333333333 9.2233720368548e+18 -0"),
		"return 1 .. 2 .. 'x' .. 1.5":                                                                                           reply.BulkString("12x1.5"),
		"local t = setmetatable({}, {__concat = function(a, b) return 'C' end}) return t .. 'x' .. 'y'":                         reply.BulkString("C"),
		"return tonumber('0x10') + tonumber('  5  ') + tonumber('1e1') + tonumber('ff', 16) + tonumber('z', 36)":                reply.Int(16 + 5 + 10 + 255 + 35),
		"return {tonumber('x'), tonumber(''), tonumber('1 2')}":                                                                 reply.Array(),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
}

func TestTableAndBaseLibraries(t *testing.T) {
	ints := func(ns ...int64) reply.Value {
		vs := make([]reply.Value, len(ns))
		for i, n := range ns {
			vs[i] = reply.Int(n)
		}
		return reply.Array(vs...)
	}
	for src, want := range map[string]reply.Value{
		"local t = {5, 3, 8, 1, 9, 2, 7} table.sort(t) return t":                         ints(1, 2, 3, 5, 7, 8, 9),
		"local t = {5, 3, 8, 1} table.sort(t, function(a, b) return a > b end) return t": ints(8, 5, 3, 1),
		"local t = {1, 2, 3} table.insert(t, 4) table.insert(t, 1, 0) return t":          ints(0, 1, 2, 3, 4),
		"local t = {1, 2, 3} local x = table.remove(t, 1) return {x, t[1], #t}":          ints(1, 2, 2),
		"local t = {1, 2, 3} return {table.remove(t), #t}":                               ints(3, 2),
		"return table.concat({1, 2, 'x'}, ', ', 2, 3)":                                   reply.BulkString("2, x"),
		"return table.concat({1, {}, 3})":                                                reply.Error("ERR user_script:1: invalid value (at index 2) in table for 'concat'" + suffix("return table.concat({1, {}, 3})", "1")),
		"return {table.getn({1, 2}), table.maxn({[7] = 1, 2})}":                          ints(2, 7),
		"local s = 0 table.foreachi({4, 5}, function(i, v) s = s + i * v end) return s":  reply.Int(14),
		"return {unpack({1, 2, 3}, 2)}":                                                  ints(2, 3),
		"return select('#', unpack({}, 1, 3))":                                           reply.Int(3),
		"return {select(2, 'a', 'b', 'c')}":                                              reply.Array(reply.BulkString("b"), reply.BulkString("c")),
		"return select('#', ...)":                                                        reply.Int(0),
		"local n = 0 for k, v in pairs({a = 1, b = 2, c = 3}) do n = n + v end return n": reply.Int(6),
		"local n = 0 for i, v in ipairs({1, 2, nil, 4}) do n = n + v end return n":       reply.Int(3),
		"return next({})": reply.Null(),
		"local ok, e = pcall(error, 'x', 0) return {tostring(ok), e}":                                                      reply.Array(reply.BulkString("false"), reply.BulkString("x")),
		"local ok, e = xpcall(function() error('x', 0) end, function(m) return 'handled ' .. m end) return e":              reply.BulkString("handled x"),
		"return {pcall(function(a, b) return a + b end, 1, 2)}":                                                            ints(1, 3),
		"local t = setmetatable({}, {__index = function(t, k) return k .. '!' end}) return t.x":                            reply.BulkString("x!"),
		"local mt = {__eq = function() return true end} return setmetatable({}, mt) == setmetatable({}, mt)":               reply.Int(1),
		"local mt = {__lt = function() return true end} return setmetatable({}, mt) <= setmetatable({}, mt)":               reply.Null(),
		"local t = setmetatable({}, {__metatable = 'locked'}) return getmetatable(t)":                                      reply.BulkString("locked"),
		"local t = setmetatable({}, {__metatable = 1}) setmetatable(t, {})":                                                reply.Error("ERR user_script:1: cannot change a protected metatable" + suffix("local t = setmetatable({}, {__metatable = 1}) setmetatable(t, {})", "1")),
		"return rawequal('a', 'a') and rawget({5}, 1)":                                                                     reply.Int(5),
		"local t = {} rawset(t, 'k', 'v') return t.k":                                                                      reply.BulkString("v"),
		"local t = {} t[1], t[2], t[3] = 'a', 'b' return {t[1], t[2], t[3] == nil}":                                        reply.Array(reply.BulkString("a"), reply.BulkString("b"), reply.Int(1)),
		"local a, b = {}, {} a.x, b[1] = 1, 2 return {a.x, b[1]}":                                                          ints(1, 2),
		"local t = {} local i = 0 local function f() i = i + 1 return i end t[f()], t[f()] = f(), f() return {t[1], t[2]}": ints(3, 4),
		"return #'abc' + #{1, 2}": reply.Int(5),
		"return math.max(1, 5, 3) + math.min(2, 0) + math.floor(2.7) + math.abs(-1)": reply.Int(8),
		"return math.huge > 1e308 and -math.huge < -1e308":                           reply.Int(1),
		"return _VERSION": reply.BulkString("Lua 5.1"),
		"return collectgarbage('count') + gcinfo()": reply.Int(0),
		"return type(newproxy())":                   reply.BulkString("userdata"),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
}

// Scripts run concurrently from several goroutines (go test -race).
func TestConcurrentRuns(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				env := newFakeEnv()
				env.strs["lock"] = "v"
				got := runLim(redsyncDelete, []string{"lock"}, []string{"v"}, env, int64(g), DefaultLimits())
				if got.Kind != reply.KindInt || got.Int != 1 {
					t.Errorf("goroutine %d run %d: %v", g, i, got)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestFpconv(t *testing.T) {
	for f, want := range map[float64]string{
		2.5: "2.5", 2: "2", 0.1: "0.1", 1e20: "1e+20", 1e21: "1e+21", 1.5e-7: "1.5e-7", 1e-7: "1e-7",
		0.000001: "0.000001", 123456.789: "123456.789", 1e15: "1e+15", 1234567e3: "1234567000", -2.5: "-2.5",
		math.Pow(2, 63): "9223372036854776000", 1e300: "1e+300", 5e-324: "5e-324", 0: "0",
		math.Inf(1): "inf", math.Inf(-1): "-inf", 1 / 3.0: "0.3333333333333333", 12e-5: "0.00012",
	} {
		if got := fpconvDtoa(f); got != want {
			t.Errorf("fpconvDtoa(%v) = %q, want %q", f, got, want)
		}
	}
}
