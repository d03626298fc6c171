package resp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testHandler is a small echo server with commands that exercise the
// connection loop.
type testHandler struct {
	executed atomic.Int64
	entered  chan int64    // BLOCK and GATE report their connection id here
	released chan int64    // BLOCK reports here once its context is done
	gate     chan struct{} // GATE waits for it to close
}

func newTestHandler() *testHandler {
	return &testHandler{
		entered:  make(chan int64, 100),
		released: make(chan int64, 100),
		gate:     make(chan struct{}),
	}
}

func (h *testHandler) ServeRESP(c *Conn, args [][]byte) Value {
	h.executed.Add(1)
	switch strings.ToUpper(string(args[0])) {
	case "PING":
		return SimpleString("PONG")
	case "ECHO":
		if len(args) != 2 {
			return Error("ERR wrong number of arguments for 'echo' command")
		}
		return Bulk(args[1])
	case "ID":
		return Int(c.ID())
	case "NULL":
		return Null()
	case "HELLO":
		if len(args) > 1 && string(args[1]) == "3" {
			c.SetProto(3)
		}
		return Map(BulkString("proto"), Int(int64(c.Proto())), BulkString("id"), Int(c.ID()))
	case "AUTH":
		c.SetLimits(DefaultLimits())
		return SimpleString("OK")
	case "QUIT":
		c.CloseAfterReply()
		return SimpleString("OK")
	case "BLOCK": // a long wait, like BLPOP key 0
		h.entered <- c.ID()
		<-c.Context().Done()
		h.released <- c.ID()
		return Error("ERR cancelled")
	case "GATE": // a slow command
		h.entered <- c.ID()
		<-h.gate
		return SimpleString("OPEN")
	case "BIG":
		n, _ := strconv.Atoi(string(args[1]))
		return Bulk(bytes.Repeat([]byte("x"), n))
	case "PANIC":
		panic("handler bug")
	case "ZERO":
		return Value{}
	}
	return Error("ERR unknown command '" + string(args[0]) + "'")
}

