package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The string library, ported from Lua 5.1's lstrlib.c rather than taken
// from gopher-lua, for three reasons: Redis's semantics (C-locale case
// mapping, "%.14g" numbers, C printf formats, Lua 5.1 patterns), cost
// (building and matching are charged as they go, so string.rep, gsub and
// format cannot allocate without bound and a pattern cannot backtrack
// forever), and safety (gopher-lua's matcher recurses once per subject
// character; this one, like Lua's, recurses once per pattern item, at most
// maxMatchDepth deep).

const (
	maxCaptures   = 32
	capUnfinished = -1
	capPosition   = -2
	maxMatchDepth = 200
	// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: how many values a C
	// function may push (string.byte of a long slice fails beyond it).
	luaMaxCStack = 8000
	specials     = "^$*+?.([%-"
)

func (r *runner) openString() *lua.LTable {
	return sortedFuncs(r.L, map[string]lua.LGFunction{
		"byte":    r.strByte,
		"char":    r.strChar,
		"find":    func(L *lua.LState) int { return r.strFind(L, true) },
		"format":  r.strFormat,
		"gfind":   r.strGmatch,
		"gmatch":  r.strGmatch,
		"gsub":    r.strGsub,
		"len":     func(L *lua.LState) int { L.Push(lua.LNumber(len(checkString(L, 1, "len")))); return 1 },
		"lower":   func(L *lua.LState) int { return r.strMap(L, "lower", toLower) },
		"match":   func(L *lua.LState) int { return r.strFind(L, false) },
		"rep":     r.strRep,
		"reverse": r.strReverse,
		"sub":     r.strSub,
		"upper":   func(L *lua.LState) int { return r.strMap(L, "upper", toUpper) },
	})
}

// posrelat makes a negative position count from the end.
func posrelat(pos, n int64) int64 {
	if pos < 0 {
		pos += n + 1
	}
	if pos >= 0 {
		return pos
	}
	return 0
}

func (r *runner) strSub(L *lua.LState) int {
	s := checkString(L, 1, "sub")
	l := int64(len(s))
	start := posrelat(checkInteger(L, 2, "sub"), l)
	end := posrelat(optInteger(L, 3, "sub", -1), l)
	if start < 1 {
		start = 1
	}
	if end > l {
		end = l
	}
	if start <= end {
		L.Push(lua.LString(s[start-1 : end]))
	} else {
		L.Push(lua.LString(""))
	}
	return 1
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func toUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// strMap is lower/upper: byte by byte, in the C locale.
func (r *runner) strMap(L *lua.LState, fname string, f func(byte) byte) int {
	s := checkString(L, 1, fname)
	r.chargeBytes(L, len(s))
	b := []byte(s)
	for i, c := range b {
		b[i] = f(c)
	}
	L.Push(lua.LString(b))
	return 1
}

func (r *runner) strReverse(L *lua.LState) int {
	s := checkString(L, 1, "reverse")
	r.chargeBytes(L, len(s))
	b := make([]byte, len(s))
	for i := range b {
		b[i] = s[len(s)-1-i]
	}
	L.Push(lua.LString(b))
	return 1
}

func (r *runner) strRep(L *lua.LState) int {
	s := checkString(L, 1, "rep")
	n := checkInt(L, 2, "rep")
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	// Charged before it is built: a budget can never be overdrawn by a
	// single huge allocation.
	r.chargeBytes(L, len(s)*n)
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

func (r *runner) strByte(L *lua.LState) int {
	s := checkString(L, 1, "byte")
	l := int64(len(s))
	posi := posrelat(optInteger(L, 2, "byte", 1), l)
	pose := posrelat(optInteger(L, 3, "byte", posi), l)
	if posi <= 0 {
		posi = 1
	}
	if pose > l {
		pose = l
	}
	if posi > pose {
		return 0
	}
	n := pose - posi + 1
	if n+int64(L.GetTop()) > luaMaxCStack {
		L.RaiseError("stack overflow (string slice too long)")
	}
	r.chargeBytes(L, int(n))
	for i := posi; i <= pose; i++ {
		L.Push(lua.LNumber(s[i-1]))
	}
	return int(n)
}

func (r *runner) strChar(L *lua.LState) int {
	n := L.GetTop()
	b := make([]byte, n)
	for i := 1; i <= n; i++ {
		c := checkInt(L, i, "char")
		if c < 0 || c > 255 {
			argError(L, i, "char", "invalid value")
		}
		b[i-1] = byte(c)
	}
	r.chargeBytes(L, n)
	L.Push(lua.LString(b))
	return 1
}
