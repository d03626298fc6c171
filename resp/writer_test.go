package resp

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// valueCases are encoded in both protocols and compared with
// testdata/values.resp2.golden and testdata/values.resp3.golden.
func valueCases() []struct {
	name string
	v    Value
} {
	hello := Map(
		BulkString("server"), BulkString("fenced"),
		BulkString("version"), BulkString("0.1.0"),
		BulkString("proto"), Int(3),
		BulkString("id"), Int(7),
		BulkString("mode"), BulkString("standalone"),
		BulkString("role"), BulkString("master"),
		BulkString("modules"), Array(),
	)
	return []struct {
		name string
		v    Value
	}{
		{"simple", SimpleString("OK")},
		{"simple with newlines", SimpleString("a\r\nb\nc")},
		{"error", Error("ERR unknown command 'foo'")},
		{"error with newlines", Error("ERR bad\r\ninput")},
		{"error not UTF-8", Error("ERR \xff\xfe\n")},
		{"int zero", Int(0)},
		{"int negative", Int(-1)},
		{"int max", Int(math.MaxInt64)},
		{"int min", Int(math.MinInt64)},
		{"bulk", Bulk([]byte("hello"))},
		{"bulk empty", Bulk([]byte{})},
		{"bulk nil is empty", Bulk(nil)},
		{"bulk binary", Bulk([]byte("a\r\n\x00\xff"))},
		{"bulk string", BulkString("fenced")},
		{"null", Null()},
		{"null array", NullArray()},
		{"array empty", Array()},
		{"array mixed", Array(Int(1), BulkString("two"), Null(), Array(SimpleString("nested")), Error("ERR inside"))},
		{"map hello", hello},
		{"map empty", Map()},
		{"map nested", Map(BulkString("a"), Map(BulkString("b"), Int(1)))},
		{"set", Set(BulkString("x"), BulkString("y"))},
		{"bool true", Bool(true)},
		{"bool false", Bool(false)},
		{"double", Double(1.5)},
		{"double integral", Double(3)},
		{"double small", Double(1e-7)},
		{"double big", Double(1e300)},
		{"double negative zero", Double(math.Copysign(0, -1))},
		{"double inf", Double(math.Inf(1))},
		{"double -inf", Double(math.Inf(-1))},
		{"double nan", Double(math.NaN())},
		{"verbatim", Verbatim("txt", "# Server\r\nredis_version:7.2.0\r\n")},
		{"verbatim bad format", Verbatim("markdown", "x")},
		{"push", Push(BulkString("message"), BulkString("chan"), BulkString("hi"))},
		{"array of nulls", Array(Null(), NullArray(), Bool(true), Double(0.25))},
		{"zero value", Value{}},
		{"zero value in array", Array(Int(1), Value{}, Int(2))},
	}
}

func TestWriteValueGolden(t *testing.T) {
	for _, proto := range []int{2, 3} {
		path := filepath.Join("testdata", "values.resp"+string(rune('0'+proto))+".golden")
		var got bytes.Buffer
		sections := map[string]string{}
		for _, tc := range valueCases() {
			var b bytes.Buffer
			w := NewWriter(&b)
			err := w.WriteValue(tc.v, proto)
			if strings.HasPrefix(tc.name, "zero value") != errors.Is(err, errZeroValue) {
				t.Errorf("%s: WriteValue error %v", tc.name, err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			sections[tc.name] = b.String()
			got.WriteString("## " + tc.name + "\n" + b.String() + "\n")
		}
		if *update {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestWriteValueGolden -update)", err)
		}
		if bytes.Equal(got.Bytes(), want) {
			continue
		}
		// Name the cases that differ.
		for _, part := range strings.Split(string(want), "\n## ") {
			name, body, _ := strings.Cut(strings.TrimPrefix(part, "## "), "\n")
			body = strings.TrimSuffix(body, "\n")
			if g, ok := sections[name]; !ok {
				t.Errorf("RESP%d %s: in the golden file, not in the table", proto, name)
			} else if g != body {
				t.Errorf("RESP%d %s:\n got %q\nwant %q", proto, name, g, body)
			}
		}
		t.Errorf("RESP%d output differs from %s", proto, path)
	}
}

// TestWriteValueRESP2Readable checks the RESP2 mapping that matters to
// redis-py's RESP3 parser: after HELLO 3 no $-1 or *-1 may appear.
func TestWriteValueNoRESP2NullsInRESP3(t *testing.T) {
	for _, tc := range valueCases() {
		var b bytes.Buffer
		w := NewWriter(&b)
		w.WriteValue(tc.v, 3)
		w.Flush()
		if bytes.Contains(b.Bytes(), []byte("$-1\r\n")) || bytes.Contains(b.Bytes(), []byte("*-1\r\n")) {
			t.Errorf("%s: RESP3 output %q has a RESP2 null", tc.name, b.String())
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n += len(p); f.n > 10 {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

func TestWriterErrorSticky(t *testing.T) {
	w := NewWriter(&failWriter{})
	big := Bulk(bytes.Repeat([]byte("x"), 3*writerBufSize))
	if err := w.WriteValue(big, 2); err == nil {
		t.Fatal("no error writing through a failing writer")
	}
	if err := w.WriteValue(Int(1), 2); err == nil {
		t.Fatal("error not sticky")
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after an error succeeded")
	}
}

func TestMapOddPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Map with 3 values did not panic")
		}
	}()
	//lint:ignore SA5012 an odd count is the point of this test
	Map(Int(1), Int(2), Int(3))
}

func TestValueAccessors(t *testing.T) {
	if v := BulkString("x"); v.Kind() != KindBulk || v.Text() != "x" || v.IsError() {
		t.Errorf("BulkString: %v", v)
	}
	if v := Bulk([]byte("y")); v.Text() != "y" {
		t.Errorf("Bulk: %v", v)
	}
	if v := Error("ERR x"); !v.IsError() || v.Text() != "ERR x" {
		t.Errorf("Error: %v", v)
	}
	if v := Verbatim("txt", "t"); v.Text() != "t" {
		t.Errorf("Verbatim: %q", v.Text())
	}
	if Int(5).Integer() != 5 || Bool(true).Integer() != 1 || Double(0.5).Float() != 0.5 {
		t.Error("numbers")
	}
	if (Value{}).Kind() != KindInvalid || len(Map(Int(1), Int(2)).Elems()) != 2 {
		t.Error("kinds")
	}
	got := Array(SimpleString("OK"), Int(1), Null(), Map(BulkString("k"), Error("ERR e")), Double(1.5)).String()
	if want := `[OK, (integer) 1, (nil), {"k": (error) ERR e}, (double) 1.5]`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

func BenchmarkWriteValue(b *testing.B) {
	v := Array(BulkString("message"), BulkString("lock:orders:42"), Int(12345), Null())
	w := NewWriter(discard{})
	b.ReportAllocs()
	for b.Loop() {
		w.WriteValue(v, 3)
	}
	w.Flush()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
