package script

import (
	"fmt"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// gopher-lua has no instruction hook, so the work limit is put into the
// program itself. instrumentChunk rewrites the parsed chunk:
//
//	local (step), (cat), (set), (key), (get), (rel), (len), (num) = ...
//	return (function(...) (step)(n) <user chunk> end)()
//
// and, inside the user chunk,
//
//   - every loop body (while, repeat, numeric and generic for) and every
//     function body starts with (step)(n), where n is 1 + the number of
//     statements and expressions in the body (nested loops and functions
//     excluded: they charge for themselves). A step therefore stands for a
//     bounded amount of VM work, however long the body, and `while true do
//     end` and infinite recursion run out of steps;
//   - every chain of concatenations a .. b .. c becomes (cat)(a, b, c),
//     which concatenates as Lua 5.1 does (numbers as "%.14g", __concat
//     metamethods) and charges the bytes before building them;
//   - every assignment t[k] = v whose key is not a short constant becomes
//     (set)(t, k, v), which assigns as the VM does (metamethods included)
//     after charging for the array slots gopher-lua fills when k lies past
//     the end of t's array part and for hashing a long string key; a
//     multiple assignment becomes a do-block with hidden locals that keeps
//     Lua's order of evaluation; a [k] = v field of a table constructor
//     gets its key through (key)(k, npos), charged the same way;
//   - every read t[k] whose key is not a short constant becomes (get)(t, k)
//     (hashing a long string key is charged); every comparison becomes
//     (rel)(op, a, b) (comparing long strings is charged; Lua 5.1's
//     metamethod rules); every #x becomes (len)(x) (gopher-lua scans an
//     array's trailing nils: charged); every operand of arithmetic that is
//     not a number literal goes through (num)(x), which converts a numeric
//     string itself (Lua 5.1's rules, bounded length) so that gopher-lua
//     never reparses a long string on each operation.
//
// The helpers are the chunk's varargs, held in locals whose names are not
// Lua identifiers: a script can neither name nor replace them, and no
// library (there is no debug library) reaches a function's upvalues. The
// user chunk is an inner function so that its own `...` is empty, as in
// Redis.
//
// instrument also refuses what Lua 5.1 (and so Redis) does not parse but
// gopher-lua does (goto and labels) and nesting deeper than maxSyntaxDepth,
// which would otherwise recurse deeply in gopher-lua's compiler.

const (
	nameStep = "(step)"
	nameCat  = "(cat)"
	nameSet  = "(set)"
	nameKey  = "(key)"
	nameGet  = "(get)"
	nameRel  = "(rel)"
	nameLen  = "(len)"
	nameNum  = "(num)"
)

// helperNames are the hidden locals, in the order Run passes the helpers.
var helperNames = []string{nameStep, nameCat, nameSet, nameKey, nameGet, nameRel, nameLen, nameNum}

// shortKey is the longest constant string key read or written without a
// check (hashing it costs next to nothing).
const shortKey = 64

// maxSyntaxDepth bounds the nesting of statements and expressions.
const maxSyntaxDepth = 1000

// smallKey is the largest integer constant index assigned without a check:
// growing an array by at most this many slots is cheap.
const smallKey = 64

type instrumenter struct {
	chunk string // the chunk's name, for error messages
	err   string
	temp  int // counter for hidden locals of multiple assignments
	// nodes counts the statements and expressions of the body being
	// walked (innermost last), for its (step)(n).
	nodes []int
}

// instrumentChunk instruments the chunk of the given name (user_script,
// or user_function for a library).
func instrumentChunk(chunk []ast.Stmt, name string) ([]ast.Stmt, string) {
	in := &instrumenter{chunk: name}
	in.enter()
	body := in.block(chunk, 1)
	n := in.leave()
	if in.err != "" {
		return nil, in.err
	}
	last := 1
	if n := len(chunk); n > 0 {
		last = chunk[n-1].LastLine()
	}
	inner := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: true, Names: []string{}}, Stmts: prependStep(1, n, body)}
	inner.SetLine(1)
	inner.SetLastLine(last)
	call := &ast.FuncCallExpr{Func: inner}
	call.SetLine(1)
	call.SetLastLine(last)
	decl := &ast.LocalAssignStmt{Names: helperNames, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	decl.SetLine(1)
	decl.SetLastLine(1)
	ret := &ast.ReturnStmt{Exprs: []ast.Expr{call}}
	ret.SetLine(1)
	ret.SetLastLine(last)
	return []ast.Stmt{decl, ret}, ""
}

