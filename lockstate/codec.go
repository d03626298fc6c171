package lockstate

import (
	"encoding/binary"
	"errors"
)

// The byte-level primitives shared by the entry and record codecs. Varints
// must be minimal so that every accepted input re-encodes to the same bytes:
// records are hashed, and two replicas holding the same state must hold the
// same bytes.

var (
	errTruncated    = errors.New("truncated")
	errOverflow     = errors.New("varint overflows 64 bits")
	errNonCanonical = errors.New("varint is not minimal")
	errTrailing     = errors.New("trailing bytes")
	errLength       = errors.New("length exceeds the remaining bytes")
)

func appendUvarint(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }
func appendVarint(b []byte, x int64) []byte   { return binary.AppendVarint(b, x) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader decodes from a byte slice. The first error sticks and every later
// read returns a zero value, so decoders check once at the end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// uvarint is binary.Uvarint minus its acceptance of padded encodings.
func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var x uint64
	for i, c := range r.b {
		if i == binary.MaxVarintLen64 || (i == binary.MaxVarintLen64-1 && c > 1) {
			r.fail(errOverflow)
			return 0
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i > 0 && c == 0 {
				r.fail(errNonCanonical)
				return 0
			}
			r.b = r.b[i+1:]
			return x
		}
	}
	r.fail(errTruncated)
	return 0
}

// varint reads the zigzag encoding of binary.AppendVarint.
func (r *reader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// str checks the declared length against the bytes present before
// allocating, so a hostile length cannot make it allocate.
func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail(errLength)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// done reports the first error, or trailing bytes.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errTrailing
	}
	return r.err
}

// bool reads a byte that must be 0 or 1.
func (r *reader) bool() bool {
	switch b := r.byte(); {
	case r.err != nil:
	case b == 1:
		return true
	case b != 0:
		r.fail(errors.New("bad bool"))
	}
	return false
}
