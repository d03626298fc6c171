package server

import (
	"bytes"
	"testing"

	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

func TestToRESP(t *testing.T) {
	v := reply.ArrayOf(
		reply.OK(), reply.Err("WRONGTYPE Operation against a key holding the wrong kind of value"),
		reply.IntOf(-7), reply.BulkOf("a\r\nb"), reply.NilOf(), reply.NilArrayOf(),
		reply.MapOf(reply.BulkOf("f"), reply.BulkOf("v")), reply.Value{},
	)
	for _, tc := range []struct {
		proto int
		want  string
	}{
		{2, "*8\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:-7\r\n$4\r\na\r\nb\r\n$-1\r\n*-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n-ERR internal error: invalid reply\r\n"},
		{3, "*8\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:-7\r\n$4\r\na\r\nb\r\n_\r\n_\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n-ERR internal error: invalid reply\r\n"},
	} {
		var b bytes.Buffer
		w := resp.NewWriter(&b)
		if err := w.WriteValue(toRESP(v), tc.proto); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if b.String() != tc.want {
			t.Errorf("RESP%d:\n got %q\nwant %q", tc.proto, b.String(), tc.want)
		}
	}
}
