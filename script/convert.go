package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/fenced/fenced/reply"
)

// Number formatting. All of it is defined here, in Go, so that it is the
// same on every machine.

// fmtNumber is Lua 5.1's number-to-string conversion ("%.14g"), used by
// tostring, concatenation, string functions and table.concat.
func fmtNumber(f float64) string {
	if s, ok := fmtSpecial(f); ok {
		return s
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e14 && !(f == 0 && math.Signbit(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// fmtSpecial renders infinities and NaN as glibc's printf does. A NaN's sign
// is its sign bit: 0/0 computed on x86-64 is "-nan", as in Redis there.
func fmtSpecial(f float64) (string, bool) {
	switch {
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan", true
		}
		return "nan", true
	}
	return "", false
}

// fmtArg renders a number passed to redis.call as Redis 7.2+ does: an
// integral value within +-2^62 as an integer, anything else with
// fpconvDtoa.
func fmtArg(f float64) string {
	if f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f) {
		return strconv.FormatInt(int64(f), 10)
	}
	return fpconvDtoa(f)
}

// fmtDouble renders a {double=n} reply in RESP2 (a bulk string), as Redis
// 7.2+ does.
func fmtDouble(f float64) string { return fpconvDtoa(f) }

// fpconvDtoa is Redis 7.2+'s fpconv_dtoa: the shortest digits that read
// back as f, written plainly when the exponent is small (up to 7 zeros
// after the digits, up to 6 before them) and as d.ddde+X otherwise, with
// as few exponent digits as needed.
func fpconvDtoa(f float64) string {
	neg := math.Signbit(f)
	sign := ""
	if neg {
		sign = "-"
	}
	switch {
	case math.IsInf(f, 0):
		return sign + "inf"
	case math.IsNaN(f):
		return sign + "nan"
	case f == 0:
		return sign + "0"
	}
	e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64) // d.ddde+XX
	mant, exps, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exps)
	nd := len(digits)
	k := x - (nd - 1) // f = digits * 10^k
	exp := k + nd - 1
	if exp < 0 {
		exp = -exp
	}
	if k >= 0 && exp < nd+7 {
		return sign + digits + strings.Repeat("0", k)
	}
	if k < 0 && (k > -7 || exp < 4) {
		offset := nd + k
		if offset <= 0 {
			return sign + "0." + strings.Repeat("0", -offset) + digits
		}
		return sign + digits[:offset] + "." + digits[offset:]
	}
	if limit := 18; neg && nd > limit-1 {
		nd = limit - 1
	} else if nd > limit {
		nd = limit
	}
	out := sign + digits[:1]
	if nd > 1 {
		out += "." + digits[1:nd]
	}
	esign := "+"
	if k+nd-1 < 0 {
		esign = "-"
	}
	return out + "e" + esign + strconv.Itoa(exp)
}

// toInt64 converts a double as C's (long long) cast does on x86-64: NaN and
// values outside the int64 range give math.MinInt64. Go leaves that case to
// the hardware, which would differ between amd64 and arm64 replicas.
func toInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// toInt is Lua 5.1's luaL_checkint conversion: (int)(long long)d.
func toInt(f float64) int { return int(int32(toInt64(f))) }

// errBuff builds the err field of an error table from "-CODE message" or
// "message", as Redis's luaPushErrorBuff does: the code defaults to ERR and
// CR/LF are trimmed from the message's ends.
func errBuff(s string) string {
	code, msg := "ERR", s
	if strings.HasPrefix(s, "-") {
		if i := strings.IndexByte(s, ' '); i < 0 {
			msg = s[1:]
		} else {
			code, msg = s[1:i], s[i+1:]
		}
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// errTable returns {err = errBuff(s)}.
func errTable(L *lua.LState, s string) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(errBuff(s)))
	return t
}

