package script

import (
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// setup builds the sandbox: the globals a Redis script sees, each table
// filled in a fixed (sorted) order so that pairs() iterates identically on
// every replica (gopher-lua registers its libraries from Go maps, whose
// order is random, so its tables are not used as they are).
func (r *runner) setup() {
	L := r.L
	L.Push(L.NewFunction(lua.OpenBase))
	L.Push(lua.LString(""))
	L.Call(1, 0)
	L.Push(L.NewFunction(lua.OpenMath))
	L.Push(lua.LString(lua.MathLibName))
	L.Call(1, 0)
	base := L.G.Global
	gmath := base.RawGetString(lua.MathLibName).(*lua.LTable)

	fn := func(f lua.LGFunction) lua.LValue { return L.NewFunction(f) }
	next := fn(r.next)
	globals := map[string]lua.LValue{
		"_VERSION":       lua.LString("Lua 5.1"),
		"collectgarbage": fn(r.collectgarbage),
		"error":          fn(r.luaError),
		"gcinfo":         fn(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }),
		"next":           next,
		"pairs": fn(func(L *lua.LState) int {
			checkTable(L, 1, "pairs")
			L.Push(next)
			L.Push(L.Get(1))
			L.Push(lua.LNil)
			return 3
		}),
		"pcall":        fn(r.pcall),
		"rawget":       fn(r.rawget),
		"rawset":       fn(r.rawset),
		"setmetatable": fn(r.setmetatable),
		"tostring": fn(func(L *lua.LState) int {
			checkAny(L, 1, "tostring")
			L.Push(lua.LString(r.tostring(L, L.Get(1))))
			return 1
		}),
		"xpcall": fn(r.xpcall),
	}
	globals["tonumber"] = fn(r.tonumber)
	globals["unpack"] = fn(r.unpack)
	globals["assert"] = fn(func(L *lua.LState) int {
		checkAny(L, 1, "assert")
		if !lua.LVAsBool(L.Get(1)) {
			L.RaiseError("%s", optString(L, 2, "assert", "assertion failed!"))
		}
		return L.GetTop()
	})
	// gopher-lua's own base functions that behave as Lua 5.1's.
	for _, name := range []string{"getfenv", "getmetatable", "ipairs", "newproxy",
		"rawequal", "select", "setfenv", "type"} {
		globals[name] = base.RawGetString(name)
	}

	mathFns := map[string]lua.LValue{
		"huge":       lua.LNumber(math.Inf(1)),
		"random":     fn(r.mathRandom),
		"randomseed": fn(r.mathRandomseed),
	}
	for _, name := range []string{"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh",
		"deg", "exp", "floor", "fmod", "frexp", "ldexp", "log", "log10", "max", "min", "mod",
		"modf", "pi", "pow", "rad", "sin", "sinh", "sqrt", "tan", "tanh"} {
		mathFns[name] = gmath.RawGetString(name)
	}

	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	str := r.openString()
	r.strMT = L.CreateTable(0, 2)
	r.strMT.RawSetString("__index", str)
	r.strMT.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(lua.LString(""), r.strMT)

	libs := []*lua.LTable{sortedTable(L, mathFns), str, r.openTable(), r.openRedis()}
	names := []string{"math", "string", "table", "redis"}
	if r.libs {
		// Redis 7's libraries (cluster version 3 on). cjson.null is
		// Redis's NULL light userdata: one value, equal only to itself.
		r.jsonNull = L.NewUserData()
		r.resetLibs()
		libs = append(libs, r.openCjson(&r.json), r.openCmsgpack(), r.openBit(), r.openStruct())
		names = append(names, "cjson", "cmsgpack", "bit", "struct")
	}
	for i, name := range names {
		globals[name] = r.newProxy(libs[i], readonly)
	}
	// KEYS and ARGV are set for each run; they exist from the start so
	// that their place in the table (and in pairs(_G)) never changes.
	r.emptyKeys, r.emptyArgv = L.CreateTable(0, 0), L.CreateTable(0, 0)
	globals["KEYS"], globals["ARGV"] = r.emptyKeys, r.emptyArgv

	g := sortedTable(L, globals)
	gmt := L.CreateTable(0, 1)
	missing := L.NewFunction(missingGlobal)
	gmt.RawSetString("__index", missing)
	g.Metatable = gmt
	r.realG = g
	r.proxyG = r.newProxy(g, readonly)
	if r.libs {
		// Redis 7's _G has a metatable (its missing-global error), which
		// getmetatable returns, read-only as _G is.
		r.proxyG.Metatable.(*lua.LTable).RawSetString("__metatable", r.newProxy(gmt, readonly))
	}
	g.RawSetString("_G", r.proxyG)
	L.G.Global = r.proxyG
	L.Env = r.proxyG

	r.helpers = []lua.LValue{fn(r.step), fn(r.cat), fn(r.set), fn(r.key),
		fn(r.get), fn(r.rel), fn(r.length), fn(r.num)}
	r.handler = L.NewFunction(r.errHandler)
	r.transparent = map[*lua.LFunction]bool{readonly: true, missing: true}
	for _, h := range r.helpers {
		r.transparent[h.(*lua.LFunction)] = true
	}

	r.snap(g, gmt, r.strMT, r.emptyKeys, r.emptyArgv)
	r.snap(libs...)
	r.proxyMT = make(map[*lua.LTable]lua.LValue, len(r.proxies))
	for p := range r.proxies {
		r.proxyMT[p] = p.Metatable
		r.snap(p, p.Metatable.(*lua.LTable))
	}
}

