package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential test of pattern pub/sub and keyspace notifications: the
// same commands go to a fenced node and to a real redis-server 7.0.15, and
// what comes back is compared byte for byte, replies and pushes alike,
// over RESP2 and RESP3: PSUBSCRIBE, PUNSUBSCRIBE, PUBSUB and their errors,
// the subscribed mode, glob patterns matched by PSUBSCRIBE, and the
// notifications each write command raises under several
// notify-keyspace-events settings.
//
// Only what Redis leaves to hash-table order is kept out: one pattern of a
// connection matches a message at a time, and PUBSUB CHANNELS lists one
// channel.

// wire is a connection whose replies are read as the exact bytes sent.
type wire struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialWire(t *testing.T, addr string) *wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}
}

func (w *wire) send(args ...string) {
	w.t.Helper()
	w.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(w.nc, encode(args...)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// read returns one value's bytes; "" when none came within d.
func (w *wire) readWithin(d time.Duration) string {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(d))
	var b bytes.Buffer
	if err := readRESP(w.r, &b); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() && b.Len() == 0 {
			return ""
		}
		w.t.Fatalf("read: %v (after %q)", err, b.String())
	}
	return b.String()
}

func (w *wire) read() string {
	w.t.Helper()
	v := w.readWithin(10 * time.Second)
	if v == "" {
		w.t.Fatal("no reply within 10 s")
	}
	return v
}

// readRESP copies one RESP2 or RESP3 value from r to b, byte for byte.
func readRESP(r *bufio.Reader, b *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("bad line %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '$', '!', '=':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '>', '~':
		for range max(n, 0) {
			if err := readRESP(r, b); err != nil {
				return err
			}
		}
	case '%', '|':
		for range 2 * n {
			if err := readRESP(r, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// pair is one wire to each server; every command goes to both, and their
// bytes must agree.
type pair struct {
	t     *testing.T
	f, r  *wire
	cases *int
}

func dialPair(t *testing.T, fencedAddr, redisAddr string, proto int, cases *int) *pair {
	p := &pair{t: t, f: dialWire(t, fencedAddr), r: dialWire(t, redisAddr), cases: cases}
	if proto == 3 {
		p.f.send("HELLO", "3")
		p.r.send("HELLO", "3")
		p.f.read()
		p.r.read()
	}
	return p
}

// do sends args to both and compares the next n values each answers.
func (p *pair) do(what string, n int, args ...string) string {
	p.t.Helper()
	p.f.send(args...)
	p.r.send(args...)
	var out string
	for range n {
		f, r := p.f.read(), p.r.read()
		*p.cases++
		if f != r {
			p.t.Errorf("%s: %q\n  fenced: %q\n  redis:  %q", what, args, f, r)
		}
		out += r
	}
	return out
}

// sendOnly sends args to both without reading.
func (p *pair) sendOnly(args ...string) {
	p.f.send(args...)
	p.r.send(args...)
}

// expect compares the next value each side sends (a push).
func (p *pair) expect(what string) string {
	p.t.Helper()
	f, r := p.f.read(), p.r.read()
	*p.cases++
	if f != r {
		p.t.Errorf("%s:\n  fenced: %q\n  redis:  %q", what, f, r)
	}
	return r
}

// drainUntil reads each side's pushes up to and including the one that
// contains marker, and compares the two sequences.
func (p *pair) drainUntil(what, marker string) {
	p.t.Helper()
	collect := func(w *wire) []string {
		var got []string
		for {
			v := w.read()
			got = append(got, v)
			if strings.Contains(v, marker) {
				return got
			}
		}
	}
	f, r := collect(p.f), collect(p.r)
	*p.cases++
	if strings.Join(f, "") != strings.Join(r, "") {
		p.t.Errorf("%s:\n  fenced: %q\n  redis:  %q", what, f, r)
	}
}

func diffPubSubSetup(t *testing.T) (fenced, redis string) {
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})
	return fd.addr, rd.leader
}

func TestDiffPatternPubSub(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	cases := 0
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			sub := dialPair(t, fa, ra, proto, &cases)
			pub := dialPair(t, fa, ra, 2, &cases)
			// PSUBSCRIBE basics, as Redis's own pubsub.tcl.
			sub.do("psubscribe two", 2, "PSUBSCRIBE", "foo.*", "bar.*")
			for _, ch := range []string{"foo.1", "bar.1", "foo1", "barfoo.1", "qux.1"} {
				pub.do("publish", 1, "PUBLISH", ch, "hello")
			}
			sub.expect("pmessage foo.1")
			sub.expect("pmessage bar.1")
			sub.do("punsubscribe one", 1, "PUNSUBSCRIBE", "foo.*")
			pub.do("publish after punsubscribe", 1, "PUBLISH", "foo.1", "hello")
			pub.do("publish after punsubscribe", 1, "PUBLISH", "bar.1", "hello")
			sub.expect("pmessage bar.1 again")
			// A channel and a matching pattern: message, then pmessage,
			// and PUBLISH counts both; the counts include patterns.
			sub.do("subscribe beside a pattern", 1, "SUBSCRIBE", "bar.x")
			sub.do("psubscribe again", 1, "PSUBSCRIBE", "bar.*")
			pub.do("publish to both", 1, "PUBLISH", "bar.x", "m")
			sub.expect("message")
			sub.expect("pmessage")
			if proto == 2 {
				sub.do("GET while subscribed", 1, "GET", "k")
				sub.do("PUBSUB while subscribed", 1, "PUBSUB", "NUMPAT")
				sub.do("CONFIG GET while subscribed", 1, "CONFIG", "GET", "maxmemory")
				sub.do("PING while subscribed", 1, "PING")
				sub.do("PING msg while subscribed", 1, "PING", "x")
			} else {
				sub.do("PING in RESP3", 1, "PING")
				sub.do("PUBSUB in RESP3", 1, "PUBSUB", "NUMPAT")
			}
			sub.do("unsubscribe, a pattern left", 1, "UNSUBSCRIBE")
			sub.do("unsubscribe none left", 1, "UNSUBSCRIBE")
			sub.do("punsubscribe all", 1, "PUNSUBSCRIBE")
			sub.do("punsubscribe none", 1, "PUNSUBSCRIBE")
			sub.do("punsubscribe not subscribed", 3, "PUNSUBSCRIBE", "foo.*", "bar.*", "quux.*")
			// PUNSUBSCRIBE without arguments goes in subscription order.
			sub.do("psubscribe three", 3, "PSUBSCRIBE", "c.*", "a.*", "b.*")
			sub.do("psubscribe twice", 1, "PSUBSCRIBE", "a.*")
			sub.do("punsubscribe all in order", 3, "PUNSUBSCRIBE")
			sub.do("PING after", 1, "PING")
			// Errors.
			sub.do("psubscribe no args", 1, "PSUBSCRIBE")
			sub.do("pubsub no args", 1, "PUBSUB")
		})
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}

