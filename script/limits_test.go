package script

import (
	"github.com/fenced/fenced/internal/racetest"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/reply"
)

func TestInfiniteLoopStopsDeterministically(t *testing.T) {
	for _, src := range []string{
		"while true do end",
		"repeat until false",
		"for i = 1, math.huge do end",
		"for k, v in function() return 1, 1 end do end",
		"local function f() return f() end return f()",
		"local x = 0 while true do x = x + 1 if x % 3 == 0 then x = x - 1 end end",
		// A script cannot catch its way past the limit.
		"pcall(function() while true do end end) return 'escaped'",
		"while true do pcall(function() while true do end end) end",
		"local ok = xpcall(function() while true do end end, function() while true do end end) return ok",
	} {
		lim := Limits{MaxSteps: 200_000}
		start := time.Now()
		r1, s1 := stepsLim(src, nil, nil, newFakeEnv(), 0, lim)
		r2, s2 := stepsLim(src, nil, nil, newFakeEnv(), 0, lim)
		wantReply(t, src, r1, reply.Error(ErrWorkLimit))
		wantReply(t, src, r2, reply.Error(ErrWorkLimit))
		if s1 != s2 || s1 <= lim.MaxSteps {
			t.Errorf("%q: stopped at steps %d and %d", src, s1, s2)
		}
		t.Logf("%q: %d steps, %v", src, s1, time.Since(start)/2)
	}
	// With the default limits, on any machine, quickly.
	start := time.Now()
	got, steps := stepsLim("while true do end", nil, nil, newFakeEnv(), 0, DefaultLimits())
	wantReply(t, "default", got, reply.Error(ErrWorkLimit))
	if steps <= DefaultMaxSteps || steps > DefaultMaxSteps+2 {
		t.Errorf("stopped at step %d, want just past %d", steps, DefaultMaxSteps)
	}
	t.Logf("while true do end: %d steps in %v", steps, time.Since(start))
}

func TestStepCountsAreStable(t *testing.T) {
	// The cost model is part of the replicated behaviour: a change to it
	// changes where scripts stop, so it must be deliberate.
	for src, want := range map[string]int64{
		"return 1": 4,
		"local x = 0 for i = 1, 10 do x = x + i end return x": 69,
		redsyncDelete: 39,
	} {
		env := newFakeEnv()
		env.strs["lock"] = "v"
		if _, steps := stepsLim(src, []string{"lock"}, []string{"v"}, env, 0, DefaultLimits()); steps != want {
			t.Errorf("%q took %d steps, want %d", src, steps, want)
		}
	}
}

func TestCallLimit(t *testing.T) {
	env := newFakeEnv()
	start := time.Now()
	src := "for i = 1, 1000000 do redis.call('incr', 'n') end return 'done'"
	got := runLim(src, nil, nil, env, 0, DefaultLimits())
	wantReply(t, src, got, reply.Error(ErrCallLimit))
	if len(env.log) != DefaultMaxCalls || env.strs["n"] != "200000" {
		t.Errorf("ran %d commands, n = %s", len(env.log), env.strs["n"])
	}
	t.Logf("%d calls in %v", len(env.log), time.Since(start))
	// redis.pcall counts too, and catching does not help.
	env = newFakeEnv()
	src = "while true do pcall(redis.pcall, 'ping') end"
	wantReply(t, src, runLim(src, nil, nil, env, 0, Limits{MaxCalls: 10}), reply.Error(ErrCallLimit))
	if len(env.log) != 10 {
		t.Errorf("ran %d commands, want 10", len(env.log))
	}
}