func (in *instrumenter) fail(line int, msg string) {
	if in.err == "" {
		in.err = fmt.Sprintf("%s:%d: %s", in.chunk, line, msg)
	}
}

func (in *instrumenter) enter() { in.nodes = append(in.nodes, 0) }

// leave ends a body and returns its cost: 1 + its nodes.
func (in *instrumenter) leave() int {
	n := in.nodes[len(in.nodes)-1]
	in.nodes = in.nodes[:len(in.nodes)-1]
	return 1 + n
}

func (in *instrumenter) deep(line, d int) bool {
	in.nodes[len(in.nodes)-1]++
	if d > maxSyntaxDepth {
		in.fail(line, "chunk has too many syntax levels")
		return true
	}
	return in.err != ""
}

func ident(name string, line int) *ast.IdentExpr {
	e := &ast.IdentExpr{Value: name}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

func callExpr(name string, line int, args ...ast.Expr) *ast.FuncCallExpr {
	c := &ast.FuncCallExpr{Func: ident(name, line), Args: args}
	c.SetLine(line)
	c.SetLastLine(line)
	return c
}

func callStmt(c *ast.FuncCallExpr) *ast.FuncCallStmt {
	s := &ast.FuncCallStmt{Expr: c}
	s.SetLine(c.Line())
	s.SetLastLine(c.LastLine())
	return s
}

func number(n, line int) *ast.NumberExpr {
	e := &ast.NumberExpr{Value: strconv.Itoa(n)}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

func strExpr(s string, line int) *ast.StringExpr {
	e := &ast.StringExpr{Value: s}
	e.SetLine(line)
	e.SetLastLine(line)
	return e
}

func prependStep(line, cost int, body []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(body)+1)
	out = append(out, callStmt(callExpr(nameStep, line, number(cost, line))))
	return append(out, body...)
}

// single truncates a multi-value expression (a call or ...) to one value
// when it is passed as the last argument of a hidden function.
func single(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		x.AdjustRet = true
	case *ast.Comma3Expr:
		x.AdjustRet = true
	}
	return e
}

// needsCheck reports whether assigning t[k] may grow t's array part by more
// than smallKey slots or hash a long string.
func needsCheck(k ast.Expr) bool {
	switch x := k.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr:
		return false
	case *ast.StringExpr:
		return len(x.Value) > shortKey
	case *ast.NumberExpr:
		f, err := strconv.ParseFloat(x.Value, 64)
		return err != nil || f > smallKey
	}
	return true
}

// readNeedsCheck reports whether reading t[k] needs (get): any key but a
// constant (a long constant string is hashed on every read).
func readNeedsCheck(k ast.Expr) bool {
	switch x := k.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr:
		return false
	case *ast.StringExpr:
		return len(x.Value) > shortKey
	}
	return true
}

// numeric wraps an arithmetic operand in (num) unless it is a literal.
func numeric(e ast.Expr) ast.Expr {
	if _, ok := e.(*ast.NumberExpr); ok {
		return e
	}
	return callExpr(nameNum, e.Line(), single(e))
}

func (in *instrumenter) block(list []ast.Stmt, d int) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(list))
	for _, s := range list {
		if in.err != "" {
			return out
		}
		out = append(out, in.stmt(s, d))
	}
	return out
}

func (in *instrumenter) exprs(list []ast.Expr, d int) []ast.Expr {
	for i, e := range list {
		list[i] = in.expr(e, d)
	}
	return list
}

