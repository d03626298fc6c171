package resp

import (
	"math"
	"strconv"
	"strings"
)

// Kind is the type of a reply Value.
type Kind uint8

// The kinds of reply. Each is written natively in RESP3 and mapped to the
// nearest RESP2 type by Writer.WriteValue.
const (
	KindInvalid      Kind = iota // the zero Value
	KindSimpleString             // +OK
	KindError                    // -ERR message
	KindInt                      // :1
	KindBulk                     // $3 abc
	KindNull                     // RESP3 _, RESP2 $-1
	KindArray                    // *2 ...
	KindNullArray                // RESP3 _, RESP2 *-1
	KindMap                      // RESP3 %, RESP2 a flat array
	KindSet                      // RESP3 ~, RESP2 an array
	KindBool                     // RESP3 #t, RESP2 :1
	KindDouble                   // RESP3 ,1.5, RESP2 a bulk string
	KindVerbatim                 // RESP3 =, RESP2 a bulk string
	KindPush                     // RESP3 >, RESP2 an array
	// KindPushed is a handler's whole reply already written with Conn.Push
	// (SUBSCRIBE's confirmations, which must precede any message): nothing
	// more is written. Valid only as the top-level Value.
	KindPushed
	// KindLater is a reply that is not ready yet: see Later. Valid only as
	// the top-level Value a Handler returns.
	KindLater
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindSimpleString:
		return "simple string"
	case KindError:
		return "error"
	case KindInt:
		return "integer"
	case KindBulk:
		return "bulk"
	case KindNull:
		return "null"
	case KindArray:
		return "array"
	case KindNullArray:
		return "null array"
	case KindMap:
		return "map"
	case KindSet:
		return "set"
	case KindBool:
		return "bool"
	case KindDouble:
		return "double"
	case KindVerbatim:
		return "verbatim"
	case KindPush:
		return "push"
	case KindPushed:
		return "pushed"
	case KindLater:
		return "later"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// A Value is a reply: a scalar or a tree of Values. Build it with the
// constructors below; the zero Value is invalid and is written as an error
// reply. A Value holds on to the byte slices and Values given to it, which
// must not change until it has been written.
type Value struct {
	kind  Kind
	isStr bool    // a bulk held in str rather than bytes
	num   int64   // Int, Bool (0 or 1), Double (math.Float64bits)
	str   string  // SimpleString, Error, a bulk from a string, Verbatim ("fmt:text")
	bytes []byte  // Bulk
	elems []Value // Array, Set, Push; Map as alternating keys and values
	later func() Value
}

// SimpleString returns a status reply such as "OK". CR and LF are written as
// spaces, since the reply ends at the first CRLF.
func SimpleString(s string) Value { return Value{kind: KindSimpleString, str: s} }

// Error returns an error reply. msg starts with the error code word, as in
// "ERR unknown command" or "WRONGTYPE Operation against a key...". CR and LF
// are written as spaces.
func Error(msg string) Value { return Value{kind: KindError, str: msg} }

// Int returns an integer reply.
func Int(n int64) Value { return Value{kind: KindInt, num: n} }

// Bulk returns a binary-safe string reply. A nil b is an empty string, not
// a null: use Null for that.
func Bulk(b []byte) Value { return Value{kind: KindBulk, bytes: b} }

// BulkString returns a binary-safe string reply from a string.
func BulkString(s string) Value { return Value{kind: KindBulk, isStr: true, str: s} }

// Null returns the null reply (a missing key): _ in RESP3, $-1 in RESP2.
func Null() Value { return Value{kind: KindNull} }

// Array returns an array reply of vs.
func Array(vs ...Value) Value { return Value{kind: KindArray, elems: vs} }

// NullArray returns a null array (BLPOP timing out): _ in RESP3, *-1 in RESP2.
func NullArray() Value { return Value{kind: KindNullArray} }

// Map returns a map reply from alternating keys and values; RESP2 clients
// get them as a flat array. It panics if kvs has an odd length: that is a
// bug in the caller, not a condition of the input.
func Map(kvs ...Value) Value {
	if len(kvs)%2 != 0 {
		panic("resp: Map needs an even number of values, got " + strconv.Itoa(len(kvs)))
	}
	return Value{kind: KindMap, elems: kvs}
}

// Set returns a set reply; RESP2 clients get an array.
func Set(vs ...Value) Value { return Value{kind: KindSet, elems: vs} }

// Bool returns a boolean reply; RESP2 clients get :1 or :0.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.num = 1
	}
	return v
}

// Double returns a floating-point reply; RESP2 clients get a bulk string.
// Infinities and NaN are written inf, -inf and nan, as Redis does.
func Double(f float64) Value { return Value{kind: KindDouble, num: int64(math.Float64bits(f))} }

