package lockstate

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// Lua scripts (EVAL, EVALSHA, SCRIPT) run inside Apply, through the script
// package, against this State: every replica runs the same script at the
// same entry, with math.random seeded by the entry's index and time frozen
// at the entry's time, so every replica gets the same reply and makes the
// same changes. The script cache is replicated state too: a script loaded
// through one node is known to all, and survives restarts and snapshots.
//
// As in Redis 7.4, SCRIPT LOAD keeps a script until SCRIPT FLUSH, while a
// script first seen by EVAL is one of at most maxEvalScripts, the oldest
// evicted first.

// maxEvalScripts bounds the scripts cached by EVAL (Redis 7.4's 500).
const maxEvalScripts = 500

// storedScript is a cached script.
type storedScript struct {
	src    string
	byEval bool   // cached by EVAL, not SCRIPT LOAD: may be evicted
	seq    uint64 // log index of the entry that cached it (eviction order)
}

// errNoScript is Redis's exact reply to EVALSHA of an unknown script.
var errNoScript = reply.Error("NOSCRIPT No matching script. Please use EVAL.")

// Errors of Redis 7's script flags (from cluster version 3).
var (
	errROWriteFlag = reply.Error("ERR Can not execute a script with write flag using *_ro command.")
	errROWrite     = reply.Error("ERR Write commands are not allowed from read-only scripts.")
)

func cmdEval(s *State, a [][]byte, now int64) reply.Value      { return s.eval(a, now, false) }
func cmdEvalRO(s *State, a [][]byte, now int64) reply.Value    { return s.eval(a, now, true) }
func cmdEvalSHA(s *State, a [][]byte, now int64) reply.Value   { return s.evalSHA(a, now, false) }
func cmdEvalSHARO(s *State, a [][]byte, now int64) reply.Value { return s.evalSHA(a, now, true) }

// eval is EVAL and, from the log, EVAL_RO (ro): the script is cached,
// then run.
func (s *State) eval(a [][]byte, now int64, ro bool) reply.Value {
	ev, err := commands.ParseEval(a)
	if err != nil {
		return parseErr(err)
	}
	sb, rep := s.shebang(ev.Body)
	if rep.Kind != reply.KindInvalid {
		return rep
	}
	if cerr := s.engine.CompileAt(ev.Body, s.Version()); cerr != nil {
		return reply.Error(cerr.Error())
	}
	if !s.roomForEval(ev.Body) {
		return errOOM
	}
	s.cacheScript(ev.Body, true)
	return s.runScript(ev, sb, ro, s.user, s.unix, now)
}

func (s *State) evalSHA(a [][]byte, now int64, ro bool) reply.Value {
	ev, err := commands.ParseEval(a)
	if err != nil {
		return parseErr(err)
	}
	sc := s.scripts[strings.ToLower(ev.Body)]
	if sc == nil {
		return errNoScript
	}
	ev.Body = sc.src
	sb, rep := s.shebang(ev.Body)
	if rep.Kind != reply.KindInvalid {
		return rep
	}
	return s.runScript(ev, sb, ro, s.user, s.unix, now)
}

// shebang reads a script's flags at the cluster's version: before 3 they
// mean nothing (and the check of the line is the compiler's). A script
// that declares flags without allow-oom or no-writes does not run while
// the state is full, as Redis refuses it before running (its denyoom).
// rep is an error reply, or of KindInvalid.
func (s *State) shebang(src string) (sb script.Shebang, rep reply.Value) {
	if s.Version() < script.LibsVersion {
		return sb, rep
	}
	_, sb, serr := script.ParseShebang(src)
	switch {
	case serr != "":
		return sb, reply.Error(serr)
	case sb.Present && !sb.Has(script.FlagNoWrites) && !sb.Has(script.FlagAllowOOM) && s.full():
		return sb, errOOM
	}
	return sb, rep
}

// EvalRO runs EVAL_RO or EVALSHA_RO (args) outside the log, for user, at
// cluster time now, against the state as it is: the server calls it under
// a linearizable read, so the state holds every write acknowledged before
// the command arrived, and a read-only script neither changes the state
// nor answers differently from where it runs. Its seed is the applied
// index; TIME is the wall clock of the last entry carried forward to now.
// ok is false for an EVAL_RO whose script is not cached yet: Redis caches
// it (a change of the replicated script cache), so the server sends that
// one through the log instead.
func (s *State) EvalRO(args []string, user string, now int64) (rep reply.Value, ok bool) {
	rep, ok, _ = s.EvalROReads(args, user, now)
	return rep, ok
}

