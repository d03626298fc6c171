package resp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientHandler serves the commands the Client tests send.
type clientHandler struct {
	entered chan *Conn // SLEEP and HOLD report here
	mu      sync.Mutex
	last    *Conn // the connection of the last command
}

func newClientHandler() *clientHandler { return &clientHandler{entered: make(chan *Conn, 10)} }

func (h *clientHandler) ServeRESP(c *Conn, args [][]byte) Value {
	h.mu.Lock()
	h.last = c
	h.mu.Unlock()
	switch strings.ToUpper(string(args[0])) {
	case "PING":
		return SimpleString("PONG")
	case "ARGS": // the arguments back
		vs := make([]Value, len(args)-1)
		for i, a := range args[1:] {
			vs[i] = Bulk(a)
		}
		return Array(vs...)
	case "FAIL":
		return Error("ERR failed as asked")
	case "HELLO":
		c.SetProto(3)
		return Map(BulkString("proto"), Int(3))
	case "ALL": // every kind of reply
		return allKinds()
	case "BIG":
		n, _ := strconv.Atoi(string(args[1]))
		return Bulk(bytes.Repeat([]byte("x"), n))
	case "SLEEP": // until the client goes away
		h.entered <- c
		select {
		case <-c.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return SimpleString("WOKE")
	case "DROP": // close the connection without replying
		c.Close()
		return SimpleString("NEVER SENT")
	}
	return Error("ERR unknown command")
}

func allKinds() Value {
	return Array(SimpleString("OK"), Error("ERR e"), Int(-7), BulkString("bulk\r\n"), Null(), NullArray(),
		Map(BulkString("k"), Set(Int(1)), BulkString("p"), Push(Bool(true))), Double(2.5), Verbatim("txt", "v"))
}

func startClientServer(t *testing.T) (string, *clientHandler) {
	h := newClientHandler()
	return startServer(t, &Server{Handler: h}), h
}

func dialClient(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func strArgs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClientDo(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	ctx := testCtx(t)

	if v, err := c.Do(ctx, []byte("PING")); err != nil || v.Kind() != KindSimpleString || v.Text() != "PONG" {
		t.Fatalf("PING: %v, %v", v, err)
	}
	in := [][]byte{[]byte("args"), {}, []byte("a\r\n\x00\xff"), bytes.Repeat([]byte("z"), 100<<10)}
	v, err := c.Do(ctx, in...)
	if err != nil || len(v.Elems()) != 3 {
		t.Fatalf("ARGS: %v, %v", v, err)
	}
	for i, e := range v.Elems() {
		if e.Text() != string(in[i+1]) {
			t.Fatalf("ARGS: argument %d came back as %.40q", i, e.Text())
		}
	}
	// An error reply is a Value, not an error, and the Client goes on.
	if v, err := c.Do(ctx, []byte("FAIL")); err != nil || !v.IsError() || v.Text() != "ERR failed as asked" {
		t.Fatalf("FAIL: %v, %v", v, err)
	}
	if c.Broken() {
		t.Fatal("broken by an error reply")
	}
	// A reply larger than the buffers.
	if v, err := c.Do(ctx, []byte("BIG"), []byte("5000000")); err != nil || len(v.Text()) != 5000000 {
		t.Fatalf("BIG: %d bytes, %v", len(v.Text()), err)
	}
	// RESP2, then RESP3 after HELLO 3.
	for _, proto := range []int{2, 3} {
		if proto == 3 {
			if _, err := c.Do(ctx, []byte("HELLO"), []byte("3")); err != nil {
				t.Fatal(err)
			}
		}
		v, err := c.Do(ctx, []byte("ALL"))
		if want := asWritten(allKinds(), proto); err != nil || !valueEqual(v, want) {
			t.Fatalf("RESP%d ALL: %v, %v; want %v", proto, v, err, want)
		}
	}
	if c.Broken() {
		t.Fatal("broken after success")
	}
}

func TestClientPipeline(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	var cmds [][][]byte
	for i := range 200 {
		cmds = append(cmds, strArgs("ARGS", strconv.Itoa(i)))
	}
	cmds = append(cmds, strArgs("FAIL"))
	vs, err := c.Pipeline(testCtx(t), cmds)
	if err != nil || len(vs) != len(cmds) {
		t.Fatalf("%d replies, %v", len(vs), err)
	}
	for i := range 200 {
		if got := vs[i].Elems()[0].Text(); got != strconv.Itoa(i) {
			t.Fatalf("reply %d is %q", i, got)
		}
	}
	if !vs[200].IsError() {
		t.Fatalf("last reply %v", vs[200])
	}
	if vs, err := c.Pipeline(testCtx(t), nil); err != nil || len(vs) != 0 {
		t.Fatalf("empty pipeline: %v, %v", vs, err)
	}
}

func TestClientEmptyCommand(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	if _, err := c.Do(testCtx(t)); !errors.Is(err, ErrNotSent) {
		t.Fatalf("Do(): %v, want ErrNotSent", err)
	}
	if _, err := c.Pipeline(testCtx(t), [][][]byte{strArgs("PING"), nil}); !errors.Is(err, ErrNotSent) {
		t.Fatalf("Pipeline with an empty command: %v, want ErrNotSent", err)
	}
	if v, err := c.Do(testCtx(t), []byte("PING")); err != nil || v.Text() != "PONG" || c.Broken() {
		t.Fatalf("then PING: %v, %v", v, err)
	}
}

// TestClientCancel cancels a Do waiting for its reply: it must return at
// once, with ErrReplyLost and context.Canceled, and leave the Client broken.
func TestClientCancel(t *testing.T) {
	addr, h := startClientServer(t)
	c := dialClient(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conns := make(chan *Conn, 1)
	go func() {
		conn := <-h.entered
		conns <- conn
		cancel()
	}()
	start := time.Now()
	v, err := c.Do(ctx, []byte("SLEEP"))
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Do returned %v after the cancel", d)
	}
	if !errors.Is(err, ErrReplyLost) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotSent) {
		t.Fatalf("Do: %v, %v; want ErrReplyLost and context.Canceled", v, err)
	}
	if !c.Broken() {
		t.Fatal("not broken after a cancelled Do")
	}
	_, err = c.Do(context.Background(), []byte("PING"))
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do on a broken client: %v, want ErrNotSent and the cause", err)
	}
	// Closing the client ends the server's wait.
	c.Close()
	conn := <-conns
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server connection still open after Close")
	}
}

