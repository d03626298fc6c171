// Package reply is the value of a Redis reply as the state machine and
// scripts produce it: a small tree of statuses, errors, integers, bulk
// strings, nulls and arrays. It knows nothing of the wire; the server turns
// a Value into RESP2 or RESP3, and the script package turns it into Lua
// values and back by Redis's conversion rules.
package reply

import (
	"strconv"
	"strings"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds. Map is a RESP3 map (HGETALL): a RESP2 client and a script see
// it as a flat array of alternating keys and values.
const (
	Invalid  Kind = iota
	Status        // +OK
	Error         // -ERR message; Str holds "CODE message"
	Int           // :1
	Bulk          // $3 abc
	Nil           // null bulk ($-1 / _)
	NilArray      // null array (*-1 / _), e.g. BLPOP timed out
	Array         // *n
	Map           // %n in RESP3, a flat array in RESP2; Elems alternate keys and values
)

// Value is one reply. Only the fields of its Kind are set.
type Value struct {
	Kind  Kind
	Str   string // Status, Error, Bulk
	Int   int64
	Elems []Value // Array, Map
}

// Constructors.
func OK() Value                   { return Value{Kind: Status, Str: "OK"} }
func StatusOf(s string) Value     { return Value{Kind: Status, Str: s} }
func Err(codeAndMsg string) Value { return Value{Kind: Error, Str: codeAndMsg} }
func IntOf(n int64) Value         { return Value{Kind: Int, Int: n} }
func BulkOf(s string) Value       { return Value{Kind: Bulk, Str: s} }
func NilOf() Value                { return Value{Kind: Nil} }
func NilArrayOf() Value           { return Value{Kind: NilArray} }
func ArrayOf(vs ...Value) Value   { return Value{Kind: Array, Elems: vs} }
func MapOf(kvs ...Value) Value    { return Value{Kind: Map, Elems: kvs} }

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == Error }

// String renders v for tests and logs, in a redis-cli-like form.
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	switch v.Kind {
	case Status:
		b.WriteString(v.Str)
	case Error:
		b.WriteString("(error) " + v.Str)
	case Int:
		b.WriteString("(integer) " + strconv.FormatInt(v.Int, 10))
	case Bulk:
		b.WriteString(strconv.Quote(v.Str))
	case Nil, NilArray:
		b.WriteString("(nil)")
	case Array, Map:
		open, close := "[", "]"
		if v.Kind == Map {
			open, close = "{", "}"
		}
		b.WriteString(open)
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteString(" ")
			}
			e.format(b)
		}
		b.WriteString(close)
	default:
		b.WriteString("(invalid)")
	}
}