// EvalROReads is EvalRO that also reports whether the script called a
// read command: only then does Redis track its declared keys for a
// client with CLIENT TRACKING on.
func (s *State) EvalROReads(args []string, user string, now int64) (rep reply.Value, ok, read bool) {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	spec, err := s.checkAt(a)
	if err != nil {
		return reply.ErrorOf(err), true, false
	}
	ev, err := commands.ParseEval(a)
	if err != nil {
		return parseErr(err), true, false
	}
	if spec.Name == "eval_ro" {
		if s.scripts[script.SHA1(ev.Body)] == nil {
			return reply.Value{}, false, false
		}
	} else {
		sc := s.scripts[strings.ToLower(ev.Body)]
		if sc == nil {
			return errNoScript, true, false
		}
		ev.Body = sc.src
	}
	sb, rep := s.shebang(ev.Body)
	if rep.Kind != reply.KindInvalid {
		return rep, true, false
	}
	wall := s.unix
	if now > s.time {
		wall = ms.Add(wall, now-s.time)
	}
	rep = s.runReadOnly(ev, sb, user, wall, now, &read)
	return rep, true, read
}

func cmdScript(s *State, a [][]byte, now int64) reply.Value {
	sub := strings.ToUpper(string(a[1]))
	switch {
	case sub == "LOAD" && len(a) == 3:
		src := string(a[2])
		if err := s.engine.CompileAt(src, s.Version()); err != nil {
			return reply.Error(err.Error())
		}
		if !s.roomForScript(src) {
			return errOOM
		}
		s.cacheScript(src, false)
		return reply.BulkString(script.SHA1(src))
	case sub == "EXISTS" && len(a) >= 3:
		out := make([]reply.Value, len(a)-2)
		for i, sha := range a[2:] {
			out[i] = reply.Int(0)
			if s.scripts[strings.ToLower(string(sha))] != nil {
				out[i] = reply.Int(1)
			}
		}
		return reply.Array(out...)
	case sub == "FLUSH" && len(a) <= 3:
		if len(a) == 3 {
			if m := strings.ToUpper(string(a[2])); m != "ASYNC" && m != "SYNC" {
				return reply.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			}
		}
		for _, sha := range sortedKeys(s.scripts) {
			s.dropScript(sha)
		}
		return reply.OK()
	case sub == "KILL" && len(a) == 2:
		// Scripts run to completion inside an entry: none is ever running
		// between commands.
		return reply.Error("NOTBUSY No scripts in execution right now.")
	case sub == "HELP" && len(a) == 2:
		var out []reply.Value
		for _, l := range []string{
			"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache (replicated).",
			"KILL", "    Kill the currently executing Lua script (none ever runs between commands).",
			"LOAD <script>", "    Load a script into the replicated scripts cache without executing it.",
			"HELP", "    Print this help.",
		} {
			out = append(out, reply.SimpleString(l))
		}
		return reply.Array(out...)
	case sub == "LOAD" || sub == "EXISTS" || sub == "FLUSH" || sub == "KILL" || sub == "HELP":
		return reply.Error("ERR wrong number of arguments for 'script|" + strings.ToLower(sub) + "' command")
	}
	return reply.Error("ERR unknown subcommand '" + commands.Clip(a[1]) + "'. Try SCRIPT HELP.")
}

// cacheScript records src. A script LOADed is kept from then on even if
// EVAL cached it first; one cached again by EVAL keeps its place.
func (s *State) cacheScript(src string, byEval bool) {
	sha := script.SHA1(src)
	sc := s.scripts[sha]
	switch {
	case sc == nil:
		s.scripts[sha] = &storedScript{src: src, byEval: byEval, seq: s.index}
		if byEval {
			s.evalOrder = append(s.evalOrder, sha)
		}
	case sc.byEval && !byEval:
		sc.byEval = false
		s.evalOrder = slices.DeleteFunc(s.evalOrder, func(x string) bool { return x == sha })
	default:
		return
	}
	s.markDirty(scriptKey(sha), nil)
	for len(s.evalOrder) > maxEvalScripts {
		s.dropScript(s.evalOrder[0])
	}
}

// ScriptCounts is what INFO memory counts of the scripts: the scripts
// cached, and the functions and libraries loaded.
func (s *State) ScriptCounts() (scripts, functions, libraries int) {
	for _, lib := range s.libs {
		functions += len(lib.funcs)
	}
	return len(s.scripts), functions, len(s.libs)
}

// roomForScript reports whether src may be cached: a script already cached
// takes no more room.
func (s *State) roomForScript(src string) bool {
	return s.scripts[script.SHA1(src)] != nil || s.roomFor(int64(len(src))+64)
}

