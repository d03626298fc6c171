package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// Connection commands: they touch the connection or this node only.

func (s *Server) ping(c *resp.Conn, args [][]byte) resp.Value {
	if len(args) <= 2 && c.Proto() == 2 && s.pubsub.subscribed(c) > 0 {
		// A RESP2 subscriber's replies are arrays, like its messages.
		msg := []byte{}
		if len(args) == 2 {
			msg = args[1]
		}
		return resp.Array(resp.BulkString("pong"), resp.Bulk(msg))
	}
	switch len(args) {
	case 1:
		return resp.SimpleString("PONG")
	case 2:
		return resp.Bulk(args[1])
	}
	return errorReply(wrapArity("ping"))
}

func (s *Server) echo(_ *resp.Conn, args [][]byte) resp.Value { return resp.Bulk(args[1]) }

func (s *Server) quit(c *resp.Conn, _ [][]byte) resp.Value {
	c.CloseAfterReply()
	return resp.SimpleString("OK")
}

func (s *Server) reset(c *resp.Conn, _ [][]byte) resp.Value {
	s.pubsub.unsubscribeAll(c)
	s.discardTx(stateOf(c)) // as Redis: no MULTI, nothing watched
	s.tracking.disable(c)
	resetReplyMode(c)
	c.SetProto(2)
	c.SetName("")
	s.deauthenticate(c) // as Redis: with a password, AUTH again
	return resp.SimpleString("RESET")
}

func (s *Server) selectCmd(_ *resp.Conn, args [][]byte) resp.Value {
	n, err := commands.ParseInt(args[1])
	if err != nil {
		return errorReply(err)
	}
	if n != 0 {
		return errorReply(ErrDBIndex)
	}
	return resp.SimpleString("OK")
}

// hello implements HELLO [protover [AUTH user pass] [SETNAME name]], in
// Redis's order: options are checked, then AUTH, then a connection that
// is still not authenticated is refused, and only then does anything
// change.
func (s *Server) hello(c *resp.Conn, args [][]byte) resp.Value {
	proto := c.Proto()
	if len(args) > 1 {
		p, err := commands.ParseProto(args[1])
		if err != nil {
			return resp.Error("ERR Protocol version is not an integer or out of range")
		}
		if p != 2 && p != 3 {
			return resp.Error("NOPROTO unsupported protocol version")
		}
		proto = p
	}
	var name *string
	var auth [][]byte // user, password
	for i := 2; i < len(args); i++ {
		switch opt := strings.ToUpper(string(args[i])); {
		case opt == "AUTH" && i+2 < len(args):
			auth = args[i+1 : i+3]
			i += 2
		case opt == "SETNAME" && i+1 < len(args):
			n := string(args[i+1])
			if !validClientName(n) {
				return clientNameError()
			}
			name = &n
			i++
		default:
			return syntaxError("Syntax error in HELLO option '%s'", opt)
		}
	}
	if auth != nil {
		if err := s.authenticate(c, auth[0], auth[1]); err != nil {
			return errorReply(err)
		}
	}
	if s.userOf(c) == "" {
		return errorReply(ErrHelloNoAuth)
	}
	c.SetProto(proto)
	if name != nil {
		c.SetName(*name)
	}
	role := "master"
	if !s.node.CanPropose() {
		role = "replica"
	}
	return resp.Map(
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(redisVersion),
		resp.BulkString("proto"), resp.Int(int64(proto)),
		resp.BulkString("id"), resp.Int(c.ID()),
		resp.BulkString("mode"), resp.BulkString("standalone"),
		resp.BulkString("role"), resp.BulkString(role),
		resp.BulkString("modules"), resp.Array(),
	)
}

func validClientName(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] <= ' ' || n[i] > '~' {
			return false
		}
	}
	return true
}

func (s *Server) client(c *resp.Conn, args [][]byte) resp.Value {
	sub := strings.ToUpper(string(args[1]))
	switch {
	case sub == "SETNAME" && len(args) == 3:
		if !validClientName(string(args[2])) {
			return clientNameError()
		}
		c.SetName(string(args[2]))
		return resp.SimpleString("OK")
	case sub == "GETNAME" && len(args) == 2:
		if c.Name() == "" {
			return resp.Null()
		}
		return resp.BulkString(c.Name())
	case sub == "ID" && len(args) == 2:
		return resp.Int(c.ID())
	case sub == "SETINFO" && len(args) == 4:
		attr := strings.ToUpper(string(args[2]))
		if attr != "LIB-NAME" && attr != "LIB-VER" {
			return syntaxError("Unrecognized option '%s'", args[2])
		}
		return resp.SimpleString("OK")
	case sub == "INFO" && len(args) == 2:
		return resp.BulkString(s.clientLine(c) + "\n")
	case sub == "LIST" && len(args) == 2:
		var b strings.Builder
		for _, o := range s.rs.Conns() {
			b.WriteString(s.clientLine(o))
			b.WriteByte('\n')
		}
		return resp.BulkString(b.String())
	case sub == "KILL" && len(args) >= 3:
		return s.clientKill(c, args[2:])
	case sub == "TRACKING" && len(args) >= 3:
		return s.clientTracking(c, args)
	case sub == "CACHING" && len(args) == 3:
		return s.clientCaching(c, args)
	case sub == "REPLY" && len(args) == 3:
		return s.clientReply(c, args)
	case sub == "GETREDIR" && len(args) == 2:
		_, redirect, _ := s.tracking.info(c)
		return resp.Int(redirect)
	case sub == "TRACKINGINFO" && len(args) == 2:
		return s.clientTrackingInfo(c)
	case sub == "HELP" && len(args) == 2:
		return helpReply(
			"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port> (admin).",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections (admin). Options: ID, ADDR, LADDR, USER, TYPE normal|pubsub, SKIPME yes|no.",
			"LIST", "    Return information about client connections on this node (admin).",
			"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
			"SETINFO <option> <value>", "    Set client meta attr: LIB-NAME or LIB-VER.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]", "         [OPTIN] [OPTOUT] [NOLOOP]",
			"    Control server assisted client side caching (invalidations come from the replicated log; REDIRECT to a connection of this node).",
			"TRACKINGINFO", "    Report tracking status for the current connection.",
			"HELP", "    Print this help.",
		)
	case sub == "SETNAME" || sub == "GETNAME" || sub == "ID" || sub == "SETINFO" || sub == "INFO" || sub == "LIST" || sub == "KILL" || sub == "HELP",
		sub == "TRACKING" || sub == "CACHING" || sub == "GETREDIR" || sub == "TRACKINGINFO" || sub == "REPLY":
		return errorReply(wrapArity("client|" + strings.ToLower(sub)))
	}
	return syntaxError("unknown subcommand '%s'. Try CLIENT HELP.", commands.Clip(args[1]))
}

