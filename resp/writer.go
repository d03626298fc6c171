package resp

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
)

// writerBufSize is small because every connection has one; a larger reply
// goes through it in pieces.
const writerBufSize = 8 << 10

// errZeroValue reports a handler bug: a zero Value was written (as an error
// reply, so the stream stays well formed).
var errZeroValue = errors.New("resp: zero Value written")

// A Writer encodes replies into a buffer for an io.Writer. It is not safe for
// concurrent use.
type Writer struct {
	bw      *bufio.Writer
	err     error // the first write error; later writes are skipped
	scratch [40]byte
}

// NewWriter returns a buffered Writer to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, writerBufSize)}
}

// WriteValue encodes v in RESP3 if proto is 3 and in RESP2 otherwise. RESP2
// has fewer types, so: a map becomes a flat array of keys and values, sets
// and push frames become arrays, nulls are $-1 (null arrays *-1), bools :1
// and :0, doubles and verbatim strings bulk strings.
//
// The bytes may stay buffered until Flush. A zero Value anywhere in v is
// written as an error reply and reported as an error after the rest of v.
func (w *Writer) WriteValue(v Value, proto int) error {
	if w.err != nil {
		return w.err
	}
	if v.kind == KindPushed {
		return nil
	}
	zero := w.value(v, proto == 3)
	if w.err != nil {
		return w.err
	}
	if zero {
		return errZeroValue
	}
	return nil
}

// Flush writes the buffered bytes to the underlying io.Writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}

// Buffered returns the number of bytes written but not yet flushed.
func (w *Writer) Buffered() int { return w.bw.Buffered() }

// value writes v and reports whether it held a zero Value.
func (w *Writer) value(v Value, resp3 bool) (zero bool) {
	switch v.kind {
	case KindSimpleString:
		w.line('+', v.str)
	case KindError:
		w.line('-', v.str)
	case KindInt:
		w.header(':', v.num)
	case KindBulk:
		if v.isStr {
			w.header('$', int64(len(v.str)))
			w.writeString(v.str)
		} else {
			w.header('$', int64(len(v.bytes)))
			w.write(v.bytes)
		}
		w.writeString("\r\n")
	case KindNull:
		if resp3 {
			w.writeString("_\r\n")
		} else {
			w.writeString("$-1\r\n")
		}
	case KindNullArray:
		if resp3 {
			w.writeString("_\r\n")
		} else {
			w.writeString("*-1\r\n")
		}
	case KindBool:
		switch {
		case !resp3:
			w.header(':', v.num)
		case v.num != 0:
			w.writeString("#t\r\n")
		default:
			w.writeString("#f\r\n")
		}
	case KindDouble:
		d := appendDouble(w.scratch[:0], v.Float())
		if resp3 {
			w.writeString(",")
			w.write(d)
		} else {
			n := len(d) // w.header reuses scratch
			w.header('$', int64(n))
			d = appendDouble(w.scratch[:0], v.Float())
			w.write(d)
		}
		w.writeString("\r\n")
	case KindVerbatim:
		s := v.str
		if resp3 {
			w.header('=', int64(len(s)))
		} else {
			s = s[4:] // drop "fmt:"
			w.header('$', int64(len(s)))
		}
		w.writeString(s)
		w.writeString("\r\n")
	case KindArray, KindSet, KindPush, KindMap:
		n := int64(len(v.elems))
		switch {
		case !resp3:
			w.header('*', n)
		case v.kind == KindSet:
			w.header('~', n)
		case v.kind == KindPush:
			w.header('>', n)
		case v.kind == KindMap:
			w.header('%', n/2)
		default:
			w.header('*', n)
		}
		for _, e := range v.elems {
			if w.value(e, resp3) {
				zero = true
			}
		}
	default:
		w.writeString("-ERR internal error: invalid reply value\r\n")
		return true
	}
	return zero
}

// line writes a simple string or error. A CR or LF would end the reply early
// and desynchronise the client, so they become spaces, as Redis does for
// errors.
func (w *Writer) line(prefix byte, s string) {
	if w.err == nil {
		w.err = w.bw.WriteByte(prefix)
	}
	if strings.ContainsAny(s, "\r\n") {
		b := []byte(s) // byte by byte: the text need not be UTF-8
		for i, c := range b {
			if c == '\r' || c == '\n' {
				b[i] = ' '
			}
		}
		w.write(b)
	} else {
		w.writeString(s)
	}
	w.writeString("\r\n")
}

func (w *Writer) header(prefix byte, n int64) {
	b := append(w.scratch[:0], prefix)
	b = strconv.AppendInt(b, n, 10)
	w.write(append(b, '\r', '\n'))
}

func (w *Writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(b)
	}
}

func (w *Writer) writeString(s string) {
	if w.err == nil {
		_, w.err = w.bw.WriteString(s)
	}
}