// roomForEval is roomForScript for the script an EVAL caches, which may
// take the allow-oom headroom from cluster version 3: Redis's EVAL is not
// denyoom, and the scripts EVAL caches are at most maxEvalScripts.
func (s *State) roomForEval(src string) bool {
	if s.Version() < script.LibsVersion {
		return s.roomForScript(src)
	}
	return s.scripts[script.SHA1(src)] != nil || s.roomWithin(int64(len(src))+64, AllowOOMHeadroom)
}

// allowOOM lets the writes of the script about to run use the headroom
// past MaxMemory when its flags say allow-oom, inside the log only (ro
// runs write nothing, and outside the log the State is shared by
// concurrent reads); the returned func ends it.
func (s *State) allowOOM(flags script.Flags, ro bool) func() {
	if ro || flags&script.FlagAllowOOM == 0 {
		return func() {}
	}
	s.headroom = AllowOOMHeadroom
	return func() { s.headroom = 0 }
}

func (s *State) dropScript(sha string) {
	if sc := s.scripts[sha]; sc != nil && sc.byEval {
		s.evalOrder = slices.DeleteFunc(s.evalOrder, func(x string) bool { return x == sha })
	}
	delete(s.scripts, sha)
	s.markDirty(scriptKey(sha), nil)
}

// runScript runs a compiled script at the entry being applied (or, read
// only, at the applied state): ro is EVAL_RO/EVALSHA_RO, which refuses a
// script whose shebang lacks no-writes; no-writes, or ro, makes every write
// command inside fail.
func (s *State) runScript(ev commands.Eval, sb script.Shebang, ro bool, user string, unix, now int64) reply.Value {
	if ro && sb.Present && !sb.Has(script.FlagNoWrites) {
		return errROWriteFlag
	}
	env := newScriptEnv(s, now, unix, user, ro || sb.Has(script.FlagNoWrites))
	defer s.allowOOM(sb.Flags, ro)()
	v := s.engine.RunAt(ev.Body, ev.Keys, ev.Argv, env, int64(s.index), s.Version())
	return capDepth(v, 0)
}

// full reports whether the state is at its maxmemory: no write that grows
// it would be taken.
func (s *State) full() bool {
	return s.maxMemory > 0 && s.used+s.pending+recordOverhead > s.maxMemory
}

// capDepth keeps a script's reply within MaxReplyDepth, so that it can be
// encoded for a forwarding node: a deeper aggregate becomes the error
// element Redis gives when its Lua stack runs out.
func capDepth(v reply.Value, depth int) reply.Value {
	if v.Kind != reply.KindArray && v.Kind != reply.KindMap {
		return v
	}
	if depth >= MaxReplyDepth {
		return reply.Error("ERR reached lua stack limit")
	}
	for i := range v.Elems {
		v.Elems[i] = capDepth(v.Elems[i], depth+1)
	}
	return v
}

// scriptEnv is what a running script reaches: the keyspace commands, at the
// entry's frozen time. Commands that wait, run scripts or touch a
// connection or the native locks are refused, as Redis refuses its
// noscript commands.
type scriptEnv struct {
	s    *State
	now  int64
	unix int64 // Unix ms TIME answers
	user string
	// readOnly refuses write commands (EVAL_RO, EVALSHA_RO, no-writes).
	readOnly bool
	// draws counts the script's RANDOMKEYs: each is a new draw from the
	// entry's index, the same on every replica (randomDraw).
	draws *uint64
	// read, if not nil, is set when the script calls a read command: a
	// read-only script run outside the log tells the server so, for
	// CLIENT TRACKING (in an entry, readKeys records it).
	read *bool
}

// newScriptEnv is the one way to make a scriptEnv, so that none lacks its
// RANDOMKEY counter (a function's env once did, and a RANDOMKEY inside
// FCALL panicked the state machine on every replica).
func newScriptEnv(s *State, now, unix int64, user string, readOnly bool) scriptEnv {
	return scriptEnv{s: s, now: now, unix: unix, user: user, readOnly: readOnly, draws: new(uint64)}
}

