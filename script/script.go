// Package script runs a Redis Lua script (EVAL semantics) deterministically
// inside the replicated state machine, in an embedded Lua 5.1 (gopher-lua).
//
// Every replica that runs the same source with the same KEYS, ARGV, seed,
// limits and command replies gets the same reply and issues the same
// commands, because:
//
//   - only the base, table, string and math libraries exist (no os, io,
//     debug, coroutine, package, require, load, loadstring, dofile,
//     loadfile, print, string.dump), and from cluster version 3
//     (LibsVersion) Redis's cjson, cmsgpack, bit and struct, written here
//     in Go (cjson.go, cmsgpack.go, bitlib.go, structlib.go), whose
//     settings (cjson.encode_max_depth ...) last for one run;
//   - math.random is Redis's rand48, seeded from the caller's seed;
//   - tostring of a table or function prints a per-run sequence number, not
//     an address; collectgarbage and gcinfo are inert;
//   - the work a script may do is counted, never timed: the source is parsed
//     and instrumented (see instrument.go) so that every loop iteration and
//     every function call costs a step, every redis.call a step and a call,
//     and string building, pattern matching, sorting and array growth cost
//     steps in proportion to their size. Exceeding Limits ends the script
//     with an error reply at the same step on every replica.
//
// Replies follow Redis 7's conversion rules both ways and its error texts
// ("ERR user_script:1: ... script: <sha>, on @user_script:1.").
package script

import (
	"crypto/sha1"
	"encoding/hex"
	"sync"

	"github.com/fenced/fenced/reply"
)

// Env is what a script can reach. Call runs one Redis command (args[0] is
// the name, any case) against the state and returns its reply; an error
// reply is a reply.Value of Kind Error ("CODE message").
//
// The script package does not know the command table: Env answers unknown
// commands, wrong arities and commands a script may not run with the texts
// below (ErrUnknownCommand, ErrWrongArity, ErrNotAllowed), as Redis does.
type Env interface {
	Call(args []string) reply.Value
	// ACLCheck is redis.acl_check_cmd: whether the script's user may run
	// args (its command, subcommand and keys), and whether args[0] names a
	// command at all.
	ACLCheck(args []string) (allowed, known bool)
}

// The errors Redis answers, inside a script, for commands it will not run.
// An Env should answer these texts so that scripts see what Redis shows.
const (
	ErrUnknownCommand = "ERR Unknown Redis command called from script"
	ErrWrongArity     = "ERR Wrong number of args calling Redis command from script"
	ErrNotAllowed     = "ERR This Redis command is not allowed from script"
)

// The errors of this package's own limits. They are the whole reply (no
// "script: <sha>" suffix) and a script cannot catch them for good: once a
// limit is reached every later step fails again, and Run answers the limit
// error even if the script caught it and returned something else.
const (
	ErrWorkLimit = "ERR script exceeded its work limit"
	ErrCallLimit = "ERR script exceeded its limit of redis.call"
	ErrTooLarge  = "ERR script is too large"
)

// Limits bounds one run. A zero or negative field means its default.
type Limits struct {
	// MaxSteps is the deterministic work budget: one step per loop
	// iteration, per Lua function call and per redis.call, plus one per 16
	// bytes of strings built (concatenation, string.rep/format/gsub/...,
	// table.concat), per 16 characters scanned by pattern matching, per
	// array slot a table grows by, per element of a command reply converted
	// to Lua and of the script's result converted to a reply.
	MaxSteps int64
	// MaxCalls is the number of redis.call and redis.pcall a run may make.
	MaxCalls int64
	// MaxSource is the largest script, in bytes.
	MaxSource int
}

// The defaults. Measured on a 2-vCPU cloud VM: 5,000,000 steps of `while
// true do end` take 0.1 s; the most expensive kinds of steps found
// (doubling a string, scanning an array's trailing nils, backtracking
// patterns, growing tables) spend their 5,000,000 steps in 0.3-0.9 s; and
// 200,000 calls of a cheap command take 0.2-0.4 s. A runaway script thus
// holds the state machine for about a second at worst, two on a machine
// twice as slow. The lock scripts of redsync, redislock, redis-py,
// Redisson, node-redlock and redlock-rb take 20 to 200 steps.
const (
	DefaultMaxSteps  = 5_000_000
	DefaultMaxCalls  = 200_000
	DefaultMaxSource = 1 << 20
)

