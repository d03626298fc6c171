package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads commands from r until an error, which it returns (io.EOF at
// a clean end).
func readAll(r io.Reader, lim Limits) ([][]string, error) {
	rd := NewReader(r, lim)
	var cmds [][]string
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			return cmds, err
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

func errText(err error) string {
	switch {
	case err == nil:
		return "<nil>"
	case errors.Is(err, ErrProtocol):
		return err.Error()
	case err == io.EOF:
		return "EOF"
	case err == io.ErrUnexpectedEOF:
		return "unexpected EOF"
	}
	return "other: " + err.Error()
}

var readerCases = []struct {
	name string
	in   string
	want [][]string
	err  string // errText of the final error
}{
	{"empty input", "", nil, "EOF"},
	{"multibulk", "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", [][]string{{"ECHO", "hi"}}, "EOF"},
	{"empty bulk", "*1\r\n$0\r\n\r\n", [][]string{{""}}, "EOF"},
	{"binary bulk", "*2\r\n$3\r\nSET\r\n$6\r\na\r\n\x00\xffb\r\n", [][]string{{"SET", "a\r\n\x00\xffb"}}, "EOF"},
	{"pipelined", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n",
		[][]string{{"PING"}, {"GET", "k"}, {"PING"}, {"QUIT"}}, "EOF"},
	{"*0 skipped", "*0\r\n*1\r\n$1\r\na\r\n", [][]string{{"a"}}, "EOF"},
	{"*-1 skipped", "*-1\r\n*1\r\n$1\r\na\r\n", [][]string{{"a"}}, "EOF"},
	{"negative count skipped", "*-5\r\n*-9223372036854775808\r\n", nil, "EOF"},
	{"only *0", "*0\r\n", nil, "EOF"},

	{"inline", "PING\r\n", [][]string{{"PING"}}, "EOF"},
	{"inline LF only", "SET a b\nGET a\n", [][]string{{"SET", "a", "b"}, {"GET", "a"}}, "EOF"},
	{"inline blanks", " \t SET   a\tb  \r\n", [][]string{{"SET", "a", "b"}}, "EOF"},
	{"empty lines skipped", "\r\n\n  \r\n\t\nPING\r\n\r\n", [][]string{{"PING"}}, "EOF"},
	{"inline double quotes", `SET "a b" "" c` + "\r\n", [][]string{{"SET", "a b", "", "c"}}, "EOF"},
	{"inline escapes", `ECHO "\x41\x7a\n\r\t\b\a\\\"\q\x4g"` + "\r\n",
		[][]string{{"ECHO", "Az\n\r\t\b\a\\\"qx4g"}}, "EOF"},
	{"inline single quotes", `ECHO 'it\'s "x" \n'` + "\n", [][]string{{"ECHO", `it's "x" \n`}}, "EOF"},
	{"inline quotes join a word", `ECHO a"b c"` + "\n", [][]string{{"ECHO", "ab c"}}, "EOF"},
	{"inline CR separates words", "ECHO a\rb\r\r\n", [][]string{{"ECHO", "a", "b"}}, "EOF"},
	{"inline vertical tab inside word", "ECHO a\vb\n", [][]string{{"ECHO", "a\vb"}}, "EOF"},
	{"inline NUL ends the line", "GET a\x00b c\r\nPING\r\n", [][]string{{"GET", "a"}, {"PING"}}, "EOF"},
	{"inline NUL first", "\x00PING\r\n", nil, "EOF"},
	{"inline then multibulk", "PING\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}, {"PING"}}, "EOF"},
	{"unbalanced double", "ECHO \"abc\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"unbalanced single", "ECHO 'abc\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"quote then letter", "ECHO \"abc\"d\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"single quote then letter", "ECHO 'abc'd\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"NUL inside quotes", "ECHO \"ab\x00c\"\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"trailing backslash in quotes", "ECHO \"ab\\\r\n", nil, "Protocol error: unbalanced quotes in request"},
	{"command before an error runs", "PING\r\nECHO \"x\n", [][]string{{"PING"}}, "Protocol error: unbalanced quotes in request"},

	{"count not a number", "*abc\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count with plus", "*+1\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count leading zero", "*01\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count minus zero", "*-0\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count empty", "*\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count without CR", "*1\n$1\r\na\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count overflow", "*9223372036854775808\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count huge", "*9223372036854775807\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count past INT_MAX", "*2147483648\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count 3e9", "*3000000000\r\n", nil, "Protocol error: invalid multibulk length"},
	{"count at INT_MAX", "*2147483647\r\n", nil, "Protocol error: too many arguments"},
	{"count past MaxArgs", "*65537\r\n", nil, "Protocol error: too many arguments"},
	{"count past int32 negative skipped", "*-2147483649\r\n", nil, "EOF"},
	{"bulk length -5", "*1\r\n$-5\r\n", nil, "Protocol error: invalid bulk length"},
	{"bulk length past MaxBulk", "*1\r\n$536870913\r\n", nil, "Protocol error: invalid bulk length"},
	{"bulk length not a number", "*1\r\n$x\r\n", nil, "Protocol error: invalid bulk length"},
	{"bulk length negative", "*1\r\n$-1\r\n", nil, "Protocol error: invalid bulk length"},
	{"bulk length huge", "*1\r\n$9223372036854775807\r\nabc\r\n", nil, "Protocol error: invalid bulk length"},
	{"bulk length overflow", "*1\r\n$99999999999999999999\r\nabc\r\n", nil, "Protocol error: invalid bulk length"},
	{"not a bulk", "*1\r\n:1\r\n", nil, "Protocol error: expected '$', got ':'"},
	{"nested array", "*1\r\n*1\r\n$1\r\na\r\n", nil, "Protocol error: expected '$', got '*'"},
	{"unprintable type byte", "*1\r\n\x00", nil, `Protocol error: expected '$', got '\x00'`},
	{"bulk without CRLF", "*1\r\n$3\r\nabcXY", nil, "Protocol error: expected CRLF after bulk string"},
	{"bulk longer than declared", "*1\r\n$3\r\nabcd\r\n", nil, "Protocol error: expected CRLF after bulk string"},
	{"header line at bound", "*" + strings.Repeat("9", 30) + "\r\n", nil, "Protocol error: invalid multibulk length"},
	{"header line past bound", "*" + strings.Repeat("9", 31) + "\r\n", nil, "Protocol error: too big mbulk count string"},
	{"bulk header past bound", "*1\r\n$" + strings.Repeat("9", 31) + "\r\n", nil, "Protocol error: too big bulk count string"},
	{"count line never ends", "*" + strings.Repeat("1", 100), nil, "Protocol error: too big mbulk count string"},

	{"truncated count", "*1", nil, "unexpected EOF"},
	{"truncated args", "*2\r\n$1\r\na\r\n", nil, "unexpected EOF"},
	{"truncated bulk", "*1\r\n$5\r\nab", nil, "unexpected EOF"},
	{"truncated CRLF", "*1\r\n$2\r\nab\r", nil, "unexpected EOF"},
	{"truncated inline", "PING", nil, "unexpected EOF"},
}

// TestReadCommand runs the table whole, one byte per Read, and with data
// returned together with io.EOF: chunking must not change the outcome.
func TestReadCommand(t *testing.T) {
	readers := map[string]func(string) io.Reader{
		"whole":   func(s string) io.Reader { return strings.NewReader(s) },
		"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"dataerr": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		"halfers": func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tc := range readerCases {
		for rname, mk := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(mk(tc.in), DefaultLimits())
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
					t.Errorf("commands = %q, want %q", got, tc.want)
				}
				if errText(err) != tc.err {
					t.Errorf("error = %s, want %s", errText(err), tc.err)
				}
			})
		}
	}
}

