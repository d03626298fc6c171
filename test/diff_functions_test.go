package test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// The differential test of Redis 7's Functions: every FUNCTION subcommand,
// FCALL and FCALL_RO, their flags and every error text, run in sequence on
// fenced and on redis-server 7.0.15 over RESP2 and RESP3, each reply
// compared with its kinds (a set is a set, a null a null). Two things are
// compared after normalizing, by design:
//
//   - FUNCTION LIST's order: Redis lists libraries, and a library's
//     functions, in its hash tables' order; fenced in name order and in
//     the order they were registered. The lists are compared sorted.
//   - FUNCTION DUMP's payload: Redis's is RDB, fenced's its own. Each
//     server restores its own dump (the steps "@DUMP" and "@RESTORE"), and
//     what follows must agree.
//
// Errors Lua raises itself keep their position and function name but not
// their wording where gopher-lua words them differently (dfRuntime).

type dfMode int

const (
	dfExact   dfMode = iota
	dfList           // FUNCTION LIST: sorted before comparing
	dfRuntime        // a Lua runtime error: wording not compared
	dfCompile        // a Lua syntax error: wording not compared
)

type dfStep struct {
	cmd  []string
	mode dfMode
}

// lib is Redis's test suite's get_function_code.
func lib(name, fn, body string) string {
	return fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function(KEYS, ARGV)\n %s \nend)", name, fn, body)
}

// roLib is get_no_writes_function_code.
func roLib(name, fn, body string) string {
	return fmt.Sprintf("#!lua name=%s\nredis.register_function{function_name='%s', callback=function(KEYS, ARGV)\n %s \nend, flags={'no-writes'}}", name, fn, body)
}

