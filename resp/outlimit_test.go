package resp

import (
	"bytes"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"
)

// TestEncodedLen: EncodedLen is the number of bytes the Writer writes, for
// every kind in both protocols.
func TestEncodedLen(t *testing.T) {
	vals := []Value{
		SimpleString("OK"), SimpleString("a\r\nb"), Error("ERR x"), Int(0), Int(-12345), Int(math.MinInt64),
		Bulk(nil), Bulk(bytes.Repeat([]byte("x"), 100000)), BulkString(""), BulkString("hello"),
		Null(), NullArray(), Bool(true), Bool(false), Double(1.5), Double(math.Inf(-1)), Double(1e300),
		Verbatim("txt", "some text"), Array(), Array(Int(1), BulkString("two"), Array(Null())),
		Map(BulkString("k"), Int(1), BulkString("k2"), Array(Bool(true))), Set(Int(1), Int(2)),
		Push(BulkString("message"), BulkString("ch"), BulkString(strings.Repeat("p", 1<<20))),
		Value{}, Array(Value{}, Int(1)),
	}
	for _, v := range vals {
		for _, proto := range []int{2, 3} {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			w.WriteValue(v, proto)
			w.Flush()
			if got := EncodedLen(v, proto); got != buf.Len() {
				t.Errorf("EncodedLen(%v, %d) = %d, written %d bytes", v.Kind(), proto, got, buf.Len())
			}
		}
	}
}

// TestServerOutputLimitNormal: a reply larger than the normal class's hard
// limit closes the connection, as Redis's client-output-buffer-limit
// normal; smaller ones go out, and without a limit any size does.
func TestServerOutputLimitNormal(t *testing.T) {
	srv := &Server{Handler: newTestHandler(), OutputLimit: OutputLimit{Hard: 100 << 10}}
	c := dial(t, startServer(t, srv))
	c.send(multibulk("BIG", "100000"))
	if got, err := c.read(); err != nil || len(got) < 100000 {
		t.Fatalf("a reply under the limit: %d bytes, %v", len(got), err)
	}
	c.send(multibulk("BIG", "200000"))
	c.expectEOF()

	c2 := dial(t, startServer(t, &Server{Handler: newTestHandler()}))
	c2.send(multibulk("BIG", "2000000"))
	if got, err := c2.read(); err != nil || len(got) < 2000000 {
		t.Fatalf("no limit: %d bytes, %v", len(got), err)
	}
}

// TestServerOutputLimitPubSub: Reserve counts a subscriber's pending
// output against the pub/sub class: past the hard limit the connection is
// closed and ErrOutputLimit returned; Release gives room back; over the soft
// limit for longer than SoftFor closes it too; a normal connection is not
// bound by the pub/sub class.
func TestServerOutputLimitPubSub(t *testing.T) {
	conns := make(chan *Conn, 4)
	h := newTestHandler()
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		if string(args[0]) == "CONN" {
			conns <- c
			return SimpleString("OK")
		}
		return h.ServeRESP(c, args)
	})
	srv := &Server{Handler: handler, PubSubOutputLimit: OutputLimit{Hard: 1000, Soft: 500, SoftFor: 200 * time.Millisecond}}
	addr := startServer(t, srv)
	get := func() (*client, *Conn) {
		cl := dial(t, addr)
		cl.send("CONN\r\n")
		cl.expect("OK")
		return cl, <-conns
	}

	cl, c := get()
	if err := c.Reserve(5000); err != nil {
		t.Fatalf("normal class, no limit: %v", err)
	}
	c.Release(5000)
	c.SetPubSub(true)
	if err := c.Reserve(400); err != nil {
		t.Fatal(err)
	}
	if err := c.Reserve(600); err != nil { // 1000: at the hard limit, over the soft one
		t.Fatal(err)
	}
	c.Release(600)
	if got := c.PendingOutput(); got != 400 {
		t.Errorf("PendingOutput = %d, want 400", got)
	}
	if err := c.Reserve(601); !errors.Is(err, ErrOutputLimit) {
		t.Fatalf("past the hard limit: %v, want ErrOutputLimit", err)
	}
	cl.expectEOF()
	if err := c.Reserve(1); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Reserve on a closed connection: %v", err)
	}

	cl, c = get()
	c.SetPubSub(true)
	if err := c.Reserve(600); err != nil { // over the soft limit from now
		t.Fatal(err)
	}
	if err := c.Reserve(10); err != nil {
		t.Fatalf("over the soft limit for less than SoftFor: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := c.Reserve(10); !errors.Is(err, ErrOutputLimit) {
		t.Fatalf("over the soft limit for longer than SoftFor: %v", err)
	}
	cl.expectEOF()

	// Back under the soft limit in between: the time starts again.
	cl, c = get()
	c.SetPubSub(true)
	c.Reserve(600)
	time.Sleep(300 * time.Millisecond)
	c.Release(600)
	if err := c.Reserve(600); err != nil {
		t.Fatalf("soft limit after dipping under it: %v", err)
	}
	cl.send("PING\r\n")
	cl.expect("PONG")
}

// TestServerIdleTimeout: an idle connection is closed after IdleTimeout;
// one whose command is still executing (a blocked client) and a
// subscriber are not, and neither is one that keeps sending commands.
func TestServerIdleTimeout(t *testing.T) {
	conns := make(chan *Conn, 4)
	h := newTestHandler()
	handler := HandlerFunc(func(c *Conn, args [][]byte) Value {
		if string(args[0]) == "SUBSCRIBE" {
			c.SetPubSub(true)
			conns <- c
			return SimpleString("OK")
		}
		return h.ServeRESP(c, args)
	})
	const idle = 300 * time.Millisecond
	srv := &Server{Handler: handler, IdleTimeout: idle}
	addr := startServer(t, srv)

	idleC := dial(t, addr)
	idleC.send("PING\r\n")
	idleC.expect("PONG")
	blocked := dial(t, addr)
	blocked.send("GATE\r\n")
	<-h.entered
	sub := dial(t, addr)
	sub.send("SUBSCRIBE\r\n")
	sub.expect("OK")
	<-conns
	busy := dial(t, addr)

	start := time.Now()
	for time.Since(start) < 4*idle {
		busy.send("PING\r\n")
		busy.expect("PONG")
		time.Sleep(idle / 10)
	}
	idleC.expectEOF()
	close(h.gate)
	blocked.expect("OPEN")
	sub.send("PING\r\n")
	sub.expect("PONG")
	busy.send("PING\r\n")
	busy.expect("PONG")
	// The one that was blocked is idle from its reply on.
	blocked.expectEOF()
}

// TestServerWriteTimeoutIsPerProgress: a reply larger than what the socket
// takes within WriteTimeout still goes out to a client that keeps reading,
// slowly: the timeout bounds a time without progress.
func TestServerWriteTimeoutIsPerProgress(t *testing.T) {
	srv := &Server{Handler: newTestHandler(), WriteTimeout: 200 * time.Millisecond}
	c := dial(t, startServer(t, srv))
	const size = 16 << 20
	c.send(multibulk("BIG", "16777216"))
	buf := make([]byte, 256<<10)
	got := 0
	start := time.Now()
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	for got < size {
		n, err := c.br.Read(buf)
		got += n
		if err != nil {
			t.Fatalf("after %d bytes in %v: %v", got, time.Since(start), err)
		}
		time.Sleep(5 * time.Millisecond) // about 50 MB/s at most: longer than the timeout in all
	}
	t.Logf("read %d bytes in %v", got, time.Since(start))
}
