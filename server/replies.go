package server

import (
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// toRESP turns a state-machine reply into a wire value; the writer then
// renders it in the connection's protocol (a Map is a flat array in RESP2).
func toRESP(v reply.Value) resp.Value {
	switch v.Kind {
	case reply.Status:
		return resp.SimpleString(v.Str)
	case reply.Error:
		return resp.Error(v.Str)
	case reply.Int:
		return resp.Int(v.Int)
	case reply.Bulk:
		return resp.BulkString(v.Str)
	case reply.Nil:
		return resp.Null()
	case reply.NilArray:
		return resp.NullArray()
	case reply.Array, reply.Map:
		elems := make([]resp.Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = toRESP(e)
		}
		if v.Kind == reply.Map {
			return resp.Map(elems...)
		}
		return resp.Array(elems...)
	}
	return resp.Error("ERR internal error: invalid reply")
}
