package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/fenced/fenced/reply"
)

// Redis 7 Functions (FUNCTION LOAD, FCALL). A library is Lua code that
// starts "#!lua name=<lib>"; its body runs once at load, in an environment
// that holds only redis.register_function, redis.log, the log levels and
// the version (Redis's function_lua.c), and registers the functions FCALL
// runs with (keys, args) as their two arguments.
//
// Redis runs the body once and keeps the closures it registered, with
// whatever their upvalues hold, in one Lua state for the process. A
// replicated state machine cannot keep Lua heaps in step across replicas,
// restarts and snapshots, so CallFunction runs the library's body again
// before each call, in a fresh environment (the compiled code is cached per
// node, by its SHA-1): a function sees its library as just loaded, on every
// replica alike. The body's steps count towards the call's.

// functionChunk is the name Redis gives a library's code.
const functionChunk = "user_function"

// Bounds of one library, beyond Redis (which has none): what FUNCTION LOAD
// registers is replicated state and must fit one record.
const (
	MaxLibraryFunctions = 4096
	// MaxLibraryMeta bounds the names and descriptions of a library's
	// functions, together.
	MaxLibraryMeta = 1 << 20
)

// The errors of FUNCTION LOAD, in Redis's words.
const (
	errLoadTimeout  = "ERR Error registering functions: ERR FUNCTION LOAD timeout"
	errNoFunctions  = "ERR No functions registered"
	ErrBadName      = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	errRegisterOnly = "redis.register_function can only be called on FUNCTION LOAD command"
)

// Function is one function a library registered.
type Function struct {
	Name    string
	Desc    string
	HasDesc bool // a description was given (FUNCTION LIST answers null otherwise)
	Flags   Flags
}

