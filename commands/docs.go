package commands

import (
	"errors"
	"fmt"
	"strings"
)

// Command documentation in the shape of Redis 7.0's COMMAND DOCS (its
// addReplyCommandDocs and addReplyCommandArgList): redis-cli builds its
// HELP and its hints from nothing else once a server answers COMMAND DOCS.

// ArgType is an argument's type, by Redis 7's names.
type ArgType string

// The argument types of Redis 7.
const (
	ArgString    ArgType = "string"
	ArgInteger   ArgType = "integer"
	ArgDouble    ArgType = "double"
	ArgKey       ArgType = "key"
	ArgPattern   ArgType = "pattern"
	ArgUnixTime  ArgType = "unix-time"
	ArgPureToken ArgType = "pure-token"
	ArgOneof     ArgType = "oneof"
	ArgBlock     ArgType = "block"
)

// Arg is one argument of a command, with Redis 7.0's fields.
type Arg struct {
	Name string
	Type ArgType
	// KeySpecIndex numbers the key arguments in order, from 0; it is -1
	// for every other type.
	KeySpecIndex    int
	Token           string // the literal word before the value ("EX"), or the pure token
	Since           string // the version that added the argument, if later than the command
	DeprecatedSince string
	Optional        bool
	Multiple        bool
	MultipleToken   bool  // each repetition repeats the token too
	Args            []Arg // a oneof's alternatives, a block's parts
}

// History is one change to a command: the version and what changed.
type History struct{ Version, Change string }

// Doc is a command's documentation, or a subcommand's.
type Doc struct {
	Name            string // "flock"; "config|get" for a subcommand, as Redis names it
	Summary         string
	Since           string
	Group           string
	Complexity      string
	DocFlags        []string // "deprecated", "syscmd"
	DeprecatedSince string
	ReplacedBy      string
	History         []History
	Args            []Arg
	Subcommands     []*Doc
}

// Syntax renders args as redis-cli shows them (its cliAddArgument), e.g.
// "key value [NX|XX] [GET]": the form of the HELP text and the hints.
func Syntax(args []Arg) string { return joinArgs(args, " ") }

func joinArgs(args []Arg, sep string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.render()
	}
	return strings.Join(parts, sep)
}

func (a Arg) render() string {
	var repeat string
	switch a.Type {
	case ArgOneof:
		repeat = joinArgs(a.Args, "|")
	case ArgBlock:
		repeat = joinArgs(a.Args, " ")
	case ArgPureToken:
	default:
		repeat = a.Name
	}
	token := a.Token
	if token != "" && a.Type != ArgPureToken {
		token += " "
	}
	var b strings.Builder
	if a.Optional {
		b.WriteString("[")
	}
	b.WriteString(token + repeat)
	if a.Multiple {
		b.WriteString(" [")
		if a.MultipleToken {
			b.WriteString(token)
		}
		b.WriteString(repeat + " ...]")
	}
	if a.Optional {
		b.WriteString("]")
	}
	return b.String()
}

// errArgsSyntax is wrapped by every mistake parseArgs finds in a table row.
var errArgsSyntax = errors.New("commands: bad argument syntax")

// parseArgs reads a command's arguments from the table's notation, which
// reads like the syntax redis-cli shows and adds what COMMAND DOCS needs
// besides (types, the names of groups, versions):
//
//	value                an argument of type string
//	start=integer        another type: integer, double, key, pattern, unix-time
//	NX                   a pure token (upper case), named in lower case
//	EX seconds=integer   a token binds to the argument after it
//	[OWNER tag]          an optional argument: one item in plain brackets
//	cond[NX|XX]          a named group, optional with [ ], required with ( ):
//	pairs(field value)   several alternatives make a oneof, else a block
//
// and, glued to an item or a group's bracket, "..." (multiple), "+..."
// (multiple, the token repeated too), "@7.0.0" (since) and "!2.8.12"
// (deprecated since). Key arguments are numbered in order for
// key_spec_index.
func parseArgs(src string) ([]Arg, error) {
	toks, err := lexArgs(src)
	if err != nil || len(toks) == 0 {
		return nil, err
	}
	p := &argParser{toks: toks}
	alts, err := p.alts()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, p.errorf("unexpected %q", p.toks[p.pos].text)
	}
	if len(alts) > 1 {
		return nil, fmt.Errorf("%w: %q at the top level: name the group", errArgsSyntax, "|")
	}
	var args []Arg
	if len(alts) == 1 {
		args = alts[0]
	}
	keys := 0
	numberKeys(args, &keys)
	return args, nil
}

