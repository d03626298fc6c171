package script

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// loadLib parses and loads code with the shared verifying engine.
func loadLib(t *testing.T, code string) ([]Function, string) {
	t.Helper()
	_, body, msg := ParseLibrary(code)
	if msg != "" {
		return nil, msg
	}
	fns, _, msg := engine(DefaultLimits()).LoadLibrary(body, 0)
	return fns, msg
}

func callLib(code, name string, keys, args []string, env Env) reply.Value {
	_, body, msg := ParseLibrary(code)
	if msg != "" {
		return reply.Error(msg)
	}
	if env == nil {
		env = newFakeEnv()
	}
	return engine(DefaultLimits()).CallFunction(body, name, keys, args, env, 0)
}

// The first line, as Redis 7.0.15 reads it (texts from redis-server).
func TestParseLibrary(t *testing.T) {
	for _, c := range []struct{ code, name, err string }{
		{"#!lua name=lib\nx", "lib", ""},
		{"#!LUA NAME=Lib_1\n", "Lib_1", ""},
		{"#!lua name=\"foo\"\n", "foo", ""},
		{"return 1", "", "ERR Missing library metadata"},
		{"#!lua name=lib", "", "ERR Invalid library metadata"},
		{"#!lua name=\"lib\n", "", "ERR Invalid library metadata"},
		{"#!lua\n", "", "ERR Library name was not given"},
		{"#!lua name=a name=b\n", "", "ERR Invalid metadata value, name argument was given multiple times"},
		{"#!lua name=a foo=bar\n", "", "ERR Invalid metadata value given: foo=bar"},
		{"#!lua name=a-b\n", "", ErrBadName},
		{"#!lua name=\n", "", ErrBadName},
		{"#! name=a\n", "", "ERR Engine '' not found"},
		{"#!js name=a\n", "", "ERR Engine 'js' not found"},
		{"#!lua name=a\x00\n", "", "ERR Invalid library metadata"},
	} {
		name, body, err := ParseLibrary(c.code)
		if name != c.name || err != c.err {
			t.Errorf("ParseLibrary(%q) = %q, %q; want %q, %q", c.code, name, err, c.name, c.err)
		}
		if err == "" && !strings.HasPrefix(body, "\n") {
			t.Errorf("ParseLibrary(%q) body %q does not keep the newline", c.code, body)
		}
	}
}

