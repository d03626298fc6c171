package lockstate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

// Redis 7 Functions (cluster version 3): FUNCTION LOAD, DELETE, FLUSH,
// RESTORE change the replicated libraries, one log entry each; FCALL runs
// inside Apply as EVAL does; FUNCTION LIST, DUMP, STATS and FCALL_RO are
// also served on the read path (FunctionRead, FcallRO). A library is one
// record holding its code and what its body registered, so loading a state
// runs no Lua; the compiled code is cached per node by the script engine,
// never replicated.

// library is a loaded library.
type library struct {
	name  string
	code  string            // as loaded, its first line included
	funcs []script.Function // in the order its body registered them
}

// lowerASCII lowercases ASCII letters only: function names are ASCII, and
// Redis folds case byte by byte.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Errors of the functions, in Redis 7.0's words.
var (
	errFunctionNotFound = reply.Error("ERR Function not found")
	errLibraryNotFound  = reply.Error("ERR Library not found")
	errBadPayload       = reply.Error("ERR DUMP payload version or checksum are wrong")
)

func subcommandSyntax(a [][]byte) reply.Value {
	return reply.Error("ERR unknown subcommand or wrong number of arguments for '" + commands.Clip(a[1]) + "'. Try FUNCTION HELP.")
}

// functionArity is each FUNCTION subcommand's arity (Redis's table);
// writes are the subcommands that change the libraries.
var functionArity = map[string]struct {
	arity int
	write bool
}{
	"load": {-3, true}, "delete": {3, true}, "flush": {-2, true}, "restore": {-3, true},
	"list": {-2, false}, "dump": {2, false}, "stats": {2, false}, "kill": {2, false}, "help": {2, false},
}

// FunctionIsWrite reports whether FUNCTION args changes the libraries (and
// so goes through the log). Anything else, bad arguments included, is
// answered by FunctionRead.
func FunctionIsWrite(args [][]byte) bool {
	return len(args) >= 2 && functionArity[strings.ToLower(string(args[1]))].write
}

func cmdFunction(s *State, a [][]byte, now int64) reply.Value { return s.function(a, true) }

// FunctionRead answers FUNCTION LIST, DUMP, STATS, KILL and HELP (and the
// errors of any FUNCTION command) against the state as it is, for the
// server's linearizable read path; a subcommand that changes the libraries
// is refused as a write.
func (s *State) FunctionRead(args []string) reply.Value {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	if _, err := s.checkAt(a); err != nil {
		return reply.ErrorOf(err)
	}
	return s.function(a, false)
}

// function is FUNCTION; inLog is true inside Apply, where it may change
// the libraries.
func (s *State) function(a [][]byte, inLog bool) reply.Value {
	sub := strings.ToLower(string(a[1]))
	sc, ok := functionArity[sub]
	switch {
	case !ok:
		return reply.Error("ERR unknown subcommand '" + commands.Clip(a[1]) + "'. Try FUNCTION HELP.")
	case sc.arity > 0 && len(a) != sc.arity, sc.arity < 0 && len(a) < -sc.arity:
		return reply.Error("ERR wrong number of arguments for 'function|" + sub + "' command")
	case sc.write && !inLog:
		return reply.Error("ERR 'function|" + sub + "' is a write command: it must be applied through the log")
	}
	switch sub {
	case "load":
		return s.functionLoad(a)
	case "delete":
		lib := s.libs[string(a[2])]
		if lib == nil {
			return errLibraryNotFound
		}
		s.dropLibrary(lib)
		return reply.OK()
	case "flush":
		switch {
		case len(a) > 3:
			return subcommandSyntax(a)
		case len(a) == 3 && !strings.EqualFold(string(a[2]), "sync") && !strings.EqualFold(string(a[2]), "async"):
			return reply.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		}
		for _, name := range sortedKeys(s.libs) {
			s.dropLibrary(s.libs[name])
		}
		return reply.OK()
	case "restore":
		return s.functionRestore(a)
	case "list":
		return s.functionList(a)
	case "dump":
		return reply.BulkString(string(s.dumpLibraries()))
	case "stats":
		nf := 0
		for _, lib := range s.libs {
			nf += len(lib.funcs)
		}
		return reply.Map(reply.BulkString("running_script"), reply.Null(),
			reply.BulkString("engines"), reply.Map(reply.BulkString("LUA"), reply.Map(
				reply.BulkString("libraries_count"), reply.Int(int64(len(s.libs))),
				reply.BulkString("functions_count"), reply.Int(int64(nf)))))
	case "kill":
		// A function runs to completion inside one entry: none ever runs
		// between commands.
		return reply.Error("NOTBUSY No scripts in execution right now.")
	}
	return functionHelp()
}

