package test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawConn is a plain TCP connection speaking RESP by hand, for checking
// reply bytes and sending what no client library would.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

// encode turns arguments into one RESP multibulk command.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (c *rawConn) write(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) send(args ...string) { c.t.Helper(); c.write(encode(args...)) }

// sendRefused sends a command the server is expected to refuse by closing
// the connection as it reads its header (an argument over
// proto-max-bulk-len): a server that closes before the rest is written
// breaks the pipe, which is then no failure; what it answered is left to
// read.
func (c *rawConn) sendRefused(args ...string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, encode(args...)); err != nil && !isClosed(err) {
		c.t.Fatalf("write: %v", err)
	}
}

// rv is one RESP value as read off the wire.
type rv struct {
	kind  byte // '+', '-', ':', '$', '*', '_', '%', ...
	str   string
	num   int64
	null  bool // $-1, *-1 or _
	elems []rv
}

func (v rv) String() string {
	switch {
	case v.null:
		return fmt.Sprintf("%c<null>", v.kind)
	case v.kind == ':':
		return ":" + strconv.FormatInt(v.num, 10)
	case v.kind == '*' || v.kind == '%' || v.kind == '~' || v.kind == '>':
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			parts[i] = e.String()
		}
		return fmt.Sprintf("%c[%s]", v.kind, strings.Join(parts, " "))
	}
	s := v.str
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("%c%q", v.kind, s)
}

// read reads one reply, failing the test on any error.
func (c *rawConn) read() rv {
	c.t.Helper()
	v, err := c.tryRead(15 * time.Second)
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	return v
}

// tryRead reads one reply within timeout.
func (c *rawConn) tryRead(timeout time.Duration) (rv, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	return readValue(c.r)
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("line %q does not end in CRLF", line)
	}
	return line[:len(line)-2], nil
}

func readValue(r *bufio.Reader) (rv, error) {
	line, err := readLine(r)
	if err != nil {
		return rv{}, err
	}
	if line == "" {
		return rv{}, errors.New("empty line")
	}
	v := rv{kind: line[0]}
	body := line[1:]
	switch v.kind {
	case '+', '-', ',', '(', '#':
		v.str = body
	case ':':
		if v.num, err = strconv.ParseInt(body, 10, 64); err != nil {
			return v, err
		}
	case '_':
		v.null = true
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return v, err
		}
		if string(buf[n:]) != "\r\n" {
			return v, errors.New("bulk not followed by CRLF")
		}
		v.str = string(buf[:n])
	case '*', '~', '>', '%':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' {
			n *= 2
		}
		for range n {
			e, err := readValue(r)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	default:
		return v, fmt.Errorf("unknown reply type %q in line %q", v.kind, line)
	}
	return v, nil
}
