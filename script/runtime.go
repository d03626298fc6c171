package script

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/fenced/fenced/reply"
)

// The Lua state's own bounds. Deep recursion ends with Lua's "stack
// overflow" error (a reply), never a Go panic: gopher-lua checks its fixed
// call stack and its registry before each push. (Its growing call stack,
// MinimizeStackMemory, never reports itself full and panics instead.)
const (
	callStackSize   = 500
	registrySize    = 1024
	registryMaxSize = 1 << 18
	registryGrow    = 1024
)

// bytesPerStep is how many bytes of string building (or characters of
// pattern matching) cost one step.
const bytesPerStep = 16

// Costs, in steps, of things that take much longer than a VM instruction.
const (
	errorCost  = 64 // raising an error that pcall catches (a Go panic)
	namingCost = 16 // tostring of a new table or function
)

// runner is one run of one script: a Lua state with the sandboxed
// libraries, the counters and the deterministic replacements.
//
// Building the sandbox costs far more than running a lock script, so
// runners are pooled. A state goes back to the pool only if intact() finds
// everything a script could reach exactly as setup left it (and the run did
// not end in a Go panic): a script cannot leave anything behind for the
// next one, so a pooled state and a fresh one give the same results.
type runner struct {
	L   *lua.LState
	env Env
	lim Limits
	sha string
	// chunk is the name errors give the code: user_script, or
	// user_function for a library's (functions.go).
	chunk string
	// loading is the library whose body is running (functions.go):
	// redis.register_function works only then.
	loading *libraryRun

	steps, calls int64
	byteDebt     int64 // bytes not yet charged (less than bytesPerStep)
	// exhausted is the limit error once a limit is reached; every later
	// step fails with it and Run answers it.
	exhausted string
	envPanic  any
	panicked  bool

	resp int // 2, or 3 after redis.setresp(3)
	rng  rand48

	// libs is set for the sandboxes of cluster version 3 on, which have
	// Redis 7's cjson, cmsgpack, bit and struct; json is the global cjson's
	// settings (reset for each run) and jsonNull is cjson.null.
	libs     bool
	json     jsonConfig
	jsonNull *lua.LUserData

	// Deterministic names for tostring of tables and functions: a per-run
	// sequence number instead of an address. named keeps the objects alive
	// so that an address is never reused for another object within a run.
	named  map[lua.LValue]int
	byAddr map[string]int
	nextID int

	// proxies maps each read-only proxy (_G, string, table, math, redis) to
	// the table behind it; realG is the table behind _G.
	proxies map[*lua.LTable]*lua.LTable
	proxyG  *lua.LTable
	realG   *lua.LTable
	strMT   *lua.LTable
	proxyMT map[*lua.LTable]lua.LValue
	// emptyKeys and emptyArgv hold KEYS and ARGV between runs.
	emptyKeys, emptyArgv *lua.LTable
	// snapshot is every table setup made, with its contents, for
	// intactFull.
	snapshot []tableState

	helpers []lua.LValue
	handler *lua.LFunction
	// transparent are the Go functions that stand in for the VM.
	transparent map[*lua.LFunction]bool
}

func (e *Engine) getRunner(env Env, seed int64, sha string, libs bool) *runner {
	pool := &e.pool
	if libs {
		pool = &e.pool3
	}
	r, _ := pool.Get().(*runner)
	if r == nil {
		r = newRunner(libs)
	}
	r.resetLibs()
	r.env, r.lim, r.sha, r.chunk = env, e.lim, sha, chunkName
	r.steps, r.calls, r.byteDebt = 0, 0, 0
	r.exhausted, r.envPanic, r.panicked = "", nil, false
	r.resp = 2
	r.named, r.byAddr, r.nextID = nil, nil, 0
	r.rng.seed(seed)
	return r
}

// release returns the runner to the pool if the script left no trace.
func (e *Engine) release(r *runner) {
	r.env, r.named, r.byAddr = nil, nil, nil
	r.L.SetTop(0)
	r.realG.RawSetString("KEYS", r.emptyKeys)
	r.realG.RawSetString("ARGV", r.emptyArgv)
	ok := !r.panicked && r.intact()
	if ok && e.verify && !r.intactFull() {
		panic("script: a script changed the sandbox behind the checks of intact")
	}
	if !ok {
		r.L.Close()
		return
	}
	if r.libs {
		e.pool3.Put(r)
		return
	}
	e.pool.Put(r)
}

