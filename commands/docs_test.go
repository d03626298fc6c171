package commands

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestDocsTable: every row of docs_table.go parses, and the table and the
// docs name the same commands (New panics otherwise), each subcommand
// under its command.
func TestDocsTable(t *testing.T) {
	if _, err := buildDocs(docRows()); err != nil {
		t.Fatal(err)
	}
	tab := New()
	for _, s := range tab.All() {
		if s.Doc == nil || s.Doc.Name != s.Name {
			t.Fatalf("%s: doc %+v", s.Name, s.Doc)
		}
		for _, sub := range s.Doc.Subcommands {
			if !strings.HasPrefix(sub.Name, s.Name+"|") || len(sub.Subcommands) > 0 {
				t.Errorf("%s: subcommand %s", s.Name, sub.Name)
			}
		}
	}
	for _, bad := range [][]docRow{
		{{name: "a", args: "x"}, {name: "a", args: "y"}},
		{{name: "a|b"}, {name: "a"}},
		{{name: "a", history: []string{"1.0.0"}}},
		{{name: "a", args: "[x y]"}},
	} {
		if _, err := buildDocs(bad); err == nil {
			t.Errorf("buildDocs(%+v) accepted", bad)
		}
	}
}

// TestSyntax: the usage rendered from the docs, as redis-cli draws it
// (its cliAddArgument), for each kind of argument.
func TestSyntax(t *testing.T) {
	tab := New()
	for name, want := range map[string]string{
		"flock":        "lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]",
		"funlock":      "lock session [OWNER tag] [FENCE token] [REQ id]",
		"fence":        "key [session [OWNER tag]|IFEQ value]",
		"session.open": "[TTL ms] [NAME label]",
		"session.list": "",
		"set":          "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
		"mset":         "key value [key value ...]",
		"del":          "key [key ...]",
		"eval":         "script numkeys [key [key ...]] [arg [arg ...]]",
		"blpop":        "key [key ...] timeout",
		"scan":         "cursor [MATCH pattern] [COUNT count] [TYPE type]",
		"hello":        "[protover [AUTH username password] [SETNAME clientname]]",
		"unsubscribe":  "[channel [channel ...]]",
		"auth":         "[username] password",
	} {
		s, ok := tab.Lookup([]byte(name))
		if !ok {
			t.Fatalf("%s: not in the table", name)
		}
		if got := s.Syntax(); got != want {
			t.Errorf("%s: Syntax() = %q, want %q", name, got, want)
		}
	}
	// The token repeats with multiple_token.
	args, err := parseArgs("[GET pattern]+...")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Syntax(args), "[GET pattern [GET pattern ...]]"; got != want {
		t.Errorf("multiple_token: %q, want %q", got, want)
	}
}

// TestParseArgs: the notation's parse, field by field.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []Arg
	}{
		{"", nil},
		{"k=key v", []Arg{
			{Name: "k", Type: ArgKey, KeySpecIndex: 0},
			{Name: "v", Type: ArgString, KeySpecIndex: -1},
		}},
		{"cond[NX|XX]@2.6.12 [GET]@6.2.0 [EX s=integer]", []Arg{
			{Name: "cond", Type: ArgOneof, KeySpecIndex: -1, Since: "2.6.12", Optional: true, Args: []Arg{
				{Name: "nx", Type: ArgPureToken, Token: "NX", KeySpecIndex: -1},
				{Name: "xx", Type: ArgPureToken, Token: "XX", KeySpecIndex: -1},
			}},
			{Name: "get", Type: ArgPureToken, Token: "GET", KeySpecIndex: -1, Since: "6.2.0", Optional: true},
			{Name: "s", Type: ArgInteger, Token: "EX", KeySpecIndex: -1, Optional: true},
		}},
		{"pairs(a=key b=unix-time)... [c=key]... ip:port!2.8.12", []Arg{
			{Name: "pairs", Type: ArgBlock, KeySpecIndex: -1, Multiple: true, Args: []Arg{
				{Name: "a", Type: ArgKey, KeySpecIndex: 0},
				{Name: "b", Type: ArgUnixTime, KeySpecIndex: -1},
			}},
			{Name: "c", Type: ArgKey, KeySpecIndex: 1, Optional: true, Multiple: true},
			{Name: "ip:port", Type: ArgString, KeySpecIndex: -1, DeprecatedSince: "2.8.12"},
		}},
		{"AUTH up(u p=pattern) [X d=double]+...", []Arg{
			{Name: "up", Type: ArgBlock, Token: "AUTH", KeySpecIndex: -1, Args: []Arg{
				{Name: "u", Type: ArgString, KeySpecIndex: -1},
				{Name: "p", Type: ArgPattern, KeySpecIndex: -1},
			}},
			{Name: "d", Type: ArgDouble, Token: "X", KeySpecIndex: -1, Optional: true, Multiple: true, MultipleToken: true},
		}},
	} {
		got, err := parseArgs(tc.src)
		if err != nil {
			t.Errorf("parseArgs(%q): %v", tc.src, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseArgs(%q)\n got %+v\nwant %+v", tc.src, got, tc.want)
		}
	}
}

