package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library as Redis 7.0 ships it (deps/lua/src/lua_cmsgpack.c,
// lua-cmsgpack 0.4.0), rewritten for gopher-lua from its behaviour: the
// same encodings (the smallest integer form, float 32 when a double fits
// it exactly, str8/16/32, tables as arrays when their keys are exactly
// 1..n), tables nested deeper than 16 packed as nil, the same error texts,
// and the limits Redis's Lua stack puts on unpacking (8000 slots: about
// 4000 nested arrays, 7999 values at once). As in cjson.go, a map's keys
// come in fenced's table order, not Lua 5.1's hash order.
//
// Nothing is allocated from a count read in the input before the data is
// there: a header that promises 2^32 elements costs nothing until they
// come. Each value packed or unpacked costs a step, each key counted one
// per 16, and the bytes a step per 16.

const msgpackMaxNesting = 16

func (r *runner) openCmsgpack() *lua.LTable {
	L := r.L
	vals := map[string]lua.LValue{
		"pack":         L.NewFunction(r.mpPack),
		"unpack":       L.NewFunction(func(L *lua.LState) int { return r.mpUnpackFull(L, 0, 0, "unpack") }),
		"unpack_one":   L.NewFunction(r.mpUnpackOne),
		"unpack_limit": L.NewFunction(r.mpUnpackLimit),
		"_NAME":        lua.LString("cmsgpack"),
		"_VERSION":     lua.LString("lua-cmsgpack 0.4.0"),
		"_COPYRIGHT":   lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"),
		"_DESCRIPTION": lua.LString("MessagePack C implementation for Lua"),
	}
	return sortedTable(L, vals)
}

type mpEncoder struct {
	r   *runner
	L   *lua.LState
	buf []byte
	m   meter
}

func (r *runner) mpPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		r.libArgError(L, 0, "pack", "MessagePack pack needs input.")
	}
	if n+n > luaMaxCStack {
		r.libArgError(L, 0, "pack", "Too many arguments for MessagePack pack.")
	}
	e := &mpEncoder{r: r, L: L, m: meter{r: r, L: L}}
	for i := 1; i <= n; i++ {
		start := len(e.buf)
		e.value(L.Get(i), 0)
		r.chargeBytes(L, len(e.buf)-start)
	}
	L.Push(lua.LString(e.buf))
	return 1
}

func (e *mpEncoder) value(v lua.LValue, level int) {
	e.r.charge(e.L, 1)
	switch x := v.(type) {
	case lua.LString:
		e.r.chargeBytes(e.L, len(x)) // before it is copied
		e.bytes(string(x))
	case lua.LBool:
		if x {
			e.buf = append(e.buf, 0xc3)
		} else {
			e.buf = append(e.buf, 0xc2)
		}
	case lua.LNumber:
		e.number(float64(x))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			e.buf = append(e.buf, 0xc0)
			return
		}
		t := e.r.unproxy(x)
		if n, ok := e.isArray(t); ok {
			e.header(n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				e.value(t.RawGetInt(i), level+1)
			}
			return
		}
		n := 0
		for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
			e.m.tick()
			n++
		}
		e.header(n, 0x80, 0xde, 0xdf)
		for k, val := t.Next(lua.LNil); k != lua.LNil; k, val = t.Next(k) {
			e.value(k, level+1)
			e.value(val, level+1)
		}
	default:
		e.buf = append(e.buf, 0xc0)
	}
}

// isArray is table_is_an_array: every key a positive integer that fits a C
// int, and as many keys as the largest (so they are exactly 1..n).
func (e *mpEncoder) isArray(t *lua.LTable) (int, bool) {
	count, max := 0, 0.0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		e.m.tick()
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || f >= 1<<31 || f != math.Trunc(f) {
			return 0, false
		}
		max = math.Max(max, f)
		count++
	}
	return count, max == float64(count)
}

