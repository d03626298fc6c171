package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library as Redis 7.0 ships it (deps/lua/src/lua_bit.c, LuaBitOp
// 1.0.2), rewritten for gopher-lua. Numbers become 32-bit integers as
// LuaBitOp does it, by adding 2^52+2^51 and keeping the low 32 bits of the
// double (so 2^32+1 is 1 and 1.5 rounds to even), and results are signed.
// A NaN keeps the low bits of its own payload, as x86-64's addition does,
// so that the result does not depend on the machine.

// bitArg is LuaBitOp's barg: lua_tonumber of argument i (0 for what is not
// a number), as a 32-bit integer; a non-number that converts to 0 is an
// argument error.
func (r *runner) bitArg(L *lua.LState, i int, fname string) uint32 {
	f, ok := toNumber(L.Get(i))
	var b uint32
	if math.IsNaN(f) {
		b = uint32(math.Float64bits(f))
	} else {
		b = uint32(math.Float64bits(f + 6755399441055744.0))
	}
	if b == 0 && !ok {
		r.libTypeError(L, i, fname, "number")
	}
	return b
}

func bitRet(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func (r *runner) openBit() *lua.LTable {
	fold := func(name string, op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := r.bitArg(L, 1, name)
			n := L.GetTop()
			r.chargeBytes(L, n)
			for i := n; i > 1; i-- {
				b = op(b, r.bitArg(L, i, name))
			}
			return bitRet(L, b)
		}
	}
	shift := func(name string, op func(b, n uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := r.bitArg(L, 1, name)
			return bitRet(L, op(b, r.bitArg(L, 2, name)&31))
		}
	}
	return sortedFuncs(r.L, map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return bitRet(L, r.bitArg(L, 1, "tobit")) },
		"bnot":  func(L *lua.LState) int { return bitRet(L, ^r.bitArg(L, 1, "bnot")) },
		"band":  fold("band", func(a, b uint32) uint32 { return a & b }),
		"bor":   fold("bor", func(a, b uint32) uint32 { return a | b }),
		"bxor":  fold("bxor", func(a, b uint32) uint32 { return a ^ b }),
		// A shift count is taken mod 32; rotating by 0 is the identity
		// (the C code's b >> 32 is b on x86, and 0 here: the same result).
		"lshift":  shift("lshift", func(b, n uint32) uint32 { return b << n }),
		"rshift":  shift("rshift", func(b, n uint32) uint32 { return b >> n }),
		"arshift": shift("arshift", func(b, n uint32) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift("rol", func(b, n uint32) uint32 { return b<<n | b>>(32-n) }),
		"ror":     shift("ror", func(b, n uint32) uint32 { return b<<(32-n) | b>>n }),
		"bswap": func(L *lua.LState) int {
			b := r.bitArg(L, 1, "bswap")
			return bitRet(L, b>>24|b>>8&0xff00|(b&0xff00)<<8|b<<24)
		},
		"tohex": func(L *lua.LState) int {
			b := r.bitArg(L, 1, "tohex")
			n := int32(8)
			if L.GetTop() >= 2 {
				n = int32(r.bitArg(L, 2, "tohex"))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			// -INT_MIN overflows; the compiler Redis is built with takes
			// the negation as positive, so it becomes 8 too.
			if n > 8 || n < 0 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[b&15]
				b >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	})
}