// DefaultLimits returns the default limits (see DefaultMaxSteps).
func DefaultLimits() Limits {
	return Limits{MaxSteps: DefaultMaxSteps, MaxCalls: DefaultMaxCalls, MaxSource: DefaultMaxSource}
}

func (l Limits) normalized() Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultMaxCalls
	}
	if l.MaxSource <= 0 {
		l.MaxSource = DefaultMaxSource
	}
	return l
}

// SHA1 returns the lowercase hex SHA-1 of the exact script bytes (Redis's
// script id).
func SHA1(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// CompileError is a script that does not compile. Its Error is the whole
// reply Redis gives, e.g. "ERR Error compiling script (new function):
// user_script:1: unexpected symbol near '<eof>'".
type CompileError struct{ Msg string }

func (e *CompileError) Error() string { return e.Msg }

// Engine compiles and runs scripts. It owns a cache of compiled scripts
// and a pool of sandboxes; both only save work (a hit and a miss, a pooled
// sandbox and a fresh one, give the same results). An Engine is safe for
// concurrent use.
type Engine struct {
	lim Limits
	// verify makes every run also check that the script left no trace in
	// the sandbox it ran in (the tests set it; it costs microseconds).
	verify bool

	mu    sync.Mutex
	cache map[string]cacheEntry
	// pool holds the sandboxes of cluster versions 1 and 2, pool3 those
	// with Redis 7's libraries (LibsVersion on).
	pool, pool3 sync.Pool
}

// NewEngine returns an Engine that runs scripts within lim.
func NewEngine(lim Limits) *Engine {
	return &Engine{lim: lim.normalized(), cache: make(map[string]cacheEntry)}
}

// Compile is CompileAt at cluster version 1.
func (e *Engine) Compile(src string) error { return e.CompileAt(src, 1) }

// CompileAt checks that src compiles at the cluster version, as SCRIPT LOAD
// does, and caches the result for Run. It answers nil or a *CompileError.
func (e *Engine) CompileAt(src string, version int64) error {
	if _, _, err := e.compile(src, version >= LibsVersion); err != nil {
		return err
	}
	return nil
}

// Run is RunAt at cluster version 1.
func (e *Engine) Run(src string, keys, argv []string, env Env, seed int64) reply.Value {
	return e.RunAt(src, keys, argv, env, seed, 1)
}

// RunAt executes src with KEYS = keys and ARGV = argv and returns the
// script's reply converted by Redis's Lua-to-RESP rules, or the error reply
// Redis would give. seed seeds math.random (Redis's rand48; Redis itself
// always uses seed 0, a replicated caller can pass the entry's log index).
// version is the cluster version: from LibsVersion the script sees Redis
// 7's libraries and its shebang is read as Redis 7 reads it; below it, the
// environment of every release before. Each run has its own Lua state.
//
// The shebang's flags are the caller's to honour (ParseShebang): a script
// cannot know which commands write.
//
// A panic inside env.Call is not turned into a script error: Run re-panics
// with it once the Lua state is unwound.
func (e *Engine) RunAt(src string, keys, argv []string, env Env, seed int64, version int64) reply.Value {
	rep, _ := e.runSteps(src, keys, argv, env, seed, version)
	return rep
}

// runSteps is RunAt that also reports the steps the run took.
func (e *Engine) runSteps(src string, keys, argv []string, env Env, seed int64, version int64) (reply.Value, int64) {
	v3 := version >= LibsVersion
	prog, _, err := e.compile(src, v3)
	if err != nil {
		return reply.Error(err.Msg), 0
	}
	r := e.getRunner(env, seed, prog.sha, v3)
	defer e.release(r)
	rep := r.run(prog, keys, argv)
	return rep, r.steps
}