// startServer serves srv on a loopback port and closes it at the end of the
// test, checking that Serve returned ErrServerClosed.
func startServer(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *client) send(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// read returns the next reply rendered by Value.String, or the error.
func (c *client) read() (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := readReply(c.br)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

// expect reads a reply and fails the test unless it renders as want.
func (c *client) expect(want string) {
	c.t.Helper()
	got, err := c.read()
	if err != nil || got != want {
		c.t.Fatalf("reply %q, %v; want %q", got, err, want)
	}
}

// expectEOF fails the test unless the server has closed the connection.
func (c *client) expectEOF() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := c.br.ReadByte(); err == nil {
		rest, _ := c.br.Peek(c.br.Buffered())
		c.t.Fatalf("read %q, want the connection closed", append([]byte{b}, rest...))
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("connection still open")
	}
}

// readReply parses one RESP2 or RESP3 reply into a Value, for tests.
func readReply(br *bufio.Reader) (Value, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return Value{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return Value{}, fmt.Errorf("bad line %q", line)
	}
	kind, rest := line[0], line[1:len(line)-2]
	n, _ := strconv.ParseInt(rest, 10, 64)
	elems := func(n int64) ([]Value, error) {
		vs := make([]Value, 0, n)
		for range n {
			v, err := readReply(br)
			if err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		return vs, nil
	}
	switch kind {
	case '+':
		return SimpleString(rest), nil
	case '-':
		return Error(rest), nil
	case ':':
		return Int(n), nil
	case '_':
		return Null(), nil
	case '#':
		return Bool(rest == "t"), nil
	case ',':
		f, err := strconv.ParseFloat(rest, 64)
		return Double(f), err
	case '$', '=':
		if n < 0 {
			return Null(), nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return Value{}, err
		}
		if kind == '=' {
			return Verbatim(string(b[:3]), string(b[4:n])), nil
		}
		return Bulk(b[:n]), nil
	case '*', '~', '>', '%':
		if n < 0 {
			return NullArray(), nil
		}
		if kind == '%' {
			n *= 2
		}
		vs, err := elems(n)
		switch kind {
		case '~':
			return Set(vs...), err
		case '>':
			return Push(vs...), err
		case '%':
			return Map(vs...), err
		}
		return Array(vs...), err
	}
	return Value{}, fmt.Errorf("bad reply type in %q", line)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerPipelineInOrder(t *testing.T) {
	addr := startServer(t, &Server{Handler: newTestHandler(), MaxPipeline: 8})
	c := dial(t, addr)
	var in strings.Builder
	for i := range 500 {
		if i%2 == 0 {
			in.WriteString(multibulk("ECHO", strconv.Itoa(i)))
		} else {
			fmt.Fprintf(&in, "ECHO %d\r\n", i)
		}
	}
	go func() { // more than the pipeline and socket buffers may hold
		c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c.nc, in.String()); err != nil {
			t.Errorf("send: %v", err) // Fatal must not be called off the test goroutine
		}
	}()
	for i := range 500 {
		c.expect(strconv.Quote(strconv.Itoa(i)))
	}
}

func TestServerContextCancelledWhenClientCloses(t *testing.T) {
	h := newTestHandler()
	closed := make(chan int64, 1)
	srv := &Server{Handler: h, OnClose: func(c *Conn) { closed <- c.ID() }}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("BLOCK\r\n")
	id := <-h.entered
	c.nc.Close()
	select {
	case got := <-h.released:
		if got != id {
			t.Fatalf("released conn %d, want %d", got, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler blocked on Context not released after the client closed")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnClose not called")
	}
	waitFor(t, "NumConns 0", func() bool { return srv.NumConns() == 0 })
}

func TestServerSlowCommandDoesNotDelayOthers(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h})
	a, b := dial(t, addr), dial(t, addr)
	a.send("GATE\r\nPING\r\n")
	<-h.entered
	start := time.Now()
	for range 10 {
		b.send("PING\r\n")
		b.expect("PONG")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("10 PINGs took %v on a connection next to a blocked one", d)
	}
	close(h.gate)
	a.expect("OPEN")
	a.expect("PONG")
}

func TestServerMaxConns(t *testing.T) {
	srv := &Server{Handler: newTestHandler(), MaxConns: 3}
	addr := startServer(t, srv)
	var cs []*client
	for range 3 { // at the limit: served
		c := dial(t, addr)
		c.send("PING\r\n")
		c.expect("PONG")
		cs = append(cs, c)
	}
	over := dial(t, addr) // one past it: refused
	over.expect("(error) ERR max number of clients reached")
	over.expectEOF()
	if n := srv.NumConns(); n != 3 {
		t.Fatalf("NumConns = %d, want 3", n)
	}
	cs[0].nc.Close()
	waitFor(t, "NumConns 2", func() bool { return srv.NumConns() == 2 })
	c := dial(t, addr)
	c.send("PING\r\n")
	c.expect("PONG")
}

func TestServerProtocolErrors(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h})
	good := dial(t, addr)
	cases := []struct{ in, want string }{
		{"*1\r\n$9223372036854775807\r\nabc\r\n", "Protocol error: invalid bulk length"},
		{"*9223372036854775807\r\n", "Protocol error: invalid multibulk length"},
		{"*3000000000\r\n", "Protocol error: invalid multibulk length"},
		{"*2147483647\r\n", "Protocol error: too many arguments"},
		{"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"},
		{strings.Repeat("*1\r\n", 10000), "Protocol error: expected '$', got '*'"},
		{"PING\r\nECHO \"unbalanced\r\nPING\r\n", "Protocol error: unbalanced quotes in request"},
		{"*1\r\n$4\r\nPINGxx", "Protocol error: expected CRLF after bulk string"},
		{"*1\r\n$" + strings.Repeat("9", 100), "Protocol error: too big bulk count string"},
		{string(bytes.Repeat([]byte("a"), 10<<20)), "Protocol error: too big inline request"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%.20q", tc.in), func(t *testing.T) {
			bad := dial(t, addr)
			go func() {
				// The server may close before taking it all: ignore errors.
				bad.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(bad.nc, tc.in)
			}()
			if strings.HasPrefix(tc.in, "PING") {
				bad.expect("PONG") // the command before the error runs
			}
			bad.expect("(error) ERR " + tc.want)
			bad.expectEOF()
			good.send("PING\r\n")
			good.expect("PONG")
		})
	}
}