func dfSteps() []dfStep {
	var out []dfStep
	add := func(mode dfMode, cmds ...[]string) {
		for _, c := range cmds {
			out = append(out, dfStep{c, mode})
		}
	}
	ex := func(cmds ...[]string) { add(dfExact, cmds...) }
	load := func(code string) []string { return []string{"FUNCTION", "LOAD", "REPLACE", code} }
	list := []string{"FUNCTION", "LIST", "WITHCODE"}

	// An empty state, as every file of Redis's suite starts.
	ex([]string{"FUNCTION", "FLUSH"}, []string{"FUNCTION", "FLUSH", "SYNC"}, []string{"function", "flush", "async"},
		[]string{"FUNCTION", "STATS"}, []string{"FUNCTION", "LIST"}, []string{"FUNCTION", "KILL"}, []string{"FUNCTION", "HELP"},
		[]string{"FUNCTION", "DELETE", "nope"}, []string{"FCALL", "nope", "0"}, []string{"FCALL_RO", "nope", "0"})
	// Arity, subcommands and options.
	ex([]string{"FUNCTION"}, []string{"FUNCTION", "NOPE"}, []string{"FUNCTION", "LOAD"}, []string{"FUNCTION", "DELETE"},
		[]string{"FUNCTION", "DELETE", "a", "b"}, []string{"FUNCTION", "DUMP", "x"}, []string{"FUNCTION", "STATS", "x"},
		[]string{"FUNCTION", "KILL", "x"}, []string{"FUNCTION", "HELP", "x"}, []string{"FUNCTION", "RESTORE"},
		[]string{"FUNCTION", "RESTORE", "a", "b", "c"}, []string{"FUNCTION", "RESTORE", "bad"},
		[]string{"FUNCTION", "RESTORE", "bad", "FOO"}, []string{"FUNCTION", "RESTORE", "bad", "flush"},
		[]string{"FUNCTION", "FLUSH", "bad"}, []string{"FUNCTION", "FLUSH", "sync", "x"},
		[]string{"FUNCTION", "LIST", "bad_argument"}, []string{"FUNCTION", "LIST", "LIBRARYNAME"},
		[]string{"FUNCTION", "LIST", "WITHCODE", "WITHCODE"}, []string{"FUNCTION", "LIST", "withcode", "libraryname", "foo", "libraryname", "foo"},
		[]string{"FCALL"}, []string{"FCALL", "f"}, []string{"FCALL_RO", "f"},
		[]string{"FUNCTION", "LOAD", "foo", "bar", lib("test", "test", "return 'hello'")})

	// Loading: the first line, then the body.
	for _, code := range []string{
		"return 1", "#!lua name=t", "#!lua", "#!lua\nredis.register_function('f', function() return 1 end)",
		"#!lua foo=bar\n", "#!lua name=a name=b\n", "#!lua name=a foo=bar\n", "#!lua name=a-b\n", "#!lua name=\n",
		"#!lua name=bad\x00format\n", "#! name=a\n", "#!bad_engine name=a\n", "#!lua name=\"unterminated\n",
		"#!lua name=a\n", "#!lua name=a\nreturn 1",
		"#!lua name=a\nlocal x = (",
		"#!lua name=a\nlocal x = string.format('%d', 1)", "#!lua name=a\nreturn math.random()",
		"#!lua name=a\nreturn redis.call('ping')", "#!lua name=a\nreturn redis.setresp(3)",
		"#!lua name=a\nreturn redis.set_repl(redis.REPL_NONE)", "#!lua name=a\nmt = getmetatable(_G)",
		"#!lua name=a\na = 1", "#!lua name=a\nredis.math.random()", "#!lua name=a\nredis.redis.call('ping')",
		"#!lua name=a\nlocal a = 1\nwhile 1 do a = a + 1 end",
		"#!lua name=a\nredis.register_function()",
		"#!lua name=a\nredis.register_function('f1')",
		"#!lua name=a\nredis.register_function('f1', function() return 1 end, {}, 'description', 'extra arg')",
		"#!lua name=a\nredis.register_function(nil, function() return 1 end)",
		"#!lua name=a\nredis.register_function('test\\0test', function() return 1 end)",
		"#!lua name=a\nredis.register_function('', function() return 1 end)",
		"#!lua name=a\nredis.register_function('f', 'not a function')",
		"#!lua name=a\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)",
		"#!lua name=a\nredis.register_function{function_name=function() return 1 end, callback=function() end}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback='bad'}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback=function() end, description=function() end}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback=function() end, some_unknown='unknown'}",
		"#!lua name=a\nredis.register_function{callback=function() end}",
		"#!lua name=a\nredis.register_function{function_name='f1'}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback=function() end, flags='bad flags type'}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback=function() end, flags={function() return 1 end}}",
		"#!lua name=a\nredis.register_function{function_name='f1', callback=function() end, flags={'unknown'}}",
		"#!lua name=a\nredis.register_function{[true]=1}",
		"#!lua name=a\nredis.log(redis.LOG_WARNING)",
		"#!lua name=a\nredis.log('x', 'y')",
		"#!lua name=a\nredis.register_function(1, function() return 1 end)",
	} {
		ex([]string{"FUNCTION", "LOAD", code})
	}
	ex([]string{"FUNCTION", "STATS"}, []string{"FUNCTION", "DELETE", "1"}, []string{"FUNCTION", "DELETE", "a"})
	add(dfCompile, []string{"FUNCTION", "LOAD", "#!lua name=a\nbad script"})

	// Load, replace, call, delete (Redis's suite's first tests).
	ex([]string{"FUNCTION", "LOAD", lib("test", "test", "return 'hello'")}, []string{"FCALL", "test", "0"},
		[]string{"FUNCTION", "LOAD", lib("test", "test", "return 'hello1'")},
		[]string{"FUNCTION", "LOAD", "REPLACE", lib("test", "test", "return 'hello1'")}, []string{"FCALL", "test", "0"})
	add(dfCompile, []string{"FUNCTION", "LOAD", "replace", lib("test", "test", "bad script")})
	ex([]string{"FCALL", "TEST", "0"}, []string{"FUNCTION", "DELETE", "test"}, []string{"FCALL", "test", "0"},
		[]string{"FUNCTION", "LOAD", lib("test", "test", "return 'hello'")}, []string{"FCALL", "test", "bad_arg"},
		[]string{"FCALL", "test", "10", "key1"}, []string{"FCALL", "test", "-1", "key1"}, []string{"FUNCTION", "DELETE", "test1"},
		[]string{"FUNCTION", "DELETE", "TEST"})
	add(dfList, list)

	// FCALL: keys and args, replies of every type, errors and flags.
	ex(load(lib("test", "test", "return redis.call('set', KEYS[1], ARGV[1])")), []string{"FCALL", "test", "1", "fk", "v1"},
		[]string{"GET", "fk"},
		load(lib("test", "test", "return {KEYS, ARGV, #KEYS, #ARGV}")), []string{"FCALL", "test", "2", "a", "b", "c", "d", "e"},
		[]string{"FCALL", "test", "0"},
		load(lib("test", "test", "return {1, 'two', {3}, true, false, nil, 4.7, redis.status_reply('OK'), redis.error_reply('MY err')}")),
		[]string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.error_reply('MY own error')")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return {err='XX raw'}")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.call('incr', KEYS[1])")), []string{"SET", "fs", "x"}, []string{"FCALL", "test", "1", "fs"},
		load(lib("test", "test", "return redis.pcall('incr', KEYS[1])")), []string{"FCALL", "test", "1", "fs"},
		load(lib("test", "test", "return redis.call('nosuchcommand')")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.call('get')")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return KEYS[1]")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return nosuchglobal")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "x = 1")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "error('boom')")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "error({err='CODE boom'})")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "redis.setresp(3) return redis.call('hgetall', KEYS[1])")), []string{"HSET", "fh", "a", "1"},
		[]string{"FCALL", "test", "1", "fh"},
		load(lib("test", "test", "return {map={a=1}}")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return cjson.encode({a=1}) .. cmsgpack.pack(1) .. bit.band(7, 3) .. struct.pack('>I', 1)")),
		[]string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.REDIS_VERSION_NUM > 0")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.pcall('fcall', 'test', '0')")), []string{"FCALL", "test", "0"},
		load(lib("test", "test", "return redis.pcall('function', 'list')")), []string{"FCALL", "test", "0"},
		[]string{"EVAL", "return redis.pcall('fcall', 'test', '0')", "0"},
		[]string{"EVAL", "return redis.pcall('function', 'flush')", "0"},
		[]string{"EVAL", "return redis.pcall('fcall_ro', 'test', '0')", "0"},
	)
	add(dfRuntime, load(lib("test", "test", "return nil + 1")), []string{"FCALL", "test", "0"})

	// Libraries sharing code, collisions, a failed load keeping the old.
	shared := "#!lua name=lib1\nlocal function add1(a)\n  return a + 1\nend\n" +
		"redis.register_function('f1', function(keys, args) return add1(1) end)\n" +
		"redis.register_function('f2', function(keys, args) return add1(2) end)"
	ex([]string{"FUNCTION", "FLUSH"}, []string{"FUNCTION", "LOAD", shared}, []string{"FCALL", "f1", "0"}, []string{"FCALL", "f2", "0"},
		[]string{"FUNCTION", "LOAD", "replace", "#!lua name=lib1\nredis.register_function('f1', function() return 5 end)\nredis.register_function('f2', 'not a function')"},
		[]string{"FCALL", "f1", "0"},
		[]string{"FUNCTION", "LOAD", "replace", "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)"},
		[]string{"FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('F2', function() return 1 end)"},
		[]string{"FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f3', function() return 1 end)"},
		[]string{"FUNCTION", "STATS"})
	add(dfList, list, []string{"FUNCTION", "LIST"}, []string{"FUNCTION", "LIST", "LIBRARYNAME", "lib2"},
		[]string{"FUNCTION", "LIST", "libraryname", "LIB*", "withcode"}, []string{"FUNCTION", "LIST", "LIBRARYNAME", "x*"})

	// Load-time values and the runtime environment.
	malicious := "#!lua name=lib1\nlocal lib = redis\n" +
		"lib.register_function('f1', function ()\n  lib.redis = redis\n  lib.math = math\n  return {ok='OK'}\nend)\n" +
		"lib.register_function('f2', function ()\n  lib.register_function('f1', function () return 1 end)\nend)\n" +
		"lib.register_function('f3', function () redis.register_function('f4', function() return 2 end) return 1 end)\n" +
		"lib.register_function('f5', function () lib.log(lib.LOG_NOTICE, 'x') return lib.LOG_WARNING end)\n" +
		"lib.register_function('f6', function () mt = getmetatable(_G) end)\n" +
		"lib.register_function('f7', function () return lib.call('ping') end)"
	ex(load(malicious), []string{"FCALL", "f1", "0"}, []string{"FCALL", "f2", "0"}, []string{"FCALL", "f5", "0"},
		[]string{"FCALL", "f6", "0"}, []string{"FCALL", "f7", "0"})
	add(dfRuntime, []string{"FCALL", "f3", "0"})

	// Flags, descriptions, FCALL_RO.
	flagged := "#!lua name=flags\n" +
		"redis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}\n" +
		"redis.register_function{function_name='rw', callback=function(keys) return redis.call('set', keys[1], 'x') end}\n" +
		"redis.register_function{function_name='rowrite', callback=function(keys) return redis.call('set', keys[1], 'y') end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='ropwrite', callback=function(keys) return redis.pcall('set', keys[1], 'y') end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='all', callback=function() return 1 end, flags={'allow-cross-slot-keys', 'NO-CLUSTER', 'allow-stale', 'allow-oom', 'no-writes'}, description=''}\n" +
		"redis.register_function{function_name='oom', callback=function(keys) return redis.call('del', keys[1]) end, flags={'allow-oom'}}\n" +
		"redis.register_function{function_name='num', callback=function() return 2 end, description=42}"
	ex(load(flagged), []string{"SET", "rk", "v"}, []string{"FCALL_RO", "ro", "1", "rk"}, []string{"FCALL", "ro", "1", "rk"},
		[]string{"FCALL_RO", "rw", "1", "rk"}, []string{"FCALL", "rw", "1", "rk"}, []string{"GET", "rk"},
		[]string{"FCALL", "rowrite", "1", "rk"}, []string{"FCALL_RO", "rowrite", "1", "rk"}, []string{"FCALL_RO", "ropwrite", "1", "rk"},
		[]string{"GET", "rk"}, []string{"FCALL_RO", "all", "0"}, []string{"FCALL_RO", "ALL", "0"}, []string{"FCALL_RO", "num", "0"},
		[]string{"FCALL_RO", "ro", "x"}, []string{"FCALL_RO", "ro", "2", "rk"}, []string{"FCALL_RO", "nope", "x"},
		[]string{"FUNCTION", "STATS"})
	add(dfList, []string{"FUNCTION", "LIST", "LIBRARYNAME", "flags"})
	ex(load(roLib("test", "test", "return redis.call('set', 'x', '1')")), []string{"FCALL_RO", "test", "0"},
		load(roLib("test", "test", "return redis.call('get', 'rk')")), []string{"FCALL_RO", "test", "0"})

	// At maxmemory: loads, restores and writing functions are refused,
	// no-writes and allow-oom functions run, deletes work.
	ex([]string{"FUNCTION", "LOAD", "replace", "#!lua name=test\nredis.register_function('f1', function() return 1 end)"},
		[]string{"@DUMP"}, []string{"CONFIG", "SET", "maxmemory", "1"},
		[]string{"FUNCTION", "LOAD", "replace", "#!lua name=test\nredis.register_function('f1', function() return 1 end)"},
		[]string{"FUNCTION", "LOAD", "bad"}, []string{"FCALL", "rw", "1", "rk"}, []string{"FCALL", "ro", "1", "rk"},
		[]string{"FCALL_RO", "ro", "1", "rk"}, []string{"FCALL", "oom", "1", "rk"}, []string{"GET", "rk"},
		[]string{"FUNCTION", "DELETE", "test"}, []string{"@RESTORE"}, []string{"FUNCTION", "FLUSH"},
		[]string{"CONFIG", "SET", "maxmemory", "0"})

	// DUMP and RESTORE, each server with its own payload (Redis's suite's
	// "function restore with function name collision").
	three := "#!lua name=lib1\nlocal function add1(a) return a + 1 end\n" +
		"redis.register_function('f1', function() return add1(1) end)\n" +
		"redis.register_function('f2', function() return add1(2) end)\n" +
		"redis.register_function('f3', function() return add1(3) end)"
	ex([]string{"FUNCTION", "FLUSH"}, []string{"@DUMP"}, []string{"@RESTORE"}, []string{"FUNCTION", "LOAD", three},
		[]string{"@DUMP"}, []string{"FUNCTION", "FLUSH"}, []string{"@RESTORE"}, []string{"FCALL", "f3", "0"},
		[]string{"@RESTORE"}, []string{"@RESTORE", "REPLACE"}, []string{"@RESTORE", "FLUSH"}, []string{"FCALL", "f1", "0"},
		[]string{"FUNCTION", "FLUSH"},
		[]string{"FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f6', function() return 7 end)"},
		[]string{"FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f4', function() return 5 end)\nredis.register_function('f3', function() return 4 end)"},
		[]string{"@RESTORE"}, []string{"FCALL", "f3", "0"}, []string{"FCALL", "f6", "0"},
		[]string{"@RESTORE", "replace"}, []string{"FCALL", "f3", "0"}, []string{"FCALL", "f6", "0"},
		[]string{"FUNCTION", "DELETE", "lib2"}, []string{"@RESTORE", "REPLACE"}, []string{"FCALL", "f6", "0"},
		[]string{"FCALL", "f1", "0"}, []string{"@RESTORE", "append"}, []string{"FUNCTION", "STATS"})
	add(dfList, list)
	ex([]string{"@RESTORE", "FLUSH"}, []string{"FCALL", "f3", "0"}, []string{"FCALL", "f4", "0"}, []string{"FUNCTION", "STATS"})
	add(dfList, list)
	ex([]string{"FUNCTION", "FLUSH"}, []string{"FUNCTION", "STATS"}, []string{"FUNCTION", "LIST"})
	return out
}

