package test

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// The differential test of LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH
// (cluster version 3) against redis-server 7.0.15, byte for byte over
// RESP2 and RESP3: replies and error texts (arity, sides, timeouts,
// WRONGTYPE either way), the lists afterwards, a rotation, inside MULTI
// and scripts, a timeout (a null array, where an empty source inside
// MULTI is a null bulk) and a wait woken by a push; then the keyspace
// events and the tracking invalidations of a move.

// lmSteps are run in order on both servers, each followed by the lists'
// contents.
var lmSteps = [][]string{
	{"DEL", "s", "d", "str"},
	{"LMOVE"}, {"LMOVE", "s", "d", "LEFT"}, {"LMOVE", "s", "d", "LEFT", "RIGHT", "x"}, {"RPOPLPUSH", "s"},
	{"BLMOVE", "s", "d", "LEFT", "RIGHT"}, {"BRPOPLPUSH", "s", "d"},
	// A missing source: null, even into a string.
	{"SET", "str", "v"},
	{"LMOVE", "s", "d", "LEFT", "RIGHT"}, {"LMOVE", "s", "str", "LEFT", "RIGHT"}, {"RPOPLPUSH", "s", "d"},
	{"RPUSH", "s", "a", "b", "c", "d"},
	// Sides before the timeout; then the timeout's errors.
	{"LMOVE", "s", "d", "UP", "RIGHT"}, {"LMOVE", "s", "d", "LEFT", "down"}, {"BLMOVE", "s", "d", "UP", "LEFT", "-1"},
	{"BLMOVE", "s", "d", "LEFT", "LEFT", "-1"}, {"BLMOVE", "s", "d", "LEFT", "LEFT", "x"}, {"BLMOVE", "s", "d", "LEFT", "LEFT", "nan"},
	{"BLMOVE", "s", "d", "LEFT", "LEFT", "1e400"}, {"BRPOPLPUSH", "s", "d", "-0.001"}, {"BRPOPLPUSH", "s", "d", ""},
	{"BRPOPLPUSH", "s", "d", "0x"}, {"BLMOVE", "s", "d", "LEFT", "LEFT", "-inf"},
	// WRONGTYPE: a string source, a string destination (nothing popped).
	{"LMOVE", "str", "d", "LEFT", "LEFT"}, {"LMOVE", "s", "str", "LEFT", "LEFT"}, {"RPOPLPUSH", "s", "str"},
	{"BLMOVE", "s", "str", "LEFT", "LEFT", "0"}, {"BRPOPLPUSH", "str", "d", "0"},
	// Moves, every side, sides in any case; the blocking forms with
	// elements to move.
	{"LMOVE", "s", "d", "left", "Right"}, {"LMOVE", "s", "d", "RIGHT", "LEFT"}, {"RPOPLPUSH", "d", "s"},
	{"BLMOVE", "d", "s", "LEFT", "LEFT", "0"}, {"BRPOPLPUSH", "s", "d", "0.01"},
	// Rotations.
	{"LMOVE", "s", "s", "LEFT", "RIGHT"}, {"LMOVE", "s", "s", "RIGHT", "LEFT"}, {"RPOPLPUSH", "s", "s"},
	{"LMOVE", "s", "s", "LEFT", "LEFT"}, {"BLMOVE", "s", "s", "RIGHT", "RIGHT", "0"},
	// The source emptied, deleted.
	{"LMOVE", "d", "s", "LEFT", "LEFT"}, {"LMOVE", "d", "s", "LEFT", "LEFT"}, {"EXISTS", "d"},
	// Inside MULTI an empty source does not wait: a null bulk.
	{"MULTI"}, {"BLMOVE", "nosrc", "d", "LEFT", "LEFT", "0"}, {"BRPOPLPUSH", "nosrc", "d", "0"}, {"BLMOVE", "nosrc", "d", "UP", "LEFT", "0"},
	{"LMOVE", "s", "d", "LEFT", "RIGHT"}, {"EXEC"},
	// Scripts: LMOVE and RPOPLPUSH run, the blocking two are not allowed.
	{"EVAL", "return redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')", "2", "s", "d"},
	{"EVAL", "return redis.call('RPOPLPUSH', KEYS[1], KEYS[2])", "2", "nosrc", "d"},
	{"EVAL", "return redis.pcall('BLMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT', 0)", "2", "s", "d"},
	{"EVAL", "return redis.pcall('BRPOPLPUSH', KEYS[1], KEYS[2], 0)", "2", "s", "d"},
	{"EVAL", "return redis.call('BLMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT', 0)", "2", "s", "d"},
	{"EVAL", "return redis.pcall('BLMOVE', KEYS[1])", "1", "s"},
	// Timeouts: a null array, RESP2 *-1, for both.
	{"BLMOVE", "nosrc", "d", "LEFT", "LEFT", "0.05"}, {"BRPOPLPUSH", "nosrc", "d", "0.05"}, {"BLMOVE", "nosrc", "str", "LEFT", "LEFT", "0.01"},
	{"DEL", "s", "d", "str"},
}

