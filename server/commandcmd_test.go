package server

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// Redis 7.0's COMMAND DOCS format (server.c: addReplyCommandDocs,
// addReplyCommandArgList, COMMAND_GROUP_STR, ARG_TYPE_STR): the keys each
// level may have, in the order Redis writes them.
var (
	docKeys = []string{"summary", "since", "group", "complexity", "module", "doc_flags",
		"deprecated_since", "replaced_by", "history", "arguments", "subcommands"}
	argKeys = []string{"name", "type", "key_spec_index", "token", "summary", "since",
		"deprecated_since", "flags", "arguments"}
	redisGroups = []string{"generic", "string", "list", "set", "sorted-set", "hash", "pubsub",
		"transactions", "connection", "server", "scripting", "hyperloglog", "cluster", "sentinel",
		"geo", "stream", "bitmap", "module"}
	argTypes = []string{"string", "integer", "double", "key", "pattern", "unix-time", "pure-token", "oneof", "block"}
	version  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)

// docsRules checks a COMMAND DOCS reply against Redis 7.0's rules, field
// by field, in either protocol: RESP2 gets maps as flat arrays and sets as
// arrays.
type docsRules struct {
	t     *testing.T
	proto int
}

func (r docsRules) errorf(path, format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// pairs returns a map's keys and values, checking the keys are bulk
// strings in the order of allowed, each once.
func (r docsRules) pairs(path string, v resp.Value, allowed []string) ([]string, map[string]resp.Value) {
	r.t.Helper()
	want := resp.KindMap
	if r.proto == 2 {
		want = resp.KindArray
	}
	if v.Kind() != want || len(v.Elems())%2 != 0 {
		r.errorf(path, "a %v of %d elements, want a map", v.Kind(), len(v.Elems()))
		return nil, nil
	}
	var keys []string
	vals := map[string]resp.Value{}
	last := -1
	for i := 0; i < len(v.Elems()); i += 2 {
		k := v.Elems()[i]
		if k.Kind() != resp.KindBulk {
			r.errorf(path, "key %v is a %v, want a bulk string", k, k.Kind())
			continue
		}
		name := k.Text()
		if _, dup := vals[name]; dup {
			r.errorf(path, "key %q twice", name)
		}
		if allowed != nil {
			at := slices.Index(allowed, name)
			switch {
			case at < 0:
				r.errorf(path, "key %q is not in Redis's format", name)
			case at < last:
				r.errorf(path, "key %q out of Redis's order", name)
			}
			last = max(last, at)
		}
		keys = append(keys, name)
		vals[name] = v.Elems()[i+1]
	}
	return keys, vals
}

func (r docsRules) bulk(path string, v resp.Value) string {
	r.t.Helper()
	if v.Kind() != resp.KindBulk || v.Text() == "" {
		r.errorf(path, "%v, want a non-empty bulk string", v)
	}
	return v.Text()
}

func (r docsRules) version(path string, v resp.Value) string {
	r.t.Helper()
	s := r.bulk(path, v)
	if !version.MatchString(s) {
		r.errorf(path, "%q is not a version", s)
	}
	return s
}

// statusSet returns the names in a set of simple strings.
func (r docsRules) statusSet(path string, v resp.Value, allowed []string) []string {
	r.t.Helper()
	want := resp.KindSet
	if r.proto == 2 {
		want = resp.KindArray
	}
	if v.Kind() != want || len(v.Elems()) == 0 {
		r.errorf(path, "%v, want a non-empty set", v)
		return nil
	}
	var out []string
	for _, e := range v.Elems() {
		// redis-cli asserts simple strings (REDIS_REPLY_STATUS) here.
		if e.Kind() != resp.KindSimpleString || !slices.Contains(allowed, e.Text()) {
			r.errorf(path, "flag %v, want a simple string of %v", e, allowed)
		}
		out = append(out, e.Text())
	}
	if !slices.IsSortedFunc(out, func(a, b string) int { return slices.Index(allowed, a) - slices.Index(allowed, b) }) || len(slices.Compact(slices.Clone(out))) != len(out) {
		r.errorf(path, "flags %v not once each in Redis's order %v", out, allowed)
	}
	return out
}

func laterOrSame(a, b string) bool { // versions: a >= b
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(pa), len(pb)) {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x > y
		}
	}
	return true
}

