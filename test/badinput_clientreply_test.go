package test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBadClientReply attacks CLIENT REPLY: garbage arguments are answered
// with Redis's errors and change nothing; a client with replies off that
// pipelines many writes, reads, errors and a blocking pop without reading
// gets nothing, holds no reply back, and is answered again at once after
// ON; a long run of SKIPs skips exactly one reply each; OFF inside MULTI
// drops EXEC's reply. The node keeps serving.
func TestBadClientReply(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := dialRaw(t, n.addr)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "REPLY"}, "ERR wrong number of arguments for 'client|reply' command"},
		{[]string{"CLIENT", "REPLY", "ON", "OFF"}, "ERR wrong number of arguments for 'client|reply' command"},
		{[]string{"CLIENT", "REPLY", ""}, "ERR syntax error"},
		{[]string{"CLIENT", "REPLY", "\x00\r\n"}, "ERR syntax error"},
		{[]string{"CLIENT", "REPLY", strings.Repeat("o", 100000)}, "ERR syntax error"},
		{[]string{"CLIENT", "REPLY", "OFFF"}, "ERR syntax error"},
	} {
		c.send(bad.args...)
		if v := c.read(); v.kind != '-' || v.str != bad.want {
			t.Errorf("%.40q: %v, want -%s", bad.args, v, bad.want)
		}
	}

	// Replies off, 20,000 commands pipelined and never read.
	w := dialRaw(t, n.addr)
	var b strings.Builder
	b.WriteString(encode("CLIENT", "REPLY", "OFF"))
	for i := range 5000 {
		k := "cr:" + strconv.Itoa(i%100)
		b.WriteString(encode("SET", k, strconv.Itoa(i)))
		b.WriteString(encode("GET", k))
		b.WriteString(encode("NOSUCH", k))
		b.WriteString(encode("INCR", "cr:0"))
	}
	b.WriteString(encode("BLPOP", "cr:list", "0"))
	start := time.Now()
	c.write(b.String())
	w.send("RPUSH", "cr:list", "x")
	w.read()
	c.send("CLIENT", "REPLY", "ON")
	if v, err := c.tryRead(30 * time.Second); err != nil || v.str != "OK" {
		t.Fatalf("first frame after 20,000 silenced commands: %v %v", v, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("20,000 silenced commands took %v", d)
	}
	c.send("GET", "cr:99")
	if v := c.read(); v.str != "4999" {
		t.Errorf("GET after the silenced writes: %v", v)
	}

	// 10,000 SKIPs in a row, then a PING (skipped) and an ECHO.
	b.Reset()
	for range 10000 {
		b.WriteString(encode("CLIENT", "REPLY", "SKIP"))
	}
	b.WriteString(encode("PING"))
	b.WriteString(encode("ECHO", "after"))
	c.write(b.String())
	if v := c.read(); v.str != "after" {
		t.Errorf("after the SKIPs: %v", v)
	}

	// OFF inside MULTI: EXEC's reply, and what follows, are dropped.
	c.send("MULTI")
	c.read()
	c.send("CLIENT", "REPLY", "OFF")
	c.read() // QUEUED
	c.send("SET", "cr:tx", "1")
	c.read() // QUEUED
	c.send("EXEC")
	c.send("GET", "cr:tx")
	c.send("CLIENT", "REPLY", "ON")
	if v := c.read(); v.str != "OK" {
		t.Errorf("after EXEC with OFF inside: %v, want OK", v)
	}
	c.send("GET", "cr:tx")
	if v := c.read(); v.str != "1" {
		t.Errorf("the transaction's write: %v", v)
	}
	for _, cc := range []*rawConn{c, w, dialRaw(t, n.addr)} {
		cc.send("PING")
		if v, err := cc.tryRead(10 * time.Second); err != nil || v.str != "PONG" {
			t.Fatalf("PING at the end: %v %v", v, err)
		}
	}
}
