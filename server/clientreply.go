package server

import (
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// CLIENT REPLY ON|OFF|SKIP, with Redis 7.0's semantics (networking.c):
// OFF drops every reply until ON, SKIP drops the next command's reply,
// and neither answers itself. What Redis writes with CLIENT_PUSHING set
// still reaches the client: pub/sub confirmations and messages, keyspace
// notifications, and tracking invalidations (RESP3 pushes, or messages on
// __redis__:invalidate), so a client can subscribe with replies off. In
// fenced those are pushes written beside the replies (Conn.Push,
// PushBetween) or a reply of kind Push, which is kept.

// replyMode is a connection's CLIENT REPLY state: Redis's three flags.
// Only the connection's executor touches it, in command order.
type replyMode struct {
	off      bool // OFF: no reply until ON or RESET
	skip     bool // the command running is the one after a SKIP
	skipNext bool // the command running is CLIENT REPLY SKIP
}

// clientReply is CLIENT REPLY ON|OFF|SKIP.
func (s *Server) clientReply(c *resp.Conn, args [][]byte) resp.Value {
	m := &stateOf(c).reply
	switch strings.ToLower(string(args[2])) {
	case "on":
		m.off, m.skip = false, false
		return resp.SimpleString("OK")
	case "off":
		m.off = true
	case "skip":
		if !m.off {
			m.skipNext = true
		}
	default:
		return errorReply(commands.ErrSyntax)
	}
	return resp.Pushed() // nothing: OFF and SKIP have no reply
}

// replied applies c's reply mode to v, the reply of the command just run
// (for a reply not ready yet, once it is), then moves the mode on to the
// next command, as Redis's resetClient: a SKIP given by this command
// drops the next reply.
func (s *Server) replied(c *resp.Conn, v resp.Value) resp.Value {
	st, _ := c.State().(*connState)
	if st == nil {
		return v
	}
	m := &st.reply
	silent := m.off || m.skip
	m.skip, m.skipNext = m.skipNext, false
	if !silent {
		return v
	}
	return v.Map(unlessPush)
}

// unlessPush is nothing in place of a reply, but a push (UNSUBSCRIBE's
// confirmation when nothing was subscribed) is kept: Redis writes it with
// CLIENT_PUSHING, which replies off do not silence.
func unlessPush(v resp.Value) resp.Value {
	if v.Kind() == resp.KindPush {
		return v
	}
	return resp.Pushed()
}

// resetReplyMode is RESET's part: Redis clears OFF and a pending SKIP, but
// RESET's own reply is still skipped if it came right after a SKIP.
func resetReplyMode(c *resp.Conn) {
	m := &stateOf(c).reply
	m.off, m.skipNext = false, false
}