// doc checks one command's or subcommand's docs.
func (r docsRules) doc(path string, v resp.Value, sub bool) {
	r.t.Helper()
	keys, vals := r.pairs(path, v, docKeys)
	for _, k := range []string{"summary", "since", "group", "complexity"} {
		if !slices.Contains(keys, k) {
			r.errorf(path, "no %s", k)
		}
	}
	since := r.version(path+".since", vals["since"])
	r.bulk(path+".summary", vals["summary"])
	r.bulk(path+".complexity", vals["complexity"])
	if g := r.bulk(path+".group", vals["group"]); !slices.Contains(redisGroups, g) && g != "fenced" {
		r.errorf(path, "group %q is neither Redis's nor fenced", g)
	}
	if _, ok := vals["module"]; ok {
		r.errorf(path, "a module key: fenced has no modules")
	}
	var docFlags []string
	if f, ok := vals["doc_flags"]; ok {
		docFlags = r.statusSet(path+".doc_flags", f, []string{"deprecated", "syscmd"})
	}
	dep, hasDep := vals["deprecated_since"]
	if hasDep != slices.Contains(docFlags, "deprecated") {
		r.errorf(path, "deprecated_since %v without the deprecated flag, or the other way round", hasDep)
	}
	if hasDep {
		r.version(path+".deprecated_since", dep)
	}
	if rb, ok := vals["replaced_by"]; ok {
		if !hasDep {
			r.errorf(path, "replaced_by a command that is not deprecated")
		}
		r.bulk(path+".replaced_by", rb)
	}
	if h, ok := vals["history"]; ok {
		r.history(path+".history", h, since)
	}
	args, hasArgs := vals["arguments"]
	if hasArgs {
		keys := 0
		r.args(path+".arguments", args, since, &keys)
	}
	if subs, ok := vals["subcommands"]; ok {
		if sub {
			r.errorf(path, "a subcommand with subcommands")
		}
		if hasArgs {
			r.errorf(path, "both arguments and subcommands")
		}
		names, subVals := r.pairs(path+".subcommands", subs, nil)
		if len(names) == 0 {
			r.errorf(path, "no subcommands in subcommands")
		}
		for _, n := range names {
			if parent, _, _ := strings.Cut(n, "|"); parent != path || n != strings.ToLower(n) {
				r.errorf(path, "subcommand %q is not named %s|<lower case>", n, path)
			}
			r.doc(n, subVals[n], true)
		}
	}
}

func (r docsRules) history(path string, v resp.Value, since string) {
	r.t.Helper()
	want := resp.KindSet
	if r.proto == 2 {
		want = resp.KindArray
	}
	if v.Kind() != want || len(v.Elems()) == 0 {
		r.errorf(path, "%v, want a non-empty set", v)
		return
	}
	prev := since
	for i, e := range v.Elems() {
		if e.Kind() != resp.KindArray || len(e.Elems()) != 2 {
			r.errorf(path, "entry %v, want [version, change]", e)
			continue
		}
		p := fmt.Sprintf("%s[%d]", path, i)
		ver := r.version(p, e.Elems()[0])
		r.bulk(p, e.Elems()[1])
		if !laterOrSame(ver, prev) {
			r.errorf(p, "version %s before %s", ver, prev)
		}
		prev = ver
	}
}