func TestServerHandlerPanic(t *testing.T) {
	srv := &Server{Handler: newTestHandler()}
	addr := startServer(t, srv)
	other := dial(t, addr)
	c := dial(t, addr)
	c.send("PING\r\nPANIC\r\nPING\r\n")
	c.expect("PONG")
	c.expect("(error) ERR internal error")
	c.expectEOF()
	other.send("PING\r\n")
	other.expect("PONG")
	fresh := dial(t, addr)
	fresh.send("PING\r\n")
	fresh.expect("PONG")
}

func TestServerZeroValueReply(t *testing.T) {
	addr := startServer(t, &Server{Handler: newTestHandler()})
	c := dial(t, addr)
	c.send("ZERO\r\nPING\r\n")
	c.expect("(error) ERR internal error: invalid reply value")
	c.expect("PONG")
}

func TestServerQuit(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	c.send("PING\r\nQUIT\r\nPING\r\nPING\r\n")
	c.expect("PONG")
	c.expect("OK")
	c.expectEOF()
	if n := h.executed.Load(); n != 2 {
		t.Fatalf("%d commands executed, want 2 (nothing after QUIT)", n)
	}
}

func TestServerHello3(t *testing.T) {
	addr := startServer(t, &Server{Handler: newTestHandler()})
	c := dial(t, addr)
	c.send("NULL\r\nHELLO 3\r\nNULL\r\n")
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	want := "$-1\r\n" + // RESP2 before HELLO
		"%2\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n" + // HELLO's own reply already in RESP3
		"_\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.br, got); err != nil || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

func TestServerConnIDs(t *testing.T) {
	addr := startServer(t, &Server{Handler: newTestHandler()})
	for i := 1; i <= 3; i++ {
		c := dial(t, addr)
		c.send("ID\r\n")
		c.expect(fmt.Sprintf("(integer) %d", i))
	}
}

// TestServerLimitsAfterAuth: a connection starts with the unauthenticated
// limits, and a command pipelined right after AUTH is read with the limits
// AUTH set, as in Redis.
func TestServerLimitsAfterAuth(t *testing.T) {
	addr := startServer(t, &Server{Handler: newTestHandler(), Limits: UnauthenticatedLimits()})
	big := strings.Repeat("v", 20<<10)

	c := dial(t, addr)
	c.send(multibulk("ECHO", strings.Repeat("v", 16<<10))) // at the limit
	c.expect(strconv.Quote(strings.Repeat("v", 16<<10)))
	c.send(multibulk("ECHO", big)) // past it
	c.expect("(error) ERR Protocol error: invalid bulk length")
	c.expectEOF()

	c = dial(t, addr)
	c.send("PING\r\n" + multibulk("AUTH", "pw") + multibulk("ECHO", big) + multibulk(strings.Split("abcdefghijkl", "")...))
	c.expect("PONG")
	c.expect("OK")
	c.expect(strconv.Quote(big))
	c.expect("(error) ERR unknown command 'a'")
}

// TestServerBackpressure: a client that sends without reading stops the
// server from reading it once the replies and the pipeline are full, and
// gets every reply once it reads.
func TestServerBackpressure(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h, MaxPipeline: 4})
	c := dial(t, addr)
	const total = 2000 // 2000 × 64 KiB of replies: far more than socket buffers
	go func() {
		cmd := multibulk("BIG", "65536")
		for range total {
			c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c.nc, cmd); err != nil {
				return
			}
		}
	}()
	var last int64 = -1
	waitFor(t, "the server to stop executing", func() bool {
		time.Sleep(100 * time.Millisecond)
		n := h.executed.Load()
		stable := n == last
		last = n
		return stable && n > 0
	})
	if last >= total {
		t.Fatalf("executed all %d commands while the client read nothing", last)
	}
	t.Logf("stalled after %d of %d commands", last, total)
	for range total {
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		v, err := readReply(c.br)
		if err != nil || len(v.Text()) != 65536 {
			t.Fatalf("reply %v, %v", v.Kind(), err)
		}
	}
}

