package lockstate

import (
	"errors"
	"fmt"
)

// The Result codec carries the proposer's answer from the leader back to
// the follower that forwarded the entry. Wakes are not part of it: every
// node delivers the wakes of its own apply.
//
// Layout: the version, a flags byte (resultNull, resultQueued), Int as a
// zigzag varint, Str length-prefixed, then the error: a code of errCode (0
// for nil), or errCodeOther followed by the error's text and the code of
// the first sentinel it wraps (0 for none), so that the text survives and
// errors.Is still finds the sentinel.
const (
	resultVersion = 1

	resultNull   = 1 << 0
	resultQueued = 1 << 1

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
	dst = append(dst, resultVersion, flags)
	dst = appendVarint(dst, r.Int)
	dst = appendString(dst, r.Str)
	if r.Err == nil {
		return append(dst, 0)
	}
	if c := errCode(r.Err); c != 0 {
		return append(dst, c)
	}
	dst = append(dst, errCodeOther)
	dst = appendString(dst, r.Err.Error())
	return append(dst, wrappedCode(r.Err))
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
	if flags&^(resultNull|resultQueued) != 0 {
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
	if err := r.done(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadResult, err)
	}
	return res, nil
}
