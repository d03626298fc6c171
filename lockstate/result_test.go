package lockstate

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/fenced/fenced/resp"
	"math"
	"testing"

	"github.com/fenced/fenced/reply"
)

// sentinels lists every error a Result may carry, in code order.
func sentinels() []error {
	return []error{ErrNoSession, ErrNotOwner, ErrLimit, ErrStaleFence, ErrCancelled, ErrTooManySessions,
		ErrTooManyLocks, ErrTooManyWaiters, ErrSessionExists, ErrBadEntry, ErrNodeRemoved, ErrBadResult, ErrWrongType, ErrTooManyUserSessions, ErrOOM}
}

func sampleResults() []Result {
	rs := []Result{
		{},
		{Null: true},
		{Queued: true},
		{Int: 1},
		{Int: -1},
		{Int: math.MaxInt64},
		{Int: math.MinInt64},
		{Str: "0123456789abcdef0123456789abcdef"},
		{Str: "\x00\xff"},
		{Err: ErrCancelled, Null: true, Queued: true, Int: 7, Str: "x"}, // every field at once
		{Err: errors.New("some other failure")},
		{Err: errors.New("")},
		{Err: fmt.Errorf("forwarded: %w", ErrNodeRemoved)},
		{Reply: reply.OK()},
		{Reply: reply.Error("WRONGTYPE Operation against a key holding the wrong kind of value")},
		{Reply: reply.Int(math.MinInt64)},
		{Reply: reply.BulkString("")},
		{Reply: reply.BulkString("\x00\xff")},
		{Reply: reply.Null()},
		{Reply: reply.NullArray()},
		{Reply: reply.Array()},
		{Reply: reply.Map()},
		{Reply: reply.Array(reply.Int(1), reply.Null(), reply.Array(reply.BulkString("x"), reply.SimpleString("PONG")))},
		{Reply: reply.Map(reply.BulkString("f"), reply.BulkString("1"), reply.BulkString("g"), reply.Array())},
		{Err: ErrWrongType, Int: 3, Reply: reply.Int(3)},
		{Reply: nested(MaxReplyDepth)},
	}
	for _, err := range sentinels() {
		rs = append(rs, Result{Err: err})
	}
	return rs
}

// nested is an array nested depth levels deep around an integer.
func nested(depth int) reply.Value {
	v := reply.Int(1)
	for range depth {
		v = reply.Array(v)
	}
	return v
}

// TestResultRoundTrip: every sentinel decodes to itself, other errors keep
// their text and the sentinel they wrap, and the rest of the fields come
// back as they were. Wakes are not encoded.
func TestResultRoundTrip(t *testing.T) {
	for _, r := range sampleResults() {
		b := r.Encode([]byte("prefix"))
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatal("Encode does not append")
		}
		b = b[len("prefix"):]
		got, err := DecodeResult(b)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if got.Null != r.Null || got.Queued != r.Queued || got.Int != r.Int || got.Str != r.Str || got.Wakes != nil ||
			resp.FromReply(got.Reply).String() != resp.FromReply(r.Reply).String() || got.Reply.Kind != r.Reply.Kind {
			t.Fatalf("round trip: %+v became %+v", r, got)
		}
		switch {
		case r.Err == nil:
			if got.Err != nil {
				t.Fatalf("nil error became %v", got.Err)
			}
		case errCode(r.Err) != 0:
			if got.Err != r.Err {
				t.Fatalf("sentinel %v became %#v", r.Err, got.Err)
			}
		default:
			if got.Err == nil || got.Err.Error() != r.Err.Error() {
				t.Fatalf("error %q became %v", r.Err, got.Err)
			}
			for _, s := range sentinels() {
				if errors.Is(got.Err, s) != errors.Is(r.Err, s) {
					t.Fatalf("error %q: errors.Is(%v) changed", r.Err, s)
				}
			}
		}
		if again := got.Encode(nil); !bytes.Equal(again, b) {
			t.Fatalf("%+v: re-encoded %x, first %x", r, again, b)
		}
		for i := range b {
			if _, err := DecodeResult(b[:i]); !errors.Is(err, ErrBadResult) {
				t.Fatalf("%+v cut at %d: %v", r, i, err)
			}
		}
		if _, err := DecodeResult(append(bytes.Clone(b), 0)); !errors.Is(err, ErrBadResult) {
			t.Fatalf("%+v with a trailing byte: %v", r, err)
		}
	}
	// Wakes are each node's own: they are not sent.
	r := Result{Int: 3, Wakes: []Wake{{WaitID: 1, Result: Result{Int: 3}}}}
	if !bytes.Equal(r.Encode(nil), Result{Int: 3}.Encode(nil)) {
		t.Fatal("Wakes are encoded")
	}
}

