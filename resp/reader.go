// Package resp owns the Redis protocol for fenced: a bounded command reader
// (multibulk and inline), a reply writer for RESP2 and RESP3, the reply
// values, and the per-connection loop and Server that hand commands to a
// Handler. It knows nothing about commands, locks or authentication; those
// belong to the Handler. It does know HTTP well enough to close a
// connection that speaks it (crossproto.go). It imports only the standard library: untrusted
// bytes never reach a third-party parser.
package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
)

// ErrProtocol is matched (errors.Is) by every error the Reader returns for
// malformed or over-limit input. Their texts are Redis's ("Protocol error:
// invalid bulk length"), ready to be sent after "ERR ".
var ErrProtocol = errors.New("resp: protocol error")

// protocolError carries Redis's text for one protocol violation.
type protocolError struct {
	msg string
	// limit marks an input that is well formed but over a Limit. The Reader
	// consumed none of it, so reading may resume after SetLimits.
	limit bool
}

func (e *protocolError) Error() string        { return e.msg }
func (e *protocolError) Is(target error) bool { return target == ErrProtocol }

func protoErr(msg string) error { return &protocolError{msg: "Protocol error: " + msg} }
func limitErr(msg string) error {
	return &protocolError{msg: "Protocol error: " + msg, limit: true}
}

// isLimitError reports whether err is an over-limit error after which the
// Reader can resume with larger limits.
func isLimitError(err error) bool {
	var pe *protocolError
	return errors.As(err, &pe) && pe.limit
}

// Limits bound what one command may make the Reader hold. A zero or negative
// field takes its default; a field over 1 GiB counts as 1 GiB.
type Limits struct {
	MaxBulk   int // bytes in one argument (a bulk string or an inline word)
	MaxArgs   int // arguments in one command
	MaxInline int // bytes in one inline command line, without its line ending
	// MaxCommand caps the bytes of all of one command's arguments, since
	// MaxArgs × MaxBulk alone would allow 32 GiB (Redis's
	// client-query-buffer-limit; CVE-2025-46686).
	MaxCommand int
}

const (
	defaultMaxBulk   = 512 << 10
	defaultMaxArgs   = 65536
	defaultMaxInline = 64 << 10
	defaultMaxCmd    = 16 << 20
	// maxLimit keeps every limit, and sums of a few of them, far from
	// overflowing an int.
	maxLimit = 1 << 30

	// maxHeaderLine bounds a "*<count>\r" or "$<len>\r" line (the '\n' not
	// counted): 21 bytes hold any int64, the rest is slack.
	maxHeaderLine = 32
	// minBuf is the Reader's buffer size; it grows only to hold a long
	// inline line, and shrinks back once that line is consumed.
	minBuf = 8 << 10
	// maxInitialAlloc caps what a command preallocates from its declared
	// sizes; the rest grows as bytes arrive.
	maxInitialAlloc = 4 << 10
)

// DefaultLimits returns the limits for an authenticated connection:
// 512 KiB per argument, 65536 arguments, 64 KiB inline lines, 16 MiB per
// command.
func DefaultLimits() Limits {
	return Limits{MaxBulk: defaultMaxBulk, MaxArgs: defaultMaxArgs, MaxInline: defaultMaxInline, MaxCommand: defaultMaxCmd}
}