// Verbatim returns a verbatim string reply with a three-letter format such as
// "txt" or "mkd" (any other length is replaced by "txt"); RESP2 clients get
// the text as a bulk string.
func Verbatim(format, text string) Value {
	if len(format) != 3 {
		format = "txt"
	}
	return Value{kind: KindVerbatim, str: format + ":" + text}
}

// Push returns an out-of-band push frame (pub/sub messages); RESP2 clients
// get an array. Send it with Conn.Push.
func Push(vs ...Value) Value { return Value{kind: KindPush, elems: vs} }

// Pushed is the reply of a handler that wrote its reply with Conn.Push.
func Pushed() Value { return Value{kind: KindPushed} }

// Later is the reply of a handler that has started its command and lets the
// connection go on to the next one meanwhile (see Pipeliner): wait blocks
// until the reply is ready and returns it; it must not return a Later. The
// connection writes replies in command order, so a Later holds back the
// replies after it and never reorders them.
func Later(wait func() Value) Value { return Value{kind: KindLater, later: wait} }

// Then calls f with the reply v stands for: at once, or, for a Later, once
// it is ready (on the goroutine that waits for it). It returns the value to
// write in v's place.
func (v Value) Then(f func(Value)) Value {
	if v.kind != KindLater {
		f(v)
		return v
	}
	wait := v.later
	return Later(func() Value {
		r := wait()
		f(r)
		return r
	})
}

// Map returns the value to write in v's place: f of the reply v stands
// for, at once, or, for a Later, once it is ready (on the goroutine that
// waits for it).
func (v Value) Map(f func(Value) Value) Value {
	if v.kind != KindLater {
		return f(v)
	}
	wait := v.later
	return Later(func() Value { return f(wait()) })
}

// Kind returns the kind of v.
func (v Value) Kind() Kind { return v.kind }

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.kind == KindError }

// Text returns the string of a simple string, error, bulk or verbatim reply
// (without its format), and "" for other kinds.
func (v Value) Text() string {
	switch v.kind {
	case KindSimpleString, KindError:
		return v.str
	case KindBulk:
		if v.isStr {
			return v.str
		}
		return string(v.bytes)
	case KindVerbatim:
		return v.str[4:]
	}
	return ""
}

// Integer returns the number of an integer reply, and 1 or 0 for a bool.
func (v Value) Integer() int64 {
	if v.kind == KindInt || v.kind == KindBool {
		return v.num
	}
	return 0
}

// Float returns the number of a double reply.
func (v Value) Float() float64 {
	if v.kind == KindDouble {
		return math.Float64frombits(uint64(v.num))
	}
	return 0
}

// Elems returns the elements of an array, set or push reply, and the
// alternating keys and values of a map. The slice is v's own.
func (v Value) Elems() []Value {
	switch v.kind {
	case KindArray, KindMap, KindSet, KindPush:
		return v.elems
	}
	return nil
}

// String renders v for test failures and logs, in the style of redis-cli.
func (v Value) String() string {
	var sb strings.Builder
	v.format(&sb)
	return sb.String()
}

func (v Value) format(sb *strings.Builder) {
	switch v.kind {
	case KindSimpleString:
		sb.WriteString(v.str)
	case KindError:
		sb.WriteString("(error) ")
		sb.WriteString(v.str)
	case KindInt:
		sb.WriteString("(integer) ")
		sb.WriteString(strconv.FormatInt(v.num, 10))
	case KindBulk, KindVerbatim:
		sb.WriteString(strconv.Quote(v.Text()))
	case KindNull, KindNullArray:
		sb.WriteString("(nil)")
	case KindBool:
		sb.WriteString(strconv.FormatBool(v.num != 0))
	case KindDouble:
		sb.WriteString("(double) ")
		sb.Write(appendDouble(nil, v.Float()))
	case KindArray, KindSet, KindPush, KindMap:
		open, end := "[", "]"
		switch v.kind {
		case KindSet:
			open, end = "set[", "]"
		case KindPush:
			open, end = "push[", "]"
		case KindMap:
			open, end = "{", "}"
		}
		sb.WriteString(open)
		for i, e := range v.elems {
			if i > 0 {
				if v.kind == KindMap && i%2 == 1 {
					sb.WriteString(": ")
				} else {
					sb.WriteString(", ")
				}
			}
			e.format(sb)
		}
		sb.WriteString(end)
	default:
		sb.WriteString("(invalid)")
	}
}

// appendDouble formats f as Redis does: the shortest representation that
// reads back the same, and inf, -inf, nan.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