func functionHelp() reply.Value {
	lines := []string{
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
		"HELP",
		"    Prints this help.",
	}
	out := make([]reply.Value, len(lines))
	for i, l := range lines {
		out[i] = reply.SimpleString(l)
	}
	return reply.Array(out...)
}

// functionLoad is FUNCTION LOAD [REPLACE] code, in Redis's order of checks:
// the state's room first (Redis's denyoom), the options, the first line,
// the existing library, the body, its functions' names.
func (s *State) functionLoad(a [][]byte) reply.Value {
	if !s.roomFor(argBytes(a) + libraryOverhead) {
		return errOOM
	}
	replace := false
	for _, opt := range a[2 : len(a)-1] {
		if !strings.EqualFold(string(opt), "replace") {
			return reply.Error("ERR Unknown option given: " + commands.Clip(opt))
		}
		replace = true
	}
	code := string(a[len(a)-1])
	name, body, msg := script.ParseLibrary(code)
	if msg != "" {
		return reply.Error(msg)
	}
	old := s.libs[name]
	if old != nil && !replace {
		return reply.Error("ERR Library '" + name + "' already exists")
	}
	funcs, _, msg := s.engine.LoadLibrary(body, 0)
	if msg != "" {
		return reply.Error(msg)
	}
	lib := &library{name: name, code: code, funcs: funcs}
	if other := s.collision(lib, old); other != "" {
		return reply.Error("ERR Function " + other + " already exists")
	}
	if old != nil {
		s.dropLibrary(old)
	}
	s.addLibrary(lib)
	return reply.BulkString(name)
}

// libraryOverhead is what a library's record may take beyond its code:
// its functions' names, descriptions and flags are at most the code's
// size again, which argBytes does not count.
const libraryOverhead = 64

// collision is the first function of lib that another library than
// except already has, or "".
func (s *State) collision(lib, except *library) string {
	for _, f := range lib.funcs {
		if o := s.fnIndex[lowerASCII(f.Name)]; o != nil && o != except {
			return f.Name
		}
	}
	return ""
}

func (s *State) addLibrary(lib *library) {
	s.libs[lib.name] = lib
	for _, f := range lib.funcs {
		s.fnIndex[lowerASCII(f.Name)] = lib
	}
	s.markDirty(libraryKey(lib.name), nil)
}

