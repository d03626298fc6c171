package script

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Redis 7's libraries against redis-server's own replies: every case of
// testdata/libs.lua ran as EVAL <case> 0 on redis-server 7.0.15, and its
// raw replies, RESP2 and RESP3, are in testdata/libs.expected.json.
// FENCED_RECORD_REDIS=/path/to/redis.sock go test -run TestRecordLibs
// records them again from a redis-server listening there.

type libCase struct{ Name, Src string }

// libExpect is a case's raw replies, Go-quoted (JSON strings would
// replace bytes that are not UTF-8).
type libExpect struct {
	RESP2 string `json:"resp2"`
	RESP3 string `json:"resp3"`
}

func (e libExpect) raw(t testing.TB, proto int) string {
	q := e.RESP2
	if proto == 3 {
		q = e.RESP3
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		t.Fatalf("bad quoted reply %s: %v", q, err)
	}
	return s
}

// loadLibCases reads testdata/libs.lua: "-- case: name" starts a case,
// whose script is the lines up to the next case.
func loadLibCases(t testing.TB) []libCase {
	t.Helper()
	b, err := os.ReadFile("testdata/libs.lua")
	if err != nil {
		t.Fatal(err)
	}
	var out []libCase
	for _, block := range strings.Split(string(b), "\n-- case: ")[1:] {
		name, src, _ := strings.Cut(block, "\n")
		out = append(out, libCase{Name: name, Src: strings.TrimSuffix(src, "\n")})
	}
	if len(out) < 100 {
		t.Fatalf("only %d cases in testdata/libs.lua", len(out))
	}
	return out
}

func loadLibExpected(t testing.TB) map[string]libExpect {
	t.Helper()
	b, err := os.ReadFile("testdata/libs.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]libExpect
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// wire is v as a server writes it to a client of protocol proto.
func wire(t testing.TB, v reply.Value, proto int) string {
	var buf bytes.Buffer
	w := resp.NewWriter(&buf)
	if err := w.WriteValue(resp.FromReply(v), proto); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestLibsRedis(t *testing.T) {
	want := loadLibExpected(t)
	n := 0
	for _, c := range loadLibCases(t) {
		if strings.HasPrefix(c.Name, "env_") {
			continue
		}
		exp, ok := want[c.Name]
		if !ok {
			t.Errorf("%s: no recorded reply (run TestRecordLibs)", c.Name)
			continue
		}
		n++
		got := runV3(c.Src, nil, nil, nil)
		for _, proto := range []int{2, 3} {
			if g, w := wire(t, got, proto), exp.raw(t, proto); g != w {
				t.Errorf("%s RESP%d:\n got  %.300q\n want %.300q", c.Name, proto, g, w)
			}
		}
	}
	t.Logf("%d cases", n)
}

// TestLibsAbsentBelowV3: at cluster versions 1 and 2 the libraries do not
// exist, with the very error an older binary gives.
func TestLibsAbsentBelowV3(t *testing.T) {
	for _, name := range []string{"cjson", "cmsgpack", "bit", "struct"} {
		src := "return " + name + ".x"
		want := reply.Error("ERR user_script:1: Script attempted to access nonexistent global variable '" + name + "'" + suffix(src, "1"))
		wantReply(t, src, run(t, src, nil, nil, nil), want)
		if got := runV3("return type("+name+")", nil, nil, nil); !eq(got, reply.BulkString("table")) {
			t.Errorf("%s at v3: %v", name, got)
		}
	}
}

func TestRecordLibs(t *testing.T) {
	sock := os.Getenv("FENCED_RECORD_REDIS")
	if sock == "" {
		t.Skip("FENCED_RECORD_REDIS is not set")
	}
	conns := [2]*rawConn{dialRaw(t, sock), dialRaw(t, sock)}
	conns[1].do(t, "HELLO", "3")
	out := map[string]libExpect{}
	for _, c := range loadLibCases(t) {
		var e libExpect
		for i, rc := range conns {
			rc.do(t, "SCRIPT", "FLUSH") // cjson's settings last until then
			r := rc.do(t, "EVAL", c.Src, "0")
			if i == 0 {
				e.RESP2 = strconv.Quote(r)
			} else {
				e.RESP3 = strconv.Quote(r)
			}
		}
		out[c.Name] = e
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/libs.expected.json", append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rawConn sends commands and reads each reply as the bytes it came in.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, sock string) *rawConn {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := rc.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := readRaw(rc.br, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// readRaw copies one RESP2/RESP3 reply from br to out.
func readRaw(br *bufio.Reader, out *bytes.Buffer) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*', '~', '>':
		for range max(n, 0) {
			if err := readRaw(br, out); err != nil {
				return err
			}
		}
	case '%':
		for range 2 * n {
			if err := readRaw(br, out); err != nil {
				return err
			}
		}
	}
	return nil
}