func newRunner(libs bool) *runner {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     registrySize,
		RegistryMaxSize:  registryMaxSize,
		RegistryGrowStep: registryGrow,
	})
	r := &runner{L: L, resp: 2, libs: libs, proxies: make(map[*lua.LTable]*lua.LTable)}
	r.setup()
	return r
}

// tableState is a table and what it held after setup.
type tableState struct {
	t  *lua.LTable
	mt lua.LValue
	kv []lua.LValue
}

func contents(t *lua.LTable) []lua.LValue {
	var kv []lua.LValue
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		kv = append(kv, k, v)
	}
	return kv
}

func (r *runner) snap(tables ...*lua.LTable) {
	for _, t := range tables {
		r.snapshot = append(r.snapshot, tableState{t: t, mt: t.Metatable, kv: contents(t)})
	}
}

// intact reports whether what a script can reach is as setup left it: the
// environment, _G, and the read-only proxies (still empty, still with their
// metatables). The tables behind the proxies, the proxies' metatables and
// the string metatable cannot be reached at all (getmetatable answers false
// for them, getfenv answers the proxy, there is no debug library);
// intactFull checks that claim in the tests.
func (r *runner) intact() bool {
	L := r.L
	if L.Env != r.proxyG || L.G.Global != r.proxyG || L.GetTop() != 0 {
		return false
	}
	for p := range r.proxies {
		if p.Metatable != r.proxyMT[p] {
			return false
		}
		if k, _ := p.Next(lua.LNil); k != lua.LNil {
			return false
		}
	}
	return true
}

// intactFull compares every table setup made with its snapshot.
func (r *runner) intactFull() bool {
	if !r.intact() || r.L.GetMetatable(lua.LString("")) != lua.LFalse {
		return false
	}
	for _, s := range r.snapshot {
		if s.t.Metatable != s.mt {
			return false
		}
		kv := contents(s.t)
		if len(kv) != len(s.kv) {
			return false
		}
		for i := range kv {
			if kv[i] != s.kv[i] {
				return false
			}
		}
	}
	return true
}

// charge adds n steps and stops the script when the budget is spent.
func (r *runner) charge(L *lua.LState, n int64) {
	r.steps += n
	if r.steps > r.lim.MaxSteps {
		r.exhaust(ErrWorkLimit)
	}
	if r.exhausted != "" {
		r.stop(L)
	}
}

// chargeBytes charges for building or scanning n bytes: a step per
// bytesPerStep, the remainder carried to the next charge.
func (r *runner) chargeBytes(L *lua.LState, n int) {
	r.byteDebt += int64(n)
	if r.byteDebt >= bytesPerStep {
		r.charge(L, r.byteDebt/bytesPerStep)
		r.byteDebt %= bytesPerStep
	} else if r.exhausted != "" {
		r.stop(L)
	}
}

func (r *runner) exhaust(msg string) {
	if r.exhausted == "" {
		r.exhausted = msg
	}
}

// stop raises the limit error (a script may catch it, but every later step
// raises it again and Run answers it regardless).
func (r *runner) stop(L *lua.LState) {
	L.RaiseError("%s", r.exhausted)
}

// The hidden helpers the instrumentation calls (see instrument.go).

// step is (step)(n): n is the static cost of the body it starts.
func (r *runner) step(L *lua.LState) int {
	n, _ := L.Get(1).(lua.LNumber)
	r.steps += int64(n)
	if r.steps > r.lim.MaxSteps {
		r.exhaust(ErrWorkLimit)
	}
	if r.exhausted != "" {
		r.stop(L)
	}
	return 0
}

func isStrNum(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// luaString is lua_tolstring for a string or number.
func luaString(v lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return fmtNumber(float64(x))
	}
	return ""
}

// cat concatenates its arguments as Lua 5.1's luaV_concat does: from the
// right, a run of strings and numbers at once, __concat for anything else.
func (r *runner) cat(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		return 0
	}
	vals := make([]lua.LValue, n)
	for i := range vals {
		vals[i] = L.Get(i + 1)
	}
	top := n
	for top > 1 {
		a, b := vals[top-2], vals[top-1]
		if !isStrNum(a) || !isStrNum(b) {
			vals[top-2] = r.concatMeta(L, a, b)
			top--
			continue
		}
		k := 2
		for k < top && isStrNum(vals[top-k-1]) {
			k++
		}
		parts := make([]string, k)
		total := 0
		for j := range parts {
			parts[j] = luaString(vals[top-k+j])
			total += len(parts[j])
		}
		r.chargeBytes(L, total)
		vals[top-k] = lua.LString(strings.Join(parts, ""))
		top -= k - 1
	}
	L.Push(vals[0])
	return 1
}

