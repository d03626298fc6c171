package resp

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReplyLimits bound what one reply may make a ReplyReader hold. A zero or
// negative field takes its default (DefaultReplyLimits); MaxDepth over 1024
// counts as 1024.
type ReplyLimits struct {
	// MaxBulk caps the bytes of one string: a bulk string, verbatim string
	// or blob error, and the text of a simple string, simple error or big
	// number.
	MaxBulk int64
	// MaxElems caps the elements of all the aggregates of one reply
	// together, at every depth; a map's keys and values count separately,
	// and attributes count too. With MaxTotal it bounds the reply's memory.
	MaxElems int64
	// MaxDepth caps the nesting of aggregates: a flat array is depth 1, an
	// array of arrays depth 2.
	MaxDepth int
	// MaxTotal caps the bytes of one reply on the wire, headers included.
	MaxTotal int64
}

const (
	defaultReplyMaxBulk  = 512 << 20
	defaultReplyMaxElems = 1 << 24
	defaultReplyMaxDepth = 64
	defaultReplyMaxTotal = 1 << 30
	// maxReplyDepth bounds the recursion of the parser whatever the limits.
	maxReplyDepth = 1024
	// maxReplyBytes keeps byte counts, plus a few bytes of framing, within
	// an int on every platform.
	maxReplyBytes = math.MaxInt >> 1
	// maxDoubleLine bounds the line of a double: Redis writes at most 24
	// characters (%.17g); the rest is slack for other servers.
	maxDoubleLine = 128
)

// DefaultReplyLimits returns limits for replies from a trusted server:
// strings of 512 MiB, 1<<24 elements, depth 64 and 1 GiB per reply.
func DefaultReplyLimits() ReplyLimits {
	return ReplyLimits{
		MaxBulk:  defaultReplyMaxBulk,
		MaxElems: defaultReplyMaxElems,
		MaxDepth: defaultReplyMaxDepth,
		MaxTotal: defaultReplyMaxTotal,
	}
}

func (l ReplyLimits) withDefaults() ReplyLimits {
	d := DefaultReplyLimits()
	if l.MaxBulk <= 0 {
		l.MaxBulk = d.MaxBulk
	}
	if l.MaxElems <= 0 {
		l.MaxElems = d.MaxElems
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = d.MaxTotal
	}
	l.MaxBulk = min(l.MaxBulk, maxReplyBytes)
	l.MaxElems = min(l.MaxElems, maxReplyBytes)
	l.MaxDepth = min(l.MaxDepth, maxReplyDepth)
	l.MaxTotal = min(l.MaxTotal, maxReplyBytes)
	return l
}

// A ReplyReader parses replies, RESP2 or RESP3, from a server. Like Reader
// it never panics and allocates in proportion to the bytes that arrived,
// never to a declared length or count, so a corrupt or hostile stream costs
// at most the limits. It is not safe for concurrent use.
//
// The reply types map to Values as follows:
//
//	'+' simple string    SimpleString (a CR inside is malformed)
//	'-' simple error     Error
//	':' integer          Int
//	'$' bulk string      Bulk; $-1 is Null
//	'*' array            Array; *-1 is NullArray
//	'_' null             Null
//	',' double           Double (inf, -inf and nan as Redis writes them)
//	'#' boolean          Bool
//	'(' big number       BulkString of its digits, as Redis sends a big
//	                     number to a RESP2 client
//	'!' blob error       Error; a CR or LF in its text is kept, though
//	                     Writer writes them as spaces
//	'=' verbatim string  Verbatim
//	'%' map              Map
//	'~' set              Set
//	'>' push             Push, returned like any reply
//	'|' attribute        read (within the limits) and discarded: Read
//	                     returns the value that follows it
//
// RESP3 streamed strings and aggregates ($?, *?) are malformed: Redis never
// sends them. A reply that Writer would write, in either protocol, is read
// back as a Value that Writer writes to the same bytes in that protocol.
type ReplyReader struct {
	in    *Reader // only its buffer, fill and peekLine are used
	lim   ReplyLimits
	total int64 // bytes of the current reply consumed
	elems int64 // elements of the current reply declared
	err   error // sticky
}

// NewReplyReader returns a ReplyReader of replies from r within lim.
func NewReplyReader(r io.Reader, lim ReplyLimits) *ReplyReader {
	return &ReplyReader{in: NewReader(r, Limits{}), lim: lim.withDefaults()}
}