// dfCompileError masks the wording of a syntax error (gopher-lua's parser
// says less than Lua 5.1's: "unexpected symbol" for "'=' expected").
var dfCompileError = regexp.MustCompile(`^(ERR Error compiling function: user_function:\d+: ).*( near '[^']*')$`)

// dfRuntimeError masks the wording of an error Lua raised inside a function.
var dfRuntimeError = regexp.MustCompile(`^(ERR user_function:\d+: ).*( script: \w+, on @user_function:\d+\.)$`)

// dfNormalize is normalizeReply, with a LIST sorted and a runtime error's
// wording masked.
func dfNormalize(v resp.Value, mode dfMode) string {
	switch mode {
	case dfCompile:
		if v.Kind() == resp.KindError {
			return "error:" + dfCompileError.ReplaceAllString(v.Text(), "${1}<Lua syntax error>${2}")
		}
	case dfRuntime:
		if v.Kind() == resp.KindError {
			return "error:" + dfRuntimeError.ReplaceAllString(v.Text(), "${1}<Lua runtime error>${2}")
		}
	case dfList:
		if v.Kind() == resp.KindArray {
			var libs []string
			for _, l := range v.Elems() {
				var parts []string
				kv := l.Elems()
				if l.Kind() == resp.KindArray || l.Kind() == resp.KindMap {
					for i := 0; i+1 < len(kv); i += 2 {
						val := normalizeReply(kv[i+1])
						if kv[i].Text() == "functions" {
							var fns []string
							for _, f := range kv[i+1].Elems() {
								fns = append(fns, normalizeReply(f))
							}
							sort.Strings(fns)
							val = strings.Join(fns, ",")
						}
						parts = append(parts, normalizeReply(kv[i])+"="+val)
					}
				}
				libs = append(libs, l.Kind().String()+"{"+strings.Join(parts, " ")+"}")
			}
			sort.Strings(libs)
			return "array[" + strings.Join(libs, " ") + "]"
		}
	}
	return normalizeReply(v)
}