func (r *runner) concatMeta(L *lua.LState, a, b lua.LValue) lua.LValue {
	tm := L.GetMetaField(a, "__concat")
	if tm == lua.LNil {
		tm = L.GetMetaField(b, "__concat")
	}
	if tm == lua.LNil {
		bad := a
		if isStrNum(a) {
			bad = b
		}
		L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
	}
	L.Push(tm)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	v := L.Get(-1)
	L.Pop(1)
	return v
}

// arrayLen is the length of a table's array part (which gopher-lua does not
// export), read by reflection; it is what an assignment past the end fills.
// The same for the order of its hash keys (keys, and k2i: key -> index),
// which is how next() walks it.
var arrayField, keysField, k2iField = tableField("array"), tableField("keys"), tableField("k2i")

func tableField(name string) int {
	f, ok := reflect.TypeOf(lua.LTable{}).FieldByName(name)
	if !ok {
		panic("script: gopher-lua's LTable has no field " + name)
	}
	return f.Index[0]
}

func arrayLen(t *lua.LTable) int {
	return reflect.ValueOf(t).Elem().Field(arrayField).Len()
}

// iterPos is k's place in the order next() walks t: the array part, then
// the hash keys in insertion order. nil is before the first, -1.
func iterPos(t *lua.LTable, k lua.LValue, alen int) int {
	if k == lua.LNil {
		return -1
	}
	if n, ok := k.(lua.LNumber); ok {
		f := float64(n)
		if f >= 1 && f < float64(lua.MaxArrayIndex) && f == math.Trunc(f) && int(f) <= alen {
			return int(f) - 1
		}
	}
	m := reflect.ValueOf(t).Elem().Field(k2iField)
	if m.IsNil() {
		return alen
	}
	i := m.MapIndex(reflect.ValueOf(&k).Elem())
	if !i.IsValid() {
		return alen
	}
	return alen + int(i.Int())
}

// iterEnd is the position after the last.
func iterEnd(t *lua.LTable, alen int) int {
	return alen + reflect.ValueOf(t).Elem().Field(keysField).Len()
}

// growCharge charges for the array slots that setting t[key] appends.
func (r *runner) growCharge(L *lua.LState, t *lua.LTable, key lua.LValue, have int) {
	n, ok := key.(lua.LNumber)
	if !ok {
		return
	}
	f := float64(n)
	if f < 1 || f >= float64(lua.MaxArrayIndex) || f != math.Trunc(f) {
		return
	}
	if have < 0 {
		have = arrayLen(t)
	}
	if gap := int64(f) - 1 - int64(have); gap > 0 {
		r.charge(L, gap)
	}
}

// set is t[k] = v as the VM's SETTABLE does it (gopher-lua's setField),
// charging for array growth first.
func (r *runner) set(L *lua.LState) int {
	cur, key, val := L.Get(1), L.Get(2), L.Get(3)
	r.longKey(L, key)
	for i := 0; i < lua.MaxTableGetLoop; i++ {
		tb, isTable := cur.(*lua.LTable)
		if isTable && tb.RawGet(key) != lua.LNil {
			L.RawSet(tb, key, val)
			return 0
		}
		mi := L.GetMetaField(cur, "__newindex")
		if mi == lua.LNil {
			if !isTable {
				L.RaiseError("attempt to index a non-table object(%v) with key '%s'", cur.Type().String(), r.scrub(key.String()))
			}
			r.growCharge(L, tb, key, -1)
			L.RawSet(tb, key, val)
			return 0
		}
		if fn, ok := mi.(*lua.LFunction); ok {
			L.Push(fn)
			L.Push(cur)
			L.Push(key)
			L.Push(val)
			L.Call(3, 0)
			return 0
		}
		cur = mi
	}
	L.RaiseError("too many recursions in settable")
	return 0
}

// key passes a constructor's [k] key through, charging for the array slots
// the new table (which has npos positional fields before it) would grow by.
func (r *runner) key(L *lua.LState) int {
	k := L.Get(1)
	r.longKey(L, k)
	npos, _ := L.Get(2).(lua.LNumber)
	r.growCharge(L, nil, k, int(npos))
	L.Push(k)
	return 1
}

// longKey charges for hashing or comparing a long string.
func (r *runner) longKey(L *lua.LState, k lua.LValue) {
	if s, ok := k.(lua.LString); ok && len(s) > shortKey {
		r.chargeBytes(L, len(s))
	}
}