// TestResultCodes: every sentinel has its own code, and the table maps it
// back.
func TestResultCodes(t *testing.T) {
	seen := map[byte]error{}
	for _, err := range sentinels() {
		c := errCode(err)
		if c == 0 || c == errCodeOther || codeErr(c) != err {
			t.Errorf("%v: code %d decodes to %v", err, c, codeErr(c))
		}
		if prev := seen[c]; prev != nil {
			t.Errorf("%v and %v share code %d", prev, err, c)
		}
		seen[c] = err
	}
	if codeErr(byte(len(sentinels())+1)) != nil {
		t.Error("a code past the table decodes")
	}
}

func TestDecodeResultRejects(t *testing.T) {
	good := Result{Int: 1}.Encode(nil) // 1, 0, 2, 0, 0
	with := func(i int, c byte) []byte {
		b := bytes.Clone(good)
		b[i] = c
		return b
	}
	other := Result{Err: errors.New("x")}.Encode(nil) // ..., 255, 1, 'x', 0
	for name, b := range map[string][]byte{
		"empty":                nil,
		"version 0":            with(0, 0),
		"version 2":            with(0, 2),
		"unknown flag":         with(1, 8),
		"reply flag, no reply": with(1, resultReply),
		"reply kind 0":         append(bytes.Clone(good), 0),
		"reply kind 9":         append(with(1, resultReply), 9),
		"reply bulk truncated": append(with(1, resultReply), byte(reply.KindBulk), 3, 'a'),
		"reply int padded":     append(with(1, resultReply), byte(reply.KindInt), 0x80, 0),
		"reply array > rest":   append(with(1, resultReply), byte(reply.KindArray), 3, byte(reply.KindNull)),
		"reply odd map":        append(with(1, resultReply), byte(reply.KindMap), 1, byte(reply.KindNull)),
		"reply too deep":       Result{Reply: nested(MaxReplyDepth + 1)}.Encode(nil),
		"reply trailing":       append(Result{Reply: reply.Null()}.Encode(nil), 0),
		"padded varint":        {1, 0, 0x82, 0x00, 0, 0},
		"length > rest":        {1, 0, 0, 5, 'a', 0},
		"unknown error code":   with(4, 16),
		"error code 254":       with(4, 254),
		"other without text":   {1, 0, 0, 0, errCodeOther},
		"other without wrap":   other[:len(other)-1],
		"other wraps unknown":  append(bytes.Clone(other[:len(other)-1]), 16),
		"other wraps other":    append(bytes.Clone(other[:len(other)-1]), errCodeOther),
		"trailing after error": append(Result{Err: ErrLimit}.Encode(nil), 0),
	} {
		if r, err := DecodeResult(b); !errors.Is(err, ErrBadResult) {
			t.Errorf("%s: decoded %+v, %v", name, r, err)
		}
	}
	huge := []byte{1, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 'x'}
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeResult(huge) }); n > 8 {
		t.Errorf("a hostile length costs %v allocations", n)
	}
}

// FuzzDecodeResult: DecodeResult never panics, fails only with
// ErrBadResult, and what it accepts re-encodes to the very same bytes.
func FuzzDecodeResult(f *testing.F) {
	for _, r := range sampleResults() {
		f.Add(r.Encode(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 3, 0x80})
	f.Add([]byte{1, 0, 0, 0, errCodeOther, 0, 11})
	f.Add([]byte{1, resultReply, 0, 0, 0, byte(reply.KindMap), 2, byte(reply.KindBulk), 1, 'k', byte(reply.KindArray), 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResult(b)
		if err != nil {
			if !errors.Is(err, ErrBadResult) {
				t.Fatalf("error %v does not wrap ErrBadResult", err)
			}
			return
		}
		if out := r.Encode(nil); !bytes.Equal(out, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, r, out)
		}
	})
}
