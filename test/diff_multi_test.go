package test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"
)

// The differential test of transactions: MULTI, EXEC, DISCARD, WATCH and
// UNWATCH sequences run on a fenced node and on a real redis-server 7.0.15,
// over two connections (a, and b for "another client"), in RESP2 and
// RESP3. Every reply must be the same: its type, its shape (the null array
// of a failed EXEC: *-1 in RESP2, _ in RESP3) and every error text.

// dmStep is one command of a case: on connection b when other, and a pause
// before it when sleep is set (a key's PX running out).
type dmStep struct {
	other bool
	sleep time.Duration
	args  []string
}

type dmCase struct {
	name  string
	steps []dmStep
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func dmA(args ...string) dmStep { return dmStep{args: args} }
func dmB(args ...string) dmStep { return dmStep{other: true, args: args} }
func dmAfter(d time.Duration, s dmStep) dmStep {
	s.sleep = d
	return s
}

func dmCases() []dmCase {
	return []dmCase{
		{"basics", []dmStep{dmA("DEL", "l"), dmA("RPUSH", "l", "a", "b"), dmA("MULTI"), dmA("LLEN", "l"), dmA("PING"), dmA("ECHO", "e"), dmA("EXEC")}},
		{"discard", []dmStep{dmA("SET", "k", "1"), dmA("MULTI"), dmA("DEL", "k"), dmA("DISCARD"), dmA("GET", "k")}},
		{"nested MULTI", []dmStep{dmA("MULTI"), dmA("MULTI"), dmA("SET", "k", "2"), dmA("EXEC"), dmA("GET", "k")}},
		{"EXEC without MULTI", []dmStep{dmA("EXEC"), dmA("exec")}},
		{"DISCARD without MULTI", []dmStep{dmA("DISCARD")}},
		{"WATCH inside MULTI", []dmStep{dmA("MULTI"), dmA("WATCH", "x"), dmA("PING"), dmA("EXEC")}},
		{"WATCH arity", []dmStep{dmA("WATCH"), dmA("MULTI"), dmA("WATCH"), dmA("EXEC")}},
		{"unknown command while queueing", []dmStep{dmA("DEL", "f1", "f2"), dmA("MULTI"), dmA("SET", "f1", "1"), dmA("NOPE", "x"), dmA("SET", "f2", "2"), dmA("EXEC"), dmA("EXISTS", "f1", "f2"), dmA("PING")}},
		{"arity error while queueing", []dmStep{dmA("DEL", "f1"), dmA("MULTI"), dmA("SET", "f1"), dmA("SET", "f1", "1"), dmA("EXEC"), dmA("EXISTS", "f1")}},
		{"EXEC with an argument", []dmStep{dmA("DEL", "f1"), dmA("MULTI"), dmA("SET", "f1", "1"), dmA("EXEC", "now"), dmA("EXISTS", "f1"), dmA("EXEC")}},
		{"DISCARD and MULTI with arguments", []dmStep{dmA("MULTI"), dmA("DISCARD", "x"), dmA("MULTI", "x"), dmA("EXEC")}},
		{"runtime errors do not roll back", []dmStep{dmA("DEL", "k", "l"), dmA("MULTI"), dmA("SET", "k", "v"), dmA("LPUSH", "k", "x"), dmA("INCR", "k"), dmA("RPUSH", "l", "y"), dmA("GET", "k"), dmA("EXEC"), dmA("LLEN", "l")}},
		{"empty transaction", []dmStep{dmA("MULTI"), dmA("EXEC")}},
		{"empty transaction watching", []dmStep{dmA("WATCH", "x"), dmA("MULTI"), dmA("EXEC")}},
		{"BLPOP in MULTI does not block", []dmStep{dmA("DEL", "nolist"), dmA("MULTI"), dmA("BLPOP", "nolist", "0"), dmA("BLPOP", "nolist", "-1"), dmA("EXEC")}},
		{"scripts in MULTI", []dmStep{dmA("MULTI"), dmA("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "k", "s"), dmA("EVAL", "return redis.call('INCR', KEYS[1])", "1", "k"), dmA("EVAL", "return {1,{2,'x'}}", "0"), dmA("EXEC")}},
		{"read-only scripts in MULTI", []dmStep{dmA("SET", "k", "5"), dmA("FUNCTION", "LOAD", "REPLACE", roLib("rolib", "rget", roGet)), dmA("MULTI"),
			dmA("EVAL_RO", roGet, "1", "k"), dmA("EVALSHA_RO", sha1Hex(roGet), "1", "k"), dmA("FCALL_RO", "rget", "1", "k"),
			dmA("EVAL_RO", roSet, "1", "k"), dmA("FCALL_RO", "nosuch", "0"), dmA("EXEC"), dmA("GET", "k"),
			dmA("FUNCTION", "DELETE", "rolib")}},
		{"PUBLISH in MULTI", []dmStep{dmA("MULTI"), dmA("PUBLISH", "nobody", "m"), dmA("EXEC")}},
		{"SUBSCRIBE in MULTI", []dmStep{dmA("MULTI"), dmA("SUBSCRIBE", "ch"), dmA("EXEC"), dmA("RESET")}},
		{"QUIT-free RESET discards", []dmStep{dmA("SET", "k", "1"), dmA("MULTI"), dmA("DEL", "k"), dmA("RESET"), dmA("EXEC"), dmA("GET", "k")}},
		{"UNWATCH with nothing watched", []dmStep{dmA("UNWATCH")}},

		{"WATCH not modified", []dmStep{dmA("WATCH", "x", "y", "z"), dmA("WATCH", "k"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH modified by another client", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmB("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH modified, 1 of 5", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "a", "b", "x", "k", "z"), dmB("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH modified by the same client", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmA("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH same value", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmB("SET", "x", "30"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH created after absent", []dmStep{dmA("DEL", "x"), dmA("WATCH", "x"), dmB("SET", "x", "1"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH deleted", []dmStep{dmA("SET", "x", "1"), dmA("WATCH", "x"), dmB("DEL", "x"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH absent, DEL of nothing", []dmStep{dmA("DEL", "x"), dmA("WATCH", "x"), dmB("DEL", "x"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH touched by EXPIRE", []dmStep{dmA("SET", "x", "foo"), dmA("WATCH", "x"), dmB("EXPIRE", "x", "10"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH by a script", []dmStep{dmA("SET", "x", "1"), dmA("WATCH", "x"), dmB("EVAL", "return redis.call('INCR', KEYS[1])", "1", "x"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"WATCH lazily expired", []dmStep{dmA("SET", "x", "1", "PX", "100"), dmA("WATCH", "x"), dmAfter(300*time.Millisecond, dmA("MULTI")), dmA("INCR", "x"), dmA("EXEC")}},
		{"WATCH stale key", []dmStep{dmA("SET", "x", "foo", "PX", "1"), dmAfter(50*time.Millisecond, dmA("WATCH", "x")), dmAfter(300*time.Millisecond, dmA("MULTI")), dmA("PING"), dmA("EXEC")}},
		{"WATCH stale key deleted by a read", []dmStep{dmA("SET", "x", "foo", "PX", "1"), dmAfter(50*time.Millisecond, dmA("WATCH", "x")), dmA("EXISTS", "x"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"after EXEC the key is no longer watched", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmA("MULTI"), dmA("PING"), dmA("EXEC"), dmB("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"after a failed EXEC the key is no longer watched", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmB("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC"), dmB("SET", "x", "40"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"UNWATCH", []dmStep{dmA("SET", "x", "30"), dmA("WATCH", "x"), dmB("SET", "x", "40"), dmA("UNWATCH"), dmA("MULTI"), dmA("PING"), dmA("EXEC")}},
		{"DISCARD unwatches", []dmStep{dmA("SET", "x", "9"), dmA("WATCH", "x"), dmB("SET", "x", "10"), dmA("MULTI"), dmA("DISCARD"), dmA("MULTI"), dmA("INCR", "x"), dmA("EXEC")}},
		{"RESET unwatches", []dmStep{dmA("SET", "x", "9"), dmA("WATCH", "x"), dmB("SET", "x", "10"), dmA("RESET"), dmA("MULTI"), dmA("INCR", "x"), dmA("EXEC")}},
		{"a failed EXEC runs nothing", []dmStep{dmA("SET", "x", "1"), dmA("WATCH", "x"), dmB("SET", "x", "2"), dmA("MULTI"), dmA("SET", "x", "3"), dmA("SET", "y", "3"), dmA("EXEC"), dmA("GET", "x"), dmA("EXISTS", "y")}},
		{"check-and-set", []dmStep{dmA("SET", "n", "5"), dmA("WATCH", "n"), dmA("GET", "n"), dmA("MULTI"), dmA("SET", "n", "6"), dmA("EXEC"), dmA("GET", "n")}},
	}
}

// dmRun runs c's steps against addr and returns each reply as a string
// that shows its RESP type and shape.
func dmRun(t *testing.T, addr string, proto int, c dmCase) []string {
	conns := [2]*rawConn{dialRaw(t, addr), dialRaw(t, addr)}
	for _, rc := range conns {
		if proto == 3 {
			rc.send("HELLO", "3")
			rc.read()
		}
		rc.send("DEL", "x", "y", "z", "k", "n", "a", "b")
		rc.read()
	}
	var out []string
	for _, s := range c.steps {
		time.Sleep(s.sleep)
		rc := conns[0]
		if s.other {
			rc = conns[1]
		}
		rc.send(s.args...)
		v := rc.read()
		out = append(out, fmt.Sprintf("%q -> %s", s.args, v))
	}
	return out
}

func TestDiffMulti(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	for _, proto := range []int{2, 3} {
		for _, c := range dmCases() {
			f, r := dmRun(t, fd.addr, proto, c), dmRun(t, rd.leader, proto, c)
			for i := range f {
				if f[i] != r[i] {
					t.Errorf("RESP%d %s, step %d:\n  fenced: %s\n  redis:  %s", proto, c.name, i, f[i], r[i])
				}
			}
		}
	}
}