func (e scriptEnv) Call(args []string) reply.Value {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	spec, err := e.s.checkAt(a)
	v3 := e.s.Version() >= script.LibsVersion
	switch {
	case errors.Is(err, commands.ErrArity):
		return reply.Error(script.ErrWrongArity)
	case err != nil && v3:
		if blocking, arityOK := commands.RedisBlocking(a); blocking && !arityOK {
			return reply.Error(script.ErrWrongArity)
		} else if blocking {
			return reply.Error(script.ErrNotAllowed) // noscript in Redis 7
		}
		return reply.Error(script.ErrUnknownCommand)
	case err != nil:
		return reply.Error(script.ErrUnknownCommand)
	case spec.Has(commands.Blocking): // BLPOP is noscript in Redis 7
		return reply.Error(script.ErrNotAllowed)
	}
	if err := e.s.permittedAs(e.user, spec, a); err != nil {
		return reply.ErrorOf(err)
	}
	if e.readOnly && spec.Has(commands.Write) {
		return errROWrite
	}
	if spec.Has(commands.Read) {
		e.s.readKeys(nil) // Redis then tracks the script's keys for its caller
		if e.read != nil {
			*e.read = true
		}
	}
	switch spec.Name {
	case "time":
		// The entry's wall clock: Unix time, one frozen instant for the
		// whole script, the same on every replica.
		t := e.unix
		return reply.Array(reply.BulkString(strconv.FormatInt(t/1000, 10)),
			reply.BulkString(strconv.FormatInt(t%1000*1000, 10)))
	case "fence":
		// FENCE key: the token of the key or held lock, so a script (a
		// client that can only send scripts, such as Redisson's RScript)
		// can read it; FENCE key IFEQ value, the holder's own token. The
		// session form is the native command's own.
		if len(args) == 4 && strings.EqualFold(args[2], "IFEQ") {
			if tok, ok := e.s.KeyFenceIfEq(args[1], args[3], e.now); ok {
				return reply.Int(tok)
			}
			return reply.Null()
		}
		if len(args) != 2 {
			return reply.Error(script.ErrNotAllowed)
		}
		if r := e.s.FenceOf(args[1], "", "", false, e.now); !r.Null {
			return reply.Int(r.Int)
		}
		return reply.Null()
	case "eval", "evalsha", "script", "eval_ro", "evalsha_ro", "function", "fcall", "fcall_ro":
		return reply.Error(script.ErrNotAllowed)
	case "ping":
		// Redis runs PING in a script (cluster version 3 on; before, it
		// was refused as a connection command).
		if !v3 {
			return reply.Error(script.ErrNotAllowed)
		}
		if len(a) == 2 {
			return reply.BulkString(args[1])
		}
		if len(a) > 2 {
			return reply.ErrorOf(commands.ArityError("ping")) // PING's own check
		}
		return reply.SimpleString("PONG")
	case "randomkey":
		r := e.s.RandomKey(e.now, randomDraw(e.s.index, *e.draws))
		*e.draws++
		return r
	}
	if h := readHandler(spec.Name); h != nil {
		return h(e.s, a, e.now)
	}
	if h := writeHandler(spec.Name); h != nil {
		return e.s.write(spec, h, a, e.now)
	}
	return reply.Error(script.ErrNotAllowed)
}

// ACLCheck is redis.acl_check_cmd: whether the script's user may run
// args, keys included, and whether args[0] is a command at the cluster's
// version.
func (e scriptEnv) ACLCheck(args []string) (allowed, known bool) {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	spec, ok := e.s.table.Lookup(a[0])
	if !ok || spec.Version > e.s.Version() {
		return false, false
	}
	if !spec.CheckArity(len(a)) {
		// Where the keys are is unknown: the command alone is checked.
		return e.s.permittedKeys(e.user, spec, a, nil) == nil, true
	}
	return e.s.permittedAs(e.user, spec, a) == nil, true
}

// Record of a cached script, x/<sha1>: version, 1 if cached by EVAL (else
// 0), the index that cached it, the source.
const prefixScript = "x/"

func scriptKey(sha string) string { return prefixScript + sha }

func appendScript(b []byte, sc *storedScript) []byte {
	b = append(b, recordVersion)
	if sc.byEval {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = appendUvarint(b, sc.seq)
	return appendString(b, sc.src)
}

func (s *State) loadScript(sha string, r *reader) error {
	sc := &storedScript{}
	switch r.byte() {
	case 0:
	case 1:
		sc.byEval = true
	default:
		r.fail(errors.New("bad script flag"))
	}
	sc.seq = r.uvarint()
	sc.src = r.str()
	if err := r.done(); err != nil {
		return err
	}
	if script.SHA1(sc.src) != sha {
		return errors.New("script does not match its SHA-1")
	}
	if s.scripts[sha] != nil {
		return errLoadOrder
	}
	s.scripts[sha] = sc
	if sc.byEval {
		// Keep evalOrder in eviction order: by seq, then SHA-1 (scripts
		// cached by one entry share its seq).
		i, _ := slices.BinarySearchFunc(s.evalOrder, sc, func(x string, t *storedScript) int {
			if c := cmp.Compare(s.scripts[x].seq, t.seq); c != 0 {
				return c
			}
			return strings.Compare(x, sha)
		})
		s.evalOrder = slices.Insert(s.evalOrder, i, sha)
	}
	return nil
}
