package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// encode writes v with a Writer in proto.
func encode(t testing.TB, v Value, proto int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	if err := w.WriteValue(v, proto); err != nil {
		t.Fatalf("WriteValue(%v, %d): %v", v, proto, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// valueEqual reports whether a and b are the same reply: the same kinds,
// texts and numbers (NaN equal to NaN), whether a bulk is held as bytes or
// as a string.
func valueEqual(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KindSimpleString, KindError, KindVerbatim:
		return a.str == b.str
	case KindBulk:
		return a.Text() == b.Text()
	case KindInt, KindBool:
		return a.num == b.num
	case KindDouble:
		fa, fb := a.Float(), b.Float()
		return a.num == b.num || (math.IsNaN(fa) && math.IsNaN(fb))
	case KindArray, KindMap, KindSet, KindPush:
		if len(a.elems) != len(b.elems) {
			return false
		}
		for i := range a.elems {
			if !valueEqual(a.elems[i], b.elems[i]) {
				return false
			}
		}
	}
	return true
}

// asWritten returns the Value that reading v back should give after Writer
// wrote it in proto: what Writer changes (CR and LF in lines, the RESP2
// mapping of RESP3 types, one null in RESP3) changed.
func asWritten(v Value, proto int) Value {
	spaces := func(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
	switch v.kind {
	case KindInvalid:
		return Error("ERR internal error: invalid reply value")
	case KindSimpleString:
		return SimpleString(spaces(v.str))
	case KindError:
		return Error(spaces(v.str))
	case KindNullArray:
		if proto == 3 {
			return Null()
		}
	case KindBool:
		if proto == 2 {
			return Int(v.num)
		}
	case KindDouble:
		if proto == 2 {
			return Bulk(appendDouble(nil, v.Float()))
		}
	case KindVerbatim:
		if proto == 2 {
			return BulkString(v.Text())
		}
	case KindArray, KindMap, KindSet, KindPush:
		elems := make([]Value, len(v.elems))
		for i, e := range v.elems {
			elems[i] = asWritten(e, proto)
		}
		if proto == 2 {
			return Array(elems...)
		}
		return Value{kind: v.kind, elems: elems}
	}
	return v
}

// readReplies reads replies from r until an error, which it returns.
func readReplies(r io.Reader, lim ReplyLimits) ([]Value, error) {
	rd := NewReplyReader(r, lim)
	var vs []Value
	for {
		v, err := rd.Read()
		if err != nil {
			return vs, err
		}
		vs = append(vs, v)
	}
}

var replyReaders = map[string]func([]byte) io.Reader{
	"whole":   func(b []byte) io.Reader { return bytes.NewReader(b) },
	"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	"dataerr": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	"half":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
}

// Canonical encodings: the input is what Writer writes for the Value.
const (
	canon2 = 1 << iota // in RESP2
	canon3             // in RESP3
)

var replyCases = []struct {
	name  string
	in    string
	want  Value
	canon int
}{
	{"simple", "+OK\r\n", SimpleString("OK"), canon2 | canon3},
	{"simple empty", "+\r\n", SimpleString(""), canon2 | canon3},
	{"simple binary", "+a\x00\xff b\r\n", SimpleString("a\x00\xff b"), canon2 | canon3},
	{"error", "-ERR unknown command 'x'\r\n", Error("ERR unknown command 'x'"), canon2 | canon3},
	{"int zero", ":0\r\n", Int(0), canon2 | canon3},
	{"int negative", ":-42\r\n", Int(-42), canon2 | canon3},
	{"int max", ":9223372036854775807\r\n", Int(math.MaxInt64), canon2 | canon3},
	{"int min", ":-9223372036854775808\r\n", Int(math.MinInt64), canon2 | canon3},
	{"bulk", "$5\r\nhello\r\n", BulkString("hello"), canon2 | canon3},
	{"bulk empty", "$0\r\n\r\n", BulkString(""), canon2 | canon3},
	{"bulk binary", "$6\r\na\r\n\x00\xffb\r\n", BulkString("a\r\n\x00\xffb"), canon2 | canon3},
	{"null bulk", "$-1\r\n", Null(), canon2},
	{"null array", "*-1\r\n", NullArray(), canon2},
	{"array empty", "*0\r\n", Array(), canon2 | canon3},
	{"array nested", "*4\r\n:1\r\n$3\r\ntwo\r\n*1\r\n+nested\r\n-ERR in\r\n",
		Array(Int(1), BulkString("two"), Array(SimpleString("nested")), Error("ERR in")), canon2 | canon3},
	{"array with nulls", "*3\r\n$-1\r\n*-1\r\n*0\r\n", Array(Null(), NullArray(), Array()), canon2},
	{"null", "_\r\n", Null(), canon3},
	{"double", ",1.5\r\n", Double(1.5), canon3},
	{"double integral", ",3\r\n", Double(3), canon3},
	{"double negative zero", ",-0\r\n", Double(math.Copysign(0, -1)), canon3},
	{"double exponent", ",1e+300\r\n", Double(1e300), canon3},
	{"double small", ",1e-07\r\n", Double(1e-7), canon3},
	{"double inf", ",inf\r\n", Double(math.Inf(1)), canon3},
	{"double -inf", ",-inf\r\n", Double(math.Inf(-1)), canon3},
	{"double nan", ",nan\r\n", Double(math.NaN()), canon3},
	{"double trailing zero", ",1.50\r\n", Double(1.5), 0},
	{"double INF", ",INF\r\n", Double(math.Inf(1)), 0},
	{"double +inf", ",+inf\r\n", Double(math.Inf(1)), 0},
	{"double -nan", ",-nan\r\n", Double(math.NaN()), 0},
	{"double overflow", ",1e400\r\n", Double(math.Inf(1)), 0},
	{"double plus exponent", ",2.5E+3\r\n", Double(2500), 0},
	{"bool true", "#t\r\n", Bool(true), canon3},
	{"bool false", "#f\r\n", Bool(false), canon3},
	{"big number", "(3492890328409238509324850943850943825024385\r\n",
		BulkString("3492890328409238509324850943850943825024385"), 0},
	{"big number negative", "(-1\r\n", BulkString("-1"), 0},
	{"blob error", "!22\r\nSYNTAX invalid\r\nsyntax\r\n", Error("SYNTAX invalid\r\nsyntax"), 0},
	{"blob error empty", "!0\r\n\r\n", Error(""), 0},
	{"verbatim", "=15\r\ntxt:Some string\r\n", Verbatim("txt", "Some string"), canon3},
	{"verbatim empty", "=4\r\nmkd:\r\n", Verbatim("mkd", ""), canon3},
	{"verbatim binary", "=7\r\ntxt:\r\n\x00\r\n", Verbatim("txt", "\r\n\x00"), canon3},
	{"map", "%2\r\n+a\r\n:1\r\n$1\r\nb\r\n#f\r\n",
		Map(SimpleString("a"), Int(1), BulkString("b"), Bool(false)), canon3},
	{"map empty", "%0\r\n", Map(), canon3},
	{"map nested", "%1\r\n$1\r\na\r\n%1\r\n$1\r\nb\r\n:1\r\n",
		Map(BulkString("a"), Map(BulkString("b"), Int(1))), canon3},
	{"set", "~2\r\n$1\r\nx\r\n$1\r\ny\r\n", Set(BulkString("x"), BulkString("y")), canon3},
	{"set empty", "~0\r\n", Set(), canon3},
	{"push", ">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$2\r\nhi\r\n",
		Push(BulkString("message"), BulkString("chan"), BulkString("hi")), canon3},
	{"attribute dropped", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n",
		Array(Int(2039123), Int(9543892)), 0},
	{"attribute inside an array", "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", Array(Int(1), Int(2)), 0},
	{"attributes in a row", "|0\r\n|1\r\n+a\r\n|0\r\n+b\r\n+OK\r\n", SimpleString("OK"), 0},
	{"everything", "*14\r\n+s\r\n-e\r\n:1\r\n$1\r\nb\r\n$-1\r\n*-1\r\n_\r\n,0.5\r\n#t\r\n(9\r\n!1\r\nx\r\n=5\r\ntxt:v\r\n%1\r\n~1\r\n:1\r\n>1\r\n_\r\n|1\r\n+k\r\n+v\r\n*0\r\n",
		Array(SimpleString("s"), Error("e"), Int(1), BulkString("b"), Null(), NullArray(), Null(), Double(0.5),
			Bool(true), BulkString("9"), Error("x"), Verbatim("txt", "v"), Map(Set(Int(1)), Push(Null())), Array()), 0},
}

// TestReadReply reads every table entry, whole and in pieces, checks the
// Value, and that Writer writes a canonical input back as it was.
func TestReadReply(t *testing.T) {
	for _, tc := range replyCases {
		for rname, mk := range replyReaders {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				vs, err := readReplies(mk([]byte(tc.in)), DefaultReplyLimits())
				if err != io.EOF || len(vs) != 1 {
					t.Fatalf("read %v, %v; want one reply and EOF", vs, err)
				}
				if !valueEqual(vs[0], tc.want) {
					t.Fatalf("read %v (%v), want %v (%v)", vs[0], vs[0].Kind(), tc.want, tc.want.Kind())
				}
				for _, proto := range []int{2, 3} {
					if tc.canon&(1<<(proto-2)) == 0 {
						continue
					}
					if got := encode(t, vs[0], proto); string(got) != tc.in {
						t.Errorf("written back in RESP%d as %q, want %q", proto, got, tc.in)
					}
				}
			})
		}
	}
}

// TestReadReplyPipelined reads the whole table from one stream.
func TestReadReplyPipelined(t *testing.T) {
	var in []byte
	for _, tc := range replyCases {
		in = append(in, tc.in...)
	}
	for rname, mk := range replyReaders {
		vs, err := readReplies(mk(in), DefaultReplyLimits())
		if err != io.EOF || len(vs) != len(replyCases) {
			t.Fatalf("%s: %d replies, %v; want %d and EOF", rname, len(vs), err, len(replyCases))
		}
		for i, tc := range replyCases {
			if !valueEqual(vs[i], tc.want) {
				t.Errorf("%s: %s: read %v, want %v", rname, tc.name, vs[i], tc.want)
			}
		}
	}
}

// TestReadReplyWriterCases reads back what Writer writes for its own test
// table, in both protocols.
func TestReadReplyWriterCases(t *testing.T) {
	for _, tc := range valueCases() {
		for _, proto := range []int{2, 3} {
			var b bytes.Buffer
			w := NewWriter(&b)
			w.WriteValue(tc.v, proto)
			w.Flush()
			in := b.Bytes()
			vs, err := readReplies(bytes.NewReader(in), DefaultReplyLimits())
			if err != io.EOF || len(vs) != 1 {
				t.Errorf("%s RESP%d: read %v, %v from %q", tc.name, proto, vs, err, in)
				continue
			}
			if want := asWritten(tc.v, proto); !valueEqual(vs[0], want) {
				t.Errorf("%s RESP%d: read %v, want %v", tc.name, proto, vs[0], want)
			}
			if got := encode(t, vs[0], proto); !bytes.Equal(got, in) {
				t.Errorf("%s RESP%d: written back as %q, want %q", tc.name, proto, got, in)
			}
		}
	}
}

func TestReadReplyErrors(t *testing.T) {
	for _, in := range []string{
		"?\r\n",
		"\x00",
		"\r\n",
		"+a\rb\r\n",
		"+OK\n",
		"-ERR\n",
		":abc\r\n",
		":+1\r\n",
		":01\r\n",
		":-0\r\n",
		":\r\n",
		": 1\r\n",
		":9223372036854775808\r\n",
		":-9223372036854775809\r\n",
		":1" + strings.Repeat("0", 40) + "\r\n",
		"$-2\r\n",
		"$?\r\n",
		"*?\r\n",
		"$+1\r\na\r\n",
		"$01\r\na\r\n",
		"$3\r\nabcd\r\n",
		"$3\r\nab\r\n\r\n",
		"$3\r\nabc\n\r",
		"$" + strings.Repeat("9", 31) + "\r\n",
		"$1\n",
		"*-2\r\n",
		"%-1\r\n",
		"~-1\r\n",
		">-1\r\n",
		"|-1\r\n",
		"!-1\r\n",
		"=-1\r\n",
		"*1\r\n?\r\n",
		"_x\r\n",
		"_ \r\n",
		"#x\r\n",
		"#\r\n",
		"#tt\r\n",
		"#T\r\n",
		",\r\n",
		",abc\r\n",
		",0x1p3\r\n",
		",1_0\r\n",
		",infinity\r\n",
		",1.5x\r\n",
		", 1\r\n",
		"," + strings.Repeat("1", 200) + "\r\n",
		"(\r\n",
		"(-\r\n",
		"(1.5\r\n",
		"(+1\r\n",
		"=3\r\ntxt\r\n",
		"=5\r\ntxtx1\r\n",
		"=0\r\n\r\n",
		"%1\r\n+a\r\n?",
		"*1\r\n" + strings.Repeat("*1\r\n", 100),
	} {
		for rname, mk := range replyReaders {
			rd := NewReplyReader(mk([]byte(in)), DefaultReplyLimits())
			_, err := rd.Read()
			if !errors.Is(err, ErrProtocol) || !strings.HasPrefix(err.Error(), "resp: protocol error: ") {
				t.Errorf("%s: %.50q: error %v, want a protocol error", rname, in, err)
				continue
			}
			if _, err2 := rd.Read(); err2 != err {
				t.Errorf("%s: %.50q: then %v, want the same error", rname, in, err2)
			}
		}
	}
}

// TestReadReplyTruncated cuts every table input at every byte: the reader
// must report io.EOF for nothing and io.ErrUnexpectedEOF for a part.
func TestReadReplyTruncated(t *testing.T) {
	for _, tc := range replyCases {
		for n := range len(tc.in) {
			for rname, mk := range replyReaders {
				_, err := NewReplyReader(mk([]byte(tc.in[:n])), DefaultReplyLimits()).Read()
				want := io.ErrUnexpectedEOF
				if n == 0 {
					want = io.EOF
				}
				if err != want {
					t.Errorf("%s: %s: %q: error %v, want %v", tc.name, rname, tc.in[:n], err, want)
				}
			}
		}
	}
}

// TestReadReplyReadError: an error of the underlying reader is returned as
// it is, after the bytes read with it, and stays.
func TestReadReplyReadError(t *testing.T) {
	boom := errors.New("boom")
	rd := NewReplyReader(io.MultiReader(strings.NewReader("+OK\r\n:1"), iotest.ErrReader(boom)), DefaultReplyLimits())
	if v, err := rd.Read(); err != nil || v.Text() != "OK" {
		t.Fatalf("read %v, %v", v, err)
	}
	if _, err := rd.Read(); err != boom {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if _, err := rd.Read(); err != boom {
		t.Fatalf("then %v, want %v", err, boom)
	}
}

// TestReadReplyNoProgress: a reader that returns nothing forever ends the
// read with io.ErrNoProgress rather than a spin.
func TestReadReplyNoProgress(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := NewReplyReader(zeroReader{}, DefaultReplyLimits()).Read()
		done <- err
	}()
	select {
	case err := <-done:
		if err != io.ErrNoProgress {
			t.Fatalf("error %v, want io.ErrNoProgress", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read spins on a reader that returns 0, nil")
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// TestReplyLimits checks every limit at the limit (accepted) and one past
// it (rejected).
func TestReplyLimits(t *testing.T) {
	lim := ReplyLimits{MaxBulk: 10, MaxElems: 4, MaxDepth: 3, MaxTotal: 40}
	s := strings.Repeat
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"bulk at MaxBulk", "$10\r\n" + s("b", 10) + "\r\n", true},
		{"bulk past MaxBulk", "$11\r\n" + s("b", 11) + "\r\n", false},
		{"simple at MaxBulk", "+" + s("s", 10) + "\r\n", true},
		{"simple past MaxBulk", "+" + s("s", 11) + "\r\n", false},
		{"simple error at MaxBulk", "-" + s("e", 10) + "\r\n", true},
		{"simple error past MaxBulk", "-" + s("e", 11) + "\r\n", false},
		{"blob error at MaxBulk", "!10\r\n" + s("e", 10) + "\r\n", true},
		{"blob error past MaxBulk", "!11\r\n" + s("e", 11) + "\r\n", false},
		{"verbatim at MaxBulk", "=10\r\ntxt:" + s("v", 6) + "\r\n", true},
		{"verbatim past MaxBulk", "=11\r\ntxt:" + s("v", 7) + "\r\n", false},
		{"big number at MaxBulk", "(" + s("9", 10) + "\r\n", true},
		{"big number past MaxBulk", "(" + s("9", 11) + "\r\n", false},

		{"array at MaxElems", "*4\r\n" + s(":1\r\n", 4), true},
		{"array past MaxElems", "*5\r\n" + s(":1\r\n", 5), false},
		{"nested at MaxElems", "*2\r\n*1\r\n:1\r\n*1\r\n:1\r\n", true},
		{"nested past MaxElems", "*2\r\n*2\r\n:1\r\n:1\r\n*1\r\n:1\r\n", false},
		{"map at MaxElems", "%2\r\n" + s(":1\r\n", 4), true},
		{"map past MaxElems", "%3\r\n" + s(":1\r\n", 6), false},
		{"set past MaxElems", "~5\r\n" + s(":1\r\n", 5), false},
		{"push past MaxElems", ">5\r\n" + s(":1\r\n", 5), false},
		{"attribute at MaxElems", "|1\r\n+k\r\n+v\r\n*2\r\n:1\r\n:2\r\n", true},
		{"attribute past MaxElems", "|1\r\n+k\r\n+v\r\n*3\r\n:1\r\n:2\r\n:3\r\n", false},

		{"depth at MaxDepth", "*1\r\n*1\r\n*1\r\n:1\r\n", true},
		{"depth past MaxDepth", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", false},
		{"empty at MaxDepth", "*1\r\n%1\r\n~0\r\n>0\r\n", true},
		{"empty past MaxDepth", "*1\r\n*1\r\n*1\r\n*0\r\n", false},
		{"attribute at MaxDepth", "*1\r\n*1\r\n|0\r\n:1\r\n", true},
		{"attribute values past MaxDepth", "*1\r\n*1\r\n|1\r\n*0\r\n:1\r\n:1\r\n", false},

		// 40 bytes, then 41, over by a string, a line or a header.
		{"bulk at MaxTotal", "*3\r\n$10\r\n" + s("b", 10) + "\r\n:12\r\n$8\r\n" + s("c", 8) + "\r\n", true},
		{"bulk past MaxTotal", "*3\r\n$10\r\n" + s("b", 10) + "\r\n:12\r\n$9\r\n" + s("c", 9) + "\r\n", false},
		{"line at MaxTotal", "*3\r\n$10\r\n" + s("b", 10) + "\r\n+" + s("c", 10) + "\r\n:123\r\n", true},
		{"line past MaxTotal", "*3\r\n$10\r\n" + s("b", 10) + "\r\n+" + s("c", 10) + "\r\n:1234\r\n", false},
		{"header at MaxTotal", "*4\r\n$10\r\n" + s("b", 10) + "\r\n:1\r\n+" + s("c", 7) + "\r\n*-1\r\n", true},
		{"header past MaxTotal", "*4\r\n$10\r\n" + s("b", 10) + "\r\n:1\r\n+" + s("c", 8) + "\r\n*-1\r\n", false},
	}
	for _, tc := range cases {
		for rname, mk := range replyReaders {
			vs, err := readReplies(mk([]byte(tc.in)), lim)
			if tc.ok && (err != io.EOF || len(vs) != 1) {
				t.Errorf("%s: %s: read %v, %v; want one reply and EOF", tc.name, rname, vs, err)
			}
			if !tc.ok && !errors.Is(err, ErrProtocol) {
				t.Errorf("%s: %s: read %v, %v; want a protocol error", tc.name, rname, vs, err)
			}
		}
	}

	// The limits are per reply.
	in := strings.Repeat("*2\r\n$10\r\n"+s("b", 10)+"\r\n:1\r\n", 10)
	if vs, err := readReplies(strings.NewReader(in), lim); err != io.EOF || len(vs) != 10 {
		t.Errorf("10 replies within the limits: read %d, %v", len(vs), err)
	}
}

func TestReplyLimitsDefaults(t *testing.T) {
	d := DefaultReplyLimits()
	if d != (ReplyLimits{MaxBulk: 512 << 20, MaxElems: 1 << 24, MaxDepth: 64, MaxTotal: 1 << 30}) {
		t.Fatalf("DefaultReplyLimits() = %+v", d)
	}
	d = d.withDefaults() // as clamped on this platform
	if got := (ReplyLimits{}).withDefaults(); got != d {
		t.Errorf("zero limits = %+v, want %+v", got, d)
	}
	if got := (ReplyLimits{MaxBulk: -1, MaxElems: -1, MaxDepth: -1, MaxTotal: -1}).withDefaults(); got != d {
		t.Errorf("negative limits = %+v, want %+v", got, d)
	}
	// Depth is capped whatever the limits, so recursion stays shallow.
	huge := ReplyLimits{MaxBulk: math.MaxInt64, MaxElems: math.MaxInt64, MaxDepth: math.MaxInt, MaxTotal: math.MaxInt64}
	at := strings.Repeat("*1\r\n", maxReplyDepth) + ":1\r\n"
	if vs, err := readReplies(strings.NewReader(at), huge); err != io.EOF || len(vs) != 1 {
		t.Errorf("depth %d: read %v, %v", maxReplyDepth, vs, err)
	}
	if _, err := readReplies(strings.NewReader("*1\r\n"+at), huge); !errors.Is(err, ErrProtocol) {
		t.Errorf("depth %d: %v, want a protocol error", maxReplyDepth+1, err)
	}
	// The default depth.
	at = strings.Repeat("*1\r\n", 64) + ":1\r\n"
	if vs, err := readReplies(strings.NewReader(at), ReplyLimits{}); err != io.EOF || len(vs) != 1 {
		t.Errorf("depth 64: read %v, %v", vs, err)
	}
	if _, err := readReplies(strings.NewReader("*1\r\n"+at), ReplyLimits{}); !errors.Is(err, ErrProtocol) {
		t.Errorf("depth 65: %v, want a protocol error", err)
	}
}

// TestReadReplyErrorsImmediately: over-limit declarations are rejected
// from their header, without waiting for more bytes.
func TestReadReplyErrorsImmediately(t *testing.T) {
	for _, in := range []string{
		"*9223372036854775807\r\n",
		"$9223372036854775807\r\n",
		"%4611686018427387904\r\n",
		"%9223372036854775807\r\n",
		"|9223372036854775807\r\n",
		"!9223372036854775807\r\n",
		"=9223372036854775807\r\n",
		"*16777217\r\n",
		"$536870913\r\n",
		"*2\r\n*16777216\r\n",
		strings.Repeat("*1\r\n", 10000),
		"$" + strings.Repeat("1", 40),
	} {
		rd := NewReplyReader(&stopReader{t: t, data: []byte(in)}, DefaultReplyLimits())
		if _, err := rd.Read(); !errors.Is(err, ErrProtocol) {
			t.Errorf("%.40q: error %v, want a protocol error before reading on", in, err)
		}
	}
}

// TestReadReplyNoAllocationForDeclaredSizes: with the limits at their
// largest, a reply that declares a huge length or count and sends a few
// bytes costs little.
func TestReadReplyNoAllocationForDeclaredSizes(t *testing.T) {
	huge := ReplyLimits{MaxBulk: math.MaxInt64, MaxElems: math.MaxInt64, MaxDepth: math.MaxInt, MaxTotal: math.MaxInt64}
	cases := []struct {
		in  string
		lim ReplyLimits
	}{
		{"*9223372036854775807\r\n", huge},
		{"*9223372036854775807\r\n:1\r\n:2\r\n", huge},
		{"$9223372036854775807\r\n", huge},
		{"$9223372036854775807\r\nabc", huge},
		{"%4611686018427387903\r\n+a\r\n", huge},
		{"=9223372036854775807\r\ntxt:", huge},
		{"*1\r\n*9223372036854775807\r\n*9223372036854775807\r\n", huge},
		{"*16777216\r\n:1\r\n", DefaultReplyLimits()},
		{"$536870912\r\nabc", DefaultReplyLimits()},
		{"*9223372036854775807\r\n", DefaultReplyLimits()},
		{strings.Repeat("*1\r\n", 10000), DefaultReplyLimits()},
		{strings.Repeat("*1\r\n", 10000), huge},
		{strings.Repeat("|0\r\n", 10000), huge},
	}
	for _, tc := range cases {
		read := func() {
			rd := NewReplyReader(strings.NewReader(tc.in), tc.lim)
			if _, err := rd.Read(); err == nil {
				t.Errorf("%.30q: no error", tc.in)
			}
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

// TestReadReplyBigBulk reads a bulk string larger than the buffer, whole
// and in small pieces, and checks its bytes.
func TestReadReplyBigBulk(t *testing.T) {
	payload := make([]byte, 3<<20+7)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	in := encode(t, Array(Bulk(payload), SimpleString(strings.Repeat("s", 100<<10)), Bulk(payload[:5])), 3)
	for rname, mk := range replyReaders {
		vs, err := readReplies(mk(in), DefaultReplyLimits())
		if err != io.EOF || len(vs) != 1 {
			t.Fatalf("%s: read %d replies, %v", rname, len(vs), err)
		}
		if got := encode(t, vs[0], 3); !bytes.Equal(got, in) {
			t.Fatalf("%s: the reply differs", rname)
		}
		if b := vs[0].Elems()[0].bytes; cap(b) > 2*len(payload) {
			t.Errorf("%s: %d bytes held for a bulk of %d", rname, cap(b), len(payload))
		}
	}
}

// TestReadReplyOwned: a reply stays the same after later reads reuse the
// buffer.
func TestReadReplyOwned(t *testing.T) {
	rd := NewReplyReader(iotest.HalfReader(strings.NewReader("$5\r\nfirst\r\n+second\r\n$5\r\nthird\r\n")), DefaultReplyLimits())
	var vs []Value
	for {
		v, err := rd.Read()
		if err != nil {
			break
		}
		vs = append(vs, v)
	}
	if got := fmt.Sprint(vs); got != `["first" second "third"]` {
		t.Fatalf("read %s", got)
	}
}

// randomValue returns a random Value of any kind, nested up to depth.
func randomValue(rng *rand.Rand, depth int) Value {
	randBytes := func() []byte {
		b := make([]byte, rng.IntN(4)*rng.IntN(20))
		for i := range b {
			b[i] = "ab\r\n\x00\xff:$*"[rng.IntN(9)]
		}
		return b
	}
	randLine := func() string { return strings.NewReplacer("\r", "", "\n", "").Replace(string(randBytes())) }
	kinds := 14
	if depth <= 0 {
		kinds = 10
	}
	switch rng.IntN(kinds) {
	case 0:
		return SimpleString(randLine())
	case 1:
		return Error("ERR " + randLine())
	case 2:
		switch rng.IntN(3) {
		case 0:
			return Int(int64(rng.Uint64()))
		case 1:
			return Int(math.MinInt64 + int64(rng.IntN(2))*math.MaxInt64)
		}
		return Int(int64(rng.IntN(200) - 100))
	case 3:
		if rng.IntN(2) == 0 {
			return BulkString(string(randBytes()))
		}
		return Bulk(randBytes())
	case 4:
		return Null()
	case 5:
		return NullArray()
	case 6:
		return Bool(rng.IntN(2) == 0)
	case 7:
		specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64,
			math.SmallestNonzeroFloat64, 1e-7, 1e21, 0.1}
		switch rng.IntN(3) {
		case 0:
			return Double(specials[rng.IntN(len(specials))])
		case 1:
			return Double(math.Float64frombits(rng.Uint64()))
		}
		return Double(rng.NormFloat64() * 1000)
	case 8:
		return Verbatim([]string{"txt", "mkd", "a:b"}[rng.IntN(3)], string(randBytes()))
	case 9:
		return BulkString(strconv.Itoa(rng.IntN(1000)))
	}
	elems := make([]Value, rng.IntN(5))
	for i := range elems {
		elems[i] = randomValue(rng, depth-1)
	}
	switch rng.IntN(4) {
	case 0:
		return Array(elems...)
	case 1:
		return Set(elems...)
	case 2:
		return Push(elems...)
	}
	if len(elems)%2 == 1 {
		elems = elems[1:]
	}
	return Map(elems...)
}

// TestReadReplyRoundTrip writes random Values in both protocols, one
// stream each, and reads them back: each reads as Writer meant it and
// writes back to the same bytes.
func TestReadReplyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	seed := rng.Uint64()
	t.Logf("seed %d", seed)
	rng = rand.New(rand.NewPCG(1, seed))
	vals := make([]Value, 2000)
	for i := range vals {
		vals[i] = randomValue(rng, 4)
	}
	for _, proto := range []int{2, 3} {
		var in []byte
		for _, v := range vals {
			in = append(in, encode(t, v, proto)...)
		}
		for rname, mk := range replyReaders {
			rd := NewReplyReader(mk(in), DefaultReplyLimits())
			for i, v := range vals {
				got, err := rd.Read()
				if err != nil {
					t.Fatalf("RESP%d %s: value %d: %v", proto, rname, i, err)
				}
				if want := asWritten(v, proto); !valueEqual(got, want) {
					t.Fatalf("RESP%d %s: value %d: read %v, want %v", proto, rname, i, got, want)
				}
				if a, b := encode(t, got, proto), encode(t, v, proto); !bytes.Equal(a, b) {
					t.Fatalf("RESP%d %s: value %d: written back as %q, want %q", proto, rname, i, a, b)
				}
			}
			if _, err := rd.Read(); err != io.EOF {
				t.Fatalf("RESP%d %s: then %v, want EOF", proto, rname, err)
			}
		}
	}
}

func BenchmarkReadReply(b *testing.B) {
	in := encode(b, Array(BulkString("message"), BulkString("lock:orders:42"), Int(12345), Null(),
		Map(BulkString("k"), Double(1.5))), 3)
	r := bytes.NewReader(in)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.Reset(in)
		rd := NewReplyReader(r, DefaultReplyLimits())
		if _, err := rd.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
