package lockstate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// execNames are the keyspace commands FuzzExec and TestExecRandom draw from,
// plus a few that OpExec must refuse.
var execNames = []string{
	"SET", "GET", "GETDEL", "MGET", "MSET", "MSETNX", "GETRANGE", "INCR", "DEL", "UNLINK", "EXISTS",
	"EXPIRE", "PEXPIRE", "PEXPIREAT", "TTL", "PTTL", "PERSIST", "TYPE", "KEYS", "DELEX", "DELIFEQ",
	"HSET", "HGET", "HINCRBY", "HEXISTS", "HDEL", "HGETALL", "LPUSH", "RPUSH", "LPOP", "LLEN", "DBSIZE", "STRLEN", "HLEN",
	"BLPOP", "PUBLISH", "EVAL", "EVALSHA", "SCRIPT",
	"SETNX", "SETEX", "PSETEX", "GETSET", "GETEX", "APPEND", "SETRANGE", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY",
	"EXPIRETIME", "PEXPIRETIME",
	"RENAME", "RENAMENX", "COPY", "FLUSHALL", "FLUSHDB", "MOVE", "SWAPDB", "TOUCH", "RANDOMKEY", "OBJECT",
	"SETBIT", "GETBIT", "BITCOUNT", "BITPOS", "LCS", "RPOP", "HMSET", "LRANGE",
	"FLOCK", "PING", "NOPE", "CONFIG",
	"LMOVE", "RPOPLPUSH", "BLMOVE", "BRPOPLPUSH",
}

// execWords are the arguments: key names shared with a lock, options,
// numbers at the edges.
var execWords = []string{
	"a", "k", "h", "l", "", "v", "1", "0", "-1", "10", "100", "NX", "XX", "GT", "LT", "GET", "EX", "PX",
	"KEEPTTL", "EXAT", "IFEQ", "IFNE", "*", "?", "[a-k]", "9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "01", "f", "LOAD", "EXISTS", "FLUSH", "return 1",
	"return redis.call('rpush', KEYS[1], ARGV[1])", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
	"PERSIST", "PXAT", "0.1", "-1.5e3", "inf", "nan", "1e4932", "0x1p-3", "4194304", "536870912",
	"return redis.call('incrbyfloat', KEYS[1], ARGV[1])",
	"REPLACE", "DB", "ASYNC", "SYNC", "ENCODING", "REFCOUNT", "FREQ", "IDLETIME", "HELP",
	"return redis.call('rename', KEYS[1], ARGV[1])", "return redis.call('randomkey')",
	"SET", "notify-keyspace-events", "KEA", "Kgx", "El$", "Kq",
	"BIT", "BYTE", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN", "7", "4294967295", "33554431", "33554432",
	"return redis.call('setbit', KEYS[1], ARGV[1], 1)", "return redis.call('lcs', KEYS[1], ARGV[1], 'IDX')",
	"LEFT", "RIGHT", "left", "return redis.call('lmove', KEYS[1], ARGV[1], 'RIGHT', 'LEFT')",
}

// execCheck applies one OpExec (and an FLOCK or FUNLOCK of lock "a" now and
// then, so names are shared) and checks what every apply must keep: a
// reply of some kind, the invariants, the written records, a reload to
// the same hash, and reads that change nothing.
type execCheck struct {
	s     *State
	w     *memWriter
	index uint64
	time  int64
}

func newExecCheck() *execCheck {
	c := &execCheck{s: New(Config{}), w: newMemWriter()}
	c.apply(Entry{Op: OpSessionOpen, Session: "s", TTL: 1 << 40})
	// At cluster version 3, so that the commands of 2 and 3 run
	// (version_test.go checks them below).
	c.apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3})
	c.apply(Entry{Op: OpSetVersion, Version: 3})
	return c
}

// notifyAll turns every keyspace notification on, so that the commands'
// notify calls run too.
func (c *execCheck) notifyAll() {
	c.apply(Entry{Op: OpExec, Args: []string{"CONFIG", "SET", "notify-keyspace-events", "KEAn"}})
}

func (c *execCheck) apply(e Entry) (Result, error) {
	c.index++
	e.Time = c.time
	r, err := c.s.Apply(c.index, e, c.w)
	if err != nil {
		return r, err
	}
	if e.Op == OpExec && r.Reply.Kind == reply.KindInvalid {
		return r, fmt.Errorf("%q: no reply", e.Args)
	}
	if err := checkInvariants(c.s); err != nil {
		return r, fmt.Errorf("%q: %v", e.Args, err)
	}
	if err := sameRecords(c.s, c.w); err != nil {
		return r, fmt.Errorf("%q: %v", e.Args, err)
	}
	return r, nil
}