func TestDiffListMoves(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	fa, ra := diffPubSubSetup(t)
	cases := 0
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			cmd := dialPair(t, fa, ra, proto, &cases)
			for _, step := range lmSteps {
				cmd.do("step", 1, step...)
				cmd.do("then s", 1, "LRANGE", "s", "0", "-1")
				cmd.do("then d", 1, "LRANGE", "d", "0", "-1")
			}
			// A wait woken by a push: the pushed element moves; then one
			// whose destination became a string meanwhile is WRONGTYPE.
			blk := dialPair(t, fa, ra, proto, &cases)
			for _, tc := range []struct{ block, before, push []string }{
				{[]string{"BLMOVE", "q1", "q2", "RIGHT", "LEFT", "0"}, nil, []string{"RPUSH", "q1", "a", "b"}},
				{[]string{"BRPOPLPUSH", "q3", "q2", "0"}, nil, []string{"LMOVE", "q1", "q3", "LEFT", "LEFT"}},
				{[]string{"BLMOVE", "q4", "str", "LEFT", "LEFT", "0"}, []string{"SET", "str", "v"}, []string{"RPUSH", "q4", "x"}},
			} {
				if tc.before != nil {
					cmd.do("before", 1, tc.before...)
				}
				blk.sendOnly(tc.block...)
				time.Sleep(200 * time.Millisecond)
				cmd.do("push", 1, tc.push...)
				blk.expect(fmt.Sprintf("woken %q", tc.block))
				for _, k := range []string{"q1", "q2", "q3", "q4"} {
					cmd.do("then "+k, 1, "LRANGE", k, "0", "-1")
				}
			}
			cmd.do("cleanup", 1, "DEL", "q1", "q2", "q3", "q4", "str")
		})
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}