// args checks an arguments array; keys counts the key arguments met so
// far, whose key_spec_index must number them in order.
func (r docsRules) args(path string, v resp.Value, since string, keys *int) {
	r.t.Helper()
	if v.Kind() != resp.KindArray || len(v.Elems()) == 0 {
		r.errorf(path, "%v, want a non-empty array", v)
		return
	}
	names := map[string]bool{}
	for i, a := range v.Elems() {
		p := fmt.Sprintf("%s[%d]", path, i)
		_, vals := r.pairs(p, a, argKeys)
		name := r.bulk(p+".name", vals["name"])
		p = path + "." + name
		if name != strings.ToLower(name) || strings.ContainsAny(name, " \t") {
			r.errorf(p, "name %q: Redis's are lower case words", name)
		}
		// SORT's BY and GET arguments are both "pattern" in Redis 7.0's own
		// documentation (src/commands/sort.json).
		if names[name] && p != "sort.arguments.pattern" && p != "sort_ro.arguments.pattern" {
			r.errorf(p, "name %q twice among siblings", name)
		}
		names[name] = true
		typ := r.bulk(p+".type", vals["type"])
		if !slices.Contains(argTypes, typ) {
			r.errorf(p, "type %q is not one of %v", typ, argTypes)
		}
		ksi, hasKSI := vals["key_spec_index"]
		// Every key has one; a pattern may (SORT's BY and GET, whose keys
		// Redis 7.0 describes by a key spec of their own); nothing else.
		if typ == "key" && !hasKSI || hasKSI && typ != "key" && typ != "pattern" {
			r.errorf(p, "key_spec_index %v for type %s", ksi, typ)
		}
		if hasKSI {
			// The next key spec, or one an earlier key argument has:
			// keys that share a range spec (LCS's two) share its index.
			switch {
			case ksi.Kind() != resp.KindInt || ksi.Integer() < 0 || ksi.Integer() > int64(*keys):
				r.errorf(p, "key_spec_index %v, want %d (keys in order) or an earlier one", ksi, *keys)
			case ksi.Integer() == int64(*keys):
				*keys++
			}
		}
		tok, hasTok := vals["token"]
		if hasTok {
			if s := r.bulk(p+".token", tok); s != strings.ToUpper(s) || strings.ContainsAny(s, " \t") {
				r.errorf(p, "token %q is not one upper-case word", s)
			}
		}
		if typ == "pure-token" && !hasTok {
			r.errorf(p, "a pure-token without its token")
		}
		if s, ok := vals["summary"]; ok {
			r.bulk(p+".summary", s)
		}
		argSince := since
		if s, ok := vals["since"]; ok {
			argSince = r.version(p+".since", s)
			if !laterOrSame(argSince, since) {
				r.errorf(p, "since %s, before its command or group (%s)", argSince, since)
			}
		}
		if s, ok := vals["deprecated_since"]; ok {
			r.version(p+".deprecated_since", s)
		}
		var flags []string
		if f, ok := vals["flags"]; ok {
			flags = r.statusSet(p+".flags", f, []string{"optional", "multiple", "multiple_token"})
		}
		if slices.Contains(flags, "multiple_token") && (!slices.Contains(flags, "multiple") || !hasTok) {
			r.errorf(p, "multiple_token without multiple and a token")
		}
		sub, hasSub := vals["arguments"]
		group := typ == "oneof" || typ == "block"
		if hasSub != group {
			r.errorf(p, "nested arguments %v for type %s", hasSub, typ)
		}
		if hasSub {
			if typ == "oneof" && len(sub.Elems()) < 2 {
				r.errorf(p, "a oneof of %d alternatives", len(sub.Elems()))
			}
			r.args(p, sub, argSince, keys)
		}
	}
}

// TestCommandDocsRules: COMMAND DOCS, in RESP2 and RESP3, is well-formed by
// Redis 7.0's rules at every level, for every command and subcommand in
// the table.
func TestCommandDocsRules(t *testing.T) {
	s := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := resp.Dial(ctx, s.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			do := func(args ...string) resp.Value {
				b := make([][]byte, len(args))
				for i, a := range args {
					b[i] = []byte(a)
				}
				v, err := c.Do(ctx, b...)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if proto == 3 {
				do("HELLO", "3")
			}
			r := docsRules{t: t, proto: proto}
			names, docs := r.pairs("COMMAND DOCS", do("COMMAND", "DOCS"), nil)
			if d := nameDiff(names, clientCommands()); d != "" {
				t.Errorf("COMMAND DOCS names: %s", d)
			}
			for _, n := range names {
				r.doc(n, docs[n], false)
			}
		})
	}
}