// Names are the flags' names in Redis's order (scripts_flags_def).
func (f Flags) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// ValidName is Redis's functionsVerifyName: letters, digits and '_', at
// least one. Library and function names follow it.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ParseLibrary reads a library's first line as Redis's
// functionExtractLibMetaData does (split as sdssplitargs splits a shebang,
// ParseShebang's splitter) and checks the name and the engine. It answers
// the library's name and its body (the code from the first line's newline
// on, so that line numbers stay the user's), or Redis's error reply.
func ParseLibrary(code string) (name, body, errReply string) {
	if !strings.HasPrefix(code, "#!") {
		return "", "", "ERR Missing library metadata"
	}
	end := strings.IndexByte(cString(code), '\n')
	if end < 0 {
		return "", "", "ERR Invalid library metadata"
	}
	parts, ok := splitArgs(code[:end])
	if !ok || len(parts) == 0 || len(parts[0]) < 2 {
		return "", "", "ERR Invalid library metadata"
	}
	engine := parts[0][2:]
	named := false
	for _, p := range parts[1:] {
		if len(p) < 5 || !strings.EqualFold(p[:5], "name=") {
			return "", "", "ERR Invalid metadata value given: " + cString(p)
		}
		if named {
			return "", "", "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, named = p[5:], true
	}
	switch {
	case !named:
		return "", "", "ERR Library name was not given"
	case !ValidName(name):
		return "", "", ErrBadName
	case !strings.EqualFold(engine, "lua"):
		return "", "", "ERR Engine '" + engine + "' not found"
	}
	return name, code[end:], ""
}

// compileFunction compiles a library's body, cached apart from scripts
// (the chunk's name differs).
func (e *Engine) compileFunction(body string) (*program, *CompileError) {
	if len(body) > e.lim.MaxSource {
		return nil, &CompileError{Msg: ErrTooLarge}
	}
	key := "f:" + SHA1(body)
	e.mu.Lock()
	ce, ok := e.cache[key]
	e.mu.Unlock()
	if ok {
		return ce.prog, ce.err
	}
	proto, err := compileChunk(body, functionChunk, func(msg string) *CompileError {
		return &CompileError{Msg: oneLine("ERR Error compiling function: " + msg)}
	})
	if err == nil {
		ce = cacheEntry{prog: &program{sha: key, proto: proto}}
	} else {
		ce = cacheEntry{err: err}
	}
	e.mu.Lock()
	if len(e.cache) >= cacheMax {
		clear(e.cache)
	}
	e.cache[key] = ce
	e.mu.Unlock()
	return ce.prog, ce.err
}

// LoadLibrary runs a library's body (ParseLibrary's) as FUNCTION LOAD does
// and answers the functions it registered, in order, and the steps it
// took; or Redis's error reply. maxSteps (if below the engine's limit)
// bounds the run: a FUNCTION RESTORE shares one budget among its libraries.
// A body that runs out of steps answers Redis's load timeout.
func (e *Engine) LoadLibrary(body string, maxSteps int64) (funcs []Function, steps int64, errReply string) {
	prog, cerr := e.compileFunction(body)
	if cerr != nil {
		return nil, 0, cerr.Msg
	}
	r := e.getRunner(nil, 0, "", true)
	defer e.release(r)
	r.chunk = functionChunk
	if maxSteps > 0 && maxSteps < r.lim.MaxSteps {
		r.lim.MaxSteps = maxSteps
	}
	lib, msg := r.loadLibrary(prog)
	defer lib.drop(r)
	if msg != "" {
		return nil, r.steps, msg
	}
	funcs = make([]Function, len(lib.funcs))
	for i, f := range lib.funcs {
		funcs[i] = f.Function
	}
	return funcs, r.steps, ""
}

// CallFunction runs the function name (as registered) of the library
// whose body is body, with keys and args as its two arguments, as FCALL
// does: the body runs first, in a fresh load environment, then the
// function, in the environment of EVAL less the KEYS and ARGV globals. The
// reply and the error texts are Redis's ("... script: <name>, on
// @user_function:N."). seed seeds math.random, as for RunAt.
func (e *Engine) CallFunction(body, name string, keys, args []string, env Env, seed int64) reply.Value {
	prog, cerr := e.compileFunction(body)
	if cerr != nil {
		return reply.Error(cerr.Msg)
	}
	r := e.getRunner(env, seed, name, true)
	defer e.release(r)
	r.chunk = functionChunk
	lib, msg := r.loadLibrary(prog)
	defer lib.drop(r)
	switch {
	case r.exhausted != "":
		return reply.Error(r.exhausted)
	case msg != "":
		return reply.Error(msg)
	}
	for _, f := range lib.funcs {
		if f.Name == name {
			return r.callFunction(lib, f.cb, keys, args)
		}
	}
	return reply.Error("ERR Function not found")
}

// libraryRun is one run of a library's body: its environment and what it
// registered.
type libraryRun struct {
	// env is the functions' globals: an empty read-only proxy that reads
	// through to the load environment, then, once loaded, to EVAL's
	// globals (Redis switches its globals' __index the same way).
	env, envMT *lua.LTable
	// api is the load environment's redis table (a proxy), which a
	// function can keep as an upvalue.
	api   *lua.LTable
	funcs []registered
	meta  int // bytes of names and descriptions
}

type registered struct {
	Function
	cb lua.LValue
}

// drop forgets the run's proxies, so that the runner's intact check sees
// only its own.
func (lib *libraryRun) drop(r *runner) {
	if lib != nil {
		delete(r.proxies, lib.env)
		delete(r.proxies, lib.api)
	}
}

// loadLibrary builds the load environment and runs the body in it. msg is
// FUNCTION LOAD's error reply.
func (r *runner) loadLibrary(prog *program) (*libraryRun, string) {
	L := r.L
	readonly := r.proxyG.Metatable.(*lua.LTable).RawGetString("__newindex")
	missing := r.realG.Metatable.(*lua.LTable).RawGetString("__index")
	lib := &libraryRun{}
	proxy := func(real *lua.LTable) (*lua.LTable, *lua.LTable) {
		p := L.CreateTable(0, 0)
		mt := L.CreateTable(0, 3)
		mt.RawSetString("__index", real)
		mt.RawSetString("__newindex", readonly)
		mt.RawSetString("__metatable", lua.LFalse)
		p.Metatable = mt
		r.proxies[p] = real
		return p, mt
	}
	withMissing := func(t *lua.LTable) *lua.LTable {
		mt := L.CreateTable(0, 1)
		mt.RawSetString("__index", missing)
		t.Metatable = mt
		return t
	}
	api := sortedTable(L, map[string]lua.LValue{
		"register_function": L.NewFunction(func(L *lua.LState) int { return r.registerFunction(L, lib) }),
		"log":               L.NewFunction(r.log),
		"LOG_DEBUG":         lua.LNumber(0), "LOG_VERBOSE": lua.LNumber(1),
		"LOG_NOTICE": lua.LNumber(2), "LOG_WARNING": lua.LNumber(3),
		"REDIS_VERSION": lua.LString(RedisVersion), "REDIS_VERSION_NUM": lua.LNumber(RedisVersionNum),
	})
	lib.api, _ = proxy(withMissing(api))
	loadG := withMissing(sortedTable(L, map[string]lua.LValue{"redis": lib.api}))
	lib.env, lib.envMT = proxy(loadG)

	fn := L.NewFunctionFromProto(prog.proto)
	fn.Env = lib.env
	L.Push(fn)
	for _, h := range r.helpers {
		L.Push(h)
	}
	r.loading = lib
	err := L.PCall(len(r.helpers), 0, r.handler)
	r.loading = nil
	if r.panicked {
		panic(r.envPanic)
	}
	switch {
	case r.exhausted == ErrWorkLimit:
		return lib, errLoadTimeout
	case r.exhausted != "":
		return lib, "ERR Error registering functions: " + r.exhausted
	case err != nil:
		return lib, oneLine("ERR Error registering functions: " + r.scrub(r.loadError(err)))
	case len(lib.funcs) == 0:
		return lib, errNoFunctions
	}
	return lib, ""
}

// loadError is the message Redis's luaExtractErrorInformation takes from
// an error of the load run: the error table's err, "(null)" without one.
func (r *runner) loadError(err error) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR " + err.Error()
	}
	switch o := ae.Object.(type) {
	case *lua.LTable:
		if v := o.RawGetString("err"); isStrNum(v) {
			return luaString(v)
		}
		return "(null)"
	case lua.LString:
		return "ERR " + string(o)
	default:
		return "ERR " + r.plainString(o)
	}
}

