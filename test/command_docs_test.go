package test

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// COMMAND DOCS next to a real redis-server 7.0. For every command and
// subcommand both serve, fenced answers Redis's documentation cut down to
// what fenced accepts: the same keys at every level, in Redis's order,
// with the same wire types; the same summary, since, group and deprecation;
// history entries and arguments that are Redis's own (same name, type,
// token, flags, versions, key_spec_index), in Redis's order. What fenced
// leaves out is an optional argument, an alternative of a oneof, a
// subcommand, or a history entry; never a required argument. complexity
// is compared by type only: fenced states its own where its cost differs
// (KEYS sorts, UNLINK frees at once). A command redis-server lacks must be
// fenced's own (since 0.1.0) or a later Redis's.

// renamedArgs are fenced's names for arguments 7.0.15 names against its
// own rule that siblings' names differ (Redis 7.2 renamed them too).
var renamedArgs = map[string]string{
	"client|kill.filter.new-format.addr":  "ip:port",
	"client|kill.filter.new-format.laddr": "ip:port",
	"lcs.min-match-len":                   "len",
}

type docsDiff struct {
	t                  *testing.T
	commands, subs     int
	fencedOnly, subset []string
}

// pairs returns the keys and values of a map reply: '%' in RESP3, a flat
// array in RESP2.
func (d *docsDiff) pairs(path string, v rv) ([]string, map[string]rv) {
	d.t.Helper()
	if (v.kind != '%' && v.kind != '*') || len(v.elems)%2 != 0 {
		d.t.Errorf("%s: %v is not a map", path, v)
		return nil, nil
	}
	var keys []string
	vals := map[string]rv{}
	for i := 0; i < len(v.elems); i += 2 {
		keys = append(keys, v.elems[i].str)
		vals[v.elems[i].str] = v.elems[i+1]
	}
	return keys, vals
}

// sameOrder reports whether sub's elements appear in all in the same order.
func sameOrder(sub, all []string) bool {
	last := -1
	for _, k := range sub {
		i := slices.Index(all, k)
		if i <= last {
			return false
		}
		last = i
	}
	return true
}

func versionAfter(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(pa), len(pb)) {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x > y
		}
	}
	return len(pa) > len(pb)
}

// missing checks a command that redis-server does not document.
func (d *docsDiff) missing(name string, doc rv) {
	d.t.Helper()
	_, vals := d.pairs(name, doc)
	since := vals["since"].str
	if since != "0.1.0" && !versionAfter(since, "7.0.15") {
		d.t.Errorf("%s: since %s, a Redis version redis-server 7.0.15 has, but it does not document %s", name, since, name)
	}
	d.fencedOnly = append(d.fencedOnly, name)
}

func (d *docsDiff) doc(path string, f, r rv) {
	d.t.Helper()
	fk, fv := d.pairs(path, f)
	rk, rvals := d.pairs(path, r)
	if !sameOrder(fk, rk) {
		d.t.Errorf("%s: keys %v, not a subset of Redis's %v in its order", path, fk, rk)
	}
	for _, k := range rk {
		if slices.Contains(fk, k) {
			continue
		}
		switch {
		case k == "history":
			d.subset = append(d.subset, path+" (history)")
		case k == "arguments" && allOptional(rvals[k]):
			d.subset = append(d.subset, path+" (no arguments)")
		default:
			d.t.Errorf("%s: no %q, which Redis has: %v", path, k, rvals[k])
		}
	}
	for _, k := range fk {
		fval, rval := fv[k], rvals[k]
		if _, ok := rvals[k]; !ok {
			continue // reported above
		}
		if fval.kind != rval.kind {
			d.t.Errorf("%s.%s: a %q, Redis's a %q", path, k, fval.kind, rval.kind)
			continue
		}
		switch k {
		case "complexity":
		case "history":
			for _, e := range fval.elems {
				if !slices.ContainsFunc(rval.elems, func(x rv) bool { return x.String() == e.String() }) {
					d.t.Errorf("%s: history entry %v is not Redis's %v", path, e, rval)
				}
			}
			if len(fval.elems) < len(rval.elems) {
				d.subset = append(d.subset, path+" (history)")
			}
		case "arguments":
			d.args(path, fval.elems, rval.elems, false)
		case "subcommands":
			names, fsubs := d.pairs(path+".subcommands", fval)
			_, rsubs := d.pairs(path+".subcommands", rval)
			for _, n := range names {
				d.subs++
				if rs, ok := rsubs[n]; ok {
					d.doc(n, fsubs[n], rs)
				} else {
					d.missing(n, fsubs[n])
				}
			}
			if len(names) < len(rsubs) {
				d.subset = append(d.subset, path+" (subcommands)")
			}
		default: // summary, since, group, doc_flags, deprecated_since, replaced_by
			if fval.String() != rval.String() {
				d.t.Errorf("%s.%s: %v, Redis's %v", path, k, fval, rval)
			}
		}
	}
}

