package server

import (
	"slices"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// command implements COMMAND, COMMAND COUNT, COMMAND DOCS and COMMAND INFO
// from the command table, as far as the connection may run it (runnable).
func (s *Server) command(c *resp.Conn, args [][]byte) resp.Value {
	all := slices.DeleteFunc(slices.Clone(s.table.All()), func(spec *commands.Spec) bool { return !runnable(c, spec) })
	if len(args) == 1 {
		vs := make([]resp.Value, len(all))
		for i, spec := range all {
			vs[i] = commandInfo(spec)
		}
		return resp.Array(vs...)
	}
	switch strings.ToUpper(string(args[1])) {
	case "COUNT":
		if len(args) != 2 {
			return errorReply(wrapArity("command|count"))
		}
		return resp.Int(int64(len(all)))
	case "INFO":
		if len(args) == 2 { // all of them, as Redis 7
			return s.command(c, args[:1])
		}
		vs := make([]resp.Value, 0, len(args)-2)
		for _, name := range args[2:] {
			if spec, ok := s.table.Lookup(name); ok && runnable(c, spec) {
				vs = append(vs, commandInfo(spec))
			} else {
				vs = append(vs, resp.NullArray())
			}
		}
		return resp.Array(vs...)
	case "DOCS":
		var kvs []resp.Value
		if len(args) == 2 {
			for _, spec := range all {
				kvs = append(kvs, resp.BulkString(spec.Name), docsReply(spec.Doc))
			}
		}
		// Unknown names are left out, as Redis does; a repeated one is
		// answered once (Redis repeats it), so the reply is bounded by the
		// docs themselves however many names come.
		seen := map[*commands.Doc]bool{}
		for _, name := range args[2:] {
			if d := s.lookupDoc(c, string(name)); d != nil && !seen[d] {
				seen[d] = true
				kvs = append(kvs, resp.BulkString(d.Name), docsReply(d))
			}
		}
		return resp.Map(kvs...)
	case "GETKEYS":
		if len(args) < 4 {
			return errorReply(wrapArity("command|getkeys"))
		}
		return s.getKeys(c, args[2:])
	case "HELP":
		if len(args) != 2 {
			return errorReply(wrapArity("command|help"))
		}
		return helpReply(
			"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands in this server.",
			"INFO [<command-name> ...]", "    Return details about the given commands, or all of them.",
			"DOCS [<command-name> ...]", "    Return documentation details about the given commands, or all of them.",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
			"HELP", "    Print this help.",
		)
	}
	return syntaxError("unknown subcommand '%s'. Try COMMAND HELP.", commands.Clip(args[1]))
}

// getKeys is COMMAND GETKEYS: the keys of the command in args, as the
// command table knows them (the ones an ACL key pattern must cover), with
// Redis 7's errors in its order. A command has keys if it can have any:
// EVAL with no keys answers an empty array, PING an error.
func (s *Server) getKeys(c *resp.Conn, args [][]byte) resp.Value {
	spec, ok := s.table.Lookup(args[0])
	if !ok || !runnable(c, spec) || spec.Version > 1 && s.notYet(spec) {
		return syntaxError("Invalid command specified")
	}
	n := spec.Arity
	if n < 0 {
		n = -n + 1 // one more than the least, for a numkeys of 1
	}
	probe := make([][]byte, n)
	probe[0] = args[0]
	for i := 1; i < n; i++ {
		probe[i] = []byte("1")
	}
	switch {
	case len(spec.KeysOf(probe)) == 0:
		return syntaxError("The command has no key arguments")
	case !spec.CheckArity(len(args)):
		return syntaxError("Invalid number of arguments specified for command")
	}
	keys := spec.KeysOf(args)
	out := make([]resp.Value, len(keys))
	for i, k := range keys {
		out[i] = resp.Bulk(k)
	}
	return resp.Array(out...)
}

// lookupDoc finds a command's docs by name, or a subcommand's by Redis's
// full name ("config|get"), case-insensitively; nil if there are none.
func (s *Server) lookupDoc(c *resp.Conn, name string) *commands.Doc {
	cmd, sub, isSub := strings.Cut(name, "|")
	spec, ok := s.table.Lookup([]byte(cmd))
	if !ok || !runnable(c, spec) {
		return nil
	}
	if !isSub {
		return spec.Doc
	}
	for _, d := range spec.Doc.Subcommands {
		if strings.EqualFold(d.Name, spec.Name+"|"+sub) {
			return d
		}
	}
	return nil
}

// runnable reports whether the port c came in on lets it run spec: the
// peer-only commands (RAFT.LINK, RAFT.PROPOSE ...) are refused on the
// client port, so COMMAND there describes them no more than commands the
// server lacks; a client that took the list at its word would run them
// only to be refused.
func runnable(c *resp.Conn, spec *commands.Spec) bool {
	return !spec.Has(commands.Peer) || fromPeer(c)
}

// docsReply is one command's COMMAND DOCS map, with Redis 7.0's keys in
// its order (addReplyCommandDocs): optional ones only when set, group
// always, flags and history as sets.
func docsReply(d *commands.Doc) resp.Value {
	var kvs []resp.Value
	str := func(key, v string) {
		if v != "" {
			kvs = append(kvs, resp.BulkString(key), resp.BulkString(v))
		}
	}
	str("summary", d.Summary)
	str("since", d.Since)
	kvs = append(kvs, resp.BulkString("group"), resp.BulkString(d.Group))
	str("complexity", d.Complexity)
	if len(d.DocFlags) > 0 {
		kvs = append(kvs, resp.BulkString("doc_flags"), statusSet(d.DocFlags...))
	}
	str("deprecated_since", d.DeprecatedSince)
	str("replaced_by", d.ReplacedBy)
	if len(d.History) > 0 {
		hs := make([]resp.Value, len(d.History))
		for i, h := range d.History {
			hs[i] = resp.Array(resp.BulkString(h.Version), resp.BulkString(h.Change))
		}
		kvs = append(kvs, resp.BulkString("history"), resp.Set(hs...))
	}
	if len(d.Args) > 0 {
		kvs = append(kvs, resp.BulkString("arguments"), argsReply(d.Args))
	}
	if len(d.Subcommands) > 0 {
		subs := make([]resp.Value, 0, 2*len(d.Subcommands))
		for _, sub := range d.Subcommands {
			subs = append(subs, resp.BulkString(sub.Name), docsReply(sub))
		}
		kvs = append(kvs, resp.BulkString("subcommands"), resp.Map(subs...))
	}
	return resp.Map(kvs...)
}

// argsReply is an "arguments" array in Redis 7.0's shape
// (addReplyCommandArgList).
func argsReply(args []commands.Arg) resp.Value {
	out := make([]resp.Value, len(args))
	for i, a := range args {
		kvs := []resp.Value{resp.BulkString("name"), resp.BulkString(a.Name), resp.BulkString("type"), resp.BulkString(string(a.Type))}
		if a.KeySpecIndex >= 0 {
			kvs = append(kvs, resp.BulkString("key_spec_index"), resp.Int(int64(a.KeySpecIndex)))
		}
		for _, kv := range [][2]string{{"token", a.Token}, {"since", a.Since}, {"deprecated_since", a.DeprecatedSince}} {
			if kv[1] != "" {
				kvs = append(kvs, resp.BulkString(kv[0]), resp.BulkString(kv[1]))
			}
		}
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{a.Optional, "optional"}, {a.Multiple, "multiple"}, {a.MultipleToken, "multiple_token"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if len(flags) > 0 {
			kvs = append(kvs, resp.BulkString("flags"), statusSet(flags...))
		}
		if a.Type == commands.ArgOneof || a.Type == commands.ArgBlock {
			kvs = append(kvs, resp.BulkString("arguments"), argsReply(a.Args))
		}
		out[i] = resp.Map(kvs...)
	}
	return resp.Array(out...)
}

func statusSet(names ...string) resp.Value {
	vs := make([]resp.Value, len(names))
	for i, n := range names {
		vs[i] = resp.SimpleString(n)
	}
	return resp.Set(vs...)
}

func commandInfo(spec *commands.Spec) resp.Value {
	var flags []resp.Value
	for _, f := range []struct {
		flag commands.Flags
		name string
	}{{commands.Write, "write"}, {commands.Read, "readonly"}, {commands.Admin, "admin"}, {commands.DenyOOM, "denyoom"}, {commands.Blocking, "blocking"}, {commands.NoAuth, "no_auth"}, {commands.NoMulti, "no_multi"}} {
		if spec.Has(f.flag) {
			flags = append(flags, resp.SimpleString(f.name))
		}
	}
	first := int64(0) // key position, for clients that route by key
	if (spec.Has(commands.Write) || spec.Has(commands.Read)) && spec.Arity != 1 && spec.Arity != -1 && !strings.HasPrefix(spec.Name, "session.") {
		first = 1
	}
	return resp.Array(resp.BulkString(spec.Name), resp.Int(int64(spec.Arity)), resp.Array(flags...),
		resp.Int(first), resp.Int(first), resp.Int(first))
}