func numberKeys(args []Arg, next *int) {
	for i := range args {
		args[i].KeySpecIndex = -1
		if args[i].Type == ArgKey {
			args[i].KeySpecIndex = *next
			*next++
		}
		numberKeys(args[i].Args, next)
	}
}

type argTokKind uint8

const (
	tokWord   argTokKind = iota
	tokOpen              // [ or (
	tokClose             // ] or )
	tokBar               // |
	tokSuffix            // ..., +..., @version, !version
)

type argTok struct {
	kind  argTokKind
	text  string
	glued bool // no space before it
}

func lexArgs(src string) ([]argTok, error) {
	var toks []argTok
	glued := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ':
			glued = false
			i++
			continue
		case c == '[' || c == '(':
			toks = append(toks, argTok{tokOpen, string(c), glued})
			i++
		case c == ']' || c == ')':
			toks = append(toks, argTok{tokClose, string(c), glued})
			i++
		case c == '|':
			toks = append(toks, argTok{tokBar, "|", glued})
			i++
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" []()|", rune(src[j])) {
				j++
			}
			word := src[i:j]
			// A word's tail of suffixes, and a suffix after a bracket,
			// become suffix tokens.
			k := strings.IndexAny(word, ".+@!")
			if k < 0 {
				k = len(word)
			}
			if k > 0 {
				toks = append(toks, argTok{tokWord, word[:k], glued})
			}
			for rest := word[k:]; rest != ""; {
				n := suffixLen(rest)
				if n == 0 {
					return nil, fmt.Errorf("%w: bad suffix %q in %q", errArgsSyntax, rest, word)
				}
				toks = append(toks, argTok{tokSuffix, rest[:n], true})
				rest = rest[n:]
			}
			if k == 0 && !glued {
				return nil, fmt.Errorf("%w: suffix %q glued to nothing", errArgsSyntax, word)
			}
			i = j
		}
		glued = true
	}
	return toks, nil
}

// suffixLen is the length of the suffix s starts with, 0 if none.
func suffixLen(s string) int {
	switch {
	case strings.HasPrefix(s, "+..."):
		return 4
	case strings.HasPrefix(s, "..."):
		return 3
	case s[0] == '@' || s[0] == '!':
		n := 1
		for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
			n++
		}
		if n == 1 {
			return 0
		}
		return n
	}
	return 0
}

type argParser struct {
	toks []argTok
	pos  int
}

func (p *argParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s (at item %d)", errArgsSyntax, fmt.Sprintf(format, args...), p.pos+1)
}

func (p *argParser) peek() (argTok, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return argTok{}, false
}

// alts reads sequences separated by bars, up to a closing bracket or the
// end.
func (p *argParser) alts() ([][]Arg, error) {
	var alts [][]Arg
	for {
		var seq []Arg
		for {
			t, ok := p.peek()
			if !ok || t.kind == tokClose || t.kind == tokBar {
				break
			}
			a, err := p.item()
			if err != nil {
				return nil, err
			}
			seq = append(seq, a)
		}
		if len(seq) == 0 {
			return nil, p.errorf("an empty alternative")
		}
		alts = append(alts, seq)
		if t, ok := p.peek(); !ok || t.kind != tokBar {
			return alts, nil
		}
		p.pos++
	}
}