func (d *docsDiff) field(a rv, key string) (rv, bool) {
	for i := 0; i+1 < len(a.elems); i += 2 {
		if a.elems[i].str == key {
			return a.elems[i+1], true
		}
	}
	return rv{}, false
}

func allOptional(args rv) bool {
	for _, a := range args.elems {
		if !isOptional(a) {
			return false
		}
	}
	return true
}

func isOptional(a rv) bool {
	for i := 0; i+1 < len(a.elems); i += 2 {
		if a.elems[i].str == "flags" {
			return slices.ContainsFunc(a.elems[i+1].elems, func(f rv) bool { return f.str == "optional" })
		}
	}
	return false
}

// args compares fenced's arguments with Redis's siblings: each of
// fenced's is one of Redis's, in Redis's order; Redis's that fenced leaves
// out are optional, or alternatives of a oneof.
func (d *docsDiff) args(path string, f, r []rv, oneof bool) {
	d.t.Helper()
	used := make([]bool, len(r))
	last := -1
	for _, fa := range f {
		nv, _ := d.field(fa, "name")
		name := nv.str
		want := name
		if rn, ok := renamedArgs[path+"."+name]; ok {
			want = rn
		}
		j := -1
		for i := last + 1; i < len(r); i++ {
			if rn, _ := d.field(r[i], "name"); rn.str == want {
				j = i
				break
			}
		}
		if j < 0 {
			d.t.Errorf("%s: argument %q is not Redis's, or out of Redis's order", path, name)
			continue
		}
		used[j], last = true, j
		d.arg(path+"."+name, fa, r[j])
	}
	for i, ra := range r {
		if used[i] {
			continue
		}
		rn, _ := d.field(ra, "name")
		if !oneof && !isOptional(ra) {
			d.t.Errorf("%s: leaves out %q, which Redis requires", path, rn.str)
		}
		d.subset = append(d.subset, path+" (no "+rn.str+")")
	}
	if oneof && len(f) == 0 {
		d.t.Errorf("%s: a oneof without alternatives", path)
	}
}

func (d *docsDiff) arg(path string, f, r rv) {
	d.t.Helper()
	fk, fv := d.pairs(path, f)
	rk, rvals := d.pairs(path, r)
	if !slices.Equal(fk, rk) {
		d.t.Errorf("%s: keys %v, Redis's %v", path, fk, rk)
		return
	}
	for _, k := range fk {
		fval, rval := fv[k], rvals[k]
		switch {
		case fval.kind != rval.kind:
			d.t.Errorf("%s.%s: a %q, Redis's a %q", path, k, fval.kind, rval.kind)
		case k == "name": // matched by the caller, renames included
		case k == "arguments":
			typ := fv["type"].str
			d.args(path, fval.elems, rval.elems, typ == "oneof")
		case fval.String() != rval.String():
			d.t.Errorf("%s.%s: %v, Redis's %v", path, k, fval, rval)
		}
	}
}

func TestCommandDocsLikeRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	n := startNode(t, nodeOpts{})
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			fc, rc := dialRaw(t, n.addr), dialRaw(t, rd.leader)
			for _, c := range []*rawConn{fc, rc} {
				c.send("HELLO", proto)
				if v := c.read(); v.kind == '-' {
					t.Fatalf("HELLO %s: %v", proto, v)
				}
			}
			if v := rc.read2("INFO", "server"); !strings.Contains(v.str, "redis_version:7.0.") {
				t.Fatalf("redis-server is not 7.0: %.200s", v.str)
			}
			d := &docsDiff{t: t}
			names, docs := d.pairs("COMMAND DOCS", fc.read2("COMMAND", "DOCS"))
			for _, name := range names {
				_, theirs := d.pairs(name, rc.read2("COMMAND", "DOCS", name))
				r, ok := theirs[name]
				if !ok {
					d.missing(name, docs[name])
					continue
				}
				d.commands++
				d.doc(name, docs[name], r)
			}
			if d.commands < 40 || d.subs < 30 {
				t.Errorf("compared %d commands and %d subcommands; fenced serves more of Redis's", d.commands, d.subs)
			}
			t.Logf("compared %d commands and %d subcommands with redis-server; fenced's own: %v", d.commands, d.subs, d.fencedOnly)
			t.Logf("cut down to what fenced accepts: %v", d.subset)
		})
	}
}

