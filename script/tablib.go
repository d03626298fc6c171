package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The table library (Lua 5.1's ltablib.c), with its costs charged.

func (r *runner) openTable() *lua.LTable {
	return sortedFuncs(r.L, map[string]lua.LGFunction{
		"concat":   r.tconcat,
		"foreach":  r.tforeach,
		"foreachi": r.tforeachi,
		"getn": func(L *lua.LState) int {
			L.Push(lua.LNumber(r.tableLen(L, checkTable(L, 1, "getn"))))
			return 1
		},
		"insert": r.tinsert,
		"maxn":   r.tmaxn,
		"remove": r.tremove,
		"setn": func(L *lua.LState) int {
			checkTable(L, 1, "setn")
			L.RaiseError("'setn' is obsolete")
			return 0
		},
		"sort": r.tsort,
	})
}

func (r *runner) readonlyCheck(L *lua.LState, t *lua.LTable) {
	if _, ok := r.proxies[t]; ok {
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
}

func (r *runner) tconcat(L *lua.LState) int {
	sep := optString(L, 2, "concat", "")
	t := checkTable(L, 1, "concat")
	i := optInt(L, 3, "concat", 1)
	var last int
	if L.Get(4) == lua.LNil {
		last = r.tableLen(L, t)
	} else {
		last = checkInt(L, 4, "concat")
	}
	var parts []string
	add := func(i int) {
		v := t.RawGetInt(i)
		if !isStrNum(v) {
			L.RaiseError("invalid value (at index %d) in table for 'concat'", i)
		}
		s := luaString(v)
		r.chargeBytes(L, len(s)+len(sep))
		parts = append(parts, s)
	}
	m := meter{r: r, L: L}
	for ; i < last; i++ {
		m.tick()
		add(i)
	}
	if i == last {
		add(i)
	}
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}

func (r *runner) tforeachi(L *lua.LState) int {
	t := checkTable(L, 1, "foreachi")
	n := r.tableLen(L, t)
	if _, ok := L.Get(2).(*lua.LFunction); !ok {
		typeError(L, 2, "foreachi", "function")
	}
	f := L.Get(2)
	for i := 1; i <= n; i++ {
		L.Push(f)
		L.Push(lua.LNumber(i))
		L.Push(t.RawGetInt(i))
		L.Call(2, 1)
		if L.Get(-1) != lua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

func (r *runner) tforeach(L *lua.LState) int {
	t := r.unproxy(checkTable(L, 1, "foreach"))
	if _, ok := L.Get(2).(*lua.LFunction); !ok {
		typeError(L, 2, "foreach", "function")
	}
	f := L.Get(2)
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		L.Push(f)
		L.Push(k)
		L.Push(v)
		L.Call(2, 1)
		if L.Get(-1) != lua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

func (r *runner) tmaxn(L *lua.LState) int {
	t := r.unproxy(checkTable(L, 1, "maxn"))
	m := meter{r: r, L: L}
	max := 0.0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		m.tick()
		if n, ok := k.(lua.LNumber); ok && float64(n) > max {
			max = float64(n)
		}
	}
	L.Push(lua.LNumber(max))
	return 1
}

func (r *runner) tinsert(L *lua.LState) int {
	t := checkTable(L, 1, "insert")
	e := r.tableLen(L, t) + 1
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2, "insert")
		if pos > e {
			e = pos
		}
		r.readonlyCheck(L, t)
		if e > pos {
			r.charge(L, int64(e-pos)/bytesPerStep)
		}
		for i := e; i > pos; i-- {
			t.RawSetInt(i, t.RawGetInt(i-1))
		}
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	r.readonlyCheck(L, t)
	v := L.Get(L.GetTop())
	r.growCharge(L, t, lua.LNumber(pos), -1)
	t.RawSetInt(pos, v)
	return 0
}

func (r *runner) tremove(L *lua.LState) int {
	t := checkTable(L, 1, "remove")
	e := r.tableLen(L, t)
	pos := optInt(L, 2, "remove", e)
	if pos < 1 || pos > e {
		return 0
	}
	r.readonlyCheck(L, t)
	r.charge(L, int64(e-pos)/bytesPerStep)
	v := t.RawGetInt(pos)
	for ; pos < e; pos++ {
		t.RawSetInt(pos, t.RawGetInt(pos+1))
	}
	t.RawSetInt(e, lua.LNil)
	L.Push(v)
	return 1
}

// tsort is Lua 5.1's table.sort (its quicksort, so that elements that
// compare equal end up where Redis puts them).
func (r *runner) tsort(L *lua.LState) int {
	t := checkTable(L, 1, "sort")
	n := r.tableLen(L, t)
	var cmp lua.LValue = lua.LNil
	if L.Get(2) != lua.LNil {
		if _, ok := L.Get(2).(*lua.LFunction); !ok {
			typeError(L, 2, "sort", "function")
		}
		cmp = L.Get(2)
	}
	if n > 1 {
		r.readonlyCheck(L, t)
	}
	s := &sorter{r: r, L: L, t: t, cmp: cmp, m: meter{r: r, L: L}}
	s.aux(1, n)
	return 0
}

type sorter struct {
	r   *runner
	L   *lua.LState
	t   *lua.LTable
	cmp lua.LValue
	m   meter
}

func (s *sorter) less(a, b lua.LValue) bool {
	s.m.tick()
	if s.cmp == lua.LNil {
		return s.L.LessThan(a, b)
	}
	s.L.Push(s.cmp)
	s.L.Push(a)
	s.L.Push(b)
	s.L.Call(2, 1)
	res := lua.LVAsBool(s.L.Get(-1))
	s.L.Pop(1)
	return res
}

func (s *sorter) get(i int) lua.LValue    { return s.t.RawGetInt(i) }
func (s *sorter) put(i int, v lua.LValue) { s.t.RawSetInt(i, v) }

func (s *sorter) aux(l, u int) {
	for l < u {
		// sort a[l], a[(l+u)/2] and a[u]
		if al, au := s.get(l), s.get(u); s.less(au, al) {
			s.put(l, au)
			s.put(u, al)
		}
		if u-l == 1 {
			break
		}
		i := (l + u) / 2
		if ai, al := s.get(i), s.get(l); s.less(ai, al) {
			s.put(i, al)
			s.put(l, ai)
		} else if au := s.get(u); s.less(au, ai) {
			s.put(i, au)
			s.put(u, ai)
		}
		if u-l == 2 {
			break
		}
		p := s.get(i)
		s.put(i, s.get(u-1))
		s.put(u-1, p)
		// a[l] <= P == a[u-1] <= a[u]; sort a[l+1..u-2]
		i, j := l, u-1
		for {
			for i++; s.less(s.get(i), p); i++ {
				if i > u {
					s.L.RaiseError("invalid order function for sorting")
				}
			}
			for j--; s.less(p, s.get(j)); j-- {
				if j < l {
					s.L.RaiseError("invalid order function for sorting")
				}
			}
			if j < i {
				break
			}
			ai, aj := s.get(i), s.get(j)
			s.put(i, aj)
			s.put(j, ai)
		}
		au1, ai := s.get(u-1), s.get(i)
		s.put(u-1, ai)
		s.put(i, au1)
		if i-l < u-i {
			j, i, l = l, i-1, i+1
		} else {
			j, i, u = i+1, u, i-1
		}
		s.aux(j, i)
	}
}
