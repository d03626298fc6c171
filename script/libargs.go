package script

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Errors and argument checks of Redis 7's libraries (cjson, cmsgpack, bit,
// struct). They are luaL_error and luaL_check* as the C libraries call
// them: the message gets the position of the calling function only when
// that is a Lua function (luaL_where(L, 1)), so pcall(cjson.decode, '{')
// reports no position, as in Redis. (The older libraries keep gopher-lua's
// positions, which every release before had.)

func (r *runner) raisef(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(r.where(L, 1)+fmt.Sprintf(format, args...)), 0)
}

func (r *runner) libArgError(L *lua.LState, n int, fname, msg string) {
	r.raisef(L, "bad argument #%d to '%s' (%s)", n, fname, msg)
}

func (r *runner) libTypeError(L *lua.LState, n int, fname, expected string) {
	r.libArgError(L, n, fname, expected+" expected, got "+typeName(L, n))
}

func (r *runner) libCheckString(L *lua.LState, n int, fname string) string {
	v := L.Get(n)
	if !isStrNum(v) {
		r.libTypeError(L, n, fname, "string")
	}
	return luaString(v)
}

func (r *runner) libCheckNumber(L *lua.LState, n int, fname string) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		r.libTypeError(L, n, fname, "number")
	}
	return f
}

// libCheckInt is luaL_checkint: (int)(lua_Integer)d.
func (r *runner) libCheckInt(L *lua.LState, n int, fname string) int {
	return toInt(r.libCheckNumber(L, n, fname))
}

// libCheckInteger is luaL_checkinteger: (lua_Integer)d.
func (r *runner) libCheckInteger(L *lua.LState, n int, fname string) int64 {
	return toInt64(r.libCheckNumber(L, n, fname))
}

func (r *runner) libOptInteger(L *lua.LState, n int, fname string, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return r.libCheckInteger(L, n, fname)
}
