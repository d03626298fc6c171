package test

import (
	"os"
	"testing"
	"time"
)

// TestDiffClientReply compares CLIENT REPLY ON|OFF|SKIP with
// redis-server 7.0.15, frame for frame, in RESP2 and RESP3: what is
// dropped (replies and errors while OFF, the reply after SKIP, RESET's
// after a SKIP), what still comes with replies off (pub/sub confirmations,
// messages, keyspace notifications, tracking invalidations to the
// connection and to a redirect target), and the errors. A command whose
// reply must not come is sent on both sides without reading; the next
// frame compared is then the reply of a later command, so a reply fenced
// wrongly sent would show as a difference.
func TestDiffClientReply(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})

	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			p := newTrackPair(t, fd.addr, rd.leader)
			p.hello("c", proto)
			quiet := func(name string, args ...string) {
				fc, rc := p.conn(name)
				fc.send(args...)
				rc.send(args...)
			}
			k := "k" + proto
			quiet("c", "CLIENT", "REPLY", "SKIP")
			quiet("c", "PING")
			p.do("c", "ECHO", "after skip")
			quiet("c", "CLIENT", "REPLY", "OFF")
			quiet("c", "SET", k, "v")
			quiet("c", "NOSUCH")
			quiet("c", "CLIENT", "REPLY", "bad")
			quiet("c", "CLIENT", "REPLY")
			quiet("c", "CLIENT", "REPLY", "SKIP") // nothing while OFF
			quiet("c", "GET", k)
			p.do("c", "CLIENT", "REPLY", "ON")
			p.do("c", "GET", k)
			quiet("c", "CLIENT", "REPLY", "SKIP")
			p.do("c", "CLIENT", "REPLY", "on") // ON is answered after a SKIP
			p.do("c", "PING")
			quiet("c", "CLIENT", "REPLY", "SKIP")
			quiet("c", "RESET") // skipped, and back to RESP2
			p.do("c", "PING")
			quiet("c", "CLIENT", "REPLY", "OFF")
			p.do("c", "RESET") // RESET clears OFF: answered
			p.do("c", "CLIENT", "REPLY")
			p.do("c", "CLIENT", "REPLY", "ON", "x")
			p.do("c", "CLIENT", "REPLY", "maybe")
			quiet("c", "CLIENT", "REPLY", "Off")
			p.do("c", "CLIENT", "REPLY", "On")
			p.hello("c", proto)

			// Pub/sub with replies off: everything Redis pushes comes.
			ch := "ch" + proto
			quiet("c", "CLIENT", "REPLY", "OFF")
			quiet("c", "SUBSCRIBE", ch)
			p.frames("c", 1, "SUBSCRIBE with replies off")
			quiet("c", "PSUBSCRIBE", "ch*")
			p.frames("c", 1, "PSUBSCRIBE with replies off")
			p.do("w", "PUBLISH", ch, "hello")
			p.frames("c", 2, "message and pmessage with replies off")
			quiet("c", "UNSUBSCRIBE")
			p.frames("c", 1, "UNSUBSCRIBE with replies off")
			quiet("c", "PUNSUBSCRIBE", "ch*")
			p.frames("c", 1, "PUNSUBSCRIBE with replies off")
			quiet("c", "UNSUBSCRIBE")
			p.frames("c", 1, "UNSUBSCRIBE of nothing with replies off")
			p.do("c", "CLIENT", "REPLY", "ON")

			// Keyspace notifications, after a SKIP and with replies off (the
			// suite's "Keyspace notifications: we receive ..." tests).
			p.do("w", "CONFIG", "SET", "notify-keyspace-events", "KEA")
			quiet("c", "CLIENT", "REPLY", "SKIP")
			quiet("c", "PSUBSCRIBE", "__key*__:ks"+proto)
			p.frames("c", 1, "PSUBSCRIBE after a SKIP")
			p.do("w", "SET", "ks"+proto, "bar")
			p.frames("c", 1, "keyspace notification")
			p.do("w", "CONFIG", "SET", "notify-keyspace-events", "")
			quiet("c", "PUNSUBSCRIBE")
			p.frames("c", 1, "PUNSUBSCRIBE")
			if proto == "3" {
				p.do("c", "PING")
			} else {
				p.do("c", "ECHO", "unsubscribed")
			}
		})
	}

	// Tracking with replies off: the invalidation push still comes, to
	// the tracking connection (RESP3) and to a RESP3 redirect target that
	// turned its replies off; a tracking-redir-broken push too.
	t.Run("tracking", func(t *testing.T) {
		p := newTrackPair(t, fd.addr, rd.leader)
		quiet := func(name string, args ...string) {
			fc, rc := p.conn(name)
			fc.send(args...)
			rc.send(args...)
		}
		for _, c := range []string{"t", "r3", "tr"} {
			p.hello(c, "3")
		}
		p.do("t", "CLIENT", "TRACKING", "on")
		p.do("t", "GET", "foo")
		quiet("t", "CLIENT", "REPLY", "OFF")
		quiet("t", "GET", "foo")
		p.do("w", "SET", "foo", "bar")
		p.frames("t", 1, "invalidation with replies off")
		p.do("t", "CLIENT", "REPLY", "ON")
		p.settle("t")

		p.do("tr", "CLIENT", "TRACKING", "on", "REDIRECT", "$id:r3")
		p.do("tr", "GET", "foo")
		quiet("r3", "CLIENT", "REPLY", "OFF")
		p.do("w", "SET", "foo", "bar2")
		p.frames("r3", 1, "redirected invalidation with replies off")
		p.do("r3", "CLIENT", "REPLY", "ON")
		p.settle("r3")

		// The target QUITs and keeps its socket open: gone at once.
		p.do("tr", "GET", "foo")
		quiet("tr", "CLIENT", "REPLY", "OFF")
		p.do("r3", "QUIT")
		p.do("w", "SET", "foo", "bar3")
		fv, ferr := p.fenced["tr"].tryRead(2 * time.Second)
		rv, rerr := p.redis["tr"].tryRead(2 * time.Second)
		if ferr != nil || rerr != nil || len(fv.elems) != 2 || len(rv.elems) != 2 ||
			fv.elems[0].String() != rv.elems[0].String() || rv.elems[0].str != "tracking-redir-broken" {
			t.Fatalf("broken redirect with replies off:\n  fenced: %v %v\n  redis:  %v %v", fv, ferr, rv, rerr)
		}
		p.do("tr", "CLIENT", "REPLY", "ON")
		p.settle("tr")
	})
	if !fd.alive() {
		t.Fatal("fenced died")
	}
}