func TestServerWriteTimeout(t *testing.T) {
	closed := make(chan struct{})
	srv := &Server{Handler: newTestHandler(), WriteTimeout: 100 * time.Millisecond,
		OnClose: func(*Conn) { close(closed) }}
	addr := startServer(t, srv)
	c := dial(t, addr)
	go func() {
		cmd := multibulk("BIG", "65536")
		for range 1000 {
			if _, err := io.WriteString(c.nc, cmd); err != nil {
				return
			}
		}
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("a client that never reads was not disconnected")
	}
}

// TestServerPush: push frames written from another goroutine arrive whole,
// between replies, never inside one.
func TestServerPush(t *testing.T) {
	conns := make(chan *Conn, 1)
	h := newTestHandler()
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		if string(args[0]) == "SUBSCRIBE" {
			c.SetProto(3)
			conns <- c
			return SimpleString("OK")
		}
		return h.ServeRESP(c, args)
	})
	addr := startServer(t, &Server{Handler: handler})
	c := dial(t, addr)
	c.send("SUBSCRIBE\r\n")
	c.expect("OK")
	conn := <-conns
	const pushes, cmds = 200, 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range pushes {
			if err := conn.Push(Push(BulkString("message"), BulkString("ch"), BulkString(strconv.Itoa(i)))); err != nil {
				t.Errorf("Push: %v", err)
				return
			}
		}
	})
	go func() {
		for i := range cmds {
			io.WriteString(c.nc, multibulk("ECHO", strings.Repeat(strconv.Itoa(i), 1000)))
		}
	}()
	nextPush, nextReply := 0, 0
	for nextPush < pushes || nextReply < cmds {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		v, err := readReply(c.br)
		if err != nil {
			t.Fatal(err)
		}
		switch v.Kind() {
		case KindPush:
			if want := strconv.Itoa(nextPush); v.Elems()[2].Text() != want {
				t.Fatalf("push %v, want message %s", v, want)
			}
			nextPush++
		case KindBulk:
			if want := strings.Repeat(strconv.Itoa(nextReply), 1000); v.Text() != want {
				t.Fatalf("reply %.20q, want %.20q", v.Text(), want)
			}
			nextReply++
		default:
			t.Fatalf("unexpected %v", v)
		}
	}
	wg.Wait()
}

func TestServerShutdown(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()

	idle, busy := dial(t, addr), dial(t, addr)
	idle.send("PING\r\n")
	idle.expect("PONG")
	busy.send("GATE\r\nPING\r\n")
	<-h.entered

	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	idle.expectEOF()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a command in progress", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(h.gate)
	busy.expect("OPEN") // the command in progress finishes and is answered
	busy.expectEOF()    // the one queued behind it is not started
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown returned %v", err)
	}
}

// TestServerShutdownTimeoutThenClose: a handler waiting for ever keeps
// Shutdown waiting until its context ends; Close then cancels the handler.
func TestServerShutdownTimeoutThenClose(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("BLOCK\r\n")
	<-h.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown returned %v, want DeadlineExceeded", err)
	}
	srv.Close()
	select {
	case <-h.released:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not cancel the handler's context")
	}
	waitFor(t, "NumConns 0", func() bool { return srv.NumConns() == 0 })
}

func TestServerConnAccessors(t *testing.T) {
	got := make(chan string, 1)
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		c.SetName("worker-1")
		c.SetState(42)
		c.SetProto(7) // ignored
		got <- fmt.Sprintf("%s %v %d %v %v", c.Name(), c.State(), c.Proto(),
			c.RemoteAddr() != "", time.Since(c.Created()) < time.Minute)
		return SimpleString("OK")
	})
	addr := startServer(t, &Server{Handler: handler})
	c := dial(t, addr)
	c.send("X\r\n")
	c.expect("OK")
	if s := <-got; s != "worker-1 42 2 true true" {
		t.Fatalf("accessors: %s", s)
	}
}

