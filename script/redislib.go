package script

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/fenced/fenced/reply"
)

// The version a script reads in redis.REDIS_VERSION, the same the server's
// INFO reports.
const (
	RedisVersion    = "7.4.0"
	RedisVersionNum = 0x00070400
)

// openRedis builds the redis table (Redis 7's script_lua.c).
func (r *runner) openRedis() *lua.LTable {
	L := r.L
	t := sortedFuncs(L, map[string]lua.LGFunction{
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"call":               func(L *lua.LState) int { return r.redisCall(L, true) },
		"debug":              func(L *lua.LState) int { return 0 },
		"error_reply":        r.errorReplyFn,
		"log":                r.log,
		"pcall":              func(L *lua.LState) int { return r.redisCall(L, false) },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"set_repl":           r.setRepl,
		"setresp":            r.setresp,
		"sha1hex":            r.sha1hex,
		"status_reply":       r.statusReply,
	})
	if r.libs {
		t.RawSetString("acl_check_cmd", L.NewFunction(r.aclCheckCmd))
	}
	for _, c := range []struct {
		name string
		v    lua.LValue
	}{
		{"LOG_DEBUG", lua.LNumber(0)}, {"LOG_NOTICE", lua.LNumber(2)},
		{"LOG_VERBOSE", lua.LNumber(1)}, {"LOG_WARNING", lua.LNumber(3)},
		{"REDIS_VERSION", lua.LString(RedisVersion)}, {"REDIS_VERSION_NUM", lua.LNumber(RedisVersionNum)},
		{"REPL_ALL", lua.LNumber(3)}, {"REPL_AOF", lua.LNumber(1)}, {"REPL_NONE", lua.LNumber(0)},
		{"REPL_REPLICA", lua.LNumber(2)}, {"REPL_SLAVE", lua.LNumber(2)},
	} {
		t.RawSetString(c.name, c.v)
	}
	return t
}

// raise raises {err = "ERR msg"} as Redis's luaPushError + luaError do.
func raise(L *lua.LState, msg string) {
	L.Error(errTable(L, msg), 0)
}

// redisCall is redis.call (raise) and redis.pcall.
func (r *runner) redisCall(L *lua.LState, raiseErrors bool) int {
	r.charge(L, 1)
	r.calls++
	if r.calls > r.lim.MaxCalls {
		r.exhaust(ErrCallLimit)
		r.stop(L)
	}
	fail := func(msg string) int {
		t := errTable(L, msg)
		if raiseErrors {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	args, msg := callArgs(L)
	if msg != "" {
		return fail(msg)
	}
	rep := r.envCall(L, args)
	v := r.toLua(L, rep)
	if raiseErrors && rep.Kind == reply.KindError {
		L.Error(v, 0)
	}
	L.Push(v)
	return 1
}

// callArgs is the command a redis lib call names (Redis's
// luaArgsToRedisArgv), or the error that refuses it.
func callArgs(L *lua.LState) (args []string, msg string) {
	argc := L.GetTop()
	if argc == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	args = make([]string, argc)
	for i := range args {
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			args[i] = string(v)
		case lua.LNumber:
			args[i] = fmtArg(float64(v))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

// aclCheckCmd is redis.acl_check_cmd (Redis 7): whether the script's user
// may run the command, as the ACL rules decide; an unknown command is an
// error.
func (r *runner) aclCheckCmd(L *lua.LState) int {
	r.charge(L, 1)
	args, msg := callArgs(L)
	if msg != "" {
		raise(L, msg)
	}
	allowed, known := r.env.ACLCheck(args)
	if !known {
		raise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// envCall runs the command; a panic in Env is kept and re-raised by Run
// once the Lua state is unwound (the script is stopped at once).
func (r *runner) envCall(L *lua.LState, args []string) (rep reply.Value) {
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.envPanic, r.panicked = p, true
			}
		}()
		rep = r.env.Call(args)
	}()
	if r.panicked {
		r.exhaust("ERR command panicked")
		r.stop(L)
	}
	return rep
}

func (r *runner) sha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "wrong number of arguments")
	}
	s := luaString(L.Get(1))
	r.chargeBytes(L, len(s))
	L.Push(lua.LString(SHA1(s)))
	return 1
}

func (r *runner) errorReplyFn(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	e := string(s)
	if len(e) == 0 || e[0] != '-' {
		e = "-" + e
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(errBuff(e)))
	L.Push(t)
	return 1
}

func (r *runner) statusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// log checks its arguments as Redis does and writes nothing: a replicated
// state machine replays scripts, so logging belongs to the server.
func (r *runner) log(L *lua.LState) int {
	if L.GetTop() < 2 {
		raise(L, "redis.log() requires two arguments or more.")
	}
	level, ok := toNumber(L.Get(1))
	if !ok {
		raise(L, "First argument must be a number (log level).")
	}
	if l := toInt(level); l < 0 || l > 3 {
		raise(L, "Invalid debug level.")
	}
	return 0
}

func (r *runner) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.setresp() requires one argument.")
	}
	n, _ := toNumber(L.Get(1))
	resp := toInt(n)
	if resp != 2 && resp != 3 {
		raise(L, "RESP version must be 2 or 3.")
	}
	r.resp = resp
	return 0
}

// setRepl checks its argument and does nothing: effects are replicated
// through the log, not by the script.
func (r *runner) setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.set_repl() requires two arguments.")
	}
	n, _ := toNumber(L.Get(1))
	if toInt(n)&^3 != 0 {
		raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}