// TestCommandDocsLookup: COMMAND DOCS finds commands and, as Redis does,
// subcommands by their full name, case-insensitively, and leaves out names
// it does not know; COMMAND INFO without names describes every command.
func TestCommandDocsLookup(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	keysOf := func(args ...any) []string {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		m, ok := v.(map[any]any)
		if !ok {
			t.Fatalf("%v: %#v, want a map", args, v)
		}
		var out []string
		for k := range m {
			out = append(out, k.(string))
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		args []any
		want []string
	}{
		{[]any{"COMMAND", "DOCS", "FLOCK"}, []string{"flock"}},
		{[]any{"COMMAND", "DOCS", "CONFIG|GET", "client|Kill", "config|nope", "nope|get", "nope", "", "|", "config|", "config|get|x"}, []string{"client|kill", "config|get"}},
		{[]any{"COMMAND", "DOCS", "set", "get"}, []string{"get", "set"}},
	} {
		if got := keysOf(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.args, got, tc.want)
		}
	}
	// A subcommand's docs are the ones inside its command's.
	cfg, _ := c.Do(ctx, "COMMAND", "DOCS", "config").Result()
	get, _ := c.Do(ctx, "COMMAND", "DOCS", "config|get").Result()
	inner := cfg.(map[any]any)["config"].(map[any]any)["subcommands"].(map[any]any)["config|get"]
	if fmt.Sprint(inner) != fmt.Sprint(get.(map[any]any)["config|get"]) {
		t.Errorf("COMMAND DOCS config|get = %v, inside CONFIG %v", get, inner)
	}
	all, err := c.Do(ctx, "COMMAND", "INFO").Slice()
	if err != nil || len(all) != len(clientCommands()) {
		t.Errorf("COMMAND INFO = %d commands, %v; want all %d the client port runs", len(all), err, len(clientCommands()))
	}
	for _, bad := range [][]any{{"COMMAND", "COUNT", "x"}, {"COMMAND", "HELP", "x"}} {
		if err := c.Do(ctx, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR wrong number of arguments for 'command|") {
			t.Errorf("%v: %v, want an arity error", bad, err)
		}
	}
}

// clientCommands are the names of the table's commands that the client
// port runs, in table order: all but the peer-only ones.
func clientCommands() []string {
	var names []string
	for _, spec := range commands.New().All() {
		if !spec.Has(commands.Peer) {
			names = append(names, spec.Name)
		}
	}
	return names
}

// nameDiff describes how the command names got differ from want, in
// order; "" if they are equal.
func nameDiff(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	var extra, missing []string
	for _, n := range got {
		if !slices.Contains(want, n) {
			extra = append(extra, n)
		}
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			missing = append(missing, n)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return fmt.Sprintf("the %d names are out of order", len(got))
	}
	return fmt.Sprintf("%d names, want %d: listed but should not be %v, missing %v", len(got), len(want), extra, missing)
}

