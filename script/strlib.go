package script

import (
	"fmt"
	"strconv"
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

// Pattern matching.

type matchState struct {
	r       *runner
	L       *lua.LState
	src     string
	pat     string
	level   int
	capture [maxCaptures]struct{ init, len int }
	depth   int
	m       meter
}

func (r *runner) newMatch(L *lua.LState, src, pat string) *matchState {
	// The C code reads the pattern as a C string: it ends at a NUL.
	if i := strings.IndexByte(pat, 0); i >= 0 {
		pat = pat[:i]
	}
	return &matchState{r: r, L: L, src: src, pat: pat, m: meter{r: r, L: L}}
}

func (ms *matchState) sch(i int) int {
	if i < len(ms.src) {
		return int(ms.src[i])
	}
	return 0
}

func (ms *matchState) pch(i int) int {
	if i < len(ms.pat) {
		return int(ms.pat[i])
	}
	return 0
}

func (ms *matchState) fail(msg string) { ms.L.RaiseError("%s", msg) }

func (ms *matchState) checkCapture(l int) int {
	l -= '1'
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		ms.fail("invalid capture index")
	}
	return l
}

func (ms *matchState) captureToClose() int {
	for level := ms.level - 1; level >= 0; level-- {
		if ms.capture[level].len == capUnfinished {
			return level
		}
	}
	ms.fail("invalid pattern capture")
	return 0
}