// UnauthenticatedLimits returns the limits for a connection that has not
// authenticated yet: 10 arguments of at most 16 KiB, as Redis has done since
// CVE-2021-32675, and 16 KiB inline lines.
func UnauthenticatedLimits() Limits {
	return Limits{MaxBulk: 16 << 10, MaxArgs: 10, MaxInline: 16 << 10, MaxCommand: 10 * 16 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBulk <= 0 {
		l.MaxBulk = d.MaxBulk
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = d.MaxArgs
	}
	if l.MaxInline <= 0 {
		l.MaxInline = d.MaxInline
	}
	if l.MaxCommand <= 0 {
		l.MaxCommand = d.MaxCommand
	}
	l.MaxBulk = min(l.MaxBulk, maxLimit)
	l.MaxArgs = min(l.MaxArgs, maxLimit)
	l.MaxInline = min(l.MaxInline, maxLimit)
	l.MaxCommand = min(l.MaxCommand, maxLimit)
	return l
}

// A Reader parses commands from a stream of untrusted bytes. It never
// panics, holds at most one inline line or one header line beyond the
// arguments received so far, and allocates in proportion to the bytes that
// arrived, never to a declared count or length. A Reader is not safe for
// concurrent use.
type Reader struct {
	rd   io.Reader
	lim  Limits
	buf  []byte
	r, w int   // buf[r:w] is unread
	rerr error // a read error held back until the bytes read with it are used
	err  error // sticky: after an I/O or (non-limit) protocol error
	// inline tells whether the command being read (or last returned) was
	// sent inline rather than as a multibulk array.
	inline bool

	// The multibulk command being read. It survives a limit error, so a
	// caller that raises the limits continues where the Reader stopped.
	inCmd bool
	want  int    // declared argument count
	data  []byte // the arguments' bytes, back to back
	ends  []int  // end of each complete argument in data
}

// NewReader returns a Reader of commands from r within lim.
func NewReader(r io.Reader, lim Limits) *Reader {
	return &Reader{rd: r, lim: lim.withDefaults(), buf: make([]byte, minBuf)}
}

// SetLimits changes the limits for the input not yet consumed, for example
// after AUTH. After a limit error, ReadCommand retries the same input with
// the new limits.
func (r *Reader) SetLimits(lim Limits) { r.lim = lim.withDefaults() }

// Buffered returns the number of bytes read from the stream but not yet
// consumed: the start of the next command, or all of it.
func (r *Reader) Buffered() int { return r.w - r.r }

// Inline reports whether the command ReadCommand last returned was an
// inline line rather than a multibulk array.
func (r *Reader) Inline() bool { return r.inline }

// ReadCommand returns the next command's arguments, at least one. It reads a
// multibulk array of bulk strings (`*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n`) or an
// inline line split with Redis's quoting rules. Empty inline lines and
// `*0`/`*-1` arrays are skipped, as Redis does. The arguments are the
// caller's: they alias no buffer of the Reader.
//
// Errors: io.EOF at a command boundary; io.ErrUnexpectedEOF inside a
// command; other read errors as they are; malformed input as an error
// matching ErrProtocol whose text is Redis's. After a malformed input every
// call returns the same error: the stream cannot be resynchronised. An input
// over a limit also matches ErrProtocol but consumes nothing; the caller may
// raise the limits with SetLimits and call again, or give up.
func (r *Reader) ReadCommand() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		args, err := r.next()
		if err != nil {
			if err == io.EOF && (r.inCmd || r.r < r.w) {
				err = io.ErrUnexpectedEOF
			}
			if !isLimitError(err) {
				r.err = err
				r.inCmd, r.data, r.ends = false, nil, nil
			}
			return nil, err
		}
		if len(args) > 0 {
			return args, nil
		}
	}
}

// next reads one command; it returns no arguments for a skipped one.
func (r *Reader) next() ([][]byte, error) {
	if !r.inCmd {
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, err
			}
		}
		if r.buf[r.r] != '*' {
			r.inline = true
			return r.readInline()
		}
		r.inline = false
		line, n, err := r.peekLine(maxHeaderLine)
		if err != nil {
			if err == errLineTooLong {
				return nil, protoErr("too big mbulk count string")
			}
			return nil, err
		}
		count, ok := parseHeader(line)
		// Redis refuses a count over INT_MAX as malformed (not a limit: no
		// SetLimits can make it acceptable), whatever fenced's MaxArgs.
		if !ok || count > math.MaxInt32 {
			return nil, protoErr("invalid multibulk length")
		}
		if count <= 0 { // *0 and *-1 (and any negative count, as Redis)
			r.r += n
			return nil, nil
		}
		if count > int64(r.lim.MaxArgs) {
			return nil, limitErr("too many arguments")
		}
		r.r += n
		r.inCmd = true
		r.want = int(count)
		r.data = make([]byte, 0, r.initialCap())
		r.ends = r.ends[:0]
	}
	for len(r.ends) < r.want {
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, err
			}
		}
		// Only bulk strings: a nested array (`*1\r\n*1\r\n...`) is refused
		// here, at its first byte, so nesting never recurses or accumulates.
		if c := r.buf[r.r]; c != '$' {
			return nil, protoErr("expected '$', got '" + printable(c) + "'")
		}
		line, n, err := r.peekLine(maxHeaderLine)
		if err != nil {
			if err == errLineTooLong {
				return nil, protoErr("too big bulk count string")
			}
			return nil, err
		}
		size, ok := parseHeader(line)
		if !ok || size < 0 {
			return nil, protoErr("invalid bulk length")
		}
		if size > int64(r.lim.MaxBulk) {
			return nil, limitErr("invalid bulk length")
		}
		if size > int64(r.lim.MaxCommand-len(r.data)) {
			return nil, limitErr("too big command")
		}
		r.r += n
		if err := r.readBulk(int(size)); err != nil {
			return nil, err
		}
		r.ends = append(r.ends, len(r.data))
	}
	// Slice the arguments only now: data may have moved while growing.
	args := make([][]byte, len(r.ends))
	start := 0
	for i, end := range r.ends {
		args[i] = r.data[start:end:end]
		start = end
	}
	r.inCmd, r.data = false, nil
	if cap(r.ends) > 1024 {
		r.ends = nil // don't keep a huge command's bookkeeping
	}
	return args, nil
}