// TestCommandPeerOnly: COMMAND on the client port leaves out the commands
// only the peer channel runs (RAFT.LINK ...), in every form: the list,
// COUNT, INFO, DOCS and GETKEYS treat them as commands the server lacks.
// The peer channel, which runs them, still lists them, with well-formed
// docs.
func TestCommandPeerOnly(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var peerOnly []string
	for _, spec := range commands.New().All() {
		if spec.Has(commands.Peer) {
			peerOnly = append(peerOnly, spec.Name)
		}
	}
	if !slices.Contains(peerOnly, "raft.link") || !slices.Contains(peerOnly, "raft.watch") {
		t.Fatalf("peer-only commands %v, want raft.link and raft.watch among them", peerOnly)
	}
	client, err := resp.Dial(ctx, s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := s.node.DialPeer(ctx, s.node.RaftAddr())
	if err != nil {
		t.Fatal(err)
	}
	peer := resp.NewClient(nc, resp.DefaultReplyLimits())
	defer peer.Close()
	do := func(c *resp.Client, args ...string) resp.Value {
		t.Helper()
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		v, err := c.Do(ctx, b...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	// infoNames are the command names of a COMMAND (or COMMAND INFO) reply.
	infoNames := func(v resp.Value) []string {
		t.Helper()
		var names []string
		for _, e := range v.Elems() {
			if len(e.Elems()) == 0 {
				t.Fatalf("COMMAND element %v, want a command's info", e)
			}
			names = append(names, e.Elems()[0].Text())
		}
		return names
	}
	isNull := func(v resp.Value) bool { return v.Kind() == resp.KindNull || v.Kind() == resp.KindNullArray }
	docsNames := func(v resp.Value) []string {
		t.Helper()
		var names []string
		for i := 0; i < len(v.Elems()); i += 2 {
			names = append(names, v.Elems()[i].Text())
		}
		return names
	}

	want := clientCommands()
	if d := nameDiff(infoNames(do(client, "COMMAND")), want); d != "" {
		t.Errorf("COMMAND on the client port: %s", d)
	}
	if d := nameDiff(infoNames(do(client, "COMMAND", "INFO")), want); d != "" {
		t.Errorf("COMMAND INFO on the client port: %s", d)
	}
	if got := do(client, "COMMAND", "COUNT"); got.Kind() != resp.KindInt || got.Integer() != int64(len(want)) {
		t.Errorf("COMMAND COUNT on the client port = %v, want %d", got, len(want))
	}
	if d := nameDiff(docsNames(do(client, "COMMAND", "DOCS")), want); d != "" {
		t.Errorf("COMMAND DOCS on the client port: %s", d)
	}
	for _, name := range peerOnly {
		upper := strings.ToUpper(name)
		if v := do(client, "COMMAND", "INFO", upper, "ping"); len(v.Elems()) != 2 || !isNull(v.Elems()[0]) || isNull(v.Elems()[1]) {
			t.Errorf("COMMAND INFO %s ping on the client port = %v, want [null, ping's info]", upper, v)
		}
		if v := do(client, "COMMAND", "DOCS", upper); len(v.Elems()) != 0 {
			t.Errorf("COMMAND DOCS %s on the client port = %v, want an empty map", upper, v)
		}
		if v := do(client, "COMMAND", "GETKEYS", upper, "a", "b"); v.Text() != "ERR Invalid command specified" {
			t.Errorf("COMMAND GETKEYS %s a b on the client port = %v, want -ERR Invalid command specified", upper, v)
		}
	}

	all := append(append([]string(nil), want...), peerOnly...)
	slices.Sort(all)
	if d := nameDiff(infoNames(do(peer, "COMMAND")), all); d != "" {
		t.Errorf("COMMAND on the peer channel: %s", d)
	}
	if got := do(peer, "COMMAND", "COUNT"); got.Kind() != resp.KindInt || got.Integer() != int64(len(all)) {
		t.Errorf("COMMAND COUNT on the peer channel = %v, want %d", got, len(all))
	}
	r := docsRules{t: t, proto: 2}
	for _, name := range peerOnly {
		if v := do(peer, "COMMAND", "INFO", name); len(v.Elems()) != 1 || isNull(v.Elems()[0]) {
			t.Errorf("COMMAND INFO %s on the peer channel = %v, want its info", name, v)
		}
		v := do(peer, "COMMAND", "DOCS", name)
		if got := docsNames(v); !slices.Equal(got, []string{name}) {
			t.Errorf("COMMAND DOCS %s on the peer channel = %v", name, v)
			continue
		}
		r.doc(name, v.Elems()[1], false)
	}
}