func (in *instrumenter) stmt(s ast.Stmt, d int) ast.Stmt {
	if in.deep(s.Line(), d) {
		return s
	}
	d++
	switch x := s.(type) {
	case *ast.AssignStmt:
		return in.assign(x, d)
	case *ast.LocalAssignStmt:
		in.exprs(x.Exprs, d)
	case *ast.FuncCallStmt:
		x.Expr = in.expr(x.Expr, d)
	case *ast.DoBlockStmt:
		x.Stmts = in.block(x.Stmts, d)
	case *ast.WhileStmt:
		in.enter()
		x.Condition = in.expr(x.Condition, d)
		body := in.block(x.Stmts, d)
		x.Stmts = prependStep(x.Line(), in.leave(), body)
	case *ast.RepeatStmt:
		in.enter()
		body := in.block(x.Stmts, d)
		x.Condition = in.expr(x.Condition, d)
		x.Stmts = prependStep(x.Line(), in.leave(), body)
	case *ast.IfStmt:
		x.Condition = in.expr(x.Condition, d)
		x.Then = in.block(x.Then, d)
		x.Else = in.block(x.Else, d)
	case *ast.NumberForStmt:
		x.Init = in.expr(x.Init, d)
		x.Limit = in.expr(x.Limit, d)
		if x.Step != nil {
			x.Step = in.expr(x.Step, d)
		}
		in.enter()
		body := in.block(x.Stmts, d)
		x.Stmts = prependStep(x.Line(), in.leave(), body)
	case *ast.GenericForStmt:
		in.exprs(x.Exprs, d)
		in.enter()
		body := in.block(x.Stmts, d)
		x.Stmts = prependStep(x.Line(), in.leave(), body)
	case *ast.FuncDefStmt:
		if x.Name != nil {
			if x.Name.Func != nil {
				x.Name.Func = in.target(x.Name.Func, d)
			}
			if x.Name.Receiver != nil {
				x.Name.Receiver = in.expr(x.Name.Receiver, d)
			}
		}
		in.function(x.Func, d)
	case *ast.ReturnStmt:
		in.exprs(x.Exprs, d)
	case *ast.BreakStmt:
	case *ast.LabelStmt:
		// Lua 5.1 has no labels: "::" is two unexpected ':'.
		in.fail(x.Line(), "unexpected symbol near ':'")
	case *ast.GotoStmt:
		// In Lua 5.1 "goto" is a name: `goto l` reads as an assignment
		// missing its '='.
		in.fail(x.Line(), fmt.Sprintf("'=' expected near '%s'", x.Label))
	default:
		in.fail(s.Line(), fmt.Sprintf("unsupported statement %T", s))
	}
	return s
}

func (in *instrumenter) function(f *ast.FunctionExpr, d int) {
	in.enter()
	body := in.block(f.Stmts, d)
	f.Stmts = prependStep(f.Line(), in.leave(), body)
}

// target walks an assignment target: its table and key are read, the
// target itself is not.
func (in *instrumenter) target(e ast.Expr, d int) ast.Expr {
	if a, ok := e.(*ast.AttrGetExpr); ok {
		if in.deep(a.Line(), d) {
			return e
		}
		a.Object = in.expr(a.Object, d+1)
		a.Key = in.expr(a.Key, d+1)
		return a
	}
	return in.expr(e, d)
}

