package resp

import (
	"bytes"
	"testing"

	"github.com/fenced/fenced/reply"
)

func TestFromReply(t *testing.T) {
	v := reply.Array(
		reply.OK(), reply.Error("WRONGTYPE Operation against a key holding the wrong kind of value"),
		reply.Int(-7), reply.BulkString("a\r\nb"), reply.Null(), reply.NullArray(),
		reply.Map(reply.BulkString("f"), reply.BulkString("v")), reply.Value{},
	)
	for _, tc := range []struct {
		proto int
		want  string
	}{
		{2, "*8\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:-7\r\n$4\r\na\r\nb\r\n$-1\r\n*-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n-ERR internal error: invalid reply\r\n"},
		{3, "*8\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:-7\r\n$4\r\na\r\nb\r\n_\r\n_\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n-ERR internal error: invalid reply\r\n"},
	} {
		var b bytes.Buffer
		w := NewWriter(&b)
		if err := w.WriteValue(FromReply(v), tc.proto); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if b.String() != tc.want {
			t.Errorf("RESP%d:\n got %q\nwant %q", tc.proto, b.String(), tc.want)
		}
	}
}
