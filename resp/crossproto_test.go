package resp

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// crossProtoCases are inline lines and whether the guard closes a
// connection that sends them first (first) or after another command
// (later). They also seed FuzzCrossProtocol.
var crossProtoCases = []struct {
	line         string
	first, later bool
}{
	// What browsers, curl and proxies send.
	{"POST / HTTP/1.1", true, true},
	{"POST /submit?x=1 HTTP/1.0", true, true},
	{"post /", true, true}, // Redis matches the word in any case
	{"GET / HTTP/1.1", true, false},
	{"GET /favicon.ico HTTP/1.1", true, false},
	{"PUT /x HTTP/2.0", true, false},
	{"OPTIONS * HTTP/1.1", true, false},
	{"PRI * HTTP/2.0", true, false}, // HTTP/2 prior knowledge
	{"CONNECT 127.0.0.1:6379 HTTP/1.1", true, false},
	{"GET http://127.0.0.1:6379/ http/1.1", true, false},
	{"VERSION-CONTROL /r HTTP/1.1", true, false},
	{"Host: 127.0.0.1:6379", true, true},
	{"host: x", true, true},
	{"HOST:127.0.0.1", true, true},
	{"Host:", true, true},
	// RESP commands, also ones that look a little like HTTP.
	{"GET /", false, false}, // HTTP/0.9 is also GET of the key "/"
	{"GET key", false, false},
	{"SET / HTTP/1.1", true, false}, // a request line by its shape; only first
	{"set / HTTP/1.1", false, false},
	{"GET / HTTPS/1.1", false, false},
	{"GET / HTTP/x", false, false},
	{"GET / HTTP/", false, false},
	{"GET / HTTP/1.1 extra", false, false},
	{"PING", false, false},
	{"POSTS x", false, false},
	{"Hostname: x", false, false},
	{"Hos: x", false, false},
	{"Content-Type: text/plain", false, false},
	{"ECHO Host:", false, false},
	{"G3T / HTTP/1.1", false, false},
}

func TestLooksLikeHTTP(t *testing.T) {
	for _, tc := range crossProtoCases {
		args, err := splitInline([]byte(tc.line), DefaultLimits())
		if err != nil || len(args) == 0 {
			t.Fatalf("%q: %q, %v", tc.line, args, err)
		}
		if got := looksLikeHTTP(args, true); got != tc.first {
			t.Errorf("%q as the first command: %v, want %v", tc.line, got, tc.first)
		}
		if got := looksLikeHTTP(args, false); got != tc.later {
			t.Errorf("%q after another command: %v, want %v", tc.line, got, tc.later)
		}
	}
}

// syncBuffer is a log destination for a server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerCrossProtocol: a connection that speaks HTTP is closed without
// a reply and nothing it sent runs, however it was pipelined; the server
// logs it once and serves everyone else.
func TestServerCrossProtocol(t *testing.T) {
	h := newTestHandler()
	var log syncBuffer
	srv := &Server{Handler: h, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	addr := startServer(t, srv)
	body := "ECHO pwned\r\n"
	for _, tc := range []struct {
		name, in string
		ran      int64 // commands executed before the guard closed it
	}{
		{"browser POST", "POST / HTTP/1.1\r\nHost: 127.0.0.1:6379\r\nContent-Type: text/plain\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body, 0},
		{"GET", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + body, 0},
		{"request line alone", "PUT /x HTTP/1.1\r\n", 0},
		{"bare LF", "GET /x HTTP/1.0\nECHO pwned\n", 0},
		{"Host after a command", "PING\r\nHost: x\r\n" + body, 1},
		{"POST after a command", "PING\r\nPOST /\r\n" + body, 1},
		{"pipelined after a multibulk command", multibulk("PING") + "POST / HTTP/1.1\r\n" + body, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.executed.Load()
			c := dial(t, addr)
			c.send(tc.in)
			// The replies of the commands before the HTTP line are sent,
			// but the close may reset the connection before they arrive.
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			out, err := io.ReadAll(c.br)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %q", out)
			}
			if want := strings.Repeat("+PONG\r\n", int(tc.ran)); !strings.HasPrefix(want, string(out)) {
				t.Fatalf("read %q, want (a prefix of) %q", out, want)
			}
			if n := h.executed.Load() - before; n != tc.ran {
				t.Fatalf("%d commands ran, want %d", n, tc.ran)
			}
		})
	}
	// Not HTTP: a request line sent later, or as a multibulk array, is a
	// command like any other.
	c := dial(t, addr)
	c.send("PING\r\nGET / HTTP/1.1\r\n" + multibulk("POST", "/", "HTTP/1.1") + "PING\r\n")
	c.expect("PONG")
	c.expect("(error) ERR unknown command 'GET'")
	c.expect("(error) ERR unknown command 'POST'")
	c.expect("PONG")

	waitFor(t, "the log line", func() bool { return strings.Contains(log.String(), "possible cross-protocol attack") })
	if n := strings.Count(log.String(), "possible cross-protocol attack"); n != 1 {
		t.Fatalf("%d log lines for the attacks, want 1 (at most one a minute):\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("the log line is not a warning:\n%s", log.String())
	}
}

// FuzzCrossProtocol: whatever follows a request line of a browser's shape
// (its method and target from the fuzzer), the connection is closed and
// none of it runs: the body of a POST can be anything a web page wants.
func FuzzCrossProtocol(f *testing.F) {
	for _, tc := range crossProtoCases {
		if w := strings.Fields(tc.line); tc.first && len(w) == 3 {
			f.Add([]byte(w[0]), []byte(w[1]), []byte("ECHO pwned\r\n"))
		}
	}
	f.Add([]byte("POST"), []byte("/"), []byte("*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("GET"), []byte(`/"quoted"`), []byte("\r\n\r\nPING\r\nPING\r\n"))
	f.Add([]byte("GET"), []byte(`/"unbalanced`), []byte{})
	f.Add([]byte("PATCH"), []byte("/"+strings.Repeat("a", 70<<10)), []byte("PING\r\n")) // longer than an inline line
	h := newTestHandler()
	srv := &Server{Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go srv.Serve(ln)
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, method, target, body []byte) {
		if !isMethod(method) || len(target) == 0 || bytes.ContainsAny(target, " \t\r\n\v\f\x00") {
			return // not a request line a browser sends
		}
		before := h.executed.Load()
		in := slices.Concat(method, []byte(" "), target, []byte(" HTTP/1.1\r\nHost: x\r\n\r\n"), body)
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go func() {
			nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			nc.Write(in) // the server may close before taking it all
		}()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		out, err := io.ReadAll(nc)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection not closed (read %q)", out)
		} // else EOF, or a reset: the server closed with input unread
		// A line the reader refuses (unbalanced quotes, too long) is
		// answered with a protocol error before the close; never a reply
		// of a command.
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("-ERR Protocol error: ")) {
			t.Fatalf("got %q, want nothing or a protocol error", out)
		}
		if n := h.executed.Load() - before; n != 0 {
			t.Fatalf("%d commands ran", n)
		}
	})
}