func (ms *matchState) classEnd(p int) int {
	c := ms.pch(p)
	p++
	switch c {
	case '%':
		if p >= len(ms.pat) {
			ms.fail("malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		if ms.pch(p) == '^' {
			p++
		}
		for {
			if p >= len(ms.pat) {
				ms.fail("malformed pattern (missing ']')")
			}
			c := ms.pat[p]
			p++
			if c == '%' && p < len(ms.pat) {
				p++
			}
			if ms.pch(p) == ']' {
				break
			}
		}
		return p + 1
	}
	return p
}

func isAlpha(c int) bool  { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c int) bool  { return '0' <= c && c <= '9' }
func isLower(c int) bool  { return 'a' <= c && c <= 'z' }
func isUpper(c int) bool  { return 'A' <= c && c <= 'Z' }
func isSpace(c int) bool  { return c == ' ' || '\t' <= c && c <= '\r' }
func isCntrl(c int) bool  { return c < 32 || c == 127 }
func isPunct(c int) bool  { return c > 32 && c < 127 && !isAlpha(c) && !isDigit(c) }
func isXDigit(c int) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func matchClass(c, cl int) bool {
	lower := cl
	if isUpper(cl) {
		lower = cl + ('a' - 'A')
	}
	var res bool
	switch lower {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = isCntrl(c)
	case 'd':
		res = isDigit(c)
	case 'l':
		res = isLower(c)
	case 'p':
		res = isPunct(c)
	case 's':
		res = isSpace(c)
	case 'u':
		res = isUpper(c)
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isXDigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if isUpper(cl) {
		return !res
	}
	return res
}

func (ms *matchState) matchBracketClass(c, p, ec int) bool {
	sig := true
	if ms.pch(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.pch(p) == '%':
			p++
			if matchClass(c, ms.pch(p)) {
				return sig
			}
		case ms.pch(p+1) == '-' && p+2 < ec:
			p += 2
			if ms.pch(p-2) <= c && c <= ms.pch(p) {
				return sig
			}
		case ms.pch(p) == c:
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(c, p, ep int) bool {
	switch ms.pch(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pch(p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.pch(p) == c
}

func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		ms.fail("unbalanced pattern")
	}
	if ms.sch(s) != ms.pch(p) {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.m.tick()
		switch ms.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(int(ms.src[s+i]), p, ep) {
		ms.m.tick()
		i++
	}
	for ; i >= 0; i-- {
		ms.m.tick()
		if res := ms.match(s+i, ep+1); res >= 0 {
			return res
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		ms.m.tick()
		if res := ms.match(s, ep+1); res >= 0 {
			return res
		}
		if s < len(ms.src) && ms.singleMatch(int(ms.src[s]), p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		ms.fail("too many captures")
	}
	ms.capture[ms.level].init = s
	ms.capture[ms.level].len = what
	ms.level++
	res := ms.match(s, p)
	if res < 0 {
		ms.level--
	}
	return res
}

func (ms *matchState) endCapture(s, p int) int {
	l := ms.captureToClose()
	ms.capture[l].len = s - ms.capture[l].init
	res := ms.match(s, p)
	if res < 0 {
		ms.capture[l].len = capUnfinished
	}
	return res
}

func (ms *matchState) matchCapture(s, l int) int {
	l = ms.checkCapture(l)
	c := ms.capture[l]
	if c.len < 0 || len(ms.src)-s < c.len {
		return -1
	}
	ms.r.chargeBytes(ms.L, c.len)
	if ms.src[c.init:c.init+c.len] == ms.src[s:s+c.len] {
		return s + c.len
	}
	return -1
}

// match answers the end of the match of pat[p:] at src[s:], or -1.
func (ms *matchState) match(s, p int) int {
	ms.depth++
	if ms.depth > maxMatchDepth {
		ms.fail("pattern too complex")
	}
	res := ms.doMatch(s, p)
	ms.depth--
	return res
}

func (ms *matchState) doMatch(s, p int) int {
	for {
		ms.m.tick()
		switch ms.pch(p) {
		case '(':
			if ms.pch(p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case 0:
			if p >= len(ms.pat) {
				return s
			}
		case '%':
			switch c := ms.pch(p + 1); {
			case c == 'b':
				if s = ms.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if ms.pch(p) != '[' {
					ms.fail("missing '[' after '%f' in pattern")
				}
				ep := ms.classEnd(p)
				prev := 0
				if s > 0 {
					prev = int(ms.src[s-1])
				}
				if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(ms.sch(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			case isDigit(c):
				if s = ms.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		case '$':
			if p+1 == len(ms.pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		}
		// A single-character class, possibly followed by a quantifier.
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(int(ms.src[s]), p, ep)
		switch ms.pch(ep) {
		case '?':
			if m {
				if res := ms.match(s+1, ep+1); res >= 0 {
					return res
				}
			}
			p = ep + 1
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		default:
			if !m {
				return -1
			}
			s++
			p = ep
		}
	}
}

// pushOne pushes capture i (the whole match s..e when there are none).
func (ms *matchState) pushOne(i, s, e int) {
	if i >= ms.level {
		if i != 0 {
			ms.fail("invalid capture index")
		}
		ms.L.Push(lua.LString(ms.src[s:e]))
		return
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		ms.fail("unfinished capture")
	case capPosition:
		ms.L.Push(lua.LNumber(c.init + 1))
	default:
		ms.L.Push(lua.LString(ms.src[c.init : c.init+c.len]))
	}
}

// pushCaptures pushes the captures; s < 0 means "no whole match".
func (ms *matchState) pushCaptures(s, e int) int {
	n := ms.level
	if n == 0 && s >= 0 {
		n = 1
	}
	for i := 0; i < n; i++ {
		ms.pushOne(i, s, e)
	}
	return n
}

func hasSpecials(p string) bool {
	if i := strings.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return strings.ContainsAny(p, specials)
}

// strFind is string.find (find) and string.match.
func (r *runner) strFind(L *lua.LState, find bool) int {
	fname := "match"
	if find {
		fname = "find"
	}
	s := checkString(L, 1, fname)
	p := checkString(L, 2, fname)
	l1 := int64(len(s))
	init := posrelat(optInteger(L, 3, fname, 1), l1) - 1
	if init < 0 {
		init = 0
	} else if init > l1 {
		init = l1
	}
	if find && (lua.LVAsBool(L.Get(4)) || !hasSpecials(p)) {
		r.chargeBytes(L, len(s)-int(init))
		if i := strings.Index(s[init:], p); i >= 0 {
			L.Push(lua.LNumber(int(init) + i + 1))
			L.Push(lua.LNumber(int(init) + i + len(p)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	ms := r.newMatch(L, s, p)
	pstart, anchor := 0, false
	if ms.pch(0) == '^' {
		pstart, anchor = 1, true
	}
	for s1 := int(init); ; s1++ {
		ms.level = 0
		if e := ms.match(s1, pstart); e >= 0 {
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				return ms.pushCaptures(-1, 0) + 2
			}
			return ms.pushCaptures(s1, e)
		}
		if s1 >= len(s) || anchor {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

func (r *runner) strGmatch(L *lua.LState) int {
	s := checkString(L, 1, "gmatch")
	p := checkString(L, 2, "gmatch")
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		ms := r.newMatch(L, s, p)
		for src := pos; src <= len(s); src++ {
			ms.level = 0
			if e := ms.match(src, 0); e >= 0 {
				pos = e
				if e == src {
					pos++
				}
				return ms.pushCaptures(src, e)
			}
		}
		return 0
	}))
	return 1
}

func (r *runner) strGsub(L *lua.LState) int {
	src := checkString(L, 1, "gsub")
	p := checkString(L, 2, "gsub")
	repl := L.Get(3)
	maxS := optInt(L, 4, "gsub", len(src)+1)
	switch repl.(type) {
	case lua.LNumber, lua.LString, *lua.LFunction, *lua.LTable:
	default:
		argError(L, 3, "gsub", "string/function/table expected")
	}
	ms := r.newMatch(L, src, p)
	pstart, anchor := 0, false
	if ms.pch(0) == '^' {
		pstart, anchor = 1, true
	}
	// The pieces are joined once at the end: one allocation of the exact
	// size instead of a buffer that keeps doubling.
	var parts []string
	add := func(s string) {
		r.chargeBytes(L, len(s))
		parts = append(parts, s)
	}
	n, s := 0, 0
	for n < maxS {
		ms.level = 0
		e := ms.match(s, pstart)
		if e >= 0 {
			n++
			r.addValue(ms, repl, s, e, add)
		}
		if e >= 0 && e > s {
			s = e
		} else if s < len(src) {
			add(src[s : s+1])
			s++
		} else {
			break
		}
		if anchor {
			break
		}
	}
	add(src[s:])
	L.Push(lua.LString(strings.Join(parts, "")))
	L.Push(lua.LNumber(n))
	return 2
}

func (r *runner) addValue(ms *matchState, repl lua.LValue, s, e int, add func(string)) {
	L := ms.L
	var v lua.LValue
	switch x := repl.(type) {
	case lua.LNumber, lua.LString:
		news := luaString(x)
		for i := 0; i < len(news); i++ {
			if news[i] != '%' {
				j := strings.IndexByte(news[i:], '%')
				if j < 0 {
					j = len(news) - i
				}
				add(news[i : i+j])
				i += j - 1
				continue
			}
			i++
			var d byte // past the end, C reads the string's NUL terminator
			if i < len(news) {
				d = news[i]
			}
			switch {
			case !isDigit(int(d)):
				add(string([]byte{d}))
			case d == '0':
				add(ms.src[s:e])
			default:
				ms.pushOne(int(d-'1'), s, e)
				add(luaString(L.Get(-1)))
				L.Pop(1)
			}
		}
		return
	case *lua.LFunction:
		L.Push(x)
		n := ms.pushCaptures(s, e)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	case *lua.LTable:
		ms.pushOne(0, s, e)
		k := L.Get(-1)
		L.Pop(1)
		v = L.GetTable(x, k)
	}
	if !lua.LVAsBool(v) {
		add(ms.src[s:e])
		return
	}
	if !isStrNum(v) {
		L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	}
	add(luaString(v))
}

// string.format, as Lua 5.1 does it with C's sprintf.

func (r *runner) strFormat(L *lua.LState) int {
	fs := checkString(L, 1, "format")
	top := L.GetTop()
	arg := 1
	at := func(i int) byte {
		if i < len(fs) {
			return fs[i]
		}
		return 0
	}
	var parts []string
	raw := func(s string) {
		r.chargeBytes(L, len(s))
		parts = append(parts, s)
	}
	add := func(s string) {
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i] // sprintf's result is read as a C string
		}
		raw(s)
	}
	for i := 0; i < len(fs); {
		if fs[i] != '%' {
			j := strings.IndexByte(fs[i:], '%')
			if j < 0 {
				j = len(fs) - i
			}
			raw(fs[i : i+j])
			i += j
			continue
		}
		i++
		if at(i) == '%' {
			raw("%")
			i++
			continue
		}
		arg++
		if arg > top {
			argError(L, arg, "format", "no value")
		}
		start := i
		for at(i) != 0 && strings.IndexByte("-+ #0", at(i)) >= 0 {
			i++
		}
		if i-start >= 6 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := fs[start:i]
		width, prec := -1, -1
		ws := i
		for k := 0; k < 2 && isDigit(int(at(i))); k++ {
			i++
		}
		if i > ws {
			width, _ = strconv.Atoi(fs[ws:i])
		}
		if at(i) == '.' {
			i++
			ps := i
			for k := 0; k < 2 && isDigit(int(at(i))); k++ {
				i++
			}
			prec, _ = strconv.Atoi(fs[ps:i])
		}
		if isDigit(int(at(i))) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		spec := fs[start:i]
		conv := at(i)
		i++
		switch conv {
		case 'c':
			c := byte(checkNumberToInt(L, arg))
			add(pad(string([]byte{c}), width, strings.Contains(flags, "-")))
		case 'd', 'i':
			n := toInt64(checkNumber(L, arg, "format"))
			add(fmt.Sprintf("%"+spec+"d", n))
		case 'o', 'u', 'x', 'X':
			f := checkNumber(L, arg, "format")
			u := uint64(toInt64(f))
			if f >= 1<<63 && f < 1<<64 {
				u = uint64(f)
			}
			verb := string(conv)
			if conv == 'u' {
				verb = "d"
			}
			add(fmt.Sprintf("%"+spec+verb, u))
		case 'e', 'E', 'f', 'g', 'G':
			f := checkNumber(L, arg, "format")
			add(formatFloat(f, flags, width, prec, conv))
		case 'q':
			s := checkString(L, arg, "format")
			r.chargeBytes(L, len(s)+2)
			var b strings.Builder
			b.Grow(len(s) + 2)
			b.WriteByte('"')
			for k := 0; k < len(s); k++ {
				switch c := s[k]; c {
				case '"', '\\', '\n':
					b.WriteByte('\\')
					b.WriteByte(c)
				case '\r':
					b.WriteString("\\r")
				case 0:
					b.WriteString("\\000")
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('"')
			parts = append(parts, b.String())
		case 's':
			s := checkString(L, arg, "format")
			if prec < 0 && len(s) >= 100 {
				// too long for sprintf's buffer: Lua keeps it whole
				raw(s)
				continue
			}
			if k := strings.IndexByte(s, 0); k >= 0 {
				s = s[:k]
			}
			if prec >= 0 && len(s) > prec {
				s = s[:prec]
			}
			add(pad(s, width, strings.Contains(flags, "-")))
		default:
			L.RaiseError("invalid option '%%%s' to 'format'", strings.TrimRight(string([]byte{conv}), "\x00"))
		}
	}
	L.Push(lua.LString(strings.Join(parts, "")))
	return 1
}

func checkNumberToInt(L *lua.LState, arg int) int {
	return toInt(checkNumber(L, arg, "format"))
}

// pad pads s with spaces to width bytes (C's %Ns / %-Ns).
func pad(s string, width int, left bool) string {
	if len(s) >= width {
		return s
	}
	sp := strings.Repeat(" ", width-len(s))
	if left {
		return s + sp
	}
	return sp + s
}

// formatFloat is C's %e/%E/%f/%g/%G. Go's verbs agree with C's for finite
// numbers once the default precision (6) is explicit; infinities and NaN
// are written as glibc does.
func formatFloat(f float64, flags string, width, prec int, conv byte) string {
	if s, ok := fmtSpecial(f); ok {
		if s[0] != '-' {
			if strings.Contains(flags, "+") {
				s = "+" + s
			} else if strings.Contains(flags, " ") {
				s = " " + s
			}
		}
		if conv == 'E' || conv == 'G' {
			s = strings.ToUpper(s)
		}
		return pad(s, width, strings.Contains(flags, "-"))
	}
	if prec < 0 {
		prec = 6
	}
	spec := "%" + flags
	if width >= 0 {
		spec += strconv.Itoa(width)
	}
	spec += "." + strconv.Itoa(prec) + string(conv)
	if conv == 'g' || conv == 'G' {
		if prec == 0 {
			// C treats a %g precision of 0 as 1.
			spec = strings.Replace(spec, ".0"+string(conv), ".1"+string(conv), 1)
		}
	}
	return fmt.Sprintf(spec, f)
}