func TestClientDeadline(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, []byte("SLEEP"))
	if d := time.Since(start); d > 3*time.Second || d < 90*time.Millisecond {
		t.Fatalf("Do returned after %v, want about 100ms", d)
	}
	if !errors.Is(err, ErrReplyLost) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do: %v; want ErrReplyLost and context.DeadlineExceeded", err)
	}
	if !c.Broken() {
		t.Fatal("not broken after a timeout")
	}
}

// TestClientDeadlineCleared: the deadline of one call does not outlive it.
func TestClientDeadlineCleared(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, []byte("PING")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if v, err := c.Do(context.Background(), []byte("PING")); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING after the last deadline: %v, %v", v, err)
	}
}

func TestClientContextDoneBeforeSend(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, []byte("PING")); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do: %v; want ErrNotSent and context.Canceled", err)
	}
	if c.Broken() {
		t.Fatal("broken though nothing was done")
	}
	if v, err := c.Do(context.Background(), []byte("PING")); err != nil || v.Text() != "PONG" {
		t.Fatalf("then PING: %v, %v", v, err)
	}
}

// TestClientCancelRace cancels calls at random moments: a call that
// succeeds leaves the Client usable (the cancel must not hit the next
// call), and a failed one is classified and breaks it.
func TestClientCancelRace(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	start := time.Now()
	for range 20 {
		if _, err := c.Do(context.Background(), []byte("PING")); err != nil {
			t.Fatal(err)
		}
	}
	rtt := time.Since(start) / 20
	for i := range 1000 {
		ctx, cancel := context.WithCancel(context.Background())
		// Cancel from before the call to after its reply.
		time.AfterFunc(time.Duration(i%50)*rtt/25, cancel)
		_, err := c.Do(ctx, []byte("PING"))
		switch {
		case err == nil:
			if c.Broken() {
				t.Fatal("broken after a successful Do")
			}
			// The cancel may come now: the next call must not see it.
			time.Sleep(time.Duration(i%7) * time.Microsecond)
			if v, err := c.Do(context.Background(), []byte("PING")); err != nil || v.Text() != "PONG" {
				t.Fatalf("PING after a successful Do: %v, %v", v, err)
			}
		case errors.Is(err, ErrNotSent) && !c.Broken():
		case errors.Is(err, ErrNotSent) != errors.Is(err, ErrReplyLost) && c.Broken():
			c.Close()
			c = dialClient(t, addr)
		default:
			t.Fatalf("Do: %v, broken %v", err, c.Broken())
		}
		cancel()
	}
}

// TestClientServerDropsConnection: the server closes the connection after
// receiving the command, so its outcome is unknown.
func TestClientServerDropsConnection(t *testing.T) {
	addr, _ := startClientServer(t)
	c := dialClient(t, addr)
	_, err := c.Do(testCtx(t), []byte("DROP"))
	if !errors.Is(err, ErrReplyLost) || errors.Is(err, ErrNotSent) {
		t.Fatalf("Do: %v, want ErrReplyLost", err)
	}
	if !c.Broken() {
		t.Fatal("not broken")
	}
	if _, err := c.Do(testCtx(t), []byte("PING")); !errors.Is(err, ErrNotSent) {
		t.Fatalf("then: %v, want ErrNotSent", err)
	}
}

