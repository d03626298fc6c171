package test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// The differential test of malformed protocol: each payload goes, as raw
// bytes, to a fenced node and to a real redis-server 7.0.15. Both must
// answer the same error text and then close the connection. A few payloads
// are over fenced's own limits only (fenced refuses what Redis would wait
// for): they are checked against fenced's own text, and Redis not asked.

type protoCase struct {
	name    string
	payload string
	want    string // the error fenced must answer
	redis   bool   // Redis answers the same (else the limit is fenced's own)
}

var protoCases = []protoCase{
	{"count past INT_MAX", "*2147483648\r\n", "ERR Protocol error: invalid multibulk length", true},
	{"count 3e9", "*3000000000\r\n", "ERR Protocol error: invalid multibulk length", true},
	{"count int64 max", "*9223372036854775807\r\n", "ERR Protocol error: invalid multibulk length", true},
	{"count past int64", "*9223372036854775808\r\n", "ERR Protocol error: invalid multibulk length", true},
	{"count not a number", "*x\r\n", "ERR Protocol error: invalid multibulk length", true},
	{"bulk length -5", "*1\r\n$-5\r\n", "ERR Protocol error: invalid bulk length", true},
	{"bulk length -1", "*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length", true},
	{"bulk length int64 max", "*1\r\n$9223372036854775807\r\n", "ERR Protocol error: invalid bulk length", true},
	{"bulk length past int64", "*1\r\n$9223372036854775808\r\n", "ERR Protocol error: invalid bulk length", true},
	{"bulk length past 512 MB", "*1\r\n$536870913\r\n", "ERR Protocol error: invalid bulk length", true},
	// Within INT_MAX Redis waits for the arguments; fenced keeps MaxArgs.
	{"count at INT_MAX", "*2147483647\r\n", "ERR Protocol error: too many arguments", false},
	{"count past MaxArgs", "*65537\r\n", "ERR Protocol error: too many arguments", false},
}

// protoOutcome sends payload on a fresh connection to addr and returns the
// reply and whether the connection was then closed. The read deadline only
// bounds a hang; it decides nothing.
func protoOutcome(t *testing.T, addr, payload string) (string, bool) {
	t.Helper()
	c := dialRaw(t, addr)
	c.write(payload)
	v, err := c.tryRead(30 * time.Second)
	if err != nil {
		t.Fatalf("%s: no reply: %v", addr, err)
	}
	reply := string(v.kind) + v.str
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = c.r.ReadByte()
	return reply, err == io.EOF || isClosed(err)
}

func TestDiffProtocolErrors(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	for _, tc := range protoCases {
		t.Run(tc.name, func(t *testing.T) {
			f, fclosed := protoOutcome(t, fd.addr, tc.payload)
			if f != "-"+tc.want || !fclosed {
				t.Errorf("fenced: %q, closed %v; want %q and closed", f, fclosed, "-"+tc.want)
			}
			if !tc.redis {
				return
			}
			r, rclosed := protoOutcome(t, rd.leader, tc.payload)
			if f != r || fclosed != rclosed {
				t.Errorf("fenced: %q closed %v\n  redis:  %q closed %v", f, fclosed, r, rclosed)
			}
			if !strings.HasPrefix(r, "-ERR Protocol error") {
				t.Errorf("redis answered %q: the case no longer tests a protocol error", r)
			}
		})
	}
	if !fd.alive() {
		t.Fatal("fenced died")
	}
}

// arityCases are commands with too many arguments for Redis's own parser,
// though their table arity (variadic) lets them through: Redis answers
// the arity error, not "syntax error", and fenced must too. Those already
// alike stay as regressions.
var arityCases = [][]string{
	{"LPOP", "dl", "1", "1"},
	{"LPOP", "dl", "x", "y"},
	{"lpop", "dl", "1", "1", "1"},
	{"EVAL", "return redis.pcall('LPOP', KEYS[1], '1', '1')", "1", "dl"},
	{"SET", "dl", "v", "EX", "10", "10"},
	{"SET", "dl", "v", "1"},
	{"GETEX", "dl", "EX", "10", "10"},
	{"GETEX", "dl", "PERSIST", "1"},
	{"EXPIRE", "dl", "10", "NX", "XX"},
	{"PEXPIRE", "dl", "10", "foo", "bar"},
	{"EXPIREAT", "dl", "10", "NX", "XX"},
	{"PEXPIREAT", "dl", "10", "NX", "1"},
	{"SCAN", "0", "COUNT"},
	{"SCAN", "0", "x", "y"},
	{"SETEX", "dl", "10", "v", "x"},
	{"INCRBY", "dl", "1", "1"},
}

func TestDiffArityErrors(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	d := dialDiff(t, fd.addr, rd.leader, 2)
	d.same("setup", "RPUSH", "dl", "a", "b")
	for _, args := range arityCases {
		d.same("too many arguments", args...)
	}
	d.same("the list unchanged", "LLEN", "dl")
}
