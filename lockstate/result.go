package lockstate

import (
	"errors"
	"fmt"

	"github.com/fenced/fenced/reply"
)

// The Result codec carries the proposer's answer from the leader back to
// the follower that forwarded the entry. Wakes are not part of it: every
// node delivers the wakes of its own apply.
//
// Layout: the version, a flags byte (resultNull, resultQueued), Int as a
// zigzag varint, Str length-prefixed, then the error: a code of errCode (0
// for nil), or errCodeOther followed by the error's text and the code of
// the first sentinel it wraps (0 for none), so that the text survives and
// errors.Is still finds the sentinel. With the flag resultReply, the Reply
// follows (see appendReply); without it, Reply is the zero Value.
const (
	resultVersion = 1

	resultNull   = 1 << 0
	resultQueued = 1 << 1
	resultReply  = 1 << 2

	errCodeOther = 255
)

// Encode appends the binary form of r, without its Wakes, to dst.
func (r Result) Encode(dst []byte) []byte {
	var flags byte
	if r.Null {
		flags |= resultNull
	}
	if r.Queued {
		flags |= resultQueued
	}
	if r.Reply.Kind != reply.KindInvalid {
		flags |= resultReply
	}
	dst = append(dst, resultVersion, flags)
	dst = appendVarint(dst, r.Int)
	dst = appendString(dst, r.Str)
	switch c := errCode(r.Err); {
	case r.Err == nil:
		dst = append(dst, 0)
	case c != 0:
		dst = append(dst, c)
	default:
		dst = append(dst, errCodeOther)
		dst = appendString(dst, r.Err.Error())
		dst = append(dst, wrappedCode(r.Err))
	}
	if flags&resultReply != 0 {
		dst = appendReply(dst, r.Reply)
	}
	return dst
}

// MaxReplyDepth bounds the nesting of arrays and maps in an encoded Reply.
// Encode writes deeper values as they are, and so values of an unknown
// Kind and maps with an odd element count; DecodeResult rejects all three,
// so whoever builds a Reply (a script's result) must keep within them.
const MaxReplyDepth = 64

// appendReply writes a reply.Value: its kind byte, then for Status, Error
// and Bulk the string, for Int the zigzag varint, for Array, Map and Set the
// element count and the elements; Nil and NilArray have nothing more. Only
// the fields of the kind are written, so a decoded Value re-encodes to the
// same bytes.
func appendReply(dst []byte, v reply.Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case reply.KindSimpleString, reply.KindError, reply.KindBulk:
		dst = appendString(dst, v.Str)
	case reply.KindInt:
		dst = appendVarint(dst, v.Int)
	case reply.KindArray, reply.KindMap, reply.KindSet:
		dst = appendUvarint(dst, uint64(len(v.Elems)))
		for _, e := range v.Elems {
			dst = appendReply(dst, e)
		}
	}
	return dst
}

func (r *reader) reply(depth int) reply.Value {
	v := reply.Value{Kind: reply.Kind(r.byte())}
	if r.err != nil {
		return reply.Value{}
	}
	switch v.Kind {
	case reply.KindSimpleString, reply.KindError, reply.KindBulk:
		v.Str = r.str()
	case reply.KindInt:
		v.Int = r.varint()
	case reply.KindNull, reply.KindNullArray:
	case reply.KindArray, reply.KindMap, reply.KindSet:
		n := r.uvarint()
		switch {
		case r.err != nil:
		case depth >= MaxReplyDepth:
			r.fail(errors.New("reply nested too deeply"))
		case n > uint64(len(r.b)): // each element takes at least a byte
			r.fail(errLength)
		case v.Kind == reply.KindMap && n%2 != 0:
			r.fail(errors.New("map with an odd element count"))
		case n > 0:
			v.Elems = make([]reply.Value, n)
			for i := range v.Elems {
				v.Elems[i] = r.reply(depth + 1)
			}
		}
	default:
		r.fail(fmt.Errorf("unknown reply kind %d", v.Kind))
	}
	return v
}

// wrappedCode is the code of the first sentinel, in code order, that err
// wraps, or 0.
func wrappedCode(err error) byte {
	for c := byte(1); c < errCodeOther; c++ {
		target := codeErr(c)
		if target == nil {
			break // codes are dense
		}
		if errors.Is(err, target) {
			return c
		}
	}
	return 0
}

// remoteError is an error that is not one of the sentinels, as decoded by
// DecodeResult: its text, and the sentinel it wrapped, if any.
type remoteError struct {
	text    string
	wrapped error
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.wrapped }

// DecodeResult decodes the output of Result.Encode. It accepts exactly the
// bytes Encode produces, so a decoded result re-encodes to its input. A
// sentinel error decodes to the sentinel itself; any other error to one
// with the same text that wraps the same sentinel, if it wrapped one.
// Errors wrap ErrBadResult.
func DecodeResult(b []byte) (Result, error) {
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != resultVersion {
		return Result{}, fmt.Errorf("%w: unknown version %d", ErrBadResult, v)
	}
	var res Result
	flags := r.byte()
	if flags&^(resultNull|resultQueued|resultReply) != 0 {
		return Result{}, fmt.Errorf("%w: unknown flags %#x", ErrBadResult, flags)
	}
	res.Null = flags&resultNull != 0
	res.Queued = flags&resultQueued != 0
	res.Int = r.varint()
	res.Str = r.str()
	switch c := r.byte(); {
	case r.err != nil || c == 0:
	case c == errCodeOther:
		e := &remoteError{text: r.str()}
		if w := r.byte(); w != 0 {
			if e.wrapped = codeErr(w); e.wrapped == nil && r.err == nil {
				r.fail(fmt.Errorf("unknown wrapped error code %d", w))
			}
		}
		res.Err = e
	default:
		if res.Err = codeErr(c); res.Err == nil {
			r.fail(fmt.Errorf("unknown error code %d", c))
		}
	}
	if flags&resultReply != 0 {
		res.Reply = r.reply(0)
	}
	if err := r.done(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadResult, err)
	}
	return res, nil
}
