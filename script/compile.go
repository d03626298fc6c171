package script

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// chunkName is the name Redis gives a script: messages say "user_script:N:"
// and the error suffix says "@user_script:N".
const chunkName = "user_script"

// program is a compiled, instrumented script. Its proto is read-only and
// shared by every run of the same source.
type program struct {
	sha   string
	proto *lua.FunctionProto
}

// cacheMax bounds the compile cache, keyed by SHA-1. When full it is
// emptied: a lock server sees a handful of scripts.
const cacheMax = 1024

type cacheEntry struct {
	prog *program
	err  *CompileError
}

// compile checks src's shebang by the rules of the cluster version (v3:
// LibsVersion or later) and returns the compiled body. A shebang is checked
// on every call, outside the cache: its verdict depends on the version, the
// body it leaves does not (both parsers keep src from the shebang's newline).
func (e *Engine) compile(src string, v3 bool) (*program, Shebang, *CompileError) {
	if len(src) > e.lim.MaxSource {
		return nil, Shebang{}, &CompileError{Msg: ErrTooLarge}
	}
	var body, serr string
	var sb Shebang
	if v3 {
		body, sb, serr = ParseShebang(src)
	} else {
		body, serr = stripShebangV1(src)
	}
	if serr != "" {
		return nil, Shebang{}, &CompileError{Msg: serr}
	}
	sha := SHA1(src)
	e.mu.Lock()
	ce, ok := e.cache[sha]
	e.mu.Unlock()
	if ok {
		return ce.prog, sb, ce.err
	}
	proto, err := compileSource(body)
	if err == nil {
		ce = cacheEntry{prog: &program{sha: sha, proto: proto}}
	} else {
		ce = cacheEntry{err: err}
	}
	e.mu.Lock()
	if len(e.cache) >= cacheMax {
		clear(e.cache)
	}
	e.cache[sha] = ce
	e.mu.Unlock()
	return ce.prog, sb, ce.err
}

// compileErr builds Redis's compile error reply from a Lua message.
func compileErr(msg string) *CompileError {
	return &CompileError{Msg: oneLine("ERR Error compiling script (new function): " + msg)}
}

// oneLine maps CR and LF to spaces and trims them at the ends, as Redis does
// to every error reply.
func oneLine(s string) string {
	s = strings.Trim(s, "\r\n")
	if strings.ContainsAny(s, "\r\n") {
		s = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, s)
	}
	return s
}

// compileSource parses, checks, instruments and compiles a script's body
// (its shebang line already removed).
func compileSource(body string) (*lua.FunctionProto, *CompileError) {
	return compileChunk(body, chunkName, compileErr)
}

// compileChunk is compileSource for a chunk of the given name, whose
// errors mkErr turns into the whole reply (a library's body is
// "user_function", its errors "Error compiling function: ...").
func compileChunk(body, chunk string, mkErr func(string) *CompileError) (proto *lua.FunctionProto, cerr *CompileError) {
	defer func() {
		// gopher-lua's parser and compiler panic on some inputs; a script
		// that cannot be compiled is a compile error, whatever the cause.
		if p := recover(); p != nil {
			proto, cerr = nil, mkErr(fmt.Sprintf("%s:%d: %v", chunk, lastLine(body), p))
		}
	}()
	stmts, err := parse.Parse(strings.NewReader(body), chunk)
	if err != nil {
		return nil, parseError(err, body, chunk, mkErr)
	}
	stmts, msg := instrumentChunk(stmts, chunk)
	if msg != "" {
		return nil, mkErr(msg)
	}
	proto, err = lua.Compile(stmts, chunk)
	if err != nil {
		if ce, ok := err.(*lua.CompileError); ok {
			return nil, mkErr(fmt.Sprintf("%s:%d: %s", chunk, ce.Line, ce.Message))
		}
		return nil, mkErr(err.Error())
	}
	return proto, nil
}

// lastLine is the line Lua reports at the end of the source.
func lastLine(body string) int { return strings.Count(body, "\n") + 1 }

// parseError turns a gopher-lua parse error into Lua 5.1's wording where it
// can: "user_script:LINE: MESSAGE near 'TOKEN'". gopher-lua's yacc parser
// only says "syntax error", which becomes "unexpected symbol"; Lua's more
// specific messages ("'=' expected", "'end' expected") are not reproduced.
func parseError(err error, body, chunk string, mkErr func(string) *CompileError) *CompileError {
	pe, ok := err.(*parse.Error)
	if !ok {
		return mkErr(fmt.Sprintf("%s:%d: %v", chunk, lastLine(body), err))
	}
	line, near := pe.Pos.Line, "'"+pe.Token+"'"
	if line == parse.EOF || line <= 0 {
		line, near = lastLine(body), "'<eof>'"
	}
	var msg string
	switch pe.Message {
	case "unterminated string":
		msg = "unfinished string"
	case "unterminated multiline string":
		msg, near = "unfinished long string", "'<eof>'"
	case "invalid multiline comment":
		msg, near = "unfinished long comment", "'<eof>'"
	case "invalid multiline string":
		msg = "invalid long string delimiter"
	case "illegal hexadecimal number":
		msg = "malformed number"
	default:
		msg = "unexpected symbol"
	}
	return mkErr(fmt.Sprintf("%s:%d: %s near %s", chunk, line, msg, near))
}