// PUBSUB's subcommands and errors, from a connection that is not
// subscribed, with subscribers on other connections.
func TestDiffPubSubIntrospection(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	cases := 0
	s1 := dialPair(t, fa, ra, 2, &cases)
	s2 := dialPair(t, fa, ra, 3, &cases)
	s1.do("psubscribe", 2, "PSUBSCRIBE", "foo*", "bar*")
	s2.do("psubscribe", 2, "PSUBSCRIBE", "foo*", "baz*")
	s2.do("subscribe", 1, "SUBSCRIBE", "chan1")
	for _, proto := range []int{2, 3} {
		c := dialPair(t, fa, ra, proto, &cases)
		for _, args := range [][]string{
			{"PUBSUB", "NUMPAT"}, {"pubsub", "numpat"}, {"PUBSUB", "NUMSUB"}, {"PUBSUB", "NUMSUB", "chan1", "foo", "chan1"},
			{"PUBSUB", "CHANNELS"}, {"PUBSUB", "CHANNELS", "ch*"}, {"PUBSUB", "CHANNELS", "x*"}, {"PUBSUB", "CHANNELS", "[a-c]han?"},
			{"PUBSUB", "SHARDCHANNELS"}, {"PUBSUB", "SHARDCHANNELS", "*"}, {"PUBSUB", "SHARDNUMSUB"}, {"PUBSUB", "SHARDNUMSUB", "a", "b"},
			{"PUBSUB", "HELP"}, {"pubsub", "help"},
			{"PUBSUB", "NUMPAT", "x"}, {"PUBSUB", "HELP", "x"}, {"PUBSUB", "CHANNELS", "a", "b"}, {"PUBSUB", "channels", "a", "b"},
			{"PUBSUB", "SHARDCHANNELS", "a", "b"}, {"PUBSUB", "FOO"}, {"pubsub", "foo", "bar"}, {"PUBSUB", strings.Repeat("x", 200)},
			{"PUBSUB", "a\r\nb"}, {"PUBSUB", "a\x00b"}, {"PUBSUB"},
			{"PUBLISH", "foo1", "m"}, {"PUBLISH", "chan1", "m"}, {"PUBLISH", "nothing", "m"},
		} {
			c.do("introspection", 1, args...)
		}
	}
	for range 2 { // a PUBLISH of each from both connections above
		s1.expect("pmessage foo*")
		s2.expect("pmessage foo*")
		s2.expect("message chan1")
	}
	s1.do("punsubscribe", 2, "PUNSUBSCRIBE")
	c := dialPair(t, fa, ra, 2, &cases)
	c.do("numpat after one left", 1, "PUBSUB", "NUMPAT")
	t.Logf("%d byte-for-byte comparisons", cases)
}