// clientLine is a connection's line of CLIENT LIST and CLIENT INFO, with
// Redis's field names and order, for the fields fenced has.
func (s *Server) clientLine(c *resp.Conn) string {
	chans, pats := s.pubsub.counts(c)
	flags, redir := s.tracking.clientFlags(c)
	if c.PubSub() {
		flags = "P" + flags
	}
	if flags == "" {
		flags = "N"
	}
	return "id=" + strconv.FormatInt(c.ID(), 10) + " addr=" + c.RemoteAddr() + " laddr=" + c.LocalAddr() +
		" name=" + c.Name() + " age=" + strconv.FormatInt(int64(time.Since(c.Created())/time.Second), 10) +
		" idle=" + strconv.FormatInt(int64(c.Idle()/time.Second), 10) + " flags=" + flags +
		" db=0 sub=" + strconv.Itoa(chans) + " psub=" + strconv.Itoa(pats) +
		" omem=" + strconv.FormatInt(c.PendingOutput(), 10) + " user=" + s.userOf(c) + " redir=" + strconv.FormatInt(redir, 10) + " resp=" + strconv.Itoa(c.Proto())
}

// clientKill is CLIENT KILL in Redis 7's two forms: the old one, an address
// (+OK, or an error if no client has it; it may kill the caller), and the
// new one, filters that all must match (ID, ADDR, LADDR, USER, TYPE, SKIPME
// yes by default), answering how many were killed. The caller, if killed,
// gets its reply first. Only this node's clients are killed.
func (s *Server) clientKill(c *resp.Conn, args [][]byte) resp.Value {
	var (
		id          int64
		addr, laddr *string
		user        *string
		typ         string // "", "normal" or "pubsub"; "none" matches nobody
		skipme      = true
	)
	if len(args) == 1 {
		a := string(args[0])
		addr, skipme = &a, false
	} else {
		if len(args)%2 != 0 {
			return syntaxError("syntax error")
		}
		for i := 0; i < len(args); i += 2 {
			v := string(args[i+1])
			switch strings.ToUpper(string(args[i])) {
			case "ID":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					return syntaxError("client-id should be greater than 0")
				}
				id = n
			case "ADDR":
				addr = &v
			case "LADDR":
				laddr = &v
			case "USER":
				if _, ok := s.auth.user(v); !ok {
					return syntaxError("No such user '%s'", commands.Clip(args[i+1]))
				}
				user = &v
			case "TYPE":
				switch t := strings.ToLower(v); t {
				case "normal", "pubsub":
					typ = t
				case "master", "replica", "slave":
					typ = "none" // fenced's replicas are Raft peers, not clients
				default:
					return syntaxError("Unknown client type '%s'", commands.Clip(args[i+1]))
				}
			case "SKIPME":
				switch strings.ToLower(v) {
				case "yes":
					skipme = true
				case "no":
					skipme = false
				default:
					return syntaxError("syntax error")
				}
			default:
				return syntaxError("syntax error")
			}
		}
	}
	killed, self := 0, false
	for _, o := range s.rs.Conns() {
		switch {
		case id != 0 && o.ID() != id,
			addr != nil && o.RemoteAddr() != *addr,
			laddr != nil && o.LocalAddr() != *laddr,
			user != nil && s.userOf(o) != *user,
			typ == "none", typ == "pubsub" && !o.PubSub(), typ == "normal" && o.PubSub(),
			o == c && skipme:
			continue
		}
		killed++
		if o == c {
			self = true
		} else {
			o.Close()
		}
	}
	if self {
		c.CloseAfterReply()
	}
	if len(args) == 1 {
		if killed == 0 {
			return resp.Error("ERR No such client")
		}
		return resp.SimpleString("OK")
	}
	return resp.Int(int64(killed))
}

func (s *Server) time(_ *resp.Conn, _ [][]byte) resp.Value {
	now := s.wallNow()
	return resp.Array(
		resp.BulkString(strconv.FormatInt(now.Unix(), 10)),
		resp.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10)),
	)
}

// clientNameError is Redis's exact reply for a bad client name.
func clientNameError() resp.Value {
	return resp.Error("ERR Client names cannot contain spaces, newlines or special characters.")
}