// callFunction calls cb(keys, args) with the globals switched to EVAL's.
func (r *runner) callFunction(lib *libraryRun, cb lua.LValue, keys, args []string) reply.Value {
	L := r.L
	lib.envMT.RawSetString("__index", r.realG)
	r.proxies[lib.env] = r.realG
	// A function has no KEYS and ARGV globals (release puts them back).
	r.realG.RawSetString("KEYS", lua.LNil)
	r.realG.RawSetString("ARGV", lua.LNil)
	L.Push(cb)
	L.Push(r.array(keys))
	L.Push(r.array(args))
	return r.pcallReply(2)
}

// registerFunction is redis.register_function (function_lua.c's
// luaRegisterFunction): positional (name, callback) or named arguments
// {function_name=, callback=, flags=, description=}.
func (r *runner) registerFunction(L *lua.LState, lib *libraryRun) int {
	if r.loading != lib {
		raise(L, errRegisterOnly)
	}
	var f registered
	switch argc := L.GetTop(); {
	case argc < 1 || argc > 2:
		raise(L, "wrong number of arguments to redis.register_function")
	case argc == 1:
		r.namedArgs(L, &f)
	default:
		if !isStrNum(L.Get(1)) {
			raise(L, "first argument to redis.register_function must be a string")
		}
		if L.Get(2).Type() != lua.LTFunction {
			raise(L, "second argument to redis.register_function must be a function")
		}
		f.Name, f.cb = luaString(L.Get(1)), L.Get(2)
	}
	if !ValidName(f.Name) {
		raise(L, ErrBadName[len("ERR "):])
	}
	for _, g := range lib.funcs {
		// Redis compares case-sensitively here but looks functions up
		// case-insensitively, and asserts (crashes) when it unlinks a
		// library that holds both "f" and "F": refused instead.
		if strings.EqualFold(g.Name, f.Name) {
			raise(L, "Function already exists in the library")
		}
	}
	if len(lib.funcs) >= MaxLibraryFunctions {
		raise(L, "a library may register at most 4096 functions")
	}
	lib.meta += len(f.Name) + len(f.Desc)
	if lib.meta > MaxLibraryMeta {
		raise(L, "a library's function names and descriptions may take at most 1 MiB")
	}
	r.chargeBytes(L, len(f.Name)+len(f.Desc))
	lib.funcs = append(lib.funcs, f)
	return 0
}

// namedArgs reads register_function's table of named arguments in the
// table's order, as Redis does (lua_next), raising the first error met.
func (r *runner) namedArgs(L *lua.LState, f *registered) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
	}
	t = r.unproxy(t)
	named := false
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		r.charge(L, 1)
		if !isStrNum(k) {
			raise(L, "named argument key given to redis.register_function is not a string")
		}
		switch strings.ToLower(cString(luaString(k))) {
		case "function_name":
			if !isStrNum(v) {
				raise(L, "function_name argument given to redis.register_function must be a string")
			}
			f.Name, named = luaString(v), true
		case "description":
			if !isStrNum(v) {
				raise(L, "description argument given to redis.register_function must be a string")
			}
			f.Desc, f.HasDesc = luaString(v), true
		case "callback":
			if v.Type() != lua.LTFunction {
				raise(L, "callback argument given to redis.register_function must be a function")
			}
			f.cb = v
		case "flags":
			ft, ok := v.(*lua.LTable)
			if !ok {
				raise(L, "flags argument to redis.register_function must be a table representing function flags")
			}
			flags, ok := r.readFlags(L, r.unproxy(ft))
			if !ok {
				raise(L, "unknown flag given")
			}
			f.Flags = flags
		default:
			raise(L, "unknown argument given to redis.register_function")
		}
	}
	if !named {
		raise(L, "redis.register_function must get a function name argument")
	}
	if f.cb == nil {
		raise(L, "redis.register_function must get a callback argument")
	}
}

// readFlags reads flags[1], flags[2], ... up to the first nil: each a
// flag's name, in any case.
func (r *runner) readFlags(L *lua.LState, t *lua.LTable) (Flags, bool) {
	var flags Flags
	for j := 1; ; j++ {
		r.charge(L, 1)
		v := t.RawGetInt(j)
		if v == lua.LNil {
			return flags, true
		}
		if !isStrNum(v) {
			return 0, false
		}
		name, found := cString(luaString(v)), false
		for _, fn := range flagNames {
			if strings.EqualFold(fn.name, name) {
				flags |= fn.flag
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
}