func TestRecursionEndsInAnError(t *testing.T) {
	for _, src := range []string{
		"local function f() return 1 + f() end return f()",
		"local function f() pcall(f) error('x') end f()",
		"local t = setmetatable({}, {}) getmetatable(t).__index = function(t, k) return t[k] end return t.x",
		"local t = setmetatable({}, {}) getmetatable(t).__tostring = function(t) return tostring(t) end return tostring(t)",
		"local t = setmetatable({}, {}) getmetatable(t).__concat = function(a, b) return a .. b end return t .. 'x'",
		"local function f() return table.sort({3, 2, 1}, function(a, b) f() return a < b end) end f()",
		"local function f() return string.gsub('x', 'x', f) end f()",
	} {
		got := runLim(src, nil, nil, newFakeEnv(), 0, DefaultLimits())
		if got.Kind != reply.KindError {
			t.Errorf("%q = %v, want an error", src, got)
			continue
		}
		t.Logf("%q: %v", src, got)
	}
	src := "local function f() return 1 + f() end return f()"
	wantReply(t, src, run(t, src, nil, nil, nil), reply.Error("ERR user_script:1: stack overflow"+suffix(src, "1")))
}

// Things that would take time or memory far beyond their step count if
// they were not charged: each must end in the work-limit error. Uncharged,
// they would run for hours or exhaust memory, which the test's timeout
// catches; how long each takes is logged, not asserted (a timed assertion
// fails on a busy machine, not on a bug).
func TestResourceBombs(t *testing.T) {
	racetest.SkipUnderRace(t)
	for _, src := range []string{
		"return string.rep('x', 2^31 - 1)",
		"return string.rep(string.rep('x', 1000000), 1000)",
		"local s = 'x' while true do s = s .. s end",
		"local s = 'x' while true do s = s:rep(2) end",
		"local t = {} t[60000000] = 1",
		"local t = {} rawset(t, 60000000, 1)",
		"local t = {} table.insert(t, 60000000, 1)",
		"local t = {[60000000] = 1}",
		"local a, t = 1, {} a, t[60000000] = 2, 3",
		"local t = setmetatable({}, {__newindex = {}}) t[60000000] = 1",
		"for i = 1, 1e9 do local t = {} t[100000] = 1 end",
		"local t = {} t[2000000] = 1 t[2000000] = nil while true do local n = #t end",
		"local t = {} for i = 1, 100000 do t[i] = i end for i = 1, 99999 do t[i] = nil end while true do local k = next(t) end",
		"return string.find(string.rep('a', 5000), string.rep('a?', 100) .. string.rep('a', 100) .. 'b')",
		"return string.find(string.rep('a', 3000), '.-.-.-.-b')",
		"return string.find(string.rep('a', 1000000), '.*b')",
		"return string.gsub(string.rep('x', 100000), 'x', string.rep('y', 10000))",
		"return table.concat(setmetatable({}, {__index = function() return 'x' end}), '', 1, 2^30)",
		"local t = {} for i = 1, 1000 do t[i] = string.rep('x', 100000) end return table.concat(t)",
		"local s = string.rep('k', 1000000) local t = {} while true do t[s] = 1 end",
		"local a, b = string.rep('k', 1000000), string.rep('k', 1000000) while a == b do end",
		"while true do local x = tostring({}) end",
		"while true do pcall(error) end",
		"local t = {} for i = 1, 1e7 do t[i] = i end return t",
		"return string.format(string.rep('%99d', 100000), 1)",
	} {
		start := time.Now()
		got := runLim(src, nil, nil, newFakeEnv(), 0, DefaultLimits())
		d := time.Since(start)
		if got.Kind != reply.KindError {
			t.Errorf("%q = %.60v, want an error", src, got)
		}
		t.Logf("%5.2fs %.50q: %.70v", d.Seconds(), src, got)
	}
}