func (c *execCheck) step(cmd []string, dt int64) error {
	c.time += dt
	switch cmd[0] {
	case "FLOCK":
		_, err := c.apply(Entry{Op: OpFlock, Session: "s", Lock: "a", Wait: NoWait})
		return err
	case "FUNLOCK":
		_, err := c.apply(Entry{Op: OpFunlock, Session: "s", Lock: "a"})
		return err
	}
	if _, err := c.apply(Entry{Op: OpExec, Args: cmd}); err != nil {
		return err
	}
	before := c.s.Hash()
	for _, now := range []int64{c.time, c.time + 50, c.time + 1000} {
		if v := c.s.Exec(cmd, now); v.Kind == reply.KindInvalid {
			return fmt.Errorf("Exec(%q): no reply", cmd)
		}
	}
	if c.s.Hash() != before {
		return fmt.Errorf("Exec(%q) changed the state", cmd)
	}
	return nil
}

// FuzzExec runs arbitrary commands (lines of NUL-separated arguments; a
// first argument of one byte picks a name from execNames) through OpExec
// and Exec. Nothing may panic and every apply keeps the state consistent.
func FuzzExec(f *testing.F) {
	for _, line := range []string{
		"SET a v", "SET k v NX PX 100 GET", "HSET h f 1 g 2", "HINCRBY h f 9223372036854775807", "RPUSH l a b",
		"LPOP l 5", "GETRANGE k -1 -5", "KEYS [a-k]*", "PEXPIRE k 0", "MSETNX a 1 k 2", "DELEX k IFEQ v",
		"INCR k", "FLOCK", "SET a v", "FUNLOCK", "HDEL h f g",
		"SETNX a v", "GETEX k PX 10", "SETRANGE k 3 x", "APPEND k y", "INCRBYFLOAT k 1e4932", "DECRBY k -9223372036854775808",
		"RENAME k a", "RENAMENX h l", "COPY l k DB 0 REPLACE", "FLUSHALL ASYNC", "OBJECT ENCODING h", "TOUCH a k", "RANDOMKEY",
		"SETBIT k 33554431 1", "SETBIT a 7 1", "GETBIT k 4294967295", "BITCOUNT k -1 -1 BIT", "BITPOS k 0 1 -1 BIT",
		"LCS k a IDX MINMATCHLEN 1 WITHMATCHLEN", "RPOP l 2", "HMSET h f v g w",
		"LMOVE l k LEFT RIGHT", "LMOVE l l RIGHT left", "RPOPLPUSH l h", "BLMOVE l a LEFT LEFT 0", "BRPOPLPUSH k l -1",
		"BLMOVE l l UP LEFT 1e4932",
	} {
		f.Add([]byte(strings.ReplaceAll(line, " ", "\x00")))
	}
	f.Add([]byte("\x00k\x00v\n\x15h\x00f\x001\n\x1bl\x00x\n\x1el\x001"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := newExecCheck()
		c.notifyAll()
		for i, line := range bytes.Split(b, []byte("\n")) {
			if i == 64 {
				break
			}
			var cmd []string
			for _, a := range bytes.Split(line, []byte{0}) {
				cmd = append(cmd, string(a))
			}
			if len(cmd[0]) == 1 {
				cmd[0] = append(execNames, "FUNLOCK")[int(cmd[0][0])%(len(execNames)+1)]
			}
			if err := c.step(cmd, int64(i%3)*40); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := reload(c.s); err != nil {
			t.Fatal(err)
		}
	})
}

// TestExecRandom runs random commands over small pools of names and words.
func TestExecRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 20 {
		c := newExecCheck()
		if run%2 == 0 {
			c.notifyAll()
		}
		for i := range 500 {
			cmd := []string{append(execNames, "FUNLOCK")[rng.IntN(len(execNames)+1)]}
			for range rng.IntN(6) {
				cmd = append(cmd, execWords[rng.IntN(len(execWords))])
			}
			if err := c.step(cmd, int64(rng.IntN(4))*30); err != nil {
				t.Fatalf("run %d step %d: %v", run, i, err)
			}
			if i%100 == 99 {
				s, err := reload(c.s)
				if err != nil {
					t.Fatalf("run %d step %d: %v", run, i, err)
				}
				c.s = s
			}
		}
	}
}

// TestExecTable: every command the state machine executes is in the
// command table with the matching flag, so the server routes it right.
func TestExecTable(t *testing.T) {
	table := commands.New()
	reads, writes := 0, 0
	for _, spec := range table.All() {
		r, w := readHandler(spec.Name) != nil, writeHandler(spec.Name) != nil
		switch {
		case r && w:
			t.Errorf("%s has both a read and a write handler", spec.Name)
		case r:
			reads++
			if !spec.Has(commands.Read) || spec.Has(commands.Write) {
				t.Errorf("read command %s: table has %+v", spec.Name, spec)
			}
		case w:
			writes++
			if !spec.Has(commands.Write) && !loggedReads[spec.Name] {
				t.Errorf("write command %s: table has %+v", spec.Name, spec)
			}
		}
	}
	if reads < 13 || writes < 19 {
		t.Errorf("%d read and %d write keyspace commands in the table, want at least 13 and 19", reads, writes)
	}
	for _, name := range []string{"nosuch", "flock"} {
		if readHandler(name) != nil || writeHandler(name) != nil {
			t.Errorf("%s has a keyspace handler", name)
		}
	}
}
