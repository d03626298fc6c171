package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library as Redis 7.0 ships it (deps/lua/src/lua_cjson.c,
// lua-cjson 2.1.0 with Redis's changes), rewritten for gopher-lua from its
// documented and observed behaviour: the same output bytes ("%.14g"
// numbers, "/" escaped as "\/", DEL as \u007f), the same sparse-array
// rules, the same error texts, the same limits. Two things differ by
// design:
//
//   - the settings (encode_max_depth, encode_sparse_array, ...) last for
//     one script run: in Redis they stay in the Lua state until SCRIPT
//     FLUSH, which would make one script's reply depend on another's;
//   - an object's keys come in fenced's table order (the array part, then
//     the other keys as they were first set), not in Lua 5.1's hash order:
//     the same on every replica, but not always Redis's order for an
//     object of several keys.
//
// Work is charged as it is done: a step per value encoded or decoded, one
// per 16 keys scanned, and one per 16 bytes of output and input. Depth
// is bounded as in Redis (1000 levels by default) and by Lua's C stack
// (8000 slots: LUAI_MAXCSTACK), which Redis's lua_checkstack calls
// enforce; the same bound keeps the recursion here shallow.

// luaMaxCStack (strlib.go) is also the bound of lua_checkstack.

const (
	jsonDefaultDepth = 1000
	jsonVersion      = "2.1.0"
)

// jsonConfig is one cjson table's settings (json_config_t).
type jsonConfig struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // 0 off, 1 on, 2 null
	decodeInvalid  bool
	keepBuffer     bool
	precision      int
}

func defaultJSONConfig() jsonConfig {
	return jsonConfig{
		sparseRatio: 2, sparseSafe: 10,
		encodeMaxDepth: jsonDefaultDepth, decodeMaxDepth: jsonDefaultDepth,
		decodeInvalid: true, keepBuffer: true, precision: 14,
	}
}

// resetLibs gives a run the libraries' default settings.
func (r *runner) resetLibs() { r.json = defaultJSONConfig() }

// openCjson builds a cjson table over cfg (lua_cjson_new).
func (r *runner) openCjson(cfg *jsonConfig) *lua.LTable {
	L := r.L
	fns := map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return r.jsonEncode(L, cfg) },
		"decode": func(L *lua.LState) int { return r.jsonDecode(L, cfg) },
		"encode_sparse_array": func(L *lua.LState) int {
			r.jsonArgs(L, 3, "encode_sparse_array")
			r.jsonBoolOption(L, 1, "encode_sparse_array", &cfg.sparseConvert)
			r.jsonIntOption(L, 2, "encode_sparse_array", &cfg.sparseRatio, 0, math.MaxInt32)
			r.jsonIntOption(L, 3, "encode_sparse_array", &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "encode_max_depth")
			return r.jsonIntOption(L, 1, "encode_max_depth", &cfg.encodeMaxDepth, 1, math.MaxInt32)
		},
		"decode_max_depth": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "decode_max_depth")
			return r.jsonIntOption(L, 1, "decode_max_depth", &cfg.decodeMaxDepth, 1, math.MaxInt32)
		},
		"encode_number_precision": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "encode_number_precision")
			return r.jsonIntOption(L, 1, "encode_number_precision", &cfg.precision, 1, 14)
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "encode_keep_buffer")
			return r.jsonBoolOption(L, 1, "encode_keep_buffer", &cfg.keepBuffer)
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "encode_invalid_numbers")
			return r.jsonEnumOption(L, 1, "encode_invalid_numbers", &cfg.encodeInvalid, []string{"off", "on", "null"})
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			r.jsonArgs(L, 1, "decode_invalid_numbers")
			return r.jsonBoolOption(L, 1, "decode_invalid_numbers", &cfg.decodeInvalid)
		},
		"new": func(L *lua.LState) int {
			// A new table with its own settings; it is the script's own
			// (not read-only), as in Redis.
			r.charge(L, namingCost)
			c := defaultJSONConfig()
			L.Push(r.openCjson(&c))
			return 1
		},
	}
	vals := make(map[string]lua.LValue, len(fns)+3)
	for k, f := range fns {
		vals[k] = L.NewFunction(f)
	}
	vals["null"] = r.jsonNull
	vals["_NAME"] = lua.LString("cjson")
	vals["_VERSION"] = lua.LString(jsonVersion)
	return sortedTable(L, vals)
}