// initialCap sizes the data of the command whose arguments start at r.r:
// exactly, when the whole command is already buffered (the usual case), and
// otherwise a guess no larger than maxInitialAlloc that grows as bytes
// arrive. Malformed input is left for next to report.
func (r *Reader) initialCap() int {
	guess := min(r.w-r.r, min(r.want, maxInitialAlloc/32)*32)
	size, p := 0, r.r
	for range r.want {
		if p >= r.w || r.buf[p] != '$' {
			return guess
		}
		nl := bytes.IndexByte(r.buf[p:min(r.w, p+maxHeaderLine+1)], '\n')
		if nl < 0 {
			return guess
		}
		n, ok := parseHeader(r.buf[p : p+nl])
		if !ok || n < 0 || n > int64(r.w-p) {
			return guess
		}
		size += int(n)
		p += nl + 1 + int(n) + 2
	}
	return size
}

// readBulk appends a payload of n bytes and its "\r\n" to r.data as the
// bytes arrive.
func (r *Reader) readBulk(n int) error {
	for n > 0 {
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return err
			}
		}
		k := min(n, r.w-r.r)
		r.data = append(r.data, r.buf[r.r:r.r+k]...)
		r.r += k
		n -= k
	}
	for r.w-r.r < 2 {
		if err := r.fill(); err != nil {
			return err
		}
	}
	if r.buf[r.r] != '\r' || r.buf[r.r+1] != '\n' {
		return protoErr("expected CRLF after bulk string")
	}
	r.r += 2
	return nil
}

var errLineTooLong = errors.New("resp: line too long") // internal only

// peekLine returns the unread bytes before the next '\n' and the count to
// consume with the '\n', without consuming them. A line longer than max
// bytes is errLineTooLong as soon as max+1 bytes without '\n' are buffered,
// so the outcome does not depend on how the input was chunked.
func (r *Reader) peekLine(max int) (line []byte, n int, err error) {
	scanned := 0
	for {
		window := r.buf[r.r:min(r.w, r.r+max+1)]
		for i := scanned; i < len(window); i++ {
			if window[i] == '\n' {
				return window[:i], i + 1, nil
			}
		}
		scanned = len(window)
		if r.w-r.r > max {
			return nil, 0, errLineTooLong
		}
		if err := r.fill(); err != nil {
			return nil, 0, err
		}
	}
}

// fill reads at least one more byte into buf, or returns an error.
func (r *Reader) fill() error {
	if r.r == r.w {
		r.r, r.w = 0, 0
		if len(r.buf) > minBuf {
			// A long inline line has been consumed: give the memory back.
			r.buf = make([]byte, minBuf)
		}
	} else if r.w == len(r.buf) {
		if r.r > 0 {
			r.w = copy(r.buf, r.buf[r.r:r.w])
			r.r = 0
		} else {
			// Only a line longer than the buffer gets here (payloads are
			// consumed as they arrive), so the buffer stays within twice the
			// bytes actually received.
			nb := make([]byte, 2*len(r.buf))
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
	}
	if r.rerr != nil {
		err := r.rerr
		r.rerr = nil
		return err
	}
	for range 100 {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return errors.New("resp: reader returned invalid count " + strconv.Itoa(n))
		}
		r.w += n
		if n > 0 {
			r.rerr = err
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// parseHeader parses the line of a "*<count>" or "$<len>" header: the type
// byte, a decimal written as Redis's string2ll accepts it (an optional '-',
// no '+', no leading zeros, within int64), then '\r'.
func parseHeader(line []byte) (int64, bool) {
	if len(line) < 3 || line[len(line)-1] != '\r' {
		return 0, false
	}
	return parseInt(line[1 : len(line)-1])
}

func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 || b[0] < '0' || b[0] > '9' || (b[0] == '0' && (len(b) > 1 || neg)) {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// printable renders one byte of an error text, which goes back on the wire.
func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	const hex = "0123456789abcdef"
	return `\x` + string(hex[c>>4]) + string(hex[c&15])
}