// Buffered returns the number of bytes read from the stream but not yet
// consumed by a reply.
func (r *ReplyReader) Buffered() int { return r.in.w - r.in.r }

// Read returns the next reply. The Value is the caller's: it aliases no
// buffer of the ReplyReader.
//
// Errors: io.EOF at a reply boundary; io.ErrUnexpectedEOF inside a reply;
// other read errors as they are; malformed or over-limit input as an error
// matching ErrProtocol. After an error every call returns the same error:
// the stream cannot be resynchronised.
func (r *ReplyReader) Read() (Value, error) {
	if r.err != nil {
		return Value{}, r.err
	}
	r.total, r.elems = 0, 0
	v, err := r.value(0)
	if err != nil {
		if err == io.EOF && (r.total > 0 || r.in.r < r.in.w) {
			err = io.ErrUnexpectedEOF
		}
		r.err = err
		return Value{}, err
	}
	return v, nil
}

func replyErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// value reads one value whose aggregates, if any, are at depth+1.
func (r *ReplyReader) value(depth int) (Value, error) {
	for {
		if r.in.r == r.in.w {
			if err := r.in.fill(); err != nil {
				return Value{}, err
			}
		}
		switch t := r.in.buf[r.in.r]; t {
		case '+', '-', '(':
			line, err := r.line(r.lim.MaxBulk+2, "MaxBulk")
			if err != nil {
				return Value{}, err
			}
			text := line[1:]
			if bytes.IndexByte(text, '\r') >= 0 {
				return Value{}, replyErr("CR inside %q line", t)
			}
			switch t {
			case '+':
				return SimpleString(string(text)), nil
			case '-':
				return Error(string(text)), nil
			}
			if !isBigNumber(text) {
				return Value{}, replyErr("invalid big number %.40q", text)
			}
			return BulkString(string(text)), nil
		case ':':
			line, err := r.line(maxHeaderLine, "")
			if err != nil {
				return Value{}, err
			}
			n, ok := parseInt(line[1:])
			if !ok {
				return Value{}, replyErr("invalid integer %.40q", line[1:])
			}
			return Int(n), nil
		case '_':
			line, err := r.line(maxHeaderLine, "")
			if err != nil {
				return Value{}, err
			}
			if len(line) != 1 {
				return Value{}, replyErr("invalid null %.40q", line)
			}
			return Null(), nil
		case '#':
			line, err := r.line(maxHeaderLine, "")
			if err != nil {
				return Value{}, err
			}
			switch string(line[1:]) {
			case "t":
				return Bool(true), nil
			case "f":
				return Bool(false), nil
			}
			return Value{}, replyErr("invalid boolean %.40q", line[1:])
		case ',':
			line, err := r.line(maxDoubleLine, "")
			if err != nil {
				return Value{}, err
			}
			f, ok := parseDouble(line[1:])
			if !ok {
				return Value{}, replyErr("invalid double %.40q", line[1:])
			}
			return Double(f), nil
		case '$', '!', '=':
			n, err := r.header()
			if err != nil {
				return Value{}, err
			}
			if n == -1 && t == '$' {
				return Null(), nil
			}
			if n < 0 {
				return Value{}, replyErr("invalid length %d of %q", n, t)
			}
			if t == '=' && n < 4 {
				return Value{}, replyErr("verbatim string of %d bytes", n)
			}
			b, err := r.payload(n)
			if err != nil {
				return Value{}, err
			}
			switch t {
			case '$':
				return Bulk(b), nil
			case '!':
				return Error(string(b)), nil
			}
			if b[3] != ':' {
				return Value{}, replyErr("verbatim string without format: %.40q", b)
			}
			return Value{kind: KindVerbatim, str: string(b)}, nil
		case '*', '~', '>', '%', '|':
			n, err := r.header()
			if err != nil {
				return Value{}, err
			}
			if n == -1 && t == '*' {
				return NullArray(), nil
			}
			if n < 0 {
				return Value{}, replyErr("invalid count %d of %q", n, t)
			}
			vs, err := r.elements(t, n, depth+1)
			if err != nil {
				return Value{}, err
			}
			switch t {
			case '*':
				return Array(vs...), nil
			case '~':
				return Set(vs...), nil
			case '>':
				return Push(vs...), nil
			case '%':
				return Map(vs...), nil
			}
			// An attribute: drop it and read the value it describes.
		default:
			return Value{}, replyErr("unexpected reply type '%s'", printable(t))
		}
	}
}