// stopReader returns its data, then fails the test if read again: the
// Reader must decide without waiting for bytes that may never come.
type stopReader struct {
	t    *testing.T
	data []byte
}

var errReadPastInput = errors.New("read past the input")

func (r *stopReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errReadPastInput
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadCommandErrorsImmediately(t *testing.T) {
	for _, in := range []string{
		"*1\r\n$9223372036854775807\r\n", // redcon v1.6.2 panics on this
		"*9223372036854775807\r\n",       // redcon v1.6.2 spins on this
		"*2000000000\r\n",                // Envoy #45388
		"*4294967295\r\n",                // hiredis #1357
		strings.Repeat("*1\r\n", 10000),  // deep nesting
		"*1\r\n$" + strings.Repeat("1", 40),
		"*" + strings.Repeat("1", 40),
		"*1\r\n%1\r\n",
		"ECHO \"abc\r\n",
	} {
		rd := NewReader(&stopReader{t: t, data: []byte(in)}, DefaultLimits())
		_, err := rd.ReadCommand()
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%.40q: error %v, want a protocol error before reading on", in, err)
		}
	}
}

func TestReadCommandStickyError(t *testing.T) {
	rd := NewReader(strings.NewReader("*1\r\n:1\r\n*1\r\n$4\r\nPING\r\n"), DefaultLimits())
	_, err1 := rd.ReadCommand()
	_, err2 := rd.ReadCommand()
	if !errors.Is(err1, ErrProtocol) || err1 != err2 {
		t.Fatalf("errors %v then %v, want the same protocol error", err1, err2)
	}
}