// jsonArgs is json_arg_init: at most n arguments.
func (r *runner) jsonArgs(L *lua.LState, n int, fname string) {
	if L.GetTop() > n {
		r.libArgError(L, n+1, fname, "found too many arguments")
	}
	// Padded with nil: the settings are pushed after them.
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// jsonIntOption is json_integer_option: set *v from argument i when given,
// push the setting. The range error names argument 1 whatever i is, as
// Redis's does.
func (r *runner) jsonIntOption(L *lua.LState, i int, fname string, v *int, lo, hi int) int {
	if i <= L.GetTop() && L.Get(i) != lua.LNil {
		n := r.libCheckInt(L, i, fname)
		if n < lo || n > hi {
			r.libArgError(L, 1, fname, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
		}
		*v = n
	}
	L.Push(lua.LNumber(*v))
	return 1
}

// jsonEnumOption is json_enum_option with named options (true is option 1).
func (r *runner) jsonEnumOption(L *lua.LState, i int, fname string, v *int, opts []string) int {
	if i <= L.GetTop() && L.Get(i) != lua.LNil {
		if b, ok := L.Get(i).(lua.LBool); ok {
			*v = 0
			if b {
				*v = 1
			}
		} else {
			name := r.libCheckString(L, i, fname)
			found := false
			for k, o := range opts {
				if o == name {
					*v, found = k, true
					break
				}
			}
			if !found {
				r.libArgError(L, i, fname, "invalid option '"+name+"'")
			}
		}
	}
	if *v == 0 || *v == 1 {
		L.Push(lua.LBool(*v == 1))
	} else {
		L.Push(lua.LString(opts[*v]))
	}
	return 1
}

func (r *runner) jsonBoolOption(L *lua.LState, i int, fname string, v *bool) int {
	n := 0
	if *v {
		n = 1
	}
	r.jsonEnumOption(L, i, fname, &n, []string{"off", "on"})
	*v = n == 1
	return 1
}

// cInt is C's (int)d on x86-64: out of range and NaN give INT_MIN.
func cInt(d float64) int32 {
	if math.IsNaN(d) || d >= 1<<31 || d < -(1<<31) {
		return math.MinInt32
	}
	return int32(d)
}

// fmtG is C's printf("%.<prec>g") for the precisions cjson allows (1-14).
func fmtG(f float64, prec int) string {
	if s, ok := fmtSpecial(f); ok {
		return s
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// jsonEscape is lua-cjson's char2escape: "\uXXXX" for the control
// characters without a short form and for DEL, and "/" escaped.
var jsonEscape = func() [256]string {
	var t [256]string
	for c := 0; c < 0x20; c++ {
		t[c] = "\\u00" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = "\\b", "\\t", "\\n", "\\f", "\\r"
	t['"'], t['/'], t['\\'], t[0x7f] = "\\\"", "\\/", "\\\\", "\\u007f"
	return t
}()

type jsonEncoder struct {
	r       *runner
	L       *lua.LState
	cfg     *jsonConfig
	buf     []byte
	charged int
	m       meter
}

// pay charges the output written since the last charge.
func (e *jsonEncoder) pay() {
	e.r.chargeBytes(e.L, len(e.buf)-e.charged)
	e.charged = len(e.buf)
}

func (e *jsonEncoder) fail(v lua.LValue, reason string) {
	e.r.raisef(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

func (r *runner) jsonEncode(L *lua.LState, cfg *jsonConfig) int {
	if L.GetTop() != 1 {
		r.libArgError(L, 1, "encode", "expected 1 argument")
	}
	e := &jsonEncoder{r: r, L: L, cfg: cfg, m: meter{r: r, L: L}}
	// The encoder's Lua stack: the argument.
	e.value(L.Get(1), 0, 1)
	e.pay()
	L.Push(lua.LString(e.buf))
	return 1
}

// value appends v. depth is the tables around it; slots is how much of
// Lua's C stack Redis's encoder holds at this point (the argument, and a
// key and value per object level or a value per array level above).
func (e *jsonEncoder) value(v lua.LValue, depth, slots int) {
	e.r.charge(e.L, 1)
	switch x := v.(type) {
	case lua.LString:
		e.str(string(x))
	case lua.LNumber:
		e.number(x)
	case lua.LBool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || slots+3 > luaMaxCStack {
			e.r.raisef(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		t := e.r.unproxy(x)
		if n := e.arrayLength(t); n > 0 {
			e.array(t, n, depth, slots)
		} else {
			e.object(t, depth, slots)
		}
	case *lua.LUserData:
		if x == e.r.jsonNull {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.fail(v, "type not supported")
	default:
		e.fail(v, "type not supported")
	}
	if len(e.buf)-e.charged >= 4096 {
		e.pay()
	}
}

func (e *jsonEncoder) str(s string) {
	// Charged before it is built, as string.rep is.
	e.r.chargeBytes(e.L, len(s))
	e.charged += len(s)
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); i++ {
		if esc := jsonEscape[s[i]]; esc != "" {
			e.buf = append(e.buf, esc...)
		} else {
			e.buf = append(e.buf, s[i])
		}
	}
	e.buf = append(e.buf, '"')
	e.pay()
}

func (e *jsonEncoder) number(n lua.LNumber) {
	f := float64(n)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		switch e.cfg.encodeInvalid {
		case 0:
			e.fail(n, "must not be NaN or Inf")
		case 1:
			if math.IsNaN(f) {
				// Whatever its sign: some platforms print -nan.
				e.buf = append(e.buf, "nan"...)
				return
			}
		default:
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = append(e.buf, fmtG(f, e.cfg.precision)...)
}

// arrayLength is lua_array_length: the largest key if every key is a
// positive integer (0 for an empty table), -1 for an object, or the sparse
// error. max is a C int: a key past its range wraps it as on x86-64.
func (e *jsonEncoder) arrayLength(t *lua.LTable) int {
	var max, items int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		e.m.tick()
		if n, ok := k.(lua.LNumber); ok && n != 0 {
			f := float64(n)
			if math.Floor(f) == f && f >= 1 {
				if f > float64(max) {
					max = cInt(f)
				}
				items++
				continue
			}
		}
		return -1
	}
	ratio := int32(e.cfg.sparseRatio)
	if ratio > 0 && max > items*ratio && max > int32(e.cfg.sparseSafe) {
		if !e.cfg.sparseConvert {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

func (e *jsonEncoder) array(t *lua.LTable, n, depth, slots int) {
	e.buf = append(e.buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.value(t.RawGetInt(i), depth, slots+1)
	}
	e.buf = append(e.buf, ']')
}

func (e *jsonEncoder) object(t *lua.LTable, depth, slots int) {
	e.buf = append(e.buf, '{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		switch key := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.number(key)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.str(string(key))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.value(v, depth, slots+2)
	}
	e.buf = append(e.buf, '}')
}

// Decoding (json_decode and its parser).

type jsonTok uint8

const (
	tObjBegin jsonTok = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var jsonTokNames = []string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

var jsonCh2Tok = func() [256]jsonTok {
	var t [256]jsonTok
	for i := range t {
		t[i] = tError
	}
	t['{'], t['}'], t['['], t[']'], t[','], t[':'] = tObjBegin, tObjEnd, tArrBegin, tArrEnd, tComma, tColon
	t[0] = tEnd
	t[' '], t['\t'], t['\n'], t['\r'] = tWhitespace, tWhitespace, tWhitespace, tWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = tUnknown
	}
	return t
}()

var jsonEscape2Char = func() [256]byte {
	var t [256]byte
	t['"'], t['\\'], t['/'], t['b'], t['t'] = '"', '\\', '/', '\b', '\t'
	t['n'], t['f'], t['r'], t['u'] = '\n', '\f', '\r', 'u'
	return t
}()

type jsonToken struct {
	typ   jsonTok
	index int
	str   string
	num   float64
	b     bool
	err   string
}

type jsonParser struct {
	r     *runner
	L     *lua.LState
	cfg   *jsonConfig
	data  string
	ptr   int
	depth int
	m     meter
}

// at is the byte at i, or 0 past the end: the C parser reads a
// NUL-terminated string, so a NUL inside the data ends it too.
func (p *jsonParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

func (r *runner) jsonDecode(L *lua.LState, cfg *jsonConfig) int {
	if L.GetTop() != 1 {
		r.libArgError(L, 1, "decode", "expected 1 argument")
	}
	data := r.libCheckString(L, 1, "decode")
	if len(data) >= 2 && (data[0] == 0 || data[1] == 0) {
		r.raisef(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	r.chargeBytes(L, len(data))
	p := &jsonParser{r: r, L: L, cfg: cfg, data: data, m: meter{r: r, L: L}}
	var tok jsonToken
	p.next(&tok)
	v := p.value(&tok, 1)
	p.next(&tok)
	if tok.typ != tEnd {
		p.fail("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (p *jsonParser) fail(expected string, tok *jsonToken) {
	found := tok.err
	if tok.typ != tError {
		found = jsonTokNames[tok.typ]
	}
	p.r.raisef(p.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (p *jsonParser) tokenError(tok *jsonToken, msg string) {
	tok.typ, tok.index, tok.err = tError, p.ptr, msg
}

func (p *jsonParser) next(tok *jsonToken) {
	var c byte
	for {
		c = p.at(p.ptr)
		tok.typ = jsonCh2Tok[c]
		if tok.typ != tWhitespace {
			break
		}
		p.ptr++
	}
	tok.index = p.ptr
	switch tok.typ {
	case tError:
		p.tokenError(tok, "invalid token")
		return
	case tEnd:
		return
	case tUnknown:
	default:
		p.ptr++
		return
	}
	rest := p.data[p.ptr:]
	switch {
	case c == '"':
		p.stringToken(tok)
	case c == '-' || '0' <= c && c <= '9':
		if !p.cfg.decodeInvalid && p.invalidNumber() {
			p.tokenError(tok, "invalid number")
			return
		}
		p.numberToken(tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.b = tBoolean, true
		p.ptr += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.b = tBoolean, false
		p.ptr += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		p.ptr += 4
	case p.cfg.decodeInvalid && p.invalidNumber():
		p.numberToken(tok)
	default:
		p.tokenError(tok, "invalid token")
	}
}

// invalidNumber is json_is_invalid_number: what strtod reads but strict
// JSON forbids (a leading +, hex, leading zeros, inf, nan).
func (p *jsonParser) invalidNumber() bool {
	i := p.ptr
	if p.at(i) == '+' {
		return true
	}
	if p.at(i) == '-' {
		i++
	}
	if c := p.at(i); c == '0' {
		c2 := p.at(i + 1)
		return c2|0x20 == 'x' || '0' <= c2 && c2 <= '9'
	} else if c <= '9' {
		return false
	}
	s := strings.ToLower(p.data[i:min(i+3, len(p.data))])
	return s == "inf" || s == "nan"
}

func (p *jsonParser) numberToken(tok *jsonToken) {
	tok.typ = tNumber
	f, n := strtod(p.data[p.ptr:])
	if n == 0 {
		p.tokenError(tok, "invalid number")
		return
	}
	tok.num = f
	p.ptr += n
}

func hexDigit(c byte) int {
	if isHex(c) {
		return int(hexVal(c))
	}
	return -1
}

func (p *jsonParser) hex4(i int) int {
	v := 0
	for k := range 4 {
		d := hexDigit(p.at(i + k))
		if d < 0 {
			return -1
		}
		v = v<<4 | d
	}
	return v
}

// unicodeEscape decodes \uXXXX (and a surrogate pair) at p.ptr into b.
func (p *jsonParser) unicodeEscape(b []byte) ([]byte, bool) {
	cp := p.hex4(p.ptr + 2)
	if cp < 0 {
		return b, false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || p.at(p.ptr+6) != '\\' || p.at(p.ptr+7) != 'u' {
			return b, false
		}
		lo := p.hex4(p.ptr + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return b, false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		b = append(b, byte(cp))
	case cp <= 0x7FF:
		b = append(b, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		b = append(b, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		b = append(b, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	p.ptr += n
	return b, true
}

func (p *jsonParser) stringToken(tok *jsonToken) {
	p.ptr++ // the opening quote
	var b []byte
	for {
		c := p.at(p.ptr)
		if c == '"' {
			break
		}
		if c == 0 {
			p.tokenError(tok, "unexpected end of string")
			return
		}
		if c == '\\' {
			c = jsonEscape2Char[p.at(p.ptr+1)]
			if c == 'u' {
				var ok bool
				if b, ok = p.unicodeEscape(b); ok {
					continue
				}
				p.tokenError(tok, "invalid unicode escape code")
				return
			}
			if c == 0 {
				p.tokenError(tok, "invalid escape code")
				return
			}
			p.ptr++
		}
		b = append(b, c)
		p.ptr++
	}
	p.ptr++
	tok.typ, tok.str = tString, string(b)
}

// descend is json_decode_descend: a level deeper, within the configured
// depth and Lua's C stack (slots more on top of stack in use).
func (p *jsonParser) descend(stack, slots int) {
	p.depth++
	if p.depth <= p.cfg.decodeMaxDepth && stack+slots <= luaMaxCStack {
		return
	}
	p.r.raisef(p.L, "Found too many nested data structures (%d) at character %d", p.depth, p.ptr)
}

// value converts the token (and, for [ and {, what follows) to a Lua
// value; stack is what Redis's parser holds on Lua's C stack meanwhile.
func (p *jsonParser) value(tok *jsonToken, stack int) lua.LValue {
	p.r.charge(p.L, 1)
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tNull:
		return p.r.jsonNull
	case tObjBegin:
		return p.object(stack)
	case tArrBegin:
		return p.array(stack)
	}
	p.fail("value", tok)
	return lua.LNil
}

func (p *jsonParser) object(stack int) lua.LValue {
	p.descend(stack, 3)
	t := p.L.CreateTable(0, 0)
	var tok jsonToken
	p.next(&tok)
	if tok.typ == tObjEnd {
		p.depth--
		return t
	}
	for {
		if tok.typ != tString {
			p.fail("object key string", &tok)
		}
		key := tok.str
		p.next(&tok)
		if tok.typ != tColon {
			p.fail("colon", &tok)
		}
		p.next(&tok)
		v := p.value(&tok, stack+2)
		p.r.longKey(p.L, lua.LString(key))
		t.RawSetString(key, v)
		p.next(&tok)
		if tok.typ == tObjEnd {
			p.depth--
			return t
		}
		if tok.typ != tComma {
			p.fail("comma or object end", &tok)
		}
		p.next(&tok)
	}
}

func (p *jsonParser) array(stack int) lua.LValue {
	p.descend(stack, 2)
	t := p.L.CreateTable(0, 0)
	var tok jsonToken
	p.next(&tok)
	if tok.typ == tArrEnd {
		p.depth--
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, p.value(&tok, stack+1))
		p.next(&tok)
		if tok.typ == tArrEnd {
			p.depth--
			return t
		}
		if tok.typ != tComma {
			p.fail("comma or array end", &tok)
		}
		p.next(&tok)
	}
}

// strtod reads the longest prefix of s that glibc's strtod reads (no
// leading blanks here: a JSON token never starts with one) and answers its
// value and length; 0 for no number.
func strtod(s string) (float64, int) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	lower := strings.ToLower(s[i:min(i+8, len(s))])
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(lower, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(lower, "nan"):
		return strtodNaN(s, i+3, neg)
	}
	if i+1 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' {
		if f, n := strtodHex(s[i+2:]); n > 0 {
			return sign(f), i + 2 + n
		}
		return sign(0), i + 1 // "0x" without digits reads as 0
	}
	start := i
	digits := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && s[i]|0x20 == 'e' {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && '0' <= s[j] && s[j] <= '9' {
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return sign(f), i
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// strtodHex reads hex digits [. hex digits] [p [+-] digits] (after "0x"),
// correctly rounded as glibc does.
func strtodHex(s string) (float64, int) {
	i, digits := 0, 0
	for i < len(s) && isHex(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHex(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	mant := s[:i]
	exp := "0"
	if i < len(s) && s[i]|0x20 == 'p' {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && '0' <= s[j] && s[j] <= '9' {
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			exp = s[i+1 : j]
			i = j
		}
	}
	if strings.HasSuffix(mant, ".") {
		mant += "0"
	}
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	f, err := strconv.ParseFloat("0x"+mant+"p"+exp, 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return f, i
}

// strtodNaN reads "nan" and an optional "(chars)": glibc puts a number
// written there into the NaN's payload.
func strtodNaN(s string, i int, neg bool) (float64, int) {
	bits := uint64(0x7FF8000000000000)
	if neg {
		bits |= 1 << 63
	}
	if i < len(s) && s[i] == '(' {
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'a' <= s[j]|0x20 && s[j]|0x20 <= 'z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		if j < len(s) && s[j] == ')' {
			if v, ok := strtoull0(s[i+1 : j]); ok {
				bits |= v & (1<<51 - 1)
			}
			i = j + 1
		}
	}
	return math.Float64frombits(bits), i
}

// strtoull0 reads all of s as C's strtoull(s, &end, 0) does (0x hex, 0
// octal, else decimal; saturating), answering false if anything is left.
func strtoull0(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'x':
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || d >= base {
			return 0, false
		}
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			n = math.MaxUint64
			continue
		}
		n = n*uint64(base) + uint64(d)
	}
	return n, true
}
