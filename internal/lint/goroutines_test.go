package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state machine runs on one goroutine, the one that applies the log:
// a goroutine of its own would make its output depend on scheduling. Its
// tests start none either, so the race detector has nothing to find in
// the package, and make test runs its tests without it (Makefile, test).
var noGoroutines = []string{"lockstate"}

// goStatements lists, as file:line, the go statements in src.
func goStatements(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok {
			found = append(found, fset.Position(g.Pos()).String())
		}
		return true
	})
	return found, nil
}

func TestNoGoroutinesInStateMachine(t *testing.T) {
	fset := token.NewFileSet()
	for _, pkg := range noGoroutines {
		dir := filepath.Join("..", "..", pkg)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			found, err := goStatements(fset, file, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range found {
				t.Errorf("%s: a go statement in %s, which runs on the applying goroutine alone (and whose tests make test runs without -race)", at, pkg)
			}
		}
	}
}

// TestNoGoroutinesCatches shows the check finds a go statement, in code
// and in a test's closure.
func TestNoGoroutinesCatches(t *testing.T) {
	fset := token.NewFileSet()
	for _, src := range []string{
		"package p\nfunc f() { go g() }\nfunc g() {}\n",
		"package p\nfunc TestX() { done := make(chan int); go func() { done <- 1 }(); <-done }\n",
	} {
		found, err := goStatements(fset, "planted.go", src)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || !strings.HasPrefix(found[0], "planted.go:") {
			t.Errorf("go statements in %q: %v, want one", src, found)
		}
	}
	found, err := goStatements(fset, "clean.go", "package p\n// go f()\nfunc f() { g := 1; _ = g }\n")
	if err != nil || len(found) != 0 {
		t.Errorf("a file without a go statement: %v %v", found, err)
	}
}