// The keyspace notifications of the moves, byte for byte: the
// destination's new and lpush/rpush, then the source's lpop/rpop and del;
// a rotation's push then pop; none for a refused or empty move; a woken
// BLMOVE's after the push that woke it.
func TestDiffListMovesNotifications(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	steps := [][]string{
		{"RPUSH", "s", "a", "b", "c"}, {"LMOVE", "s", "d", "LEFT", "RIGHT"}, {"RPOPLPUSH", "s", "d"},
		{"LMOVE", "s", "s", "LEFT", "RIGHT"}, {"LMOVE", "s", "d", "RIGHT", "LEFT"}, {"LMOVE", "s", "d", "LEFT", "LEFT"},
		{"SET", "str", "v"}, {"LMOVE", "d", "str", "LEFT", "LEFT"}, {"LMOVE", "str", "d", "LEFT", "LEFT"},
		{"BLMOVE", "d", "s", "RIGHT", "RIGHT", "0"}, {"BRPOPLPUSH", "d", "d", "0"},
		{"EVAL", "return redis.call('lmove', KEYS[1], KEYS[2], 'left', 'left')", "2", "d", "e"},
		{"MULTI"}, {"LMOVE", "e", "d", "LEFT", "LEFT"}, {"BLMOVE", "none", "d", "LEFT", "LEFT", "0"}, {"EXEC"},
		{"DEL", "s", "d", "e", "str"},
	}
	cases := 0
	for _, proto := range []int{2, 3} {
		for _, flags := range []string{"KEA", "AKEn", "Kl", "Eg", "En"} {
			t.Run(fmt.Sprintf("RESP%d/%q", proto, flags), func(t *testing.T) {
				cmd := dialPair(t, fa, ra, 2, &cases)
				blk := dialPair(t, fa, ra, 2, &cases)
				sub := dialPair(t, fa, ra, proto, &cases)
				cmd.do("config set", 1, "CONFIG", "SET", "notify-keyspace-events", flags)
				sub.do("psubscribe", 1, "PSUBSCRIBE", "__key*__:*")
				sub.do("sync channel", 1, "SUBSCRIBE", "sync")
				inMulti := false
				for i, step := range steps {
					cmd.do("step", 1, step...)
					if inMulti = step[0] == "MULTI" || inMulti && step[0] != "EXEC"; inMulti {
						continue // the sync would be queued: EXEC's events come at once
					}
					cmd.do("sync", 1, "PUBLISH", "sync", fmt.Sprint(i))
					sub.drainUntil(fmt.Sprintf("events of %q", step), "$4\r\nsync\r\n")
				}
				blk.sendOnly("BLMOVE", "w", "x", "LEFT", "RIGHT", "0")
				time.Sleep(200 * time.Millisecond)
				cmd.do("wake", 1, "RPUSH", "w", "1")
				blk.expect("woken BLMOVE")
				cmd.do("sync", 1, "PUBLISH", "sync", "woken")
				sub.drainUntil("events of a woken BLMOVE", "$4\r\nsync\r\n")
				cmd.do("cleanup", 1, "DEL", "w", "x")
				sub.do("punsubscribe", 1, "PUNSUBSCRIBE")
			})
		}
	}
	t.Logf("%d byte-for-byte comparisons", cases)
}

// The invalidations of a move, frame for frame: the destination's, then
// the source's, each its own push; a rotation's once; and tracking.tcl's
// unblocked BLMOVE: its reply, then the invalidation.
func TestDiffListMovesTracking(t *testing.T) {
	t.Parallel()
	fa, ra := diffPubSubSetup(t)
	p := newTrackPair(t, fa, ra)
	p.hello("c", "3")
	p.do("w", "RPUSH", "s", "a", "b")
	p.do("w", "RPUSH", "d", "z")
	p.do("c", "CLIENT", "TRACKING", "on")
	for _, tc := range []struct {
		step []string
		n    int // invalidations
	}{
		{[]string{"LMOVE", "s", "d", "LEFT", "RIGHT"}, 2}, {[]string{"RPOPLPUSH", "s", "s"}, 1},
		{[]string{"RPOPLPUSH", "s", "d"}, 2}, {[]string{"LMOVE", "d", "d", "LEFT", "RIGHT"}, 1},
		{[]string{"LMOVE", "s", "d", "LEFT", "RIGHT"}, 0}, // s is gone: nothing moves
	} {
		p.do("c", "LRANGE", "s", "0", "-1")
		p.do("c", "LRANGE", "d", "0", "-1")
		p.do("w", tc.step...)
		time.Sleep(100 * time.Millisecond)
		p.frames("c", tc.n, tc.step...)
		p.settle("c") // nothing more, then PING's reply
	}
	// tracking.tcl: the reply first, then the invalidation.
	p.do("c", "LRANGE", "list2", "0", "-1")
	fc, rc := p.conn("c")
	fc.send("BLMOVE", "list1", "list2", "left", "left", "0")
	rc.send("BLMOVE", "list1", "list2", "left", "left", "0")
	time.Sleep(200 * time.Millisecond)
	p.do("w", "RPUSH", "list1", "foo")
	p.frames("c", 2, "unblocked BLMOVE")
	p.settle("c")
	p.do("w", "DEL", "s", "d", "list1", "list2")
}