func (e *mpEncoder) header(n int, fix, b16, b32 byte) {
	switch {
	case n <= 15:
		e.buf = append(e.buf, fix|byte(n))
	case n <= 0xffff:
		e.buf = append(e.buf, b16, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, b32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (e *mpEncoder) bytes(s string) {
	n := len(s)
	switch {
	case n < 32:
		e.buf = append(e.buf, 0xa0|byte(n))
	case n <= 0xff:
		e.buf = append(e.buf, 0xd9, byte(n))
	case n <= 0xffff:
		e.buf = append(e.buf, 0xda, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	e.buf = append(e.buf, s...)
}

// number is mp_encode_lua_number: an integer when the double is exactly an
// int64, else a float 32 when it survives the round trip, else a double.
func (e *mpEncoder) number(f float64) {
	if !math.IsInf(f, 0) && !math.IsNaN(f) && f >= -(1<<63) && f < 1<<63 && float64(int64(f)) == f {
		e.integer(int64(f))
		return
	}
	// float32(f) of a finite f beyond float32's range is not a round trip
	// whatever the conversion gives: decided without it.
	if math.IsInf(f, 0) || !math.IsNaN(f) && math.Abs(f) <= math.MaxFloat32 && float64(float32(f)) == f {
		e.buf = append(e.buf, 0xca)
		e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(float32(f)))
		return
	}
	e.buf = append(e.buf, 0xcb)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}

func (e *mpEncoder) integer(n int64) {
	b := e.buf
	switch {
	case n >= 0 && n <= 127:
		b = append(b, byte(n))
	case n >= 0 && n <= 0xff:
		b = append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		b = append(b, 0xcd, byte(n>>8), byte(n))
	case n >= 0 && n <= 0xffffffff:
		b = append(b, 0xce)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	case n >= 0:
		b = append(b, 0xcf)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	case n >= -32:
		b = append(b, byte(int8(n)))
	case n >= -128:
		b = append(b, 0xd0, byte(n))
	case n >= -32768:
		b = append(b, 0xd1, byte(n>>8), byte(n))
	case n >= -(1 << 31):
		b = append(b, 0xd2)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0xd3)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	e.buf = b
}

// Unpacking.

type mpErr uint8

const (
	mpOK mpErr = iota
	mpEOF
	mpBadFmt
)

type mpDecoder struct {
	r    *runner
	L    *lua.LState
	data string
	pos  int
	err  mpErr
	m    meter
}

func (d *mpDecoder) need(n uint64) bool {
	if uint64(len(d.data)-d.pos) < n {
		d.err = mpEOF
		return false
	}
	return true
}

// checkStack is luaL_checkstack on Redis's unpacker: stack slots in use,
// one more wanted.
func (d *mpDecoder) checkStack(stack int, msg string) {
	if stack+1 > luaMaxCStack {
		d.r.raisef(d.L, "stack overflow (%s)", msg)
	}
}

func (d *mpDecoder) u(i, n int) uint64 {
	var v uint64
	for k := range n {
		v = v<<8 | uint64(d.data[d.pos+i+k])
	}
	return v
}

// value decodes one value; stack is the slots Redis's unpacker holds. On
// d.err it returns nil and the caller stops.
func (d *mpDecoder) value(stack int) lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack(stack, "too many return values at once; use unpack_one or unpack_limit instead.")
	d.r.charge(d.L, 1)
	c := d.data[d.pos]
	num := func(size int, f float64) lua.LValue {
		if !d.need(uint64(size)) {
			return lua.LNil
		}
		d.pos += size
		return lua.LNumber(f)
	}
	str := func(hdr int, n uint64) lua.LValue {
		if !d.need(uint64(hdr) + n) {
			return lua.LNil
		}
		d.r.chargeBytes(d.L, int(n))
		s := d.data[d.pos+hdr : d.pos+hdr+int(n)]
		d.pos += hdr + int(n)
		return lua.LString(s)
	}
	switch {
	case c == 0xcc:
		if !d.need(2) {
			return lua.LNil
		}
		return num(2, float64(d.u(1, 1)))
	case c == 0xd0:
		if !d.need(2) {
			return lua.LNil
		}
		return num(2, float64(int8(d.u(1, 1))))
	case c == 0xcd:
		if !d.need(3) {
			return lua.LNil
		}
		return num(3, float64(d.u(1, 2)))
	case c == 0xd1:
		if !d.need(3) {
			return lua.LNil
		}
		return num(3, float64(int16(d.u(1, 2))))
	case c == 0xce:
		if !d.need(5) {
			return lua.LNil
		}
		return num(5, float64(d.u(1, 4)))
	case c == 0xd2:
		if !d.need(5) {
			return lua.LNil
		}
		return num(5, float64(int32(d.u(1, 4))))
	case c == 0xcf:
		// lua_pushunsigned is lua_pushinteger on 64-bit builds: past 2^63
		// the value wraps negative.
		if !d.need(9) {
			return lua.LNil
		}
		return num(9, float64(int64(d.u(1, 8))))
	case c == 0xd3:
		if !d.need(9) {
			return lua.LNil
		}
		return num(9, float64(int64(d.u(1, 8))))
	case c == 0xc0:
		d.pos++
		return lua.LNil
	case c == 0xc3:
		d.pos++
		return lua.LTrue
	case c == 0xc2:
		d.pos++
		return lua.LFalse
	case c == 0xca:
		if !d.need(5) {
			return lua.LNil
		}
		return num(5, float64(math.Float32frombits(uint32(d.u(1, 4)))))
	case c == 0xcb:
		if !d.need(9) {
			return lua.LNil
		}
		return num(9, math.Float64frombits(d.u(1, 8)))
	case c == 0xd9:
		if !d.need(2) {
			return lua.LNil
		}
		return str(2, d.u(1, 1))
	case c == 0xda:
		if !d.need(3) {
			return lua.LNil
		}
		return str(3, d.u(1, 2))
	case c == 0xdb:
		if !d.need(5) {
			return lua.LNil
		}
		return str(5, d.u(1, 4))
	case c == 0xdc, c == 0xdd, c == 0xde, c == 0xdf:
		hdr := 3
		if c == 0xdd || c == 0xdf {
			hdr = 5
		}
		if !d.need(uint64(hdr)) {
			return lua.LNil
		}
		n := d.u(1, hdr-1)
		d.pos += hdr
		if c == 0xdc || c == 0xdd {
			return d.array(n, stack)
		}
		return d.hash(n, stack)
	case c&0x80 == 0:
		d.pos++
		return lua.LNumber(c)
	case c&0xe0 == 0xe0:
		d.pos++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return str(1, uint64(c&0x1f))
	case c&0xf0 == 0x90:
		d.pos++
		return d.array(uint64(c&0xf), stack)
	case c&0xf0 == 0x80:
		d.pos++
		return d.hash(uint64(c&0xf), stack)
	}
	d.err = mpBadFmt
	return lua.LNil
}

func (d *mpDecoder) array(n uint64, stack int) lua.LValue {
	t := d.L.CreateTable(0, 0)
	stack++ // the table
	d.checkStack(stack, "in function mp_decode_to_lua_array")
	for i := uint64(1); i <= n; i++ {
		v := d.value(stack + 1) // the index pushed before it
		if d.err != mpOK {
			return t
		}
		if v != lua.LNil {
			t.RawSetInt(int(i), v)
		}
	}
	return t
}

func (d *mpDecoder) hash(n uint64, stack int) lua.LValue {
	t := d.L.CreateTable(0, 0)
	stack++
	for range n {
		k := d.value(stack)
		if d.err != mpOK {
			return t
		}
		v := d.value(stack + 1)
		if d.err != mpOK {
			return t
		}
		// lua_settable from inside a C function: Lua's own message,
		// without a position.
		switch kn := k.(type) {
		case *lua.LNilType:
			d.L.Error(lua.LString("table index is nil"), 0)
		case lua.LNumber:
			if math.IsNaN(float64(kn)) {
				d.L.Error(lua.LString("table index is NaN"), 0)
			}
		}
		if v == lua.LNil {
			// Setting nil removes the key (which is new here, unless the
			// input repeats it).
			if t.RawGet(k) != lua.LNil {
				t.RawSet(k, lua.LNil)
			}
			continue
		}
		d.r.longKey(d.L, k)
		d.r.growCharge(d.L, t, k, -1)
		t.RawSet(k, v)
	}
	return t
}

// mpUnpackFull is mp_unpack_full: limit values from offset (both 0: all
// of them, and no offset returned).
func (r *runner) mpUnpackFull(L *lua.LState, limit, offset int64, fname string) int {
	s := r.libCheckString(L, 1, fname)
	if offset < 0 || limit < 0 {
		r.raisef(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	}
	if uint64(offset) > uint64(len(s)) {
		r.raisef(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	r.charge(L, 1)
	d := &mpDecoder{r: r, L: L, data: s, pos: int(offset), m: meter{r: r, L: L}}
	stack := L.GetTop()
	var out []lua.LValue
	for cnt := int64(0); d.pos < len(s) && cnt < limit; cnt++ {
		v := d.value(stack + len(out))
		switch d.err {
		case mpEOF:
			r.raisef(L, "Missing bytes in input.")
		case mpBadFmt:
			r.raisef(L, "Bad data format in input.")
		}
		out = append(out, v)
	}
	if !all {
		if stack+len(out)+1 > luaMaxCStack {
			r.raisef(L, "stack overflow (in function mp_unpack_full)")
		}
		next := int64(d.pos)
		if d.pos == len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range out {
		L.Push(v)
	}
	if all {
		return len(out)
	}
	return len(out) + 1
}

func (r *runner) mpUnpackOne(L *lua.LState) int {
	offset := r.libOptInteger(L, 2, "unpack_one", 0)
	L.SetTop(min(L.GetTop(), 1))
	return r.mpUnpackFull(L, 1, offset, "unpack_one")
}

func (r *runner) mpUnpackLimit(L *lua.LState) int {
	limit := r.libCheckInteger(L, 2, "unpack_limit")
	offset := r.libOptInteger(L, 3, "unpack_limit", 0)
	L.SetTop(min(L.GetTop(), 1))
	return r.mpUnpackFull(L, limit, offset, "unpack_limit")
}