func (in *instrumenter) expr(e ast.Expr, d int) ast.Expr {
	if e == nil || in.deep(e.Line(), d) {
		return e
	}
	d++
	switch x := e.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr, *ast.StringExpr,
		*ast.Comma3Expr, *ast.IdentExpr:
	case *ast.AttrGetExpr:
		x.Object = in.expr(x.Object, d)
		x.Key = in.expr(x.Key, d)
		if readNeedsCheck(x.Key) {
			return callExpr(nameGet, x.Line(), x.Object, single(x.Key))
		}
	case *ast.TableExpr:
		npos := 0
		for _, f := range x.Fields {
			if f.Key == nil {
				npos++
			} else {
				f.Key = in.expr(f.Key, d)
				if needsCheck(f.Key) {
					f.Key = callExpr(nameKey, f.Key.Line(), f.Key, number(npos, f.Key.Line()))
				}
			}
			f.Value = in.expr(f.Value, d)
		}
	case *ast.FuncCallExpr:
		if x.Func != nil {
			x.Func = in.expr(x.Func, d)
		}
		if x.Receiver != nil {
			x.Receiver = in.expr(x.Receiver, d)
		}
		in.exprs(x.Args, d)
	case *ast.LogicalOpExpr:
		x.Lhs = in.expr(x.Lhs, d)
		x.Rhs = in.expr(x.Rhs, d)
	case *ast.RelationalOpExpr:
		x.Lhs = in.expr(x.Lhs, d)
		x.Rhs = in.expr(x.Rhs, d)
		return callExpr(nameRel, x.Line(), strExpr(x.Operator, x.Line()), x.Lhs, single(x.Rhs))
	case *ast.ArithmeticOpExpr:
		x.Lhs = numeric(in.expr(x.Lhs, d))
		x.Rhs = numeric(in.expr(x.Rhs, d))
	case *ast.StringConcatOpExpr:
		// a .. b .. c parses as a .. (b .. c): flatten the right spine
		// into one call, as Lua's VM concatenates a whole run at once.
		var ops []ast.Expr
		var cur ast.Expr = x
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			ops = append(ops, c.Lhs)
			cur = c.Rhs
		}
		ops = append(ops, cur)
		in.exprs(ops, d)
		ops[len(ops)-1] = single(ops[len(ops)-1])
		return callExpr(nameCat, x.Line(), ops...)
	case *ast.UnaryMinusOpExpr:
		x.Expr = numeric(in.expr(x.Expr, d))
	case *ast.UnaryNotOpExpr:
		x.Expr = in.expr(x.Expr, d)
	case *ast.UnaryLenOpExpr:
		return callExpr(nameLen, x.Line(), single(in.expr(x.Expr, d)))
	case *ast.FunctionExpr:
		in.function(x, d)
	default:
		in.fail(e.Line(), fmt.Sprintf("unsupported expression %T", e))
	}
	return e
}

// assign rewrites assignments to indexed targets whose key needs a check.
func (in *instrumenter) assign(x *ast.AssignStmt, d int) ast.Stmt {
	checked := false
	for i, l := range x.Lhs {
		x.Lhs[i] = in.target(l, d)
		if a, ok := x.Lhs[i].(*ast.AttrGetExpr); ok && needsCheck(a.Key) {
			checked = true
		}
	}
	in.exprs(x.Rhs, d)
	if !checked || in.err != "" {
		return x
	}
	line := x.Line()
	if len(x.Lhs) == 1 && len(x.Rhs) == 1 {
		a := x.Lhs[0].(*ast.AttrGetExpr)
		return callStmt(callExpr(nameSet, line, a.Object, a.Key, single(x.Rhs[0])))
	}
	// Multiple assignment: evaluate every target's table and key, left to
	// right, then the values, then assign right to left (as Lua 5.1 does).
	in.temp++
	tmp := func(kind string, i int) string { return fmt.Sprintf("(%s%d.%d)", kind, in.temp, i) }
	var prefixNames []string
	var prefixExprs []ast.Expr
	for i, l := range x.Lhs {
		if a, ok := l.(*ast.AttrGetExpr); ok {
			prefixNames = append(prefixNames, tmp("t", i), tmp("k", i))
			prefixExprs = append(prefixExprs, a.Object, a.Key)
		}
	}
	var stmts []ast.Stmt
	local := func(names []string, exprs []ast.Expr) {
		s := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
		s.SetLine(line)
		s.SetLastLine(line)
		stmts = append(stmts, s)
	}
	if len(prefixNames) > 0 {
		local(prefixNames, prefixExprs)
	}
	var valueNames []string
	for i := range x.Lhs {
		valueNames = append(valueNames, tmp("v", i))
	}
	local(valueNames, x.Rhs)
	for i := len(x.Lhs) - 1; i >= 0; i-- {
		v := ident(tmp("v", i), line)
		if _, ok := x.Lhs[i].(*ast.AttrGetExpr); ok {
			stmts = append(stmts, callStmt(callExpr(nameSet, line, ident(tmp("t", i), line), ident(tmp("k", i), line), v)))
			continue
		}
		s := &ast.AssignStmt{Lhs: []ast.Expr{x.Lhs[i]}, Rhs: []ast.Expr{v}}
		s.SetLine(line)
		s.SetLastLine(line)
		stmts = append(stmts, s)
	}
	do := &ast.DoBlockStmt{Stmts: stmts}
	do.SetLine(line)
	do.SetLastLine(x.LastLine())
	return do
}