func isToken(w string) bool {
	if w == "" || w[0] < 'A' || w[0] > 'Z' {
		return false
	}
	return strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

func isName(w string) bool {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return false
	}
	return strings.Trim(w, "abcdefghijklmnopqrstuvwxyz0123456789-_:/") == ""
}

// item reads one argument and its suffixes.
func (p *argParser) item() (Arg, error) {
	t := p.toks[p.pos]
	var a Arg
	var err error
	switch {
	case t.kind == tokWord && isToken(t.text):
		p.pos++
		if n, ok := p.peek(); ok && n.kind == tokWord && !isToken(n.text) {
			if a, err = p.atom(); err != nil {
				return a, err
			}
			a.Token = t.text
		} else {
			a = Arg{Name: strings.ToLower(t.text), Type: ArgPureToken, Token: t.text}
		}
	case t.kind == tokOpen && t.text == "[":
		p.pos++
		alts, err := p.alts()
		if err != nil {
			return a, err
		}
		if len(alts) != 1 || len(alts[0]) != 1 {
			return a, p.errorf("plain brackets hold one item; name a group of several")
		}
		if err := p.close("]"); err != nil {
			return a, err
		}
		a = alts[0][0]
		if a.Optional {
			return a, p.errorf("%s is optional twice", a.Name)
		}
		a.Optional = true
	default:
		if a, err = p.atom(); err != nil {
			return a, err
		}
	}
	return a, p.suffixes(&a)
}

// atom reads a value argument or a named group.
func (p *argParser) atom() (Arg, error) {
	t := p.toks[p.pos]
	if t.kind != tokWord {
		return Arg{}, p.errorf("expected an argument, found %q", t.text)
	}
	p.pos++
	name, typ, typed := strings.Cut(t.text, "=")
	if !isName(name) {
		return Arg{}, p.errorf("bad argument name %q", name)
	}
	if n, ok := p.peek(); ok && n.kind == tokOpen && n.glued {
		if typed {
			return Arg{}, p.errorf("group %s has a type", name)
		}
		p.pos++
		alts, err := p.alts()
		if err != nil {
			return Arg{}, err
		}
		closer := map[string]string{"[": "]", "(": ")"}[n.text]
		if err := p.close(closer); err != nil {
			return Arg{}, err
		}
		g := Arg{Name: name, Type: ArgBlock, Optional: n.text == "["}
		if len(alts) == 1 {
			g.Args = alts[0]
			return g, nil
		}
		g.Type = ArgOneof
		for _, alt := range alts {
			if len(alt) != 1 {
				return Arg{}, p.errorf("an alternative of %s has several items; name it as a group", name)
			}
			g.Args = append(g.Args, alt[0])
		}
		return g, nil
	}
	a := Arg{Name: name, Type: ArgString}
	if typed {
		switch ArgType(typ) {
		case ArgString, ArgInteger, ArgDouble, ArgKey, ArgPattern, ArgUnixTime:
			a.Type = ArgType(typ)
		default:
			return Arg{}, p.errorf("unknown type %q", typ)
		}
	}
	return a, nil
}

func (p *argParser) close(closer string) error {
	t, ok := p.peek()
	if !ok || t.kind != tokClose || t.text != closer {
		return p.errorf("missing %q", closer)
	}
	p.pos++
	return nil
}

func (p *argParser) suffixes(a *Arg) error {
	for {
		t, ok := p.peek()
		if !ok || t.kind != tokSuffix {
			return nil
		}
		p.pos++
		switch {
		case t.text == "..." || t.text == "+...":
			if a.Multiple {
				return p.errorf("%s is multiple twice", a.Name)
			}
			a.Multiple, a.MultipleToken = true, t.text == "+..."
		case t.text[0] == '@':
			a.Since = t.text[1:]
		case t.text[0] == '!':
			a.DeprecatedSince = t.text[1:]
		}
	}
}