// get is t[k] as the VM's GETTABLE does it.
func (r *runner) get(L *lua.LState) int {
	k := L.Get(2)
	r.longKey(L, k)
	L.Push(L.GetTable(L.Get(1), k))
	return 1
}

// length is #x as in Lua 5.1: a string's length, a table's border (without
// __len), __len for other values.
func (r *runner) length(L *lua.LState) int {
	switch x := L.Get(1).(type) {
	case lua.LString:
		L.Push(lua.LNumber(len(x)))
	case *lua.LTable:
		L.Push(lua.LNumber(r.tableLen(L, x)))
	default:
		tm := L.GetMetaField(x, "__len")
		if tm == lua.LNil {
			L.RaiseError("attempt to get length of a %s value", x.Type().String())
		}
		L.Push(tm)
		L.Push(x)
		L.Call(1, 1)
	}
	return 1
}

// tableLen is t's border, charging a step per 4 trailing nils gopher-lua
// scans to find it.
func (r *runner) tableLen(L *lua.LState, t *lua.LTable) int {
	n := t.Len()
	if alen := arrayLen(t); alen-n >= 4 {
		r.charge(L, int64(alen-n)/4)
	}
	return n
}

// num converts an arithmetic operand that is a string, as Lua 5.1 does
// (luaO_str2d); other values go through unchanged.
func (r *runner) num(L *lua.LState) int {
	v := L.Get(1)
	if s, ok := v.(lua.LString); ok {
		r.chargeBytes(L, len(s))
		f, ok := str2number(string(s))
		if !ok {
			L.RaiseError("attempt to perform arithmetic on a string value")
		}
		L.Push(lua.LNumber(f))
		return 1
	}
	L.Push(v)
	return 1
}

// rel is a comparison (op is one of == ~= < <= > >=), with Lua 5.1's rules.
func (r *runner) rel(L *lua.LState) int {
	op, _ := L.Get(1).(lua.LString)
	a, b := L.Get(2), L.Get(3)
	if sa, ok := a.(lua.LString); ok {
		if sb, ok := b.(lua.LString); ok && len(sa) > shortKey && len(sb) > shortKey {
			r.chargeBytes(L, min(len(sa), len(sb)))
		}
	}
	var res bool
	switch op {
	case "==":
		res = r.equal(L, a, b)
	case "~=":
		res = !r.equal(L, a, b)
	case "<":
		res = r.lessThan(L, a, b)
	case ">":
		res = r.lessThan(L, b, a)
	case "<=":
		res = r.lessEqual(L, a, b)
	case ">=":
		res = r.lessEqual(L, b, a)
	default:
		L.RaiseError("unknown comparison %q", string(op))
	}
	L.Push(lua.LBool(res))
	return 1
}

// compTM is Lua 5.1's get_compTM: the metamethod both operands share.
func compTM(L *lua.LState, a, b lua.LValue, event string) lua.LValue {
	tm1 := L.GetMetaField(a, event)
	if tm1 == lua.LNil {
		return lua.LNil
	}
	tm2 := L.GetMetaField(b, event)
	if tm2 == lua.LNil || tm1 != tm2 {
		return lua.LNil
	}
	return tm1
}

func callTM(L *lua.LState, tm, a, b lua.LValue) bool {
	L.Push(tm)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	res := lua.LVAsBool(L.Get(-1))
	L.Pop(1)
	return res
}

func (r *runner) equal(L *lua.LState, a, b lua.LValue) bool {
	if a.Type() != b.Type() {
		return false
	}
	if a == b {
		return true
	}
	switch a.(type) {
	case *lua.LTable, *lua.LUserData:
		if tm := compTM(L, a, b, "__eq"); tm != lua.LNil {
			return callTM(L, tm, a, b)
		}
	}
	return false
}

func orderError(L *lua.LState, a, b lua.LValue) {
	t1, t2 := a.Type().String(), b.Type().String()
	if t1 == t2 {
		L.RaiseError("attempt to compare two %s values", t1)
	}
	L.RaiseError("attempt to compare %s with %s", t1, t2)
}

func (r *runner) lessThan(L *lua.LState, a, b lua.LValue) bool {
	if a.Type() == b.Type() {
		switch x := a.(type) {
		case lua.LNumber:
			return x < b.(lua.LNumber)
		case lua.LString:
			return x < b.(lua.LString)
		}
		if tm := compTM(L, a, b, "__lt"); tm != lua.LNil {
			return callTM(L, tm, a, b)
		}
	}
	orderError(L, a, b)
	return false
}

