package raftstore

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Without TLS (loopback), the peer channel still hands a connection on only
// by its kind byte: an unknown one, or nothing at all, is closed unread by
// Raft and the links, and the channel keeps serving.
func TestPeerMuxRefusesUnknownKinds(t *testing.T) {
	m, err := newPeerMux("127.0.0.1:0", "", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, first := range [][]byte{{'X'}, []byte("*1\r\n$4\r\nPING\r\n"), {0}} {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(first)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		// Closed: EOF, or a reset when bytes were left unread. Not a
		// timeout, and nothing answered.
		n, err := c.Read(make([]byte, 1))
		var ne net.Error
		if n != 0 || err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("kind %q: read %d, %v; want the connection closed", first[0], n, err)
		}
		c.Close()
	}
	// A link of the right kind still gets through.
	ln := &linkListener{m: m, closed: make(chan struct{})}
	got := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			got <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := m.dial(ctx, m.Addr().String(), kindLink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case lc := <-got:
		lc.Close()
	case <-time.After(3 * time.Second):
		t.Fatal("a link was not handed on after the refused connections")
	}
}

// abortDialed fails a Raft RPC blocked on a peer that accepted the
// connection and never answers, and forgets the connections it closed.
func TestAbortDialed(t *testing.T) {
	m, err := newPeerMux("127.0.0.1:0", "", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // holds it open, answers nothing
		}
	}()
	c, err := m.Dial(raft.ServerAddress(silent.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); read <- err }()
	select {
	case err := <-read:
		t.Fatalf("read from a silent peer returned %v before the abort", err)
	case <-time.After(100 * time.Millisecond):
	}
	m.abortDialed()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the blocked read succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("abortDialed did not unblock the read")
	}
	m.dialedMu.Lock()
	n := len(m.dialed)
	m.dialedMu.Unlock()
	if n != 0 {
		t.Errorf("%d connections still tracked after the abort", n)
	}
}
