package server

import (
	"bytes"
	"slices"
	"strings"

	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/resp"
)

// PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB|HELP, in Redis
// 7.0's words (pubsubCommand). The answers are this node's: its
// connections' subscriptions, as Redis answers for its own server. fenced
// has no shard channels (SSUBSCRIBE), so SHARDCHANNELS lists none and
// SHARDNUMSUB counts 0. CHANNELS lists in byte order, where Redis walks a
// hash table.
func (s *Server) pubsubCmd(_ *resp.Conn, args [][]byte) resp.Value {
	p := s.pubsub
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "help" && len(args) == 2:
		return helpReply(
			"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]",
			"    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]",
			"    Return the number of subscribers for the specified shard level channel(s)",
			"HELP",
			"    Prints this help.",
		)
	case sub == "numpat" && len(args) == 2:
		p.mu.Lock()
		defer p.mu.Unlock()
		return resp.Int(int64(len(p.pats)))
	case sub == "channels" && len(args) <= 3:
		p.mu.Lock()
		names := make([]string, 0, len(p.chans))
		for ch := range p.chans {
			names = append(names, ch)
		}
		p.mu.Unlock()
		slices.Sort(names)
		out := make([]resp.Value, 0, len(names))
		for _, ch := range names {
			// Redis matches with stringmatchlen: no "*" shortcut, so an
			// empty channel is not listed under "*".
			if len(args) == 2 || glob.Match(string(args[2]), ch) {
				out = append(out, resp.BulkString(ch))
			}
		}
		return resp.Array(out...)
	case sub == "numsub" || sub == "shardnumsub":
		out := make([]resp.Value, 0, 2*(len(args)-2))
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, ch := range args[2:] {
			n := 0
			if sub == "numsub" {
				n = len(p.chans[string(ch)])
			}
			out = append(out, resp.Bulk(ch), resp.Int(int64(n)))
		}
		return resp.Array(out...)
	case sub == "shardchannels" && len(args) <= 3:
		return resp.Array()
	case sub == "help" || sub == "numpat":
		return errorReply(wrapArity("pubsub|" + sub))
	case sub == "channels" || sub == "shardchannels":
		return resp.Error("ERR unknown subcommand or wrong number of arguments for '" + redisQuote(args[1]) + "'. Try PUBSUB HELP.")
	}
	return resp.Error("ERR unknown subcommand '" + redisQuote(args[1]) + "'. Try PUBSUB HELP.")
}

// redisQuote is user text as Redis's error replies quote it with %.128s:
// up to the first NUL, at most 128 bytes, CR and LF turned into spaces.
func redisQuote(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b))
}

// fullName is a command's name as Redis's errors give it: "pubsub|numpat"
// for a container's known subcommand, else the command's own.
func (s *Server) fullName(name string, args [][]byte) string {
	spec, ok := s.table.Lookup([]byte(name))
	if !ok || len(args) < 2 || spec.Doc == nil {
		return name
	}
	full := name + "|" + strings.ToLower(string(args[1]))
	for _, d := range spec.Doc.Subcommands {
		if d.Name == full {
			return full
		}
	}
	return name
}
