package server

import (
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// silent sends a command that must get no reply: the next frame is the
// reply of an ECHO sent after it.
func (r *rawConn) silent(what string, args ...string) {
	r.t.Helper()
	r.send(args...)
	r.send("ECHO", "after")
	r.want(what+": no reply", resp.BulkString("after").String())
}

// TestClientReply: OFF drops every reply (errors too) until ON, whose
// +OK is sent; SKIP drops the next command's reply only, nothing when
// given while OFF; RESET clears OFF but is itself skipped after a SKIP;
// inside MULTI the SKIP's element is left out of EXEC's array and the
// command after EXEC is skipped.
func TestClientReply(t *testing.T) {
	s := startServer(t)
	for _, proto := range []int{2, 3} {
		a := dialTrack(t, s, proto)
		a.send("CLIENT", "REPLY", "SKIP")
		a.silent("SKIP", "PING")
		a.send("CLIENT", "REPLY", "OFF")
		a.send("SET", "k", "v")
		a.send("NOSUCH")
		a.send("CLIENT", "REPLY", "bad")
		a.send("CLIENT", "REPLY", "SKIP") // ignored while OFF
		a.send("GET", "k")
		a.ok("CLIENT", "REPLY", "ON")
		a.send("GET", "k")
		a.want("GET after ON", resp.BulkString("v").String())
		a.send("CLIENT", "REPLY", "SKIP")
		a.ok("CLIENT", "REPLY", "ON") // ON clears the SKIP it was to be
		a.send("CLIENT", "REPLY", "SKIP")
		a.silent("RESET after SKIP", "RESET")
		a = dialTrack(t, s, proto)
		a.send("CLIENT", "REPLY", "OFF")
		a.send("RESET")
		a.want("RESET after OFF", resp.SimpleString("RESET").String())
		for _, bad := range [][]string{{"CLIENT", "REPLY"}, {"CLIENT", "REPLY", "ON", "x"}} {
			a.send(bad...)
			a.want("arity", resp.Error("ERR wrong number of arguments for 'client|reply' command").String())
		}
		a.send("CLIENT", "REPLY", "maybe")
		a.want("syntax", resp.Error("ERR syntax error").String())

		a.ok("MULTI")
		a.send("CLIENT", "REPLY", "SKIP")
		a.want("queued", resp.SimpleString("QUEUED").String())
		a.send("ECHO", "in")
		a.want("queued", resp.SimpleString("QUEUED").String())
		a.send("EXEC")
		a.want("EXEC without the SKIP's element", resp.Array(resp.BulkString("in")).String())
		a.silent("the command after EXEC", "PING")
		a.expect("nothing more")
	}
}

// TestClientReplyPushes: with replies off, what Redis writes as pushes
// still comes: (un)subscribe confirmations, messages, pattern messages,
// and tracking invalidations, in RESP2 and RESP3.
func TestClientReplyPushes(t *testing.T) {
	s := startServer(t)
	pub := dialTrack(t, s, 2)
	for _, proto := range []int{2, 3} {
		a := dialTrack(t, s, proto)
		push := func(vs ...resp.Value) string { // RESP2 has arrays
			if proto == 2 {
				return resp.Array(vs...).String()
			}
			return resp.Push(vs...).String()
		}
		a.send("CLIENT", "REPLY", "OFF")
		a.send("SUBSCRIBE", "ch")
		a.want("subscribe", push(resp.BulkString("subscribe"), resp.BulkString("ch"), resp.Int(1)))
		a.send("PSUBSCRIBE", "c*")
		a.want("psubscribe", push(resp.BulkString("psubscribe"), resp.BulkString("c*"), resp.Int(2)))
		if n := pub.do("PUBLISH", "ch", "m").Integer(); n != 2 {
			t.Errorf("PUBLISH reached %d", n)
		}
		a.want("message", push(resp.BulkString("message"), resp.BulkString("ch"), resp.BulkString("m")))
		a.want("pmessage", push(resp.BulkString("pmessage"), resp.BulkString("c*"), resp.BulkString("ch"), resp.BulkString("m")))
		a.send("UNSUBSCRIBE")
		a.want("unsubscribe", push(resp.BulkString("unsubscribe"), resp.BulkString("ch"), resp.Int(1)))
		a.send("PUNSUBSCRIBE")
		a.want("punsubscribe", push(resp.BulkString("punsubscribe"), resp.BulkString("c*"), resp.Int(0)))
		a.send("UNSUBSCRIBE")
		a.want("unsubscribe from nothing", push(resp.BulkString("unsubscribe"), resp.Null(), resp.Int(0)))
		a.ok("CLIENT", "REPLY", "ON")
	}
	// Tracking: a RESP3 connection with replies off still hears its
	// invalidations; its GET's reply does not come.
	a := dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	a.send("CLIENT", "REPLY", "OFF")
	a.send("GET", "tk")
	time.Sleep(50 * time.Millisecond)
	pub.ok("SET", "tk", "1")
	a.want("invalidation with replies off", inval("tk"))
	a.ok("CLIENT", "REPLY", "ON")
	a.expect("nothing more")
}
