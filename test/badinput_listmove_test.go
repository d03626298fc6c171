package test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBadListMoveInput: LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH under
// hostile input. A held lock's name is neither source nor destination
// (WRONGTYPE, the lock and its token unchanged, nothing popped); a move
// into a list at its 4 MiB bound is refused with both lists unchanged; a
// blocked client runs nothing else of its pipeline until it is answered,
// and one that disconnects, or waits with the largest timeout Redis
// accepts, stops counting as blocked when it goes; fifty waiters on one
// list each get exactly one of fifty elements; and the node serves on.
func TestBadListMoveInput(t *testing.T) {
	t.Parallel()
	n, c, ctx, tok, expect := heldLockNode(t, "moves")
	expect("2", "RPUSH", "l", "a", "b")
	for _, args := range [][]any{{"LMOVE", "held", "l", "LEFT", "LEFT"}, {"LMOVE", "l", "held", "LEFT", "LEFT"},
		{"RPOPLPUSH", "l", "held"}, {"RPOPLPUSH", "held", "held"}, {"BLMOVE", "l", "held", "LEFT", "RIGHT", "0"},
		{"BRPOPLPUSH", "held", "l", "0"}} {
		expect(wrongType, args...)
	}
	expect("[a b]", "LRANGE", "l", "0", "-1")
	expect("fencedlock", "TYPE", "held")
	expect(fmt.Sprint(tok), "FENCE", "held")
	// A missing source waits whatever its destination: Redis looks at it
	// only once there is an element.
	expect("error: redis: nil", "BLMOVE", "none", "held", "LEFT", "LEFT", "0.05")
	// Timeouts Redis refuses, and the largest it takes (not waited for).
	expect("error: ERR timeout is negative", "BLMOVE", "none", "l", "LEFT", "LEFT", "9223372036854776")
	expect("error: ERR timeout is not a float or out of range", "BRPOPLPUSH", "none", "l", "1e5000")
	expect("error: ERR timeout is negative", "BRPOPLPUSH", "none", "l", "-inf")

	// The 4 MiB bound: nothing moves into a full list, a rotation of it
	// still runs.
	chunk := strings.Repeat("v", 512<<10-64)
	for i := range 8 {
		expect(fmt.Sprint(i+1), "RPUSH", "full", chunk)
	}
	const tooBig = "error: ERR the key would grow past 4 MiB, the largest hash, list or set a key may hold"
	expect(tooBig, "RPUSH", "full", chunk)
	expect("1", "RPUSH", "src", chunk)
	expect(tooBig, "LMOVE", "src", "full", "LEFT", "LEFT")
	expect(tooBig, "BLMOVE", "src", "full", "LEFT", "LEFT", "0")
	expect("1", "LLEN", "src")
	expect("8", "LLEN", "full")
	for range 3 {
		expect(chunk, "RPOPLPUSH", "full", "full")
	}
	expect("1", "DEL", "full")

	// A blocked client's pipeline waits behind it; a push answers both.
	rc := dialRaw(t, n.addr)
	rc.write(encode("BLMOVE", "q", "d", "LEFT", "RIGHT", "0") + encode("PING", "after"))
	if v, err := rc.tryRead(300 * time.Millisecond); err == nil {
		t.Fatalf("a blocked BLMOVE's pipeline answered %s", v)
	}
	expect("1", "RPUSH", "q", "x")
	if got := rc.read().String(); got != `$"x"` {
		t.Fatalf("BLMOVE = %s", got)
	}
	if got := rc.read().String(); got != `$"after"` {
		t.Fatalf("PING after BLMOVE = %s", got)
	}

	// Clients that leave while blocked, one with the largest timeout, stop
	// counting.
	for _, timeout := range []string{"0", "9223372036854775"} {
		gone := dialRaw(t, n.addr)
		gone.send("BRPOPLPUSH", "never", "d", timeout)
		waitBlocked(t, c, "1")
		gone.nc.Close()
		waitBlocked(t, c, "0")
	}

	// Fifty waiters, fifty elements: one each, none lost, none twice.
	const waiters = 50
	conns := make([]*rawConn, waiters)
	for i := range conns {
		conns[i] = dialRaw(t, n.addr)
		conns[i].send("BLMOVE", "many", "got", "LEFT", "RIGHT", "0")
	}
	waitBlocked(t, c, fmt.Sprint(waiters))
	args := []any{"RPUSH", "many"}
	for i := range waiters {
		args = append(args, fmt.Sprint("e", i))
	}
	expect(fmt.Sprint(waiters), args...)
	seen := map[string]bool{}
	for i, rc := range conns {
		v := rc.read()
		if v.kind != '$' || seen[v.str] {
			t.Fatalf("waiter %d got %s (seen: %v)", i, v, seen[v.str])
		}
		seen[v.str] = true
	}
	waitBlocked(t, c, "0")
	expect(fmt.Sprint(waiters), "LLEN", "got")
	expect("0", "EXISTS", "many")
	if v, err := c.Ping(ctx).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING after the hostile moves: %v %v", v, err)
	}
	if !n.alive() {
		t.Fatal("the server died")
	}
}