// docRow is one row of the documentation table (docs_table.go).
type docRow struct {
	name       string // "config|get" for a subcommand, after its command's row
	group      string
	since      string
	summary    string
	complexity string
	args       string   // in parseArgs's notation
	history    []string // version, change, version, change, …
	deprecated string   // the version that deprecated it
	replacedBy string
	syscmd     bool // for nodes, not users (Redis's syscmd doc flag)
	// oneKeySpec: the key arguments share key spec 0, as LCS's two keys
	// are one range in Redis's key specs.
	oneKeySpec bool
	// keySpecs, when set, is the key_spec_index of each key and pattern
	// argument in order, where Redis's are not one per key: SORT's BY and
	// GET patterns share spec 1, its STORE key is 2.
	keySpecs []int
	// names renames arguments whose Redis name is not the notation's
	// (SORT's ALPHA token is named "sorting").
	names map[string]string
}

// setKeySpecs gives the key and pattern arguments in args, depth first,
// the indexes specs lists from *i on.
func setKeySpecs(args []Arg, specs []int, i *int) error {
	for j := range args {
		if args[j].Type == ArgKey || args[j].Type == ArgPattern {
			if *i >= len(specs) {
				return fmt.Errorf("%w: more key and pattern arguments than keySpecs", errArgsSyntax)
			}
			args[j].KeySpecIndex = specs[*i]
			*i++
		}
		if err := setKeySpecs(args[j].Args, specs, i); err != nil {
			return err
		}
	}
	return nil
}

func renameArgs(args []Arg, names map[string]string) {
	for j := range args {
		if n, ok := names[args[j].Name]; ok {
			args[j].Name = n
		}
		renameArgs(args[j].Args, names)
	}
}

// buildDocs turns the rows into the documentation of each command, by
// name, with its subcommands.
func buildDocs(rows []docRow) (map[string]*Doc, error) {
	docs := make(map[string]*Doc, len(rows))
	for _, r := range rows {
		d := &Doc{Name: r.name, Summary: r.summary, Since: r.since, Group: r.group, Complexity: r.complexity,
			DeprecatedSince: r.deprecated, ReplacedBy: r.replacedBy}
		var err error
		if d.Args, err = parseArgs(r.args); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		if r.oneKeySpec {
			for i := range d.Args {
				if d.Args[i].Type == ArgKey {
					d.Args[i].KeySpecIndex = 0
				}
			}
		}
		if r.keySpecs != nil {
			n := 0
			if err := setKeySpecs(d.Args, r.keySpecs, &n); err != nil || n != len(r.keySpecs) {
				return nil, fmt.Errorf("commands: %s: keySpecs does not fit its key and pattern arguments (%v)", r.name, err)
			}
		}
		renameArgs(d.Args, r.names)
		if len(r.history)%2 != 0 {
			return nil, fmt.Errorf("commands: %s: history needs version and change pairs", r.name)
		}
		for i := 0; i < len(r.history); i += 2 {
			d.History = append(d.History, History{r.history[i], r.history[i+1]})
		}
		if r.deprecated != "" {
			d.DocFlags = append(d.DocFlags, "deprecated")
		}
		if r.syscmd {
			d.DocFlags = append(d.DocFlags, "syscmd")
		}
		parent, _, isSub := strings.Cut(r.name, "|")
		switch {
		case docs[r.name] != nil:
			return nil, fmt.Errorf("commands: %s documented twice", r.name)
		case isSub && docs[parent] == nil:
			return nil, fmt.Errorf("commands: %s comes before its command", r.name)
		case isSub:
			docs[parent].Subcommands = append(docs[parent].Subcommands, d)
		}
		docs[r.name] = d
	}
	for name := range docs {
		if strings.Contains(name, "|") {
			delete(docs, name) // reached through their command only
		}
	}
	return docs, nil
}