// TestClientIdleConnectionClosed: a connection the server closed while the
// Client was idle is found dead before the command is written.
func TestClientIdleConnectionClosed(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no connection check on this platform")
	}
	srv := &Server{Handler: newClientHandler()}
	addr := startServer(t, srv)
	c := dialClient(t, addr)
	if _, err := c.Do(testCtx(t), []byte("PING")); err != nil {
		t.Fatal(err)
	}
	h := srv.Handler.(*clientHandler)
	h.mu.Lock()
	h.last.Close()
	h.mu.Unlock()
	waitFor(t, "the server to close the connection", func() bool { return srv.NumConns() == 0 })
	time.Sleep(20 * time.Millisecond) // for the FIN to arrive
	_, err := c.Do(testCtx(t), []byte("PING"))
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, io.EOF) {
		t.Fatalf("Do: %v, want ErrNotSent and EOF", err)
	}
	if !c.Broken() {
		t.Fatal("not broken")
	}
}

// TestClientUnsolicitedData: bytes that no command asked for, whether
// they came with the last reply or later, break the Client before it
// writes.
func TestClientUnsolicitedData(t *testing.T) {
	for _, together := range []bool{true, false} {
		if !together && (runtime.GOOS == "windows" || runtime.GOOS == "plan9") {
			continue // no connection check on this platform
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		sent := make(chan struct{})
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			buf := make([]byte, 64)
			nc.Read(buf)
			if together {
				nc.Write([]byte("+OK\r\n+EXTRA\r\n"))
			} else {
				nc.Write([]byte("+OK\r\n"))
				time.Sleep(20 * time.Millisecond)
				nc.Write([]byte(">2\r\n+invalidate\r\n_\r\n"))
			}
			close(sent)
			io.Copy(io.Discard, nc)
		}()
		c := dialClient(t, ln.Addr().String())
		if v, err := c.Do(testCtx(t), []byte("PING")); err != nil || v.Text() != "OK" {
			t.Fatalf("PING: %v, %v", v, err)
		}
		<-sent
		time.Sleep(20 * time.Millisecond)
		_, err = c.Do(testCtx(t), []byte("PING"))
		if !errors.Is(err, ErrNotSent) || !errors.Is(err, errUnsolicited) || !c.Broken() {
			t.Fatalf("together %v: Do after unsolicited bytes: %v, want ErrNotSent", together, err)
		}
	}
}

// failConn accepts n bytes, then fails.
type failConn struct {
	net.Conn
	n int
}

var errWriteFailed = errors.New("write failed")

func (f *failConn) Write(p []byte) (int, error) {
	k := min(len(p), f.n)
	f.n -= k
	if k < len(p) {
		return k, errWriteFailed
	}
	return k, nil
}

// TestClientWriteFails tells a write that failed at once from one that
// failed after sending part of the command.
func TestClientWriteFails(t *testing.T) {
	for _, n := range []int{0, 1, 10, 1 << 20} {
		cl, sv := net.Pipe()
		go io.Copy(io.Discard, sv)
		c := NewClient(&failConn{Conn: cl, n: n}, DefaultReplyLimits())
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := c.Do(ctx, []byte("SET"), []byte("key"), bytes.Repeat([]byte("v"), 20<<10))
		cancel()
		switch {
		case n == 0 && !(errors.Is(err, ErrNotSent) && errors.Is(err, errWriteFailed)):
			t.Errorf("nothing written: %v, want ErrNotSent", err)
		case n > 0 && n < 1<<20 && !(errors.Is(err, ErrReplyLost) && errors.Is(err, errWriteFailed)):
			t.Errorf("%d bytes written: %v, want ErrReplyLost", n, err)
		case n == 1<<20 && !(errors.Is(err, ErrReplyLost) && errors.Is(err, context.DeadlineExceeded)):
			t.Errorf("all written, no reply: %v, want ErrReplyLost", err)
		}
		if !c.Broken() {
			t.Errorf("%d bytes written: not broken", n)
		}
		c.Close()
		sv.Close()
	}
}

// TestClientProtocolError: a malformed reply is ErrReplyLost and
// ErrProtocol.
func TestClientProtocolError(t *testing.T) {
	cl, sv := net.Pipe()
	defer sv.Close()
	go func() {
		buf := make([]byte, 64)
		sv.Read(buf)
		sv.Write([]byte("?what\r\n"))
	}()
	c := NewClient(cl, DefaultReplyLimits())
	defer c.Close()
	if _, err := c.Do(testCtx(t), []byte("PING")); !errors.Is(err, ErrReplyLost) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("Do: %v, want ErrReplyLost and ErrProtocol", err)
	}
}

func TestClientClose(t *testing.T) {
	addr, h := startClientServer(t)
	c := dialClient(t, addr)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := c.Do(testCtx(t), []byte("PING"))
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrNotSent", err)
	}
	if !c.Broken() {
		t.Fatal("a closed client is not Broken")
	}

	// Close from another goroutine ends a blocked Do.
	c = dialClient(t, addr)
	go func() {
		<-h.entered
		c.Close()
	}()
	start := time.Now()
	_, err = c.Do(context.Background(), []byte("SLEEP"))
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Do returned %v after Close", d)
	}
	if !errors.Is(err, ErrReplyLost) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Do: %v, want ErrReplyLost and net.ErrClosed", err)
	}
}

func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(context.Background(), addr, time.Second); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, addr, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial with a cancelled context: %v", err)
	}
}
