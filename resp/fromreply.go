package resp

import "github.com/fenced/fenced/reply"

// FromReply turns a reply the state machine or a script produced into a
// wire Value: the one converter between the two. The writer then renders
// it in the connection's protocol (a Map is a flat array in RESP2).
func FromReply(v reply.Value) Value {
	switch v.Kind {
	case reply.KindSimpleString:
		return SimpleString(v.Str)
	case reply.KindError:
		return Error(v.Str)
	case reply.KindInt:
		return Int(v.Int)
	case reply.KindBulk:
		return BulkString(v.Str)
	case reply.KindNull:
		return Null()
	case reply.KindNullArray:
		return NullArray()
	case reply.KindArray, reply.KindMap, reply.KindSet:
		elems := make([]Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = FromReply(e)
		}
		switch v.Kind {
		case reply.KindMap:
			return Map(elems...)
		case reply.KindSet:
			return Set(elems...)
		}
		return Array(elems...)
	}
	return Error("ERR internal error: invalid reply")
}