func (s *State) dropLibrary(lib *library) {
	for _, f := range lib.funcs {
		delete(s.fnIndex, lowerASCII(f.Name))
	}
	delete(s.libs, lib.name)
	s.markDirty(libraryKey(lib.name), nil)
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE], each
// option once, libraries in name order (Redis's is its hash table's).
func (s *State) functionList(a [][]byte) reply.Value {
	withCode, hasPattern := false, false
	var pattern string
	for i := 2; i < len(a); i++ {
		arg := string(a[i])
		switch {
		case !withCode && strings.EqualFold(arg, "withcode"):
			withCode = true
			continue
		case !hasPattern && strings.EqualFold(arg, "libraryname"):
			if i >= len(a)-1 {
				return reply.Error("ERR library name argument was not given")
			}
			i++
			pattern, hasPattern = lowerASCII(string(a[i])), true
			continue
		}
		return reply.Error("ERR Unknown argument " + commands.Clip(a[i]))
	}
	out := []reply.Value{}
	for _, name := range sortedKeys(s.libs) {
		if hasPattern && !glob.Match(pattern, lowerASCII(name)) {
			continue
		}
		lib := s.libs[name]
		fns := make([]reply.Value, len(lib.funcs))
		for i, f := range lib.funcs {
			desc := reply.Null()
			if f.HasDesc {
				desc = reply.BulkString(f.Desc)
			}
			var flags []reply.Value
			for _, n := range f.Flags.Names() {
				flags = append(flags, reply.SimpleString(n))
			}
			fns[i] = reply.Map(reply.BulkString("name"), reply.BulkString(f.Name),
				reply.BulkString("description"), desc,
				reply.BulkString("flags"), reply.Set(flags...))
		}
		m := []reply.Value{reply.BulkString("library_name"), reply.BulkString(lib.name),
			reply.BulkString("engine"), reply.BulkString("LUA"),
			reply.BulkString("functions"), reply.Array(fns...)}
		if withCode {
			m = append(m, reply.BulkString("library_code"), reply.BulkString(lib.code))
		}
		out = append(out, reply.Map(m...))
	}
	return reply.Array(out...)
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]. The
// payload is untrusted: it is checked whole (functions_dump.go) and each
// library is loaded again as FUNCTION LOAD would, within one step budget
// for them all, before anything changes.
func (s *State) functionRestore(a [][]byte) reply.Value {
	if len(a) > 4 {
		return subcommandSyntax(a)
	}
	if !s.roomFor(argBytes(a) + libraryOverhead) {
		return errOOM
	}
	policy := "append"
	if len(a) == 4 {
		policy = strings.ToLower(string(a[3]))
		if policy != "append" && policy != "replace" && policy != "flush" {
			return reply.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	codes, err := decodeLibraries(a[2])
	if err != nil {
		return errBadPayload
	}
	budget := int64(script.DefaultMaxSteps)
	var libs []*library
	byName := map[string]bool{}
	fnames := map[string]bool{}
	for _, code := range codes {
		name, body, msg := script.ParseLibrary(code)
		if msg != "" {
			return reply.Error(msg)
		}
		if byName[name] {
			return reply.Error("ERR Library '" + name + "' already exists")
		}
		if budget <= 0 {
			return reply.Error("ERR Error registering functions: ERR FUNCTION LOAD timeout")
		}
		funcs, steps, msg := s.engine.LoadLibrary(body, budget)
		if msg != "" {
			return reply.Error(msg)
		}
		budget -= steps
		for _, f := range funcs {
			if fnames[lowerASCII(f.Name)] {
				return reply.Error("ERR Function " + f.Name + " already exists")
			}
			fnames[lowerASCII(f.Name)] = true
		}
		byName[name] = true
		libs = append(libs, &library{name: name, code: code, funcs: funcs})
	}
	switch policy {
	case "flush":
		for _, name := range sortedKeys(s.libs) {
			s.dropLibrary(s.libs[name])
		}
	case "append":
		for _, lib := range libs {
			if s.libs[lib.name] != nil {
				return reply.Error("ERR Library " + lib.name + " already exists")
			}
		}
	}
	// What REPLACE replaces may not lend its functions' names away.
	for _, lib := range libs {
		for _, f := range lib.funcs {
			if o := s.fnIndex[lowerASCII(f.Name)]; o != nil && !byName[o.name] {
				return reply.Error("ERR Function " + f.Name + " already exists")
			}
		}
	}
	for _, lib := range libs {
		if old := s.libs[lib.name]; old != nil {
			s.dropLibrary(old)
		}
	}
	for _, lib := range libs {
		s.addLibrary(lib)
	}
	return reply.OK()
}

func cmdFcall(s *State, a [][]byte, now int64) reply.Value {
	return s.fcall(a, false, s.user, s.unix, now)
}

func cmdFcallRO(s *State, a [][]byte, now int64) reply.Value {
	return s.fcall(a, true, s.user, s.unix, now)
}

// fcall is FCALL (ro false) and FCALL_RO, at the entry being applied or,
// read only, at the applied state: Redis's checks in its order (the
// function, numkeys, then the flags against the command and the state's
// room), then the call.
func (s *State) fcall(a [][]byte, ro bool, user string, unix, now int64) reply.Value {
	lib := s.fnIndex[lowerASCII(string(a[1]))]
	if lib == nil {
		return errFunctionNotFound
	}
	var fn script.Function
	for _, f := range lib.funcs {
		if strings.EqualFold(f.Name, string(a[1])) {
			fn = f
			break
		}
	}
	n, err := commands.ParseInt(a[2])
	switch {
	case err != nil:
		return reply.Error("ERR Bad number of keys provided")
	case n > int64(len(a)-3):
		return reply.Error("ERR Number of keys can't be greater than number of args")
	case n < 0:
		return reply.Error("ERR Number of keys can't be negative")
	}
	noWrites := fn.Flags&script.FlagNoWrites != 0
	switch {
	case ro && !noWrites:
		return errROWriteFlag
	case !noWrites && fn.Flags&script.FlagAllowOOM == 0 && s.full():
		return errOOM
	}
	args := make([]string, len(a)-3)
	for i, x := range a[3:] {
		args[i] = string(x)
	}
	_, body, _ := script.ParseLibrary(lib.code)
	env := newScriptEnv(s, now, unix, user, ro || noWrites)
	defer s.allowOOM(fn.Flags, ro)()
	v := s.engine.CallFunction(body, fn.Name, args[:n], args[n:], env, int64(s.index))
	return capDepth(v, 0)
}

// FcallRO runs FCALL_RO (args) outside the log, for user, at cluster time
// now, as EvalRO runs EVAL_RO: the server calls it under a linearizable
// read, and a function with no-writes neither changes the state nor
// answers differently from where it runs.
func (s *State) FcallRO(args []string, user string, now int64) reply.Value {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	if _, err := s.checkAt(a); err != nil {
		return reply.ErrorOf(err)
	}
	wall := s.unix
	if now > s.time {
		wall = ms.Add(wall, now-s.time)
	}
	return s.fcall(a, true, user, wall, now)
}

// Record of a library, f/<name>: version, code, the number of functions,
// then each function's name, flags, 1 and its description or 0.
const prefixLibrary = "f/"

func libraryKey(name string) string { return prefixLibrary + name }

func appendLibrary(b []byte, lib *library) []byte {
	b = append(b, recordVersion)
	b = appendString(b, lib.code)
	b = appendUvarint(b, uint64(len(lib.funcs)))
	for _, f := range lib.funcs {
		b = appendString(b, f.Name)
		b = append(b, byte(f.Flags))
		if f.HasDesc {
			b = append(b, 1)
			b = appendString(b, f.Desc)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// allFlags are the flags a record may hold.
const allFlags = script.FlagNoWrites | script.FlagAllowOOM | script.FlagAllowStale |
	script.FlagNoCluster | script.FlagAllowCrossSlot

func (s *State) loadLibrary(name string, r *reader) error {
	lib := &library{name: name, code: r.str()}
	n := r.uvarint()
	if r.err == nil && (n == 0 || n > script.MaxLibraryFunctions) {
		return fmt.Errorf("a library with %d functions", n)
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		f := script.Function{Name: r.str(), Flags: script.Flags(r.byte())}
		switch r.byte() {
		case 0:
		case 1:
			f.HasDesc, f.Desc = true, r.str()
		default:
			r.fail(errors.New("bad description flag"))
		}
		if f.Flags&^allFlags != 0 {
			r.fail(errors.New("unknown function flags"))
		}
		lib.funcs = append(lib.funcs, f)
	}
	if err := r.done(); err != nil {
		return err
	}
	if got, _, msg := script.ParseLibrary(lib.code); msg != "" || got != name {
		return errors.New("library code does not name the library")
	}
	if s.libs[name] != nil {
		return errLoadOrder
	}
	for i, f := range lib.funcs {
		if !script.ValidName(f.Name) {
			return fmt.Errorf("bad function name %q", f.Name)
		}
		if s.fnIndex[lowerASCII(f.Name)] != nil {
			return fmt.Errorf("function %q of two libraries", f.Name)
		}
		for _, g := range lib.funcs[:i] {
			if strings.EqualFold(f.Name, g.Name) {
				return fmt.Errorf("function %q twice in the library", f.Name)
			}
		}
	}
	s.libs[name] = lib
	for _, f := range lib.funcs {
		s.fnIndex[lowerASCII(f.Name)] = lib
	}
	return nil
}