// read2 sends args and reads the reply.
func (c *rawConn) read2(args ...string) rv {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// docArg is one argument of a COMMAND DOCS reply (RESP3), for building
// invocations from the docs.
type docArg struct {
	name, typ, token string
	optional, multi  bool
	args             []docArg
}

func parseDocArgs(v rv) []docArg {
	var out []docArg
	for _, a := range v.elems {
		var d docArg
		for i := 0; i+1 < len(a.elems); i += 2 {
			val := a.elems[i+1]
			switch a.elems[i].str {
			case "name":
				d.name = val.str
			case "type":
				d.typ = val.str
			case "token":
				d.token = val.str
			case "flags":
				for _, f := range val.elems {
					d.optional = d.optional || f.str == "optional"
					d.multi = d.multi || f.str == "multiple"
				}
			case "arguments":
				d.args = parseDocArgs(val)
			}
		}
		out = append(out, d)
	}
	return out
}

// sampleValue is a word of the argument's type that the command takes in
// earnest, so that what it answers is about the arguments' shape; key
// names key, fresh for each invocation.
func sampleValue(a docArg, key string) string {
	switch a.name {
	case "script":
		return "return 1"
	case "rule":
		return "on"
	case "categoryname":
		return "string"
	case "command":
		return "ping"
	case "username":
		return "default"
	case "parameter":
		return "slowlog-max-len"
	case "value":
		return "128"
	case "protover":
		return "3"
	case "index":
		return "0"
	case "section":
		return "server"
	case "ms":
		return "1000"
	}
	switch a.typ {
	case "key":
		return key
	case "integer":
		return "1"
	case "double":
		return "0.01"
	case "unix-time":
		return "4102444800"
	case "pattern":
		return "*"
	}
	return "x"
}

// invocations returns argument lists that use every documented argument:
// each optional one present, each multiple one twice, and, for each oneof
// met on the way, each of its alternatives in turn (the others taking
// their first). key is the key sampleValue gives the i-th list.
func invocations(args []docArg, key func(i int) string) [][]string {
	// words renders args with the target-th oneof met taking alternative
	// pick; ok reports whether that oneof was met and has it.
	words := func(target, pick int, key string) (w []string, ok bool) {
		seen := 0
		var walk func([]docArg) []string
		walk = func(as []docArg) []string {
			var w []string
			for _, a := range as {
				var one []string
				if a.token != "" {
					one = append(one, a.token)
				}
				switch a.typ {
				case "pure-token":
				case "block":
					one = append(one, walk(a.args)...)
				case "oneof":
					alt := 0
					if seen == target && pick < len(a.args) {
						alt, ok = pick, true
					}
					seen++
					one = append(one, walk(a.args[alt:alt+1])...)
				default:
					one = append(one, sampleValue(a, key))
				}
				w = append(w, one...)
				if a.multi {
					w = append(w, one...)
				}
			}
			return w
		}
		return walk(args), ok
	}
	base, _ := words(-1, 0, key(0))
	out := [][]string{base}
	for target := 0; ; target++ {
		if _, met := words(target, 0, ""); !met {
			return out // no target-th oneof
		}
		for pick := 1; ; pick++ {
			w, ok := words(target, pick, key(len(out)))
			if !ok {
				break
			}
			out = append(out, w)
		}
	}
}

// TestCommandDocsAccepted: every argument COMMAND DOCS lists is one fenced
// accepts. Each command and subcommand runs, on a connection of its own,
// with every documented argument (each alternative in turn), and none
// answers an error about the arguments' shape: a syntax error, an arity
// error, an unknown option or subcommand. Errors about the values (no such
// session, no such script, a bad password) are the command taking them in
// earnest.
func TestCommandDocsAccepted(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := dialRaw(t, n.addr)
	c.read2("HELLO", "3")
	_, docs := (&docsDiff{t: t}).pairs("COMMAND DOCS", c.read2("COMMAND", "DOCS"))
	skip := map[string]string{
		"client|kill":   "kills connections: TestBadClientKill",
		"client|reply":  "OFF and SKIP answer nothing: TestDiffClientReply",
		"raft.join":     "changes the membership: cluster_membership_test.go",
		"raft.remove":   "changes the membership",
		"raft.transfer": "changes the leader",
		"shutdown":      "stops the node: TestSaveAndShutdown",
		// Redis 7.0 documents no arguments for it, though it needs some.
		"command|getkeys": "documented without arguments: TestBadCommandDocs, TestDiffLuaLibraries",
	}
	shapeErrors := []string{"err syntax error", "err wrong number of arguments", "err unknown subcommand",
		"err unknown command", "err unrecognized option", "unknown option", "syntax error in hello option"}
	runs := 0
	var check func(name string, doc rv)
	check = func(name string, doc rv) {
		_, vals := (&docsDiff{t: t}).pairs(name, doc)
		if subs, ok := vals["subcommands"]; ok {
			for i := 0; i+1 < len(subs.elems); i += 2 {
				check(subs.elems[i].str, subs.elems[i+1])
			}
			return
		}
		if why, ok := skip[name]; ok {
			t.Logf("%s: not run (%s)", name, why)
			return
		}
		words := strings.Split(strings.ToUpper(strings.ReplaceAll(name, "|", " ")), " ")
		key := func(i int) string { return fmt.Sprintf("docs:%s:%d", name, i) }
		for _, args := range invocations(parseDocArgs(vals["arguments"]), key) {
			call := append(slices.Clone(words), args...)
			cc := dialRaw(t, n.addr)
			cc.read2("HELLO", "3")
			v := cc.read2(call...)
			runs++
			if v.kind == '-' {
				low := strings.ToLower(v.str)
				for _, bad := range shapeErrors {
					if strings.Contains(low, bad) {
						t.Errorf("%q, as COMMAND DOCS documents it: %v", call, v)
						break
					}
				}
			}
			cc.nc.Close()
		}
	}
	for name, doc := range docs {
		check(name, doc)
	}
	if runs < 100 {
		t.Errorf("only %d invocations", runs)
	}
	c.send("PING")
	if v := c.read(); v.str != "PONG" {
		t.Errorf("PING after the invocations: %v", v)
	}
}