// globCases are (pattern, channel) pairs: Redis's own test suite's and the
// parser's edges. Each is put to PSUBSCRIBE and PUBLISH on both servers.
var globCases = [][2]string{
	{"foo*", "foo_a"}, {"foo*", "key_x"}, {"foo.*", "foo1"}, {"*", "x"}, {"*", ""}, {"**", ""}, {"?", ""},
	{"a?c", "abc"}, {"a?c", "ac"}, {"[a-c]x", "bx"}, {"[c-a]x", "bx"}, {"[^a-c]x", "bx"}, {"[^a-c]x", "dx"},
	{`[\]]`, "]"}, {`[\-]`, "-"}, {"[]]", "]"}, {"[]", "a"}, {"[abc", "a"}, {"[abc", "d"}, {"[", "a"}, {"[^", "a"},
	{"[a-", "-"}, {"[a-", "b"}, {`[a-\]`, "_"}, {`[a-\]`, "["}, {`[a\`, `\`}, {`a\*`, "a*"}, {`a\*`, "ab"}, {`\`, `\`},
	{`a\`, `a\`}, {`\?`, "?"}, {"a*b", "a"}, {"*a", "ba"}, {"a**b", "axxb"}, {"*[0-9]", "key9"}, {"h[^e]llo", "hello"},
	{"h*llo", "heeeello"}, {"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 40)},
	{strings.Repeat("*a", 1000), strings.Repeat("a", 1200)}, {strings.Repeat("*a", 1001), strings.Repeat("a", 1200)},
	{"*\x00*", "a\x00b"}, {"[\x00-\x02]", "\x01"}, {"\xff*", "\xff\xfe"},
}

func TestDiffGlob(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	cases := 0
	sub := dialPair(t, fa, ra, 3, &cases)
	pub := dialPair(t, fa, ra, 2, &cases)
	sub.do("sync channel", 1, "SUBSCRIBE", "sync")
	for i, gc := range globCases {
		sub.do("psubscribe", 1, "PSUBSCRIBE", gc[0])
		pub.do("publish", 1, "PUBLISH", gc[1], "m")
		// The sync message reaches the subscriber once by its channel
		// and once more if the pattern matches "sync" too.
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(pub.do("sync", 1, "PUBLISH", "sync", strconv.Itoa(i)), ":")))
		sub.drainUntil(fmt.Sprintf("pattern %.40q channel %.40q", gc[0], gc[1]), "$4\r\nsync\r\n")
		for range n - 1 {
			sub.expect("the sync message by the pattern")
		}
		sub.do("punsubscribe", 1, "PUNSUBSCRIBE", gc[0])
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}

// notifyFlags are the notify-keyspace-events settings the sequences run
// under: all, all with new-key events, masks that keep a class or a kind of
// message only, and none.
var notifyFlags = []string{"KEA", "AKEn", "Kg$", "El", "Ehx", "Ks", "K", ""}

// notifySteps are the writes whose notifications are compared, each
// followed by EXISTS of its key (which makes Redis expire a key whose
// deadline passed, where fenced deleted it at once) and a sync message.
var notifySteps = [][]string{
	{"SET", "k", "v"}, {"SET", "k", "w"}, {"SET", "k", "v", "EX", "100"}, {"SET", "k", "v", "KEEPTTL"},
	{"SET", "k", "v", "NX"}, {"SET", "x", "v", "XX"}, {"SET", "k", "v", "GET"}, {"SET", "p", "v", "PXAT", "1000"},
	{"SETNX", "n1", "v"}, {"SETNX", "n1", "v"}, {"SETEX", "k", "100", "v"}, {"PSETEX", "k", "100000", "v"}, {"SETEX", "k", "0", "v"},
	{"GETSET", "k", "g"}, {"MSET", "m1", "1", "m2", "2"}, {"MSETNX", "m3", "1", "m4", "2"}, {"MSETNX", "m3", "1", "m5", "2"},
	{"GETEX", "k", "EX", "100"}, {"GETEX", "k", "PERSIST"}, {"GETEX", "k", "PERSIST"}, {"GETEX", "k"}, {"GETEX", "k", "PXAT", "1000"},
	{"GETEX", "nokey", "EX", "10"}, {"SET", "k", "v"}, {"GETDEL", "k"}, {"GETDEL", "k"},
	{"APPEND", "a", "x"}, {"APPEND", "a", "y"}, {"SETRANGE", "a", "5", "z"}, {"SETRANGE", "sr", "2", "x"}, {"SETRANGE", "sr2", "2", ""},
	{"INCR", "i"}, {"INCRBY", "i", "5"}, {"DECR", "i"}, {"DECRBY", "i", "2"}, {"INCRBYFLOAT", "f", "1.5"}, {"INCR", "a"},
	{"DEL", "i", "nokey", "f"}, {"UNLINK", "a"}, {"SET", "e", "v"}, {"EXPIRE", "e", "100"}, {"PEXPIRE", "e", "100000", "XX"},
	{"EXPIRE", "e", "100", "NX"}, {"PERSIST", "e"}, {"PERSIST", "e"}, {"EXPIREAT", "e", "4102444800"}, {"PEXPIREAT", "e", "4102444800000"},
	{"EXPIRE", "e", "-1"}, {"EXPIRE", "e", "10"}, {"SET", "e", "v"}, {"PEXPIRE", "e", "0"},
	{"HSET", "h", "a", "1", "b", "2"}, {"HSET", "h", "a", "1"}, {"HINCRBY", "h", "a", "5"}, {"HINCRBY", "h2", "a", "1"},
	{"HDEL", "h", "zz"}, {"HDEL", "h", "a"}, {"HDEL", "h", "b"}, {"HSET", "m1", "a", "1"},
	{"LPUSH", "l", "a", "b"}, {"RPUSH", "l", "c"}, {"LPOP", "l"}, {"LPOP", "l", "0"}, {"LPOP", "l", "5"}, {"LPOP", "l"},
	{"RPUSH", "l2", "x"}, {"BLPOP", "nol", "l2", "0"},
	{"SADD", "st", "a", "b"}, {"SADD", "st", "a"}, {"SREM", "st", "zz"}, {"SREM", "st", "a"}, {"SPOP", "st", "5"}, {"SPOP", "st", "1"},
	{"SADD", "st2", "x"}, {"SPOP", "st2"}, {"SADD", "st3", "1", "2"}, {"COPY", "st3", "st4"}, {"RENAME", "st4", "st5"}, {"SREM", "st5", "1", "2"},
	{"EVAL", "redis.call('set', KEYS[1], 'x') redis.call('publish', 'sideband', 'm') redis.call('hset', KEYS[2], 'f', 'v') return redis.call('del', KEYS[1], KEYS[2])", "2", "s1", "s2"},
	{"EVAL", "redis.call('incr', KEYS[1]) return redis.pcall('lpush', KEYS[1], 'v')", "1", "s3"},
	{"SET", "r1", "v", "EX", "100"}, {"RENAME", "r1", "r2"}, {"RENAME", "r2", "r2"}, {"RENAMENX", "r2", "m1"},
	{"COPY", "r2", "r3"}, {"COPY", "r2", "r3"}, {"COPY", "r2", "r3", "REPLACE"}, {"RENAME", "r3", "r2"},
	{"DEL", "k", "n1", "m1", "m2", "m3", "m4", "sr", "h2", "l", "s3", "e", "r2", "st3"},
}

func TestDiffKeyspaceNotifications(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	cases := 0
	for _, proto := range []int{2, 3} {
		for _, flags := range notifyFlags {
			t.Run(fmt.Sprintf("RESP%d/%q", proto, flags), func(t *testing.T) {
				cmd := dialPair(t, fa, ra, 2, &cases)
				sub := dialPair(t, fa, ra, proto, &cases)
				cmd.do("config set", 1, "CONFIG", "SET", "notify-keyspace-events", flags)
				cmd.do("config get", 1, "CONFIG", "GET", "notify-keyspace-events")
				sub.do("psubscribe", 1, "PSUBSCRIBE", "__key*__:*")
				sub.do("sync channel", 1, "SUBSCRIBE", "sync")
				for i, step := range notifySteps {
					cmd.do("step", 1, step...)
					key := step[1]
					if step[0] == "EVAL" || step[0] == "BLPOP" {
						key = "nokey"
					}
					cmd.do("exists", 1, "EXISTS", key)
					cmd.do("sync", 1, "PUBLISH", "sync", strconv.Itoa(i))
					sub.drainUntil(fmt.Sprintf("events of %q", step), "$4\r\nsync\r\n")
				}
				// A BLPOP that waits: the push, then the pop it serves.
				waiter := dialPair(t, fa, ra, 2, &cases)
				waiter.sendOnly("BLPOP", "bl", "0")
				time.Sleep(200 * time.Millisecond)
				cmd.do("push to a waiter", 1, "RPUSH", "bl", "x")
				waiter.expect("BLPOP served")
				cmd.do("sync", 1, "PUBLISH", "sync", "blpop")
				sub.drainUntil("events of a served BLPOP", "$4\r\nsync\r\n")
				// A deadline that passes on its own: Redis's active expiry,
				// fenced's tick.
				cmd.do("short TTL", 1, "SET", "gone", "v", "PX", "50")
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					f, r := cmd.f, cmd.r
					f.send("EXISTS", "gone")
					r.send("EXISTS", "gone")
					if fv, rv := f.read(), r.read(); fv == ":0\r\n" && rv == ":0\r\n" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the key did not expire")
					}
				}
				time.Sleep(300 * time.Millisecond) // fenced's tick has been applied
				cmd.do("sync", 1, "PUBLISH", "sync", "expired")
				sub.drainUntil("events of an expiry", "$4\r\nsync\r\n")
				sub.do("punsubscribe", 1, "PUNSUBSCRIBE")
				cmd.do("flush keys", 1, "DEL", "k", "p", "bl", "gone", "h", "l2")
			})
		}
	}
	// The flag strings themselves: CONFIG GET's canonical form, and the
	// refusals.
	c := dialPair(t, fa, ra, 2, &cases)
	for _, v := range []string{"gKE", "$lshzxeKE", "KA", "EA", "KEAn", "AA$$", "g$lshzxetd", "mn", "Kzs", "dte", "AKEm", "KEq", "K E", "k", "\x00", "K\x00q", "q\x00", strings.Repeat("A", 5000)} {
		c.do("config set "+v, 1, "CONFIG", "SET", "notify-keyspace-events", v)
		c.do("config get", 1, "CONFIG", "GET", "notify-keyspace-events")
	}
	c.do("config set", 1, "CONFIG", "SET", "notify-keyspace-events", "")
	t.Logf("%d byte-for-byte comparisons", cases)
}

// A PSUBSCRIBE pattern is allowed by a user's channel patterns only as
// written (or by &*), where SUBSCRIBE and PUBLISH channels are matched
// against them, as Redis 7.0 checks them.
func TestDiffPatternACL(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	cases := 0
	admin := dialPair(t, fa, ra, 2, &cases)
	admin.do("acl setuser", 1, "ACL", "SETUSER", "psub", "on", ">pw", "~*", "resetchannels", "&foo:*", "&bar", "+@all")
	admin.do("acl setuser", 1, "ACL", "SETUSER", "all", "on", ">pw", "~*", "allchannels", "+@all")
	for _, proto := range []int{2, 3} {
		u := dialPair(t, fa, ra, proto, &cases)
		u.do("auth", 1, "AUTH", "psub", "pw")
		u.do("psubscribe as written", 1, "PSUBSCRIBE", "foo:*")
		u.do("psubscribe a channel the pattern covers", 1, "PSUBSCRIBE", "foo:1")
		u.do("psubscribe a literal channel", 1, "PSUBSCRIBE", "bar")
		u.do("psubscribe all", 1, "PSUBSCRIBE", "*")
		u.do("psubscribe, one refused", 1, "PSUBSCRIBE", "bar", "baz")
		u.do("subscribe matched", 1, "SUBSCRIBE", "foo:1")
		u.do("punsubscribe is free", 1, "PUNSUBSCRIBE", "nope")
		a := dialPair(t, fa, ra, proto, &cases)
		a.do("auth", 1, "AUTH", "all", "pw")
		a.do("psubscribe anything", 2, "PSUBSCRIBE", "*", "x?")
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}
