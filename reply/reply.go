// Package reply is the value of a Redis reply as the state machine and
// scripts produce it: a small tree of statuses, errors, integers, bulk
// strings, nulls and arrays. It knows nothing of the wire: resp.FromReply
// turns a Value into the wire's resp.Value, whose kinds and constructors it
// shares by name (resp adds the RESP3-only kinds), and the script package
// turns it into Lua values and back by Redis's conversion rules.
package reply

// Kind is the type of a Value.
type Kind uint8

// The kinds. Map is a RESP3 map (HGETALL): a RESP2 client and a script see
// it as a flat array of alternating keys and values.
const (
	KindInvalid      Kind = iota
	KindSimpleString      // +OK
	KindError             // -ERR message; Str holds "CODE message"
	KindInt               // :1
	KindBulk              // $3 abc
	KindNull              // null bulk ($-1 / _)
	KindNullArray         // null array (*-1 / _), e.g. BLPOP timed out
	KindArray             // *n
	KindMap               // %n in RESP3, a flat array in RESP2; Elems alternate keys and values
	KindSet               // ~n in RESP3, an array in RESP2 (FUNCTION LIST's flags)
)

// Value is one reply. Only the fields of its Kind are set. Its kinds are
// written as bytes in forwarded results (lockstate's Result codec), so their
// order is fixed. Render it with resp.FromReply(v).String().
type Value struct {
	Kind  Kind
	Str   string // Status, Error, Bulk
	Int   int64
	Elems []Value // Array, Map, Set
}

// Constructors.
func OK() Value                     { return Value{Kind: KindSimpleString, Str: "OK"} }
func SimpleString(s string) Value   { return Value{Kind: KindSimpleString, Str: s} }
func Error(codeAndMsg string) Value { return Value{Kind: KindError, Str: codeAndMsg} }
func Int(n int64) Value             { return Value{Kind: KindInt, Int: n} }
func BulkString(s string) Value     { return Value{Kind: KindBulk, Str: s} }
func Null() Value                   { return Value{Kind: KindNull} }
func NullArray() Value              { return Value{Kind: KindNullArray} }
func Array(vs ...Value) Value       { return Value{Kind: KindArray, Elems: vs} }
func Map(kvs ...Value) Value        { return Value{Kind: KindMap, Elems: kvs} }
func Set(vs ...Value) Value         { return Value{Kind: KindSet, Elems: vs} }

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == KindError }
