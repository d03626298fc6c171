package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

// fuzzLimitSets are the limits each fuzz input is read with: the defaults,
// small ones that the fuzzer reaches quickly, and the largest allowed.
func fuzzLimitSets() []Limits {
	return []Limits{
		DefaultLimits(),
		{MaxBulk: 64, MaxArgs: 8, MaxInline: 128, MaxCommand: 100},
		{MaxBulk: math.MaxInt, MaxArgs: math.MaxInt, MaxInline: math.MaxInt, MaxCommand: math.MaxInt},
	}
}

// fuzzSeeds are regression inputs (inputs that crashed or hung other RESP
// parsers, as noted) and the inputs of the reader's table (readerCases).
func fuzzSeeds() [][]byte {
	seeds := [][]byte{
		[]byte("*0\r\n"),
		[]byte("*-1\r\n"),
		[]byte("*1\r\n$0\r\n\r\n"),
		[]byte("*1\r\n$-1\r\n"),
		[]byte("*1\r\n$9223372036854775807\r\nabc\r\n"), // redcon v1.6.2 panic
		[]byte("*1\r\n$9223372036854775807\r\nx\r\n"),
		[]byte("*9223372036854775807\r\n"), // redcon v1.6.2 spin
		[]byte("*4294967295\r\n"),          // hiredis #1357
		[]byte("*2000000000\r\n"),          // Envoy #45388
		[]byte("*2147483648\r\n"),          // one past Redis's INT_MAX bound
		[]byte("*2147483647\r\n$-5\r\n"),   // at the bound, then a bad bulk length
		[]byte("*2\r\n$4\r\nPING\n"),       // a missing \r
		[]byte("*2\r\n$4\r\nPING\r\n"),
		[]byte("PING \"unclosed\r\n"),
		[]byte("ECHO 'unclosed\r\n"),
		[]byte("GET a\x00b\r\n\x00\x00\x00"),
		[]byte("*1\r\n$3\r\na\x00b\r\n"),
		[]byte("*3\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n"), // RESP3 HELLO 3, truncated
		[]byte("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*1\r\n$4\r\nPING\r\nPING\r\nSET k \"v\\x41\\n\" 'w\\''\r\n\r\n"),
		[]byte(`ECHO "\x41\q\\" 'a\'b' x"y z"` + "\n"),
		bytes.Repeat([]byte("*1\r\n"), 10000), // deep nesting
		bytes.Repeat([]byte("a"), 10<<20),     // a 10 MiB inline line
	}
	for _, tc := range readerCases {
		seeds = append(seeds, []byte(tc.in))
	}
	return seeds
}

// readOutcome is what a Reader makes of an input: its commands and the
// error that ended them.
type readOutcome struct {
	cmds [][][]byte
	err  error
}

func readOutcomeOf(r io.Reader, lim Limits) readOutcome {
	rd := NewReader(r, lim)
	var out readOutcome
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			out.err = err
			return out
		}
		out.cmds = append(out.cmds, args)
	}
}

// FuzzReadCommand: on any input the Reader never panics, returns commands of
// at least one argument within the limits (count, size of each and of all)
// and no more bytes than it was given, and ends with EOF, unexpected EOF or a protocol error.
func FuzzReadCommand(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range fuzzLimitSets() {
			out := readOutcomeOf(bytes.NewReader(in), lim)
			lim = lim.withDefaults()
			total := 0
			for _, args := range out.cmds {
				if len(args) == 0 || len(args) > lim.MaxArgs {
					t.Fatalf("command of %d arguments, limit %d", len(args), lim.MaxArgs)
				}
				size := 0
				for _, a := range args {
					if len(a) > lim.MaxBulk {
						t.Fatalf("argument of %d bytes, limit %d", len(a), lim.MaxBulk)
					}
					size += len(a)
				}
				if size > lim.MaxCommand {
					t.Fatalf("command of %d bytes, limit %d", size, lim.MaxCommand)
				}
				total += size
			}
			if total > len(in) {
				t.Fatalf("%d argument bytes from %d input bytes", total, len(in))
			}
			if err := out.err; err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrProtocol) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(out.err, ErrProtocol) && !strings.HasPrefix(out.err.Error(), "Protocol error: ") {
				t.Fatalf("error text %q", out.err)
			}
		}
	})
}

// chunkReader returns its data n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// FuzzReadCommandChunked: the first byte picks a chunk size (1 to 64) and
// whether the last chunk comes with io.EOF; read in chunks, the rest of the
// input gives the same commands and the same error as read whole.
func FuzzReadCommandChunked(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add(append([]byte{byte(i)}, s...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		size, dataErr, in := int(in[0]&63)+1, in[0]&64 != 0, in[1:]
		for _, lim := range fuzzLimitSets() {
			whole := readOutcomeOf(bytes.NewReader(in), lim)
			var r io.Reader = &chunkReader{data: in, n: size}
			if dataErr {
				r = iotest.DataErrReader(r)
			}
			chunked := readOutcomeOf(r, lim)
			if len(whole.cmds) != len(chunked.cmds) {
				t.Fatalf("chunks of %d: %d commands, whole: %d", size, len(chunked.cmds), len(whole.cmds))
			}
			for i := range whole.cmds {
				if !equalArgs(whole.cmds[i], chunked.cmds[i]) {
					t.Fatalf("chunks of %d: command %d is %q, whole: %q", size, i, chunked.cmds[i], whole.cmds[i])
				}
			}
			if whole.err.Error() != chunked.err.Error() {
				t.Fatalf("chunks of %d: error %v, whole: %v", size, chunked.err, whole.err)
			}
		}
	})
}

func equalArgs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// FuzzRoundTrip: arguments encoded as a multibulk array by the Writer (as
// a client sends them), twice in a pipeline, read back equal; and the same
// when sent inline with quoting, if the line fits.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("SET"), []byte("k"), []byte("v"), uint8(3))
	f.Add([]byte(""), []byte("\r\n"), []byte("\x00\xff\"'\\"), uint8(2))
	f.Add([]byte("*1\r\n$9223372036854775807\r\n"), []byte(" "), []byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, a, b, c []byte, n uint8) {
		args := [][]byte{a, b, c}[:n%3+1]
		vals := make([]Value, len(args))
		for i, arg := range args {
			vals[i] = Bulk(arg)
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for range 2 {
			if err := w.WriteValue(Array(vals...), 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		lim := Limits{MaxBulk: 1 << 20, MaxArgs: 3, MaxInline: 1 << 20}
		out := readOutcomeOf(&buf, lim)
		if out.err != io.EOF || len(out.cmds) != 2 || !equalArgs(out.cmds[0], args) || !equalArgs(out.cmds[1], args) {
			t.Fatalf("wrote %q twice, read %q, %v", args, out.cmds, out.err)
		}

		line := quoteInline(args) + "\r\n"
		if len(line) > lim.MaxInline || line[0] == '*' {
			return
		}
		out = readOutcomeOf(strings.NewReader(line), lim)
		if out.err != io.EOF || len(out.cmds) != 1 || !equalArgs(out.cmds[0], args) {
			t.Fatalf("inline %q read as %q, %v", line, out.cmds, out.err)
		}
	})
}

// quoteInline writes args as an inline line, each in double quotes with
// every byte that is not plain ASCII escaped.
func quoteInline(args [][]byte) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for _, c := range a {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c >= 0x7f:
				const hex = "0123456789abcdef"
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}
