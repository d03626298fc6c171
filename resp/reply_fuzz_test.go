package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// replyFuzzLimitSets are the limits each fuzz input is read with: the
// defaults, small ones that the fuzzer reaches quickly, and the largest.
func replyFuzzLimitSets() []ReplyLimits {
	return []ReplyLimits{
		DefaultReplyLimits(),
		{MaxBulk: 16, MaxElems: 8, MaxDepth: 3, MaxTotal: 64},
		{MaxBulk: math.MaxInt64, MaxElems: math.MaxInt64, MaxDepth: math.MaxInt, MaxTotal: math.MaxInt64},
	}
}

// replyFuzzSeeds are the reply table, huge declared sizes, deep nesting,
// and what Writer writes for its test values.
func replyFuzzSeeds() [][]byte {
	seeds := [][]byte{
		[]byte("*9223372036854775807\r\n"),
		[]byte("$9223372036854775807\r\n"),
		[]byte("$9223372036854775807\r\nabc\r\n"),
		[]byte("%9223372036854775807\r\n"),
		[]byte("%4611686018427387904\r\n"),
		[]byte("|9223372036854775807\r\n"),
		[]byte("=9223372036854775807\r\ntxt:"),
		[]byte("!9223372036854775807\r\n"),
		[]byte("*4294967295\r\n"),
		[]byte("$-1\r\n*-1\r\n_\r\n"),
		[]byte("$?\r\n;4\r\nabcd\r\n;0\r\n"),
		[]byte("*?\r\n:1\r\n.\r\n"),
		[]byte(",1e400\r\n,-nan\r\n,.5\r\n,5.\r\n"),
		[]byte(strings.Repeat("*1\r\n", 2000)),
		[]byte(strings.Repeat("*1\r\n", 64) + ":1\r\n"),
		[]byte(strings.Repeat("|1\r\n+k\r\n+v\r\n", 100) + "+OK\r\n"),
		[]byte(strings.Repeat("%1\r\n", 100)),
	}
	for _, tc := range replyCases {
		seeds = append(seeds, []byte(tc.in))
	}
	for _, tc := range valueCases() {
		for _, proto := range []int{2, 3} {
			var b bytes.Buffer
			w := NewWriter(&b)
			w.WriteValue(tc.v, proto)
			w.Flush()
			seeds = append(seeds, b.Bytes())
		}
	}
	return seeds
}

// replyStats measures a reply against the limits.
func replyStats(v Value, depth int) (elems int64, maxDepth int, maxString int) {
	maxDepth = depth
	switch v.kind {
	case KindSimpleString, KindError, KindVerbatim:
		maxString = len(v.str)
	case KindBulk:
		maxString = len(v.Text())
	case KindArray, KindMap, KindSet, KindPush:
		maxDepth = depth + 1
		elems = int64(len(v.elems))
		for _, e := range v.elems {
			n, d, s := replyStats(e, depth+1)
			elems += n
			maxDepth = max(maxDepth, d)
			maxString = max(maxString, s)
		}
	}
	return elems, maxDepth, maxString
}

// FuzzReadReply: on any input the ReplyReader never panics, returns
// replies within the limits, ends with EOF, unexpected EOF or a protocol
// error, and gives the same replies and error when the input arrives a
// byte at a time. Every reply it returns, written by Writer in either
// protocol, reads back as the Value Writer meant and writes again to the
// same bytes.
func FuzzReadReply(f *testing.F) {
	for _, s := range replyFuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range replyFuzzLimitSets() {
			vs, err := readReplies(bytes.NewReader(in), lim)
			if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrProtocol) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(err, ErrProtocol) && !strings.HasPrefix(err.Error(), "resp: protocol error: ") {
				t.Fatalf("error text %q", err)
			}
			l := lim.withDefaults()
			for _, v := range vs {
				if v.kind == KindInvalid {
					t.Fatal("read a zero Value")
				}
				elems, depth, str := replyStats(v, 0)
				if elems > l.MaxElems || depth > l.MaxDepth || int64(str) > l.MaxBulk {
					t.Fatalf("reply of %d elements, depth %d, a string of %d bytes, over %+v", elems, depth, str, l)
				}
				for _, proto := range []int{2, 3} {
					enc := encode(t, v, proto)
					back, err := readReplies(bytes.NewReader(enc), replyFuzzLimitSets()[2])
					if err != io.EOF || len(back) != 1 {
						t.Fatalf("RESP%d %q of %v read back as %v, %v", proto, enc, v, back, err)
					}
					if want := asWritten(v, proto); !valueEqual(back[0], want) {
						t.Fatalf("RESP%d %q read back as %v, want %v", proto, enc, back[0], want)
					}
					if again := encode(t, back[0], proto); !bytes.Equal(again, enc) {
						t.Fatalf("RESP%d %q written again as %q", proto, enc, again)
					}
				}
			}

			vs1, err1 := readReplies(&chunkReader{data: in, n: 1}, lim)
			if len(vs1) != len(vs) || err1.Error() != err.Error() {
				t.Fatalf("a byte at a time: %d replies, %v; whole: %d, %v", len(vs1), err1, len(vs), err)
			}
			for i := range vs {
				if !valueEqual(vs1[i], vs[i]) {
					t.Fatalf("a byte at a time: reply %d is %v, whole: %v", i, vs1[i], vs[i])
				}
			}
		}
	})
}