// elements reads the n elements (n pairs for a map or attribute) of an
// aggregate at depth.
func (r *ReplyReader) elements(t byte, n int64, depth int) ([]Value, error) {
	if depth > r.lim.MaxDepth {
		return nil, replyErr("reply nested deeper than MaxDepth %d", r.lim.MaxDepth)
	}
	left := r.lim.MaxElems - r.elems
	if t == '%' || t == '|' {
		if n > left/2 {
			return nil, replyErr("reply of more than MaxElems %d elements", r.lim.MaxElems)
		}
		n *= 2
	} else if n > left {
		return nil, replyErr("reply of more than MaxElems %d elements", r.lim.MaxElems)
	}
	r.elems += n
	if n == 0 {
		return nil, nil
	}
	// Every element takes at least 3 bytes, so only what is already
	// buffered justifies room; the rest grows as elements arrive.
	vs := make([]Value, 0, min(n, int64(r.Buffered()/3), 1024))
	for range n {
		v, err := r.value(depth)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// line returns the next line, from its type byte to before its "\r\n", and
// consumes it. Its text after the type byte may be up to max-2 bytes long;
// limit names the limit that max comes from, if any.
func (r *ReplyReader) line(max int64, limit string) ([]byte, error) {
	left := r.lim.MaxTotal - r.total - 1 // -1: the '\n'
	if left < max {
		max, limit = left, "MaxTotal"
	}
	if max < 1 {
		return nil, replyErr("reply of more than MaxTotal %d bytes", r.lim.MaxTotal)
	}
	line, n, err := r.in.peekLine(int(max))
	if err == errLineTooLong {
		if limit != "" {
			return nil, replyErr("%q line over %s", r.in.buf[r.in.r], limit)
		}
		return nil, replyErr("%q line too long", r.in.buf[r.in.r])
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-1] != '\r' {
		return nil, replyErr("line %.40q not ended by CRLF", line)
	}
	r.consume(n)
	return line[:len(line)-1], nil
}

// header reads the length or count line of a bulk string or aggregate.
func (r *ReplyReader) header() (int64, error) {
	line, err := r.line(maxHeaderLine, "")
	if err != nil {
		return 0, err
	}
	n, ok := parseInt(line[1:])
	if !ok {
		return 0, replyErr("invalid length %.40q of %q", line[1:], line[0])
	}
	return n, nil
}

// payload reads a string of n bytes and its "\r\n" as the bytes arrive.
func (r *ReplyReader) payload(n int64) ([]byte, error) {
	if n > r.lim.MaxBulk {
		return nil, replyErr("string of %d bytes over MaxBulk %d", n, r.lim.MaxBulk)
	}
	if n+2 > r.lim.MaxTotal-r.total {
		return nil, replyErr("reply of more than MaxTotal %d bytes", r.lim.MaxTotal)
	}
	size := int(n)
	b := make([]byte, 0, min(size, r.Buffered()))
	for len(b) < size {
		if r.in.r == r.in.w {
			if err := r.in.fill(); err != nil {
				return nil, err
			}
		}
		k := min(size-len(b), r.in.w-r.in.r)
		if len(b)+k > cap(b) {
			nb := make([]byte, len(b), min(size, max(2*cap(b), len(b)+k, 512)))
			copy(nb, b)
			b = nb
		}
		b = append(b, r.in.buf[r.in.r:r.in.r+k]...)
		r.consume(k)
	}
	for r.in.w-r.in.r < 2 {
		if err := r.in.fill(); err != nil {
			return nil, err
		}
	}
	if r.in.buf[r.in.r] != '\r' || r.in.buf[r.in.r+1] != '\n' {
		return nil, replyErr("string not ended by CRLF")
	}
	r.consume(2)
	return b, nil
}

func (r *ReplyReader) consume(n int) {
	r.in.r += n
	r.total += int64(n)
}

// isBigNumber reports whether b is an optional '-' and decimal digits.
func isBigNumber(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseDouble parses a RESP3 double: inf, -inf, nan (as Redis writes them,
// in any case, and -nan as hiredis accepts) or a decimal number with an
// optional exponent. A number out of range becomes ±Inf or 0.
func parseDouble(b []byte) (float64, bool) {
	s := string(b)
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	case "nan", "-nan":
		return math.NaN(), true
	}
	if s == "" {
		return 0, false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false // no hex, underscores or "infinity"
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}