func TestSandbox(t *testing.T) {
	for _, name := range []string{"os", "io", "require", "loadstring", "load", "dofile", "loadfile",
		"debug", "package", "coroutine", "print", "module", "_GOPHER_LUA_VERSION", "channel"} {
		src := "return " + name
		want := reply.Error("ERR user_script:1: Script attempted to access nonexistent global variable '" + name + "'" + suffix(src, "1"))
		wantReply(t, src, run(t, src, nil, nil, nil), want)
		src = "return rawget(_G, '" + name + "') == nil"
		wantReply(t, src, run(t, src, nil, nil, nil), reply.Int(1))
	}
	for src, want := range map[string]reply.Value{
		"return string.dump": reply.Null(),
		"return type(string.format) .. type(table.sort) .. type(math.floor)":       reply.BulkString("functionfunctionfunction"),
		"return pcall(setfenv, tostring)":                                          reply.Null(),
		"return getmetatable('').__index":                                          reply.Error("ERR user_script:1: attempt to index a non-table object(boolean) with key '__index'" + suffix("return getmetatable('').__index", "1")),
		"return getmetatable(_G)":                                                  reply.Null(),
		"return getmetatable(string)":                                              reply.Null(),
		"return getfenv(0) == _G and getfenv(tostring) == _G and getfenv(1) == _G": reply.Int(1),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
}

func TestGlobalsProtection(t *testing.T) {
	for src, msg := range map[string]string{
		"x = 1":                            "ERR user_script:1: Attempt to modify a readonly table",
		"function f() end":                 "ERR user_script:1: Attempt to modify a readonly table",
		"local function f() y = 2 end f()": "ERR user_script:1: Attempt to modify a readonly table",
		"redis = nil":                      "ERR user_script:1: Attempt to modify a readonly table",
		"redis.call = nil":                 "ERR user_script:1: Attempt to modify a readonly table",
		"string.foo = 1":                   "ERR user_script:1: Attempt to modify a readonly table",
		"math.pi = 3":                      "ERR user_script:1: Attempt to modify a readonly table",
		"_G.pairs = nil":                   "ERR user_script:1: Attempt to modify a readonly table",
		"_G[KEYS] = 1":                     "ERR user_script:1: Attempt to modify a readonly table",
		"rawset(_G, 'g', 1)":               "ERR Attempt to modify a readonly table",
		"rawset(table, 'g', 1)":            "ERR Attempt to modify a readonly table",
		"setmetatable(_G, nil)":            "ERR Attempt to modify a readonly table",
		"table.insert(string, 1)":          "ERR Attempt to modify a readonly table",
		"return x":                         "ERR user_script:1: Script attempted to access nonexistent global variable 'x'",
		"local function f() return undefined_fn() end return f()": "ERR user_script:1: Script attempted to access nonexistent global variable 'undefined_fn'",
		"return _G[1]":   "ERR user_script:1: Script attempted to access nonexistent global variable '1'",
		"return _G[nil]": "ERR user_script:1: Second argument to luaProtectedTableError must be a string or number",
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), reply.Error(msg+suffix(src, "1")))
	}
	for src, want := range map[string]reply.Value{
		"return rawget(_G, 'undefined_global')":                         reply.Null(),
		"local ok, e = pcall(function() return nosuch end) return e":    reply.BulkString("user_script:1: Script attempted to access nonexistent global variable 'nosuch'"),
		"local n = 0 for k in pairs(_G) do n = n + 1 end return n > 20": reply.Int(1),
		"local t = {} rawset(t, 'k', 1) return t.k":                     reply.Int(1),
		"return #_G": reply.Int(0),
		"local s = string local up = s.upper return up('a')":                                  reply.BulkString("A"),
		"local r = {} for k in pairs(math) do r[#r + 1] = k end return table.concat(r, ' ')":  reply.BulkString("abs acos asin atan atan2 ceil cos cosh deg exp floor fmod frexp huge ldexp log log10 max min mod modf pi pow rad random randomseed sin sinh sqrt tan tanh"),
		"local r = {} for k in pairs(redis) do r[#r + 1] = k end return table.concat(r, ' ')": reply.BulkString("breakpoint call debug error_reply log pcall replicate_commands set_repl setresp sha1hex status_reply LOG_DEBUG LOG_NOTICE LOG_VERBOSE LOG_WARNING REDIS_VERSION REDIS_VERSION_NUM REPL_ALL REPL_AOF REPL_NONE REPL_REPLICA REPL_SLAVE"),
	} {
		wantReply(t, src, run(t, src, nil, nil, nil), want)
	}
}

