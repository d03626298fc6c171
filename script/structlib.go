package script

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library as Redis 7.0 ships it (deps/lua/src/lua_struct.c,
// Roberto Ierusalimschy's struct 0.2 for 64-bit Linux: long and size_t are
// 8 bytes, int 4, native order little-endian, largest alignment 8),
// rewritten for gopher-lua with its conversions made explicit: a number
// becomes an integer as x86-64's C casts do (a negative one through long,
// one past 2^64 or NaN as the unsigned cast gives), and integers of 9 to 32
// bytes behave as the C code's 64-bit arithmetic makes them. The format is
// read as a C string (up to a NUL). Work is a step per option of the
// format and per 16 bytes of data.

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

type structHeader struct {
	little bool
	align  int
}

func (r *runner) openStruct() *lua.LTable {
	return sortedFuncs(r.L, map[string]lua.LGFunction{
		"pack":   r.structPack,
		"unpack": r.structUnpack,
		"size":   r.structSize,
	})
}

// structFormat is the format argument as the C code reads it.
func (r *runner) structFormat(L *lua.LState, fname string) string {
	return cString(r.libCheckString(L, 1, fname))
}

// getnum reads the digits at fmt[*i], or answers df.
func (r *runner) structGetnum(L *lua.LState, f string, i *int, df int) int {
	if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
		return df
	}
	a := 0
	for *i < len(f) && '0' <= f[*i] && f[*i] <= '9' {
		d := int(f[*i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			r.raisef(L, "integral size overflow")
		}
		a = a*10 + d
		*i++
	}
	return a
}

func (r *runner) structOptSize(L *lua.LState, opt byte, f string, i *int) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return r.structGetnum(L, f, i, 1)
	case 'i', 'I':
		sz := r.structGetnum(L, f, i, 4)
		if sz > structMaxIntSize {
			r.raisef(L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// structToAlign is gettoalign: the padding before an item of size at len.
func structToAlign(length uint64, h *structHeader, opt byte, size int) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	s := uint64(size)
	return (s - (length & (s - 1))) & (s - 1)
}

func (r *runner) structControl(L *lua.LState, opt byte, f string, i *int, h *structHeader, fname string) {
	switch opt {
	case ' ':
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := r.structGetnum(L, f, i, structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			r.raisef(L, "alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		r.libArgError(L, 1, fname, "invalid format option '"+string([]byte{opt})+"'")
	}
}

// structUnsigned is the C code's conversion of a number to its 64-bit
// unsigned integer: (unsigned long)(long)n below zero, (unsigned long)n
// otherwise, with x86-64's results outside the range.
func structUnsigned(n float64) uint64 {
	switch {
	case n < 0:
		return uint64(toInt64(n))
	case n < 1<<63:
		return uint64(int64(n))
	case n < 1<<64:
		return uint64(n)
	case math.IsNaN(n):
		return 1 << 63
	}
	return 0
}

func (r *runner) structPack(L *lua.LState) int {
	f := r.structFormat(L, "pack")
	// The C code pushes a nil to mark where its buffer starts: an argument
	// missing right after the last is "got nil", not "got no value".
	L.Push(lua.LNil)
	h := structHeader{little: true, align: 1}
	arg := 2
	var b []byte
	total := uint64(0)
	for i := 0; i < len(f); {
		r.charge(L, 1) // an option
		opt := f[i]
		i++
		size := r.structOptSize(L, opt, f, &i)
		pad := structToAlign(total, &h, opt, size)
		total += pad
		b = append(b, make([]byte, pad)...)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := structUnsigned(r.libCheckNumber(L, arg, "pack"))
			arg++
			r.chargeBytes(L, size)
			out := make([]byte, size)
			for k := range size {
				pos := k
				if !h.little {
					pos = size - 1 - k
				}
				out[pos] = byte(v)
				v >>= 8 // past 8 bytes: zeros, as the C code's 64-bit shifts give
			}
			b = append(b, out...)
		case 'x':
			b = append(b, 0)
		case 'f':
			v := math.Float32bits(float32(r.libCheckNumber(L, arg, "pack")))
			arg++
			b = appendOrdered(b, uint64(v), 4, h.little)
		case 'd':
			v := math.Float64bits(r.libCheckNumber(L, arg, "pack"))
			arg++
			b = appendOrdered(b, v, 8, h.little)
		case 'c', 's':
			s := r.libCheckString(L, arg, "pack")
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				r.libArgError(L, arg, "pack", "string too short")
			}
			r.chargeBytes(L, size)
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
				size++
			}
		default:
			r.structControl(L, opt, f, &i, &h, "pack")
		}
		total += uint64(size)
	}
	L.Push(lua.LString(b))
	return 1
}

func appendOrdered(b []byte, v uint64, n int, little bool) []byte {
	for k := range n {
		shift := 8 * k
		if !little {
			shift = 8 * (n - 1 - k)
		}
		b = append(b, byte(v>>shift))
	}
	return b
}

func readOrdered(s string, n int, little bool) uint64 {
	var v uint64
	for k := range n {
		i := k
		if little {
			i = n - 1 - k
		}
		v = v<<8 | uint64(s[i])
	}
	return v
}

func (r *runner) structUnpack(L *lua.LState) int {
	f := r.structFormat(L, "unpack")
	data := r.libCheckString(L, 2, "unpack")
	ld := uint64(len(data))
	// pos is a size_t: a negative offset wraps and fails as too short.
	pos := uint64(r.libOptInteger(L, 3, "unpack", 1))
	if pos == 0 {
		r.libArgError(L, 3, "unpack", "offset must be 1 or greater")
	}
	pos--
	h := structHeader{little: true, align: 1}
	base := L.GetTop()
	var out []lua.LValue
	for i := 0; i < len(f); {
		r.charge(L, 1) // an option
		opt := f[i]
		i++
		size := uint64(r.structOptSize(L, opt, f, &i))
		pos += structToAlign(pos, &h, opt, int(size))
		if !(size <= ld && pos <= ld-size) {
			r.libArgError(L, 2, "unpack", "data string too short")
		}
		if base+len(out)+2 > luaMaxCStack {
			r.raisef(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := int(size)
			r.chargeBytes(L, n)
			var l uint64
			for k := range n {
				idx := k
				if h.little {
					idx = n - 1 - k
				}
				l = l<<8 | uint64(data[pos+uint64(idx)])
			}
			if opt >= 'a' { // signed
				mask := ^uint64(0) << ((uint(n)*8 - 1) & 63)
				if l&mask != 0 {
					l |= mask
				}
				out = append(out, lua.LNumber(float64(int64(l))))
			} else {
				out = append(out, lua.LNumber(float64(l)))
			}
		case 'x':
		case 'f':
			v := readOrdered(data[pos:pos+4], 4, h.little)
			out = append(out, lua.LNumber(float64(math.Float32frombits(uint32(v)))))
		case 'd':
			v := readOrdered(data[pos:pos+8], 8, h.little)
			out = append(out, lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				if len(out) == 0 {
					r.raisef(L, "format 'c0' needs a previous size")
				}
				prev, ok := toNumber(out[len(out)-1])
				if !ok {
					r.raisef(L, "format 'c0' needs a previous size")
				}
				size = structUnsigned(prev) // (size_t)lua_Number
				out = out[:len(out)-1]
				if !(size <= ld && pos <= ld-size) {
					r.libArgError(L, 2, "unpack", "data string too short")
				}
			}
			r.chargeBytes(L, int(size))
			out = append(out, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				r.raisef(L, "unfinished string in data")
			}
			r.chargeBytes(L, e)
			size = uint64(e) + 1
			out = append(out, lua.LString(data[pos:pos+uint64(e)]))
		default:
			r.structControl(L, opt, f, &i, &h, "unpack")
		}
		pos += size
	}
	for _, v := range out {
		L.Push(v)
	}
	L.Push(lua.LNumber(float64(pos + 1)))
	return len(out) + 1
}

func (r *runner) structSize(L *lua.LState) int {
	f := r.structFormat(L, "size")
	h := structHeader{little: true, align: 1}
	pos := uint64(0)
	for i := 0; i < len(f); {
		r.charge(L, 1) // an option
		opt := f[i]
		i++
		size := r.structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			r.libArgError(L, 1, "size", "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			r.libArgError(L, 1, "size", "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			r.structControl(L, opt, f, &i, &h, "size")
		}
		pos += uint64(size)
	}
	L.Push(lua.LNumber(float64(pos)))
	return 1
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