// sortedTable makes a table of the entries, inserted in key order.
func sortedTable(L *lua.LState, m map[string]lua.LValue) *lua.LTable {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	t := L.CreateTable(0, len(m))
	for _, k := range names {
		t.RawSetString(k, m[k])
	}
	return t
}

func sortedFuncs(L *lua.LState, m map[string]lua.LGFunction) *lua.LTable {
	vals := make(map[string]lua.LValue, len(m))
	for k, f := range m {
		vals[k] = L.NewFunction(f)
	}
	return sortedTable(L, vals)
}

// newProxy returns an empty table that reads through to real and refuses
// writes, standing in for Redis's read-only tables (gopher-lua has none).
// rawset, setmetatable, next/pairs and rawget see through it too. Its
// metatable is hidden (getmetatable answers false), so the table behind it
// cannot be reached, let alone changed.
func (r *runner) newProxy(real *lua.LTable, readonly *lua.LFunction) *lua.LTable {
	p := r.L.CreateTable(0, 0)
	mt := r.L.CreateTable(0, 3)
	mt.RawSetString("__index", real)
	mt.RawSetString("__newindex", readonly)
	mt.RawSetString("__metatable", lua.LFalse)
	p.Metatable = mt
	r.proxies[p] = real
	return p
}

func (r *runner) unproxy(t *lua.LTable) *lua.LTable {
	if real, ok := r.proxies[t]; ok {
		return real
	}
	return t
}

func missingGlobal(L *lua.LState) int {
	k := L.Get(2)
	if !isStrNum(k) {
		L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", luaString(k))
	return 0
}

// Argument checks with Lua 5.1's messages ("bad argument #1 to 'sub'
// (string expected, got nil)").

func argError(L *lua.LState, n int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fname, msg)
}

func typeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

func typeError(L *lua.LState, n int, fname, expected string) {
	argError(L, n, fname, expected+" expected, got "+typeName(L, n))
}

func checkAny(L *lua.LState, n int, fname string) {
	if n > L.GetTop() {
		argError(L, n, fname, "value expected")
	}
}

func checkTable(L *lua.LState, n int, fname string) *lua.LTable {
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		typeError(L, n, fname, "table")
	}
	return t
}

// maxNumberLen bounds the strings read as numbers: a longer string is not
// a number (Lua would read "000...1" of any length; no script needs it, and
// the bound keeps every conversion cheap).
const maxNumberLen = 128

// str2number is Lua 5.1's luaO_str2d: strtod (with hex integers), blanks
// around allowed.
func str2number(s string) (float64, bool) {
	if len(s) > maxNumberLen {
		return 0, false
	}
	s = strings.Trim(s, " \t\n\v\f\r")
	if s == "" || strings.ContainsAny(s, "_") {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && !strings.ContainsAny(body, "pP.") {
		u, err := strconv.ParseUint(body[2:], 16, 64)
		if err != nil {
			return 0, false
		}
		f := float64(u)
		if s[0] == '-' {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// toNumber is lua_tonumber: a number, or a string that reads as one.
func toNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return str2number(string(x))
	}
	return 0, false
}

func checkNumber(L *lua.LState, n int, fname string) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		typeError(L, n, fname, "number")
	}
	return f
}