// TestServerQueueBytesBounded: big commands read ahead of a slow one are
// capped by bytes (Limits.MaxCommand), not only by MaxPipeline.
func TestServerQueueBytesBounded(t *testing.T) {
	h := newTestHandler()
	var conn atomic.Pointer[Conn]
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		conn.Store(c)
		return h.ServeRESP(c, args)
	})
	lim := DefaultLimits()
	lim.MaxCommand = 1 << 20
	addr := startServer(t, &Server{Handler: handler, Limits: lim})
	c := dial(t, addr)
	const n, size = 40, 300 << 10
	arg := strings.Repeat("q", size)
	go func() {
		io.WriteString(c.nc, "GATE\r\n")
		for range n {
			if _, err := io.WriteString(c.nc, multibulk("ECHO", arg)); err != nil {
				return
			}
		}
	}()
	<-h.entered
	time.Sleep(300 * time.Millisecond) // let the reader run as far as it may
	cn := conn.Load()
	cn.mu.Lock()
	queued, pending := cn.queued, cn.pending
	cn.mu.Unlock()
	t.Logf("behind a slow command: %d commands, %d bytes queued", pending, queued)
	if queued > lim.MaxCommand || pending > 1+lim.MaxCommand/size {
		t.Fatalf("%d commands, %d bytes queued; want at most %d bytes", pending, queued, lim.MaxCommand)
	}
	close(h.gate)
	c.expect("OPEN")
	for range n {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if v, err := readReply(c.br); err != nil || len(v.Text()) != size {
			t.Fatalf("reply %v, %v", v.Kind(), err)
		}
	}
}

func TestConnClose(t *testing.T) {
	h := newTestHandler()
	conns := make(chan *Conn, 1)
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		if string(args[0]) == "KILLME" {
			conns <- c
		}
		return h.ServeRESP(c, args)
	})
	srv := &Server{Handler: handler}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("KILLME\r\nBLOCK\r\n")
	c.expect("(error) ERR unknown command 'KILLME'")
	<-h.entered
	(<-conns).Close() // from another goroutine, while BLOCK waits
	select {
	case <-h.released:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not cancel the running handler")
	}
	c.expectEOF()
	waitFor(t, "NumConns 0", func() bool { return srv.NumConns() == 0 })
}

// TestServerFlushBeforeBlockingCommand: replies held back for a pipeline
// reach the client even when the next command blocks for ever.
func TestServerFlushBeforeBlockingCommand(t *testing.T) {
	h := newTestHandler()
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	c.send("PING\r\nECHO a\r\nBLOCK\r\n")
	c.expect("PONG")
	c.expect(`"a"`)
	<-h.entered
}

func benchServer(b *testing.B) *client {
	srv := &Server{Handler: HandlerFunc(func(c *Conn, args [][]byte) Value { return SimpleString("OK") })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return &client{nc: nc, br: bufio.NewReader(nc)}
}

// BenchmarkServerRoundTrip: one command, one reply, as a lock client does.
func BenchmarkServerRoundTrip(b *testing.B) {
	c := benchServer(b)
	cmd := []byte(multibulk("SET", "lock:x", "token", "NX", "PX", "30000"))
	b.ReportAllocs()
	for b.Loop() {
		c.nc.Write(cmd)
		if _, err := c.br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerPipeline: 100 commands per write; reported per command.
func BenchmarkServerPipeline(b *testing.B) {
	c := benchServer(b)
	batch := []byte(strings.Repeat(multibulk("SET", "lock:x", "token", "NX", "PX", "30000"), 100))
	b.ReportAllocs()
	for b.Loop() {
		c.nc.Write(batch)
		for range 100 {
			if _, err := c.br.ReadSlice('\n'); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(100*b.N), "ns/cmd")
}

// A connection closed by Close (CLIENT KILL) leaves Conns at once, while its
// handler still runs and Shutdown still waits for it (NumConns).
func TestConnsDropsClosed(t *testing.T) {
	h := newTestHandler()
	srv := &Server{Handler: h}
	addr := startServer(t, srv)
	c := dial(t, addr)
	c.send("GATE\r\n")
	<-h.entered
	conn := waitConn(t, srv)
	conn.Close()
	if cs := srv.Conns(); len(cs) != 0 {
		t.Errorf("Conns lists %d connections after Close, want 0", len(cs))
	}
	if n := srv.NumConns(); n != 1 {
		t.Errorf("NumConns = %d while the closed connection's handler runs, want 1", n)
	}
	close(h.gate)
	waitFor(t, "NumConns 0", func() bool { return srv.NumConns() == 0 })
}
