package resp

import (
	"testing"
	"time"
)

// TestPushBetween: a push made while a command runs is written right after
// that command's reply, not before it; one made while the connection is
// idle goes out at once; pushes keep their order.
func TestPushBetween(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("*1\r\n$2\r\nID\r\n")
	c.expect("(integer) 1")
	conn := waitConn(t, srv)
	push := func(s string) {
		v := Push(BulkString(s))
		n := EncodedLen(v, 2)
		if err := conn.Reserve(n); err != nil {
			t.Fatal(err)
		}
		if err := conn.PushBetween(v, n); err != nil {
			t.Fatal(err)
		}
	}
	push("idle")
	c.expect(`["idle"]`)
	c.send("*1\r\n$4\r\nGATE\r\n")
	<-h.entered
	push("during-1")
	push("during-2")
	if got, err := readWithin(c, 100*time.Millisecond); err == nil {
		t.Fatalf("a push came out before the reply: %s", got)
	}
	h.gate <- struct{}{}
	c.expect("OPEN")
	c.expect(`["during-1"]`)
	c.expect(`["during-2"]`)
	if n := conn.PendingOutput(); n != 0 {
		t.Errorf("pending output %d after the pushes were written", n)
	}
}

func waitConn(t *testing.T, srv *Server) *Conn {
	t.Helper()
	var conn *Conn
	waitFor(t, "the connection", func() bool {
		if cs := srv.Conns(); len(cs) == 1 {
			conn = cs[0]
		}
		return conn != nil
	})
	return conn
}

func readWithin(c *client, d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	v, err := readReply(c.br)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

// TestHoldPush: a push placed while a command runs (HoldPush, with Started
// taken then) goes out right behind that command's reply and before the
// reply of a command pipelined after it, though nobody writes it later; on
// an idle connection HoldPush declines, for the caller to write it.
func TestHoldPush(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("*1\r\n$2\r\nID\r\n")
	c.expect("(integer) 1")
	conn := waitConn(t, srv)
	v := Push(BulkString("held"))
	n := EncodedLen(v, 2)
	if conn.HoldPush(v, n, conn.Started()) {
		t.Fatal("HoldPush held a push on an idle connection")
	}
	c.send("*1\r\n$4\r\nGATE\r\n*1\r\n$2\r\nID\r\n")
	<-h.entered
	if err := conn.Reserve(n); err != nil {
		t.Fatal(err)
	}
	if !conn.HoldPush(v, n, conn.Started()) {
		t.Fatal("HoldPush did not hold a push while GATE runs")
	}
	h.gate <- struct{}{}
	c.expect("OPEN")
	c.expect(`["held"]`)
	c.expect("(integer) 1")
	if n := conn.PendingOutput(); n != 0 {
		t.Errorf("pending output %d after the push was written", n)
	}
}