func (r *runner) lessEqual(L *lua.LState, a, b lua.LValue) bool {
	if a.Type() == b.Type() {
		switch x := a.(type) {
		case lua.LNumber:
			return x <= b.(lua.LNumber)
		case lua.LString:
			return x <= b.(lua.LString)
		}
		if tm := compTM(L, a, b, "__le"); tm != lua.LNil {
			return callTM(L, tm, a, b)
		}
		if tm := compTM(L, b, a, "__lt"); tm != lua.LNil {
			return !callTM(L, tm, b, a)
		}
	}
	orderError(L, a, b)
	return false
}

// run calls the program and converts its result.
func (r *runner) run(prog *program, keys, argv []string) reply.Value {
	L := r.L
	r.setGlobalArray("KEYS", keys)
	r.setGlobalArray("ARGV", argv)
	fn := L.NewFunctionFromProto(prog.proto)
	fn.Env = r.proxyG
	L.Push(fn)
	for _, h := range r.helpers {
		L.Push(h)
	}
	return r.pcallReply(len(r.helpers))
}

// pcallReply calls the function below nargs arguments on the stack and
// converts its result: a panic of the environment goes on up, a work limit
// reached (during the call or the conversion) is the script's error.
func (r *runner) pcallReply(nargs int) reply.Value {
	err := r.L.PCall(nargs, 1, r.handler)
	if r.panicked {
		panic(r.envPanic)
	}
	if r.exhausted != "" {
		return reply.Error(r.exhausted)
	}
	if err != nil {
		return r.errorReply(err)
	}
	rep := r.toReply(r.L.Get(-1), 0)
	if r.exhausted != "" {
		return reply.Error(r.exhausted)
	}
	return rep
}

// array is vals as a Lua array.
func (r *runner) array(vals []string) *lua.LTable {
	t := r.L.CreateTable(len(vals), 0)
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

func (r *runner) setGlobalArray(name string, vals []string) {
	t := r.array(vals)
	r.realG.RawSetString(name, t)
}

// errHandler is Redis's __redis__err__handler: it turns the error into a
// table {err=..., source=..., line=...}, taking the line from the function
// that raised the error, or from its caller when that is a Go function.
// Frames of the functions that stand in for the VM (the instrumentation's
// helpers, the read-only and missing-global metamethods) do not count: in
// Redis those errors come from the VM itself.
func (r *runner) errHandler(L *lua.LState) int {
	obj := L.Get(1)
	var source string
	line := -1
	level := 1
	if dbg, ok := r.frame(L, &level); ok {
		if dbg.What == "G" {
			level++
			if d2, ok := r.frame(L, &level); ok {
				dbg = d2
			}
		}
		source, line = "=[C]", dbg.CurrentLine
		if dbg.What != "G" {
			source = "@" + r.chunk
		}
	}
	t, ok := obj.(*lua.LTable)
	if !ok {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+r.tostring(L, obj)))
	}
	if source != "" {
		t.RawSetString("source", lua.LString(source))
		t.RawSetString("line", lua.LNumber(line))
	}
	L.Push(t)
	return 1
}

// frame is the stack frame at *level or above that is not one of the
// transparent functions; *level is left at it.
func (r *runner) frame(L *lua.LState, level *int) (*lua.Debug, bool) {
	for ; ; *level++ {
		dbg, ok := L.GetStack(*level)
		if !ok {
			return nil, false
		}
		fn, err := L.GetInfo("Slf", dbg, lua.LNil)
		if err != nil {
			return nil, false
		}
		if f, ok := fn.(*lua.LFunction); !ok || !r.transparent[f] {
			return dbg, true
		}
	}
}

// where is luaL_where: "user_script:N: " for a Lua function at level
// (1 = the caller of the running Go function, transparent frames not
// counted), "" otherwise.
func (r *runner) where(L *lua.LState, level int) string {
	at := 1
	for n := 1; ; n++ {
		dbg, ok := r.frame(L, &at)
		if !ok {
			return ""
		}
		if n == level {
			if dbg.What == "G" || dbg.CurrentLine <= 0 {
				return ""
			}
			return fmt.Sprintf("%s:%d: ", r.chunk, dbg.CurrentLine)
		}
		at++
	}
}

var posPrefix = regexp.MustCompile(`^(` + chunkName + `|` + functionChunk + `):(\d+): `)