func checkInteger(L *lua.LState, n int, fname string) int64 {
	return toInt64(checkNumber(L, n, fname))
}

func optInteger(L *lua.LState, n int, fname string, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInteger(L, n, fname)
}

func checkInt(L *lua.LState, n int, fname string) int {
	return toInt(checkNumber(L, n, fname))
}

func optInt(L *lua.LState, n int, fname string, def int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInt(L, n, fname)
}

func checkString(L *lua.LState, n int, fname string) string {
	v := L.Get(n)
	if !isStrNum(v) {
		typeError(L, n, fname, "string")
	}
	return luaString(v)
}

func optString(L *lua.LState, n int, fname, def string) string {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkString(L, n, fname)
}

// Base library replacements.

// luaError is Lua 5.1's error: a string or number message gets the position
// of the function at the given level.
func (r *runner) luaError(L *lua.LState) int {
	level := optInt(L, 2, "error", 1)
	obj := L.Get(1)
	if isStrNum(obj) && level > 0 {
		obj = lua.LString(r.where(L, level) + luaString(obj))
	}
	L.Error(obj, 0)
	return 0
}

// pcall is Redis's pcall: an error table with an err field is returned as
// that string (Redis 7 raises tables; scripts written for Redis 6 expect
// strings).
func (r *runner) pcall(L *lua.LState) int {
	checkAny(L, 1, "pcall")
	if err := L.PCall(L.GetTop()-1, lua.MultRet, nil); err != nil {
		obj := r.caught(L, err)
		if t, ok := obj.(*lua.LTable); ok {
			if e := L.GetField(t, "err"); isStrNum(e) {
				obj = e
			}
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

func (r *runner) xpcall(L *lua.LState) int {
	checkAny(L, 2, "xpcall")
	f, h := L.Get(1), L.Get(2)
	L.SetTop(0)
	L.Push(f)
	hf, _ := h.(*lua.LFunction)
	if err := L.PCall(0, lua.MultRet, hf); err != nil {
		obj := r.caught(L, err)
		if hf == nil {
			obj = lua.LString("error in error handling")
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// caught is the error object of a failed protected call. A spent limit is
// raised again at once: a script cannot get past it.
func (r *runner) caught(L *lua.LState, err error) lua.LValue {
	r.charge(L, errorCost)
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return lua.LString(err.Error())
	}
	if s, ok := ae.Object.(lua.LString); ok {
		return lua.LString(r.scrub(string(s)))
	}
	return ae.Object
}

// tonumber is Lua 5.1's: base 10 reads any number (str2number), another
// base reads an unsigned integer in that base (strtoul).
func (r *runner) tonumber(L *lua.LState) int {
	base := optInt(L, 2, "tonumber", 10)
	if base == 10 {
		checkAny(L, 1, "tonumber")
		if f, ok := toNumber(L.Get(1)); ok {
			L.Push(lua.LNumber(f))
			return 1
		}
		L.Push(lua.LNil)
		return 1
	}
	s := checkString(L, 1, "tonumber")
	if base < 2 || base > 36 {
		argError(L, 2, "tonumber", "base out of range")
	}
	if f, ok := strtoul(s, base); ok {
		L.Push(lua.LNumber(f))
		return 1
	}
	L.Push(lua.LNil)
	return 1
}

// strtoul reads s as C's strtoul(s, &end, base) followed by only blanks.
func strtoul(s string, base int) (float64, bool) {
	if len(s) > maxNumberLen {
		return 0, false
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if base == 16 && len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	var n uint64
	digits, overflow := 0, false
	for ; digits < len(s); digits++ {
		c := s[digits]
		var d int
		switch {
		case '0' <= c && c <= '9':
			d = int(c - '0')
		case 'a' <= c && c <= 'z':
			d = int(c-'a') + 10
		case 'A' <= c && c <= 'Z':
			d = int(c-'A') + 10
		default:
			d = 99
		}
		if d >= base {
			break
		}
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			overflow = true
		}
		n = n*uint64(base) + uint64(d)
	}
	if digits == 0 || strings.Trim(s[digits:], " \t\n\v\f\r") != "" {
		return 0, false
	}
	if overflow {
		n = math.MaxUint64
	} else if neg {
		n = -n
	}
	return float64(n), true
}

// unpack is Lua 5.1's, with its limit on the number of results.
func (r *runner) unpack(L *lua.LState) int {
	t := checkTable(L, 1, "unpack")
	i := optInt(L, 2, "unpack", 1)
	var e int
	if L.Get(3) == lua.LNil {
		e = r.tableLen(L, t)
	} else {
		e = checkInt(L, 3, "unpack")
	}
	if i > e {
		return 0
	}
	n := int64(e) - int64(i) + 1
	if n <= 0 || n+int64(L.GetTop()) > luaMaxCStack {
		L.RaiseError("too many results to unpack")
	}
	r.chargeBytes(L, int(n))
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(i))
	}
	return int(n)
}

func (r *runner) rawget(L *lua.LState) int {
	t := checkTable(L, 1, "rawget")
	checkAny(L, 2, "rawget")
	L.Push(r.unproxy(t).RawGet(L.Get(2)))
	return 1
}

func (r *runner) rawset(L *lua.LState) int {
	t := checkTable(L, 1, "rawset")
	checkAny(L, 2, "rawset")
	checkAny(L, 3, "rawset")
	if _, ok := r.proxies[t]; ok {
		// Raised inside a C function in Redis: no position.
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
	k := L.Get(2)
	r.growCharge(L, t, k, -1)
	L.RawSet(t, k, L.Get(3))
	L.Push(t)
	return 1
}

// next is gopher-lua's next, charging for the empty slots and deleted keys
// it skips (without the charge, emptying a table one next() at a time
// would be quadratic).
func (r *runner) next(L *lua.LState) int {
	t := r.unproxy(checkTable(L, 1, "next"))
	key := L.Get(2)
	alen := arrayLen(t)
	from := iterPos(t, key, alen)
	k, v := t.Next(key)
	to := iterEnd(t, alen)
	if k != lua.LNil {
		to = iterPos(t, k, alen)
	}
	if skipped := to - from - 1; skipped > 0 {
		r.charge(L, int64(skipped))
	}
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func (r *runner) setmetatable(L *lua.LState) int {
	t := checkTable(L, 1, "setmetatable")
	mt := L.Get(2)
	if mt.Type() != lua.LTNil && mt.Type() != lua.LTTable {
		argError(L, 2, "setmetatable", "nil or table expected")
	}
	if _, ok := r.proxies[t]; ok {
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
	if L.GetMetaField(t, "__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	t.Metatable = mt
	L.Push(t)
	return 1
}

// collectgarbage does nothing: collecting is the Go runtime's business and
// the memory in use is not the same on every replica.
func (r *runner) collectgarbage(L *lua.LState) int {
	opt := optString(L, 1, "collectgarbage", "collect")
	switch opt {
	case "stop", "restart", "collect", "count", "setpause", "setstepmul":
		L.Push(lua.LNumber(0))
	case "step":
		L.Push(lua.LFalse)
	default:
		argError(L, 1, "collectgarbage", "invalid option '"+opt+"'")
	}
	return 1
}

// math.random and math.randomseed as Redis defines them (redis_math_random:
// Lua's own code over rand48).
func (r *runner) mathRandom(L *lua.LState) int {
	const max = 2147483647
	f := float64(int64(r.rng.next())%max) / max
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(f))
	case 1:
		u := checkInt(L, 1, "random")
		if u < 1 {
			argError(L, 1, "random", "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
	case 2:
		l := checkInt(L, 1, "random")
		u := checkInt(L, 2, "random")
		if l > u {
			argError(L, 2, "random", "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(f*(float64(u)-float64(l)+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (r *runner) mathRandomseed(L *lua.LState) int {
	r.rng.seed(int64(int32(checkInt(L, 1, "randomseed"))))
	return 0
}

// meter charges one step per bytesPerStep elementary operations.
type meter struct {
	r *runner
	L *lua.LState
	n int
}

func (m *meter) tick() {
	m.n++
	if m.n >= bytesPerStep {
		m.n = 0
		m.r.charge(m.L, 1)
	}
}