func TestDiffFunctions(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	steps := dfSteps()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			t.Parallel()
			rd := startRedisServer(t)
			fd := startNode(t, nodeOpts{})
			d := dialDiff(t, fd.addr, rd.leader, proto)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var dumps [2][]byte
			for i, st := range steps {
				var got [2]string
				for j, c := range []*resp.Client{d.fenced, d.redis} {
					args := make([][]byte, len(st.cmd))
					for k, a := range st.cmd {
						args[k] = []byte(a)
					}
					switch st.cmd[0] {
					case "@DUMP":
						v, err := c.Do(ctx, []byte("FUNCTION"), []byte("DUMP"))
						if err != nil || v.Kind() != resp.KindBulk {
							t.Fatalf("step %d: FUNCTION DUMP: %v %v", i, v, err)
						}
						dumps[j] = []byte(v.Text())
						got[j] = "dumped"
						continue
					case "@RESTORE":
						args = append([][]byte{[]byte("FUNCTION"), []byte("RESTORE"), dumps[j]}, args[1:]...)
					}
					v, err := c.Do(ctx, args...)
					if err != nil {
						t.Fatalf("step %d %q: %v", i, st.cmd, err)
					}
					got[j] = dfNormalize(v, st.mode)
				}
				if got[0] != got[1] {
					t.Errorf("step %d: %q\n  fenced: %s\n  redis:  %s", i, st.cmd, got[0], got[1])
				}
			}
		})
	}
	t.Logf("%d steps, over RESP2 and RESP3", len(steps))
}