// What the load run allows and refuses (Redis 7.0.15's texts).
func TestLoadLibrary(t *testing.T) {
	const pre = "ERR Error registering functions: "
	fns, msg := loadLib(t, "#!lua name=l\nredis.register_function('f', function() end)\n"+
		"redis.register_function{function_name='g', callback=function() end, flags={'no-writes', 'ALLOW-OOM'}, description='d'}\n"+
		"redis.register_function(7, function() end)\nredis.log(redis.LOG_WARNING, 'loading', redis.REDIS_VERSION)")
	want := []Function{{Name: "f"}, {Name: "g", Desc: "d", HasDesc: true, Flags: FlagNoWrites | FlagAllowOOM}, {Name: "7"}}
	if msg != "" || !reflect.DeepEqual(fns, want) {
		t.Fatalf("load = %+v, %q; want %+v", fns, msg, want)
	}
	for _, c := range []struct{ body, err string }{
		{"local x = string.format('%d', 1)", pre + "ERR user_function:2: Script attempted to access nonexistent global variable 'string'"},
		{"redis.call('ping')", pre + "ERR user_function:2: Script attempted to access nonexistent global variable 'call'"},
		{"redis.setresp(3)", pre + "ERR user_function:2: Script attempted to access nonexistent global variable 'setresp'"},
		{"return math.random()", pre + "ERR user_function:2: Script attempted to access nonexistent global variable 'math'"},
		{"a = 1", pre + "ERR user_function:2: Attempt to modify a readonly table"},
		{"redis.register_function()", pre + "ERR wrong number of arguments to redis.register_function"},
		{"redis.register_function('f')", pre + "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
		{"redis.register_function(nil, function() end)", pre + "ERR first argument to redis.register_function must be a string"},
		{"redis.register_function('f', 'x')", pre + "ERR second argument to redis.register_function must be a function"},
		{"redis.register_function('a-b', function() end)", pre + "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
		{"redis.register_function('f', function() end)\nredis.register_function('f', function() end)", pre + "ERR Function already exists in the library"},
		{"redis.register_function{function_name='f'}", pre + "ERR redis.register_function must get a callback argument"},
		{"redis.register_function{callback=function() end}", pre + "ERR redis.register_function must get a function name argument"},
		{"redis.register_function{function_name='f', callback=function() end, flags={'bad'}}", pre + "ERR unknown flag given"},
		{"redis.register_function{function_name='f', callback=function() end, flags='no-writes'}", pre + "ERR flags argument to redis.register_function must be a table representing function flags"},
		{"redis.register_function{function_name='f', callback=function() end, x=1}", pre + "ERR unknown argument given to redis.register_function"},
		{"redis.register_function{function_name='f', callback=function() end, description={}}", pre + "ERR description argument given to redis.register_function must be a string"},
		{"local a = 1", "ERR No functions registered"},
		{"local a = 1\nwhile 1 do a = a + 1 end", "ERR Error registering functions: ERR FUNCTION LOAD timeout"},
		{"local x = (", "ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'"},
	} {
		if _, msg := loadLib(t, "#!lua name=l\n"+c.body); msg != c.err {
			t.Errorf("load %q = %q\n want %q", c.body, msg, c.err)
		}
	}
}

// A library with too many functions, or too much in their names, is
// refused at the registration past the bound.
func TestLoadLibraryBounds(t *testing.T) {
	many := "#!lua name=l\nlocal r = redis.register_function\nlocal n = 'f'\nfor i = 1, 5000 do r(n .. i, function() end) end"
	if _, msg := loadLib(t, many); !strings.Contains(msg, "at most 4096 functions") {
		t.Errorf("5000 functions: %q", msg)
	}
	big := "#!lua name=l\nlocal d = 'x'\nfor i = 1, 17 do d = d .. d end\nfor i = 1, 20 do redis.register_function{function_name='f' .. i, callback=function() end, description=d} end"
	if _, msg := loadLib(t, big); !strings.Contains(msg, "at most 1 MiB") {
		t.Errorf("20 descriptions of 128 KiB: %q", msg)
	}
	huge := "#!lua name=l\nredis.register_function('f', function() end)\n--" + strings.Repeat("x", DefaultMaxSource)
	if _, msg := loadLib(t, huge); msg != ErrTooLarge {
		t.Errorf("a body past MaxSource: %q", msg)
	}
}

// FCALL: the function gets (keys, args), sees EVAL's globals but not KEYS
// and ARGV, and its errors name it.
func TestCallFunction(t *testing.T) {
	code := "#!lua name=l\nlocal lib = redis\nlocal n = 0\n" +
		"redis.register_function('echo', function(keys, args) n = n + 1 return {keys[1], args[1], n} end)\n" +
		"redis.register_function('set', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" +
		"redis.register_function('keys', function() return KEYS end)\n" +
		"redis.register_function('reg', function() lib.register_function('x', function() end) end)\n" +
		"redis.register_function('reg2', function() redis.register_function('x', function() end) end)\n" +
		"redis.register_function('poke', function() lib.math = math end)\n" +
		"redis.register_function('json', function() return cjson.encode({1}) end)\n"
	env := newFakeEnv()
	for _, c := range []struct {
		name string
		want reply.Value
	}{
		// n starts at 0 on every call: the body runs again each time.
		{"echo", reply.Array(reply.BulkString("k"), reply.BulkString("a"), reply.Int(1))},
		{"echo", reply.Array(reply.BulkString("k"), reply.BulkString("a"), reply.Int(1))},
		{"set", reply.OK()},
		{"keys", reply.Error("ERR user_function:6: Script attempted to access nonexistent global variable 'KEYS' script: keys, on @user_function:6.")},
		{"reg", reply.Error("ERR redis.register_function can only be called on FUNCTION LOAD command script: reg, on @user_function:7.")},
		// gopher-lua's words for calling nil (Lua 5.1: "attempt to call
		// field 'register_function' (a nil value)"), as for EVAL.
		{"reg2", reply.Error("ERR user_function:8: attempt to call a non-function object script: reg2, on @user_function:8.")},
		{"poke", reply.Error("ERR user_function:9: Attempt to modify a readonly table script: poke, on @user_function:9.")},
		{"json", reply.BulkString("[1]")},
		{"nope", reply.Error("ERR Function not found")},
	} {
		if got := callLib(code, c.name, []string{"k"}, []string{"a"}, env); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %+v\n want %+v", c.name, got, c.want)
		}
	}
	if !env.exists("k") {
		t.Error("set did not reach the env")
	}
	// The body's steps count towards the call's budget.
	heavy := "#!lua name=l\nfor i = 1, 2000000 do end\nredis.register_function('f', function() for i = 1, 3500000 do end return 1 end)"
	_, body, _ := ParseLibrary(heavy)
	if _, steps, msg := engine(DefaultLimits()).LoadLibrary(body, 0); msg != "" || steps < 2000000 || steps > 3000000 {
		t.Fatalf("heavy load: %d steps, %q", steps, msg)
	}
	if got := callLib(heavy, "f", nil, nil, nil); !reflect.DeepEqual(got, reply.Error(ErrWorkLimit)) {
		t.Errorf("heavy call = %+v", got)
	}
}