// TestReadCommandArgsOwned checks that arguments survive later reads: the
// server hands them to another goroutine while the reader goes on.
func TestReadCommandArgsOwned(t *testing.T) {
	in := "*2\r\n$3\r\nSET\r\n$5\r\nfirst\r\nSET second\r\n*2\r\n$3\r\nGET\r\n$5\r\nthird\r\n"
	rd := NewReader(iotest.HalfReader(strings.NewReader(in)), DefaultLimits())
	var all [][][]byte
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			break
		}
		all = append(all, args)
	}
	got := fmt.Sprintf("%q", all)
	if want := `[["SET" "first"] ["SET" "second"] ["GET" "third"]]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// Appending to an argument must not overwrite the next one.
	a := append(all[0][0], 'X')
	if string(all[0][1]) != "first" || string(a) != "SETX" {
		t.Fatalf("append to an argument changed its neighbour: %q", all[0])
	}
}

func TestReaderBuffered(t *testing.T) {
	rd := NewReader(strings.NewReader("PING\r\nPING\r\n"), DefaultLimits())
	if _, err := rd.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if rd.Buffered() != len("PING\r\n") {
		t.Fatalf("Buffered = %d after the first of two commands, want %d", rd.Buffered(), len("PING\r\n"))
	}
	if _, err := rd.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if rd.Buffered() != 0 {
		t.Fatalf("Buffered = %d at the end, want 0", rd.Buffered())
	}
}

// multibulk encodes args as a client sends them.
func multibulk(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// TestLimits checks every limit at the limit (accepted) and one past it
// (rejected), for the default and the unauthenticated limits.
func TestLimits(t *testing.T) {
	for _, lim := range []Limits{DefaultLimits(), UnauthenticatedLimits(), {MaxBulk: 5, MaxArgs: 3, MaxInline: 12, MaxCommand: 12}} {
		cases := []struct {
			name string
			in   string
			err  string // "" for accepted
		}{
			{"bulk at limit", multibulk(strings.Repeat("b", lim.MaxBulk)), ""},
			{"bulk past limit", multibulk(strings.Repeat("b", lim.MaxBulk+1)), "Protocol error: invalid bulk length"},
			{"args at limit", multibulk(strings.Split(strings.Repeat("a", lim.MaxArgs), "")...), ""},
			{"args past limit", multibulk(strings.Split(strings.Repeat("a", lim.MaxArgs+1), "")...), "Protocol error: too many arguments"},
			// A line of one short word padded with blanks, so only its length counts.
			{"inline at limit", pad("PING", lim.MaxInline) + "\r\n", ""},
			{"inline at limit LF", pad("PING", lim.MaxInline) + "\n", ""},
			{"inline past limit", pad("PING", lim.MaxInline+1) + "\r\n", "Protocol error: too big inline request"},
			{"inline past limit LF", pad("PING", lim.MaxInline+1) + "\n", "Protocol error: too big inline request"},
			{"inline without end", strings.Repeat("i", lim.MaxInline+2), "Protocol error: too big inline request"},
			{"inline args at limit", strings.Repeat("a ", lim.MaxArgs) + "\r\n", ""},
			{"inline args past limit", strings.Repeat("a ", lim.MaxArgs+1) + "\r\n", "Protocol error: too many arguments"},
		}
		if lim.MaxArgs*lim.MaxBulk > lim.MaxCommand { // only then can a command be too big
			full := lim.MaxCommand / lim.MaxBulk
			at := append(strings.Split(strings.Repeat("b", full), ""), strings.Repeat("c", lim.MaxCommand%lim.MaxBulk))
			for i := range full {
				at[i] = strings.Repeat("b", lim.MaxBulk)
			}
			past := append([]string(nil), at...)
			past[len(past)-1] += "c"
			cases = append(cases,
				struct{ name, in, err string }{"command at limit", multibulk(at...), ""},
				struct{ name, in, err string }{"command past limit", multibulk(past...), "Protocol error: too big command"})
		}
		if lim.MaxInline > lim.MaxBulk { // only then can an inline word be too big
			cases = append(cases,
				struct{ name, in, err string }{"inline word at limit", strings.Repeat("w", lim.MaxBulk) + "\n", ""},
				struct{ name, in, err string }{"inline word past limit", strings.Repeat("w", lim.MaxBulk+1) + "\n", "Protocol error: too big inline argument"})
		}
		for _, tc := range cases {
			if tc.name == "inline args at limit" && 2*lim.MaxArgs > lim.MaxInline {
				continue // the line itself would be too long
			}
			if tc.name == "inline args past limit" && 2*lim.MaxArgs+2 > lim.MaxInline {
				continue
			}
			t.Run(fmt.Sprintf("%d/%d/%d/%s", lim.MaxBulk, lim.MaxArgs, lim.MaxInline, tc.name), func(t *testing.T) {
				rd := NewReader(strings.NewReader(tc.in), lim)
				args, err := rd.ReadCommand()
				if tc.err == "" {
					if err != nil || len(args) == 0 {
						t.Fatalf("rejected: %v", err)
					}
					if _, err := rd.ReadCommand(); err != io.EOF {
						t.Fatalf("then %v, want EOF", err)
					}
					return
				}
				if errText(err) != tc.err {
					t.Fatalf("error %s, want %s", errText(err), tc.err)
				}
			})
		}
	}
}

func pad(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }

func TestInlineCommandLimit(t *testing.T) {
	lim := Limits{MaxBulk: 5, MaxArgs: 5, MaxInline: 40, MaxCommand: 12}
	if got, err := readAll(strings.NewReader("aaaaa aaaaa aa\n"), lim); err != io.EOF || len(got) != 1 {
		t.Fatalf("at the limit: %q, %v", got, err)
	}
	if _, err := readAll(strings.NewReader("aaaaa aaaaa aaa\n"), lim); errText(err) != "Protocol error: too big command" {
		t.Fatalf("past the limit: %v", err)
	}
}

// TestLimitResume checks that after a limit error nothing was consumed, so
// raising the limits (after AUTH) reads the same command.
func TestLimitResume(t *testing.T) {
	big := strings.Repeat("v", 20<<10)
	args11 := strings.Split("abcdefghijk", "")
	for _, in := range []string{
		multibulk("SET", "k", big),
		multibulk(args11...),
		"SET k " + big + "\r\n",
		strings.Join(args11, " ") + "\r\n",
	} {
		rd := NewReader(iotest.HalfReader(strings.NewReader(in+"PING\r\n")), UnauthenticatedLimits())
		if _, err := rd.ReadCommand(); !isLimitError(err) {
			t.Fatalf("%.20q: error %v, want a limit error", in, err)
		}
		if _, err := rd.ReadCommand(); !isLimitError(err) {
			t.Fatalf("%.20q: second error %v, want the limit error again", in, err)
		}
		rd.SetLimits(DefaultLimits())
		args, err := rd.ReadCommand()
		if err != nil || (len(args) != 3 && len(args) != 11) {
			t.Fatalf("%.20q: after SetLimits got %d args, %v", in, len(args), err)
		}
		if args, err := rd.ReadCommand(); err != nil || string(args[0]) != "PING" {
			t.Fatalf("%.20q: next command %q, %v", in, args, err)
		}
	}
}

// TestCountPastIntMaxIsMalformed: a count over INT_MAX is malformed, as
// in Redis, not over a limit, so no SetLimits (AUTH) revives the stream.
func TestCountPastIntMaxIsMalformed(t *testing.T) {
	rd := NewReader(strings.NewReader("*2147483648\r\n*1\r\n$4\r\nPING\r\n"), UnauthenticatedLimits())
	_, err := rd.ReadCommand()
	if errText(err) != "Protocol error: invalid multibulk length" || isLimitError(err) {
		t.Fatalf("error %v (limit %v), want invalid multibulk length, not a limit", err, isLimitError(err))
	}
	rd.SetLimits(DefaultLimits())
	if _, err2 := rd.ReadCommand(); err2 != err {
		t.Fatalf("after SetLimits: %v, want the same error", err2)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestHugeInlineRejectedEarly sends a 10 MiB line: the Reader must reject it
// once it passes MaxInline, without reading (or buffering) the rest.
func TestHugeInlineRejectedEarly(t *testing.T) {
	cr := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("a"), 10<<20))}
	rd := NewReader(cr, DefaultLimits())
	_, err := rd.ReadCommand()
	if errText(err) != "Protocol error: too big inline request" {
		t.Fatalf("error %v", err)
	}
	if cr.n > 2*defaultMaxInline {
		t.Fatalf("read %d bytes of the line before rejecting it", cr.n)
	}
	if len(rd.buf) > 2*defaultMaxInline+minBuf {
		t.Fatalf("buffer grew to %d bytes", len(rd.buf))
	}
}

// TestNoAllocationForDeclaredSizes checks that declared lengths and counts
// allocate nothing in proportion: with limits raised to the 1 GiB maximum, a
// command that declares 1 GiB or 2^30 arguments and sends three bytes costs
// little.
func TestNoAllocationForDeclaredSizes(t *testing.T) {
	huge := Limits{MaxBulk: math.MaxInt, MaxArgs: math.MaxInt, MaxInline: math.MaxInt, MaxCommand: math.MaxInt} // clamped to 1 GiB
	cases := []struct {
		in  string
		lim Limits
	}{
		{"*1\r\n$9223372036854775807\r\nabc\r\n", DefaultLimits()},
		{"*9223372036854775807\r\n", DefaultLimits()},
		{"*1\r\n$1073741824\r\nabc", huge},
		{"*1073741824\r\n$3\r\nabc\r\n", huge},
		{"*1073741824\r\n$1073741824\r\nabc\r\n", huge},
		{"abc def", huge},
		{strings.Repeat("*1\r\n", 10000), DefaultLimits()},
	}
	for _, tc := range cases {
		read := func() {
			rd := NewReader(strings.NewReader(tc.in), tc.lim)
			for {
				if _, err := rd.ReadCommand(); err != nil {
					return
				}
			}
		}
		if n := testing.AllocsPerRun(20, read); n > 12 {
			t.Errorf("%.30q: %v allocations per read", tc.in, n)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		read()
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
			t.Errorf("%.30q: allocated %d bytes", tc.in, d)
		}
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1": 1, "-1": -1, "42": 42,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63,
	} {
		if got, ok := parseInt([]byte(in)); !ok || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-", "+1", "01", "-0", "1a", " 1", "1 ", "9223372036854775808",
		"-9223372036854775809", "99999999999999999999", "12345678901234567890"} {
		if got, ok := parseInt([]byte(in)); ok {
			t.Errorf("parseInt(%q) = %d, want failure", in, got)
		}
	}
}

func BenchmarkReadCommand(b *testing.B) {
	cmd := []byte(multibulk("SET", "lock:orders:42", "3f2a9c0e-5b7d-4c1a-9e8f-0a1b2c3d4e5f", "NX", "PX", "30000"))
	in := bytes.Repeat(cmd, 1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rd := NewReader(bytes.NewReader(in), DefaultLimits())
		for {
			if _, err := rd.ReadCommand(); err != nil {
				break
			}
		}
	}
}
