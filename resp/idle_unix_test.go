//go:build unix && !aix

package resp

import (
	"net"
	"testing"
	"time"
)

// The idle timeout leaves a connection whose client has sent bytes the
// server has not read yet (a starved reader: here, none runs), and closes
// it once they are taken and it is idle again.
func TestIdleTimeoutSparesUnreadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: newTestHandler()}
	srv.mu.Lock()
	srv.initLocked()
	c := newConn(srv, nc) // no reader started
	srv.mu.Unlock()
	defer srv.Close()
	defer nc.Close()
	idleFor := func() { c.lastActive.Store(time.Now().Add(-time.Hour).UnixNano()) }
	closing := func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.closing }

	if inputPending(nc) {
		t.Fatal("input pending before the client sent any")
	}
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bytes to arrive", func() bool { return inputPending(nc) })
	idleFor()
	c.closeIfIdleFor(time.Second)
	if closing() {
		t.Fatal("closed as idle with a command waiting in its socket")
	}
	// The reader takes the bytes: activity, whether or not a whole command.
	if _, err := c.rd.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if c.Idle() > time.Minute {
		t.Fatalf("idle %v after its bytes were read", c.Idle())
	}
	if inputPending(nc) {
		t.Fatal("input pending after the reader took it")
	}
	idleFor()
	c.closeIfIdleFor(time.Second)
	if !closing() {
		t.Fatal("an idle connection with nothing to read was not closed")
	}
}
