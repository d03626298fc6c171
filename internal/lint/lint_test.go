// Package lint holds the repository's own checks on its code (as Pebble's
// internal/lint does): the import rules that keep its layers apart, no
// goroutine in the state machine, and no merge conflict left in a file.
package lint

import (
	"fmt"
	"go/build"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fenced/fenced"

// The layering, in one place. A package listed here may import only the
// standard library (minus what denies) and the module's packages in
// allowed; every other module package is free. Third-party imports are
// named by prefix in allowed too.
var rules = []struct {
	pkg     string
	allowed []string // module-relative paths, or third-party prefixes
	deny    []string // standard-library packages it may not import
	why     string
}{
	{"resp", []string{"reply"}, nil, "the protocol only: it knows nothing about locks"},
	{"reply", nil, clockAndChance, "a reply value: pure"},
	{"internal/ms", nil, clockAndChance, "time arithmetic: pure, and no clock"},
	{"internal/glob", nil, clockAndChance, "Redis's glob matching: pure"},
	{"internal/ldouble", nil, clockAndChance, "INCRBYFLOAT's long double arithmetic: pure"},
	{"acl", []string{"commands", "internal/glob", "reply"}, clockAndChance,
		"ACL users and what they may run: pure, replicated by the state machine"},
	{"commands", []string{"internal/ms", "reply"}, clockAndChance, "the command table and parsers: pure"},
	{"script", []string{"reply", "github.com/yuin/gopher-lua"}, clockAndChance,
		"scripts run inside the state machine: deterministic"},
	{"lockstate", []string{"acl", "commands", "reply", "script", "internal/glob", "internal/ldouble", "internal/ms", "internal/plant",
		"github.com/RaduBerinde/btreemap"}, clockAndChance,
		"the state machine: pure and deterministic, no clock, no randomness, no raft or pebble"},
	{"session", []string{"internal/ms", "internal/plant", "reply"}, nil,
		"the leader's side of sessions (clock, ticks, new ids and TTLs), not the state machine nor the wire"},
	{"cmd/fenced", []string{"server", "ctl"}, nil, "main parses flags and calls the server package (or ctl, the admin CLI)"},
	{"ctl", []string{"client", "internal/flagargs", "github.com/redis/go-redis/v9"}, nil,
		"the admin CLI is a client of the nodes' client ports: no server package, so it says only what a remote client can see"},
	{"client", []string{"github.com/redis/go-redis/v9"}, nil, "the Go client: go-redis and the standard library only, no server package, so users import it alone"},
	{"fencing", nil, nil, "the resource side of a token: the standard library only (database/sql without a driver, net/http), so any driver and router fit"},
}

// clockAndChance is what a deterministic package may not import: clocks,
// randomness, the outside world.
var clockAndChance = []string{"time", "math/rand", "math/rand/v2", "crypto/rand", "os", "os/exec", "net", "net/http", "syscall", "unsafe"}

// check applies the rules to imports (module-relative package -> import
// paths) and returns the violations.
func check(imports map[string][]string, isStd func(string) bool) []string {
	var bad []string
	for _, r := range rules {
		imps, ok := imports[r.pkg]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no such package", r.pkg))
			continue
		}
		for _, imp := range imps {
			rel, inModule := strings.CutPrefix(imp, module+"/")
			switch {
			case inModule && !slices.Contains(r.allowed, rel):
				bad = append(bad, fmt.Sprintf("%s imports %s (%s)", r.pkg, rel, r.why))
			case inModule:
			case isStd(imp):
				if slices.Contains(r.deny, imp) {
					bad = append(bad, fmt.Sprintf("%s imports %s (%s)", r.pkg, imp, r.why))
				}
			case !slices.ContainsFunc(r.allowed, func(p string) bool { return imp == p || strings.HasPrefix(imp, p+"/") }):
				bad = append(bad, fmt.Sprintf("%s imports %s (%s)", r.pkg, imp, r.why))
			}
		}
	}
	// raft and pebble stay in raftstore (and the tools around it).
	for pkg, imps := range imports {
		for _, imp := range imps {
			if (strings.HasPrefix(imp, "github.com/hashicorp/raft") || strings.HasPrefix(imp, "github.com/cockroachdb/pebble")) &&
				pkg != "raftstore" && !strings.HasPrefix(pkg, "raftstore/") && pkg != "bench" {
				bad = append(bad, fmt.Sprintf("%s imports %s (only raftstore speaks raft and pebble)", pkg, imp))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestImportRules checks the module's packages (their non-test files, in a
// normal build) against the rules.
func TestImportRules(t *testing.T) {
	ctx := build.Default
	root, err := ctx.Import(module+"/internal/lint", ".", build.FindOnly)
	if err != nil {
		t.Fatal(err)
	}
	top := path.Dir(path.Dir(root.Dir))
	imports := map[string][]string{}
	var walk func(rel string)
	seen := map[string]bool{}
	walk = func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		p, err := ctx.ImportDir(path.Join(top, rel), 0)
		if err != nil {
			return // no Go files (test-only packages, testdata)
		}
		imports[rel] = p.Imports
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				walk(r)
			}
		}
	}
	walk("cmd/fenced")
	walk("bench")
	walk("fencing") // a library for users, imported by no command
	walk("client")  // likewise (the benchmark imports it too)
	isStd := func(imp string) bool {
		p, err := ctx.Import(imp, top, build.FindOnly)
		return err == nil && p.Goroot
	}
	for _, v := range check(imports, isStd) {
		t.Error(v)
	}
	if len(imports) < 10 {
		t.Fatalf("found only %d packages: %v", len(imports), imports)
	}
}

// TestImportRulesCatch: the checker flags each kind of violation.
func TestImportRulesCatch(t *testing.T) {
	ok := map[string][]string{
		"resp": {"bufio", "net", "time", module + "/reply"}, "reply": {"strconv"}, "internal/ms": {"math"},
		"commands": {"strings", module + "/internal/ms"}, "script": {module + "/reply", "github.com/yuin/gopher-lua/ast"},
		"lockstate": {module + "/commands", module + "/script"}, "session": {"time", module + "/internal/ms"},
		"cmd/fenced": {"os", module + "/server"}, "raftstore": {"github.com/hashicorp/raft"},
		"internal/glob": nil, "internal/ldouble": {"math/big"}, "acl": {"crypto/sha256", module + "/commands", module + "/internal/glob"},
		"fencing": {"database/sql", "net/http"},
		"client":  {"context", "github.com/redis/go-redis/v9/maintnotifications"},
		"ctl":     {"os/exec", module + "/client", "github.com/redis/go-redis/v9"},
	}
	isStd := func(imp string) bool { return !strings.Contains(imp, ".") }
	if bad := check(ok, isStd); len(bad) != 0 {
		t.Fatalf("a clean graph is flagged: %v", bad)
	}
	for _, c := range []struct{ pkg, imp, want string }{
		{"lockstate", "time", "lockstate imports time"},
		{"lockstate", "math/rand/v2", "lockstate imports math/rand/v2"},
		{"lockstate", module + "/raftstore", "lockstate imports raftstore"},
		{"lockstate", "github.com/cockroachdb/pebble/v2", "lockstate imports github.com/cockroachdb/pebble/v2"},
		{"resp", module + "/lockstate", "resp imports lockstate"},
		{"commands", "github.com/redis/go-redis/v9", "commands imports github.com/redis/go-redis/v9"},
		{"server", "github.com/hashicorp/raft", "server imports github.com/hashicorp/raft (only raftstore"},
		{"cmd/fenced", module + "/lockstate", "cmd/fenced imports lockstate"},
		{"fencing", "github.com/lib/pq", "fencing imports github.com/lib/pq"},
		{"client", module + "/lockstate", "client imports lockstate"},
		{"ctl", module + "/server", "ctl imports server"},
	} {
		g := map[string][]string{}
		for k, v := range ok {
			g[k] = slices.Clone(v)
		}
		g[c.pkg] = append(g[c.pkg], c.imp)
		bad := check(g, isStd)
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(b, c.want) }) {
			t.Errorf("adding %s to %s: %v, want %q", c.imp, c.pkg, bad, c.want)
		}
	}
}
