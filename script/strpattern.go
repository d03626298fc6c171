package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

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