// toLua converts a command's reply to a Lua value by Redis's rules. In RESP2
// mode (the default) a null is false and a map is a flat array; after
// redis.setresp(3) a null is nil, a map is {map = {k = v}} and a set
// {set = {member = true}}. Each element
// costs a step.
func (r *runner) toLua(L *lua.LState, v reply.Value) lua.LValue {
	r.charge(L, 1)
	switch v.Kind {
	case reply.KindSimpleString:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case reply.KindError:
		t := errTable(L, "-"+v.Str)
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t
	case reply.KindInt:
		return lua.LNumber(v.Int)
	case reply.KindBulk:
		return lua.LString(v.Str)
	case reply.KindNull, reply.KindNullArray:
		if r.resp == 3 {
			return lua.LNil
		}
		return lua.LFalse
	case reply.KindArray:
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, r.toLua(L, e))
		}
		return t
	case reply.KindSet:
		if r.resp == 3 { // {set = {member = true}}, as Redis gives a RESP3 set
			m := L.CreateTable(0, len(v.Elems))
			for _, e := range v.Elems {
				if k := r.toLua(L, e); k != lua.LNil {
					m.RawSet(k, lua.LTrue)
				}
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("set", m)
			return t
		}
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, r.toLua(L, e))
		}
		return t
	case reply.KindMap:
		if r.resp == 3 {
			m := L.CreateTable(0, len(v.Elems)/2)
			for i := 0; i+1 < len(v.Elems); i += 2 {
				k := r.toLua(L, v.Elems[i])
				if k == lua.LNil {
					continue
				}
				m.RawSet(k, r.toLua(L, v.Elems[i+1]))
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("map", m)
			return t
		}
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, r.toLua(L, e))
		}
		return t
	}
	return lua.LFalse
}

// maxReplyDepth bounds the nesting of a script's reply (a table that
// contains itself would otherwise never end). Redis answers an error element
// when its Lua stack runs out; so does this.
const maxReplyDepth = 1000

// toReply converts the script's result to a reply by Redis's Lua-to-RESP
// rules. It runs outside Lua, so it cannot raise: each element costs a step,
// and when the budget runs out it sets r.exhausted and the caller answers
// the limit error instead.
func (r *runner) toReply(v lua.LValue, depth int) reply.Value {
	r.steps++
	if r.steps > r.lim.MaxSteps {
		r.exhaust(ErrWorkLimit)
		return reply.Null()
	}
	if r.exhausted != "" {
		return reply.Null()
	}
	switch x := v.(type) {
	case lua.LString:
		return reply.BulkString(string(x))
	case lua.LBool:
		// Under redis.setresp(3) a boolean is a RESP3 boolean, which a
		// RESP2 client reads as :1 / :0; reply.Value has no boolean kind.
		switch {
		case bool(x):
			return reply.Int(1)
		case r.resp == 3:
			return reply.Int(0)
		}
		return reply.Null()
	case lua.LNumber:
		return reply.Int(toInt64(float64(x)))
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return reply.Error("ERR reached lua stack limit")
		}
		return r.tableReply(x, depth)
	}
	return reply.Null()
}

func (r *runner) tableReply(t *lua.LTable, depth int) reply.Value {
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		return reply.Error(oneLine(string(e)))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return reply.SimpleString(mapCRLF(string(s)))
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		return reply.BulkString(fmtDouble(float64(d)))
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return reply.BulkString(mapCRLF(string(s)))
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		if _, ok := vt.RawGetString("format").(lua.LString); ok {
			if s, ok := vt.RawGetString("string").(lua.LString); ok {
				return reply.BulkString(string(s))
			}
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var elems []reply.Value
		for k, v := m.Next(lua.LNil); k != lua.LNil; k, v = m.Next(k) {
			elems = append(elems, r.toReply(k, depth+1), r.toReply(v, depth+1))
			if r.exhausted != "" {
				break
			}
		}
		return reply.Map(elems...)
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		var elems []reply.Value
		for k, _ := s.Next(lua.LNil); k != lua.LNil; k, _ = s.Next(k) {
			elems = append(elems, r.toReply(k, depth+1))
			if r.exhausted != "" {
				break
			}
		}
		return reply.Array(elems...)
	}
	var elems []reply.Value
	for i := 1; ; i++ {
		e := t.RawGetInt(i)
		if e == lua.LNil || r.exhausted != "" {
			break
		}
		elems = append(elems, r.toReply(e, depth+1))
	}
	if elems == nil {
		elems = []reply.Value{}
	}
	return reply.Array(elems...)
}

// mapCRLF replaces CR and LF with spaces (Redis's sdsmapchars on statuses).
func mapCRLF(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}