// errorReply builds the reply for an error that ended the script, as
// Redis's luaCallFunction does: "<err> script: <sha>, on <source>:<line>."
func (r *runner) errorReply(err error) reply.Value {
	var obj lua.LValue
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	} else {
		obj = lua.LString(err.Error())
	}
	var msg, source, line string
	switch o := obj.(type) {
	case *lua.LTable:
		if v := o.RawGetString("err"); isStrNum(v) {
			msg = luaString(v)
		} else {
			// Redis (before 8.2) crashes on an error table without err.
			msg = "ERR unknown error"
		}
		if v := o.RawGetString("source"); isStrNum(v) {
			source = luaString(v)
		}
		if v := o.RawGetString("line"); isStrNum(v) {
			line = luaString(v)
		}
	case lua.LString:
		// The handler could not run (the call stack was full): rebuild
		// what it would have made from the position in the message.
		msg = "ERR " + string(o)
		if m := posPrefix.FindStringSubmatch(string(o)); m != nil {
			source, line = "@"+m[1], m[2]
		}
	default:
		msg = "ERR " + r.plainString(obj)
	}
	if source != "" && line != "" {
		msg += " script: " + r.sha + ", on " + source + ":" + line + "."
	}
	return reply.Error(oneLine(r.scrub(msg)))
}

// Deterministic tostring.

var typeNames = map[lua.LValueType]string{
	lua.LTTable: "table", lua.LTFunction: "function", lua.LTUserData: "userdata",
	lua.LTThread: "thread", lua.LTChannel: "channel",
}

// objectName is "table: 0x0000000N" for the N-th object named in this run.
// Naming an object keeps it alive until the run ends, so each new name
// costs namingCost steps.
func (r *runner) objectName(v lua.LValue) string {
	id, ok := r.named[v]
	if !ok {
		r.steps += namingCost
		addr := fmt.Sprintf("%p", v)
		if id, ok = r.byAddr[addr]; !ok {
			r.nextID++
			id = r.nextID
			if r.byAddr == nil {
				r.byAddr = make(map[string]int)
			}
			r.byAddr[addr] = id
		}
		if r.named == nil {
			r.named = make(map[lua.LValue]int)
		}
		r.named[v] = id
	}
	return fmt.Sprintf("%s: 0x%08x", typeNames[v.Type()], id)
}

// plainString is tostring without metamethods.
func (r *runner) plainString(v lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return fmtNumber(float64(x))
	case lua.LBool:
		if x {
			return "true"
		}
		return "false"
	case *lua.LNilType:
		return "nil"
	case *lua.LUserData:
		if x == r.jsonNull {
			return "userdata: (nil)" // glibc's %p of NULL
		}
	}
	return r.objectName(v)
}

// tostring is Lua 5.1's tostring: __tostring first.
func (r *runner) tostring(L *lua.LState, v lua.LValue) string {
	if tm := L.GetMetaField(v, "__tostring"); tm != lua.LNil {
		L.Push(tm)
		L.Push(v)
		L.Call(1, 1)
		res := L.Get(-1)
		L.Pop(1)
		if isStrNum(res) {
			return luaString(res)
		}
		return r.plainString(res)
	}
	return r.plainString(v)
}

// gopher-lua prints addresses in a few of its own messages (a table used
// as a key in "attempt to index ... with key 'table: 0x...'"); scrub gives
// them the same per-run names as tostring.
var addrPattern = regexp.MustCompile(`\b(table|function|userdata|thread|channel): (0x[0-9a-f]{9,})`)

func (r *runner) scrub(s string) string {
	if !strings.Contains(s, ": 0x") {
		return s
	}
	return addrPattern.ReplaceAllStringFunc(s, func(m string) string {
		typ, addr, _ := strings.Cut(m, ": ")
		id, ok := r.byAddr[addr]
		if !ok {
			r.nextID++
			id = r.nextID
			if r.byAddr == nil {
				r.byAddr = make(map[string]int)
			}
			r.byAddr[addr] = id
		}
		return fmt.Sprintf("%s: 0x%08x", typ, id)
	})
}

// rand48 is Redis's redisLrand48 (the POSIX lrand48 generator), so that a
// seed gives the same sequence as Redis on every machine.
type rand48 struct{ x uint64 }

const mask48 = 1<<48 - 1

func (g *rand48) seed(s int64) { g.x = (uint64(uint32(s))<<16 | 0x330E) & mask48 }

func (g *rand48) next() int32 {
	g.x = (0x5DEECE66D*g.x + 0xB) & mask48
	return int32(g.x >> 17)
}