// TestParseArgsRefuses: a mistake in the table is an error naming it, not
// a guess.
func TestParseArgsRefuses(t *testing.T) {
	for _, src := range []string{
		"[a b]",        // plain brackets hold one item
		"a|b",          // a oneof needs a name
		"g(a b|c)",     // an alternative of several items needs a name
		"g()",          // empty group
		"[]",           // empty brackets
		"x=float",      // not a Redis type
		"g=key(a)",     // a group has no type
		"Bad",          // neither a token nor a name
		"[a",           // unclosed
		"g(a]",         // mismatched
		"a)",           // stray closer
		"...",          // a suffix on nothing
		"a ...",        // a suffix must be glued
		"a@",           // a version needs digits
		"a%",           // not a name
		"[[a]]",        // optional twice
		"a......",      // multiple twice
		"g(a|b) [x|y]", // plain brackets with a oneof
	} {
		if args, err := parseArgs(src); !errors.Is(err, errArgsSyntax) {
			t.Errorf("parseArgs(%q) = %+v, %v; want an error", src, args, err)
		}
	}
}

// argCount is how many words args take: at least min, at most max
// (math.MaxInt: no bound).
func argCount(args []Arg) (min, max int) {
	for _, a := range args {
		lo, hi := 1, 1
		switch a.Type {
		case ArgOneof:
			lo, hi = math.MaxInt, 0
			for _, alt := range a.Args {
				l, h := argCount([]Arg{alt})
				lo, hi = minInt(lo, l), maxInt(hi, h)
			}
		case ArgBlock:
			lo, hi = argCount(a.Args)
		}
		if a.Token != "" && a.Type != ArgPureToken {
			lo, hi = lo+1, addSat(hi, 1)
		}
		if a.Multiple {
			hi = math.MaxInt
		}
		if a.Optional {
			lo = 0
		}
		min, max = min+lo, addSat(max, hi)
	}
	return min, max
}

func addSat(a, b int) int {
	if a == math.MaxInt || b == math.MaxInt {
		return math.MaxInt
	}
	return a + b
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestDocsFitArity: the documented arguments take the number of words the
// table's arity allows, so the docs and the dispatcher agree: exactly n-1
// for arity n, at least n-1 and more for arity -n. A command with
// subcommands is documented through them.
func TestDocsFitArity(t *testing.T) {
	for _, s := range New().All() {
		if len(s.Doc.Subcommands) > 0 {
			if len(s.Doc.Args) > 0 {
				t.Errorf("%s: arguments and subcommands", s.Name)
			}
			continue
		}
		lo, hi := argCount(s.Doc.Args)
		if s.Arity > 0 && (lo != s.Arity-1 || hi != s.Arity-1) {
			t.Errorf("%s: arity %d but the docs take %d to %d arguments (%s)", s.Name, s.Arity, lo, hi, s.Syntax())
		}
		// QUIT ignores any arguments, which Redis's docs do not list.
		if s.Arity < 0 && (lo != -s.Arity-1 || hi == lo && s.Name != "quit") {
			t.Errorf("%s: arity %d but the docs take %d to %d arguments (%s)", s.Name, s.Arity, lo, hi, s.Syntax())
		}
	}
}