// Nothing a script does survives into the next run (runners are pooled).
func TestIsolation(t *testing.T) {
	for _, src := range []string{
		"setfenv(0, {})",
		"setfenv(1, {}) x = 1",
		"KEYS[1] = 'changed' table.insert(ARGV, 'more')",
		"redis.setresp(3)",
		"math.randomseed(99)",
		"local t = {} setmetatable(t, {__gc = function() end})",
		"pcall(function() string.upper = nil end) pcall(rawset, string, 'upper', nil)",
		"error('x')",
		"while true do end",
		"local s = string.rep('x', 100) return tostring({}) .. tostring(tostring)",
	} {
		runLim(src, []string{"k"}, []string{"a"}, newFakeEnv(), 0, DefaultLimits())
		check := "return {x == nil and 1 or 0}"
		got := run(t, "return {KEYS[1], #ARGV, string.upper('a'), tostring({}), rawget(_G, 'x') == nil, redis.call('get', 'nokey') == false}",
			[]string{"k"}, []string{"a"}, nil)
		want := reply.Array(reply.BulkString("k"), reply.Int(1), reply.BulkString("A"), reply.BulkString("table: 0x00000001"), reply.Int(1), reply.Int(1))
		wantReply(t, "after "+src, got, want)
		_ = check
	}
}

func TestMathRandom(t *testing.T) {
	const src = "local r = {} for i = 1, 5 do r[i] = tostring(math.random()) end r[6] = math.random(10) r[7] = math.random(5, 6) return r"
	a := run(t, src, nil, nil, nil)
	b := run(t, src, nil, nil, nil)
	if !eq(a, b) {
		t.Errorf("same seed, different sequences: %v / %v", a, b)
	}
	c := runLim(src, nil, nil, newFakeEnv(), 12345, DefaultLimits())
	if eq(a, c) {
		t.Errorf("different seeds, same sequence: %v", a)
	}
	// Seed 0 is what Redis uses for every script: the same numbers.
	wantReply(t, "redis seed", run(t, "return tostring(math.random())", nil, nil, nil), reply.BulkString("0.17082803611217"))
	// math.randomseed restarts the sequence.
	wantReply(t, "reseed", run(t, "math.randomseed(7) local a = math.random(1000) math.randomseed(7) return a == math.random(1000)", nil, nil, nil), reply.Int(1))
	wantReply(t, "empty interval", run(t, "return math.random(0)", nil, nil, nil),
		reply.Error("ERR user_script:1: bad argument #1 to 'random' (interval is empty)"+suffix("return math.random(0)", "1")))
}

func TestDeterministicNames(t *testing.T) {
	src := "local t, f = {}, function() end return {tostring(t), tostring(f), tostring(t), tostring({})}"
	want := reply.Array(reply.BulkString("table: 0x00000001"), reply.BulkString("function: 0x00000002"),
		reply.BulkString("table: 0x00000001"), reply.BulkString("table: 0x00000003"))
	wantReply(t, src, run(t, src, nil, nil, nil), want)
	wantReply(t, src, run(t, src, nil, nil, nil), want)
	// An error message that gopher-lua writes with an address gets the same
	// names.
	src = "local t = {} local ok, e = pcall(function() local n = nil return n[t] end) return {e, tostring(t)}"
	got := run(t, src, nil, nil, nil)
	if got.Kind != reply.KindArray || !strings.Contains(got.Elems[0].Str, "table: 0x00000001") || got.Elems[1].Str != "table: 0x00000001" {
		t.Errorf("%q = %v", src, got)
	}
}

func TestEnvPanicPropagates(t *testing.T) {
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the Env's panic", p)
		}
	}()
	runLim("pcall(redis.call, 'x') return 1", nil, nil, panicEnv{}, 0, DefaultLimits())
	t.Error("Run returned")
}

type panicEnv struct{}

func (panicEnv) Call([]string) reply.Value      { panic("boom") }
func (panicEnv) ACLCheck([]string) (bool, bool) { panic("boom") }
