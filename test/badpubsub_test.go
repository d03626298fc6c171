package test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBadPatternInput: pattern pub/sub and notify-keyspace-events under
// hostile input. A pattern longer than 4096 bytes, or one past a
// connection's 1024, is refused and subscribes nothing; patterns built to
// make matching slow (each 4 KiB against 256 KiB channels: billions of
// steps) never hold up the node: other clients' writes are answered at
// once, the costly subscriber is disconnected, a cheap pattern subscriber
// of the same messages hears them all, and PUBLISH answers.
// Malformed flag strings are refused with Redis's text and change nothing.
func TestBadPatternInput(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.soloClient(t)
	ctx := tctx(t)
	numpat := func() int64 { t.Helper(); return mustInt(t, c, "PUBSUB", "NUMPAT") }

	// Length: 4096 bytes and not one more.
	r := dialRaw(t, n.addr)
	r.send("PSUBSCRIBE", "a*", strings.Repeat("p", 4097))
	if v := r.read(); v.kind != '-' || v.str != "ERR pattern longer than 4096 bytes" {
		t.Fatalf("a 4097-byte pattern: %s", v)
	}
	if v := numpat(); v != 0 {
		t.Fatalf("a refused PSUBSCRIBE subscribed %d patterns", v)
	}
	r.send("PING")
	if v := r.read().String(); v != `+"PONG"` {
		t.Fatalf("after the refusal the connection is in subscribed mode: %s", v)
	}
	r.send("PSUBSCRIBE", strings.Repeat("p", 4096))
	if v := r.read(); v.kind != '*' || len(v.elems) != 3 || v.elems[2].num != 1 {
		t.Fatalf("a 4096-byte pattern: %s", v)
	}

	// Count: 1024 a connection; refusals subscribe nothing.
	many := func(from, to int) []string {
		args := []string{"PSUBSCRIBE"}
		for i := from; i < to; i++ {
			args = append(args, "pat:"+strconv.Itoa(i)+":*")
		}
		return args
	}
	r.send(many(0, 1024)...)
	if v := r.read(); v.kind != '-' || v.str != "ERR too many patterns subscribed by this connection (1024 at most)" {
		t.Fatalf("1025 patterns: %s", v)
	}
	if v := numpat(); v != 1 {
		t.Fatalf("NUMPAT after a refused PSUBSCRIBE = %d", v)
	}
	r.send(many(0, 1023)...)
	for i := range 1023 {
		if v := r.read(); v.kind != '*' || v.elems[2].num != int64(i+2) {
			t.Fatalf("PSUBSCRIBE reply %d: %s", i, v)
		}
	}
	r.send("PSUBSCRIBE", "one-more")
	if v := r.read(); v.kind != '-' {
		t.Fatalf("pattern 1025: %s", v)
	}
	r.send("PSUBSCRIBE", "pat:7:*") // held already: no new one
	if v := r.read(); v.kind != '*' || v.elems[2].num != 1024 {
		t.Fatalf("a pattern held already: %s", v)
	}
	if v := numpat(); v != 1024 {
		t.Fatalf("NUMPAT = %d", v)
	}
	r.send("PUNSUBSCRIBE")
	for range 1024 {
		r.read()
	}
	if v := numpat(); v != 0 {
		t.Fatalf("NUMPAT after PUNSUBSCRIBE = %d", v)
	}

	// Slow patterns: 64 of 4 KiB that backtrack at every byte of a 256
	// KiB channel (a 1 G-step match each), and one cheap one.
	slow := dialRaw(t, n.addr)
	args := []string{"PSUBSCRIBE"}
	for i := range 64 {
		args = append(args, "*"+strings.Repeat("a", 4090)+fmt.Sprintf("%03d", i)+"b")
	}
	slow.send(args...)
	for range 64 {
		slow.read()
	}
	cheap := dialRaw(t, n.addr)
	cheap.send("PSUBSCRIBE", "a*")
	cheap.read()
	long := strings.Repeat("a", 256<<10)
	pub := n.soloClient(t)
	// How promptly is not timed here (a test asserts no speed): what
	// PUBLISH's count may spend is counted in steps by server's
	// TestPublishCountWithinWork, and the apply loop's by
	// TestDeliverDefersCostlyMatches; unbounded matching (64 G steps, minutes)
	// would run past tctx's minute.
	start := time.Now()
	for i := range 4 {
		got, err := pub.Publish(ctx, long, strconv.Itoa(i)).Result()
		if err != nil || got != 1 {
			t.Fatalf("PUBLISH %d = %d %v, want 1 (the cheap subscriber)", i, got, err)
		}
		if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("a SET beside the slow patterns: %v", err)
		}
	}
	t.Logf("4 PUBLISHes of 256 KiB channels against 64 slow patterns and SETs beside them: %v", time.Since(start))
	expectClosed(t, slow, 10*time.Second, "the slow patterns' subscriber")
	for i := range 4 {
		v := cheap.read()
		if v.kind != '*' || len(v.elems) != 4 || v.elems[0].str != "pmessage" || len(v.elems[2].str) != 256<<10 || v.elems[3].str != strconv.Itoa(i) {
			t.Fatalf("the cheap subscriber's message %d: %s", i, v)
		}
	}

	// notify-keyspace-events: malformed strings are refused with Redis's
	// text; a long valid one is taken; the setting is what was last set.
	bad := "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Kg").Err(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"KEq", "K E", "k", "KEA\r\n", "\xff", strings.Repeat("K", 100000) + "?", "é"} {
		if err := c.ConfigSet(ctx, "notify-keyspace-events", v).Err(); err == nil || err.Error() != bad {
			t.Errorf("CONFIG SET notify-keyspace-events %.20q: %v", v, err)
		}
	}
	if err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEA", "maxmemory").Err(); err == nil ||
		err.Error() != "ERR wrong number of arguments for 'config|set' command" {
		t.Errorf("CONFIG SET with a name and no value: %v", err)
	}
	if err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEA", "maxmemory", "lots").Err(); err == nil ||
		!strings.Contains(err.Error(), "'maxmemory'") {
		t.Errorf("CONFIG SET with a bad second pair: %v", err)
	}
	if v, _ := c.ConfigGet(ctx, "notify-keyspace-events").Result(); v["notify-keyspace-events"] != "gK" {
		t.Errorf("after the refusals notify-keyspace-events = %q, want gK", v["notify-keyspace-events"])
	}
	if err := c.ConfigSet(ctx, "notify-keyspace-events", strings.Repeat("A", 400000)+"E").Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.ConfigGet(ctx, "notify-keyspace-events").Result(); v["notify-keyspace-events"] != "AE" {
		t.Errorf("a long valid flag string reads back %q", v["notify-keyspace-events"])
	}

	// PUBSUB with many or long arguments answers in proportion.
	numsub := []any{"PUBSUB", "NUMSUB"}
	for i := range 20000 {
		numsub = append(numsub, "ch"+strconv.Itoa(i))
	}
	if v, err := c.Do(ctx, numsub...).Slice(); err != nil || len(v) != 40000 {
		t.Errorf("PUBSUB NUMSUB of 20000 channels: %d %v", len(v), err)
	}
	if v, err := c.Do(ctx, "PUBSUB", "CHANNELS", strings.Repeat("*a", 2000)).Slice(); err != nil || len(v) != 0 {
		t.Errorf("PUBSUB CHANNELS with a long pattern: %v %v", v, err)
	}
	if !n.alive() {
		t.Fatal("the node died")
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSlowPatternSubscriberOutputLimit: pmessages and keyspace
// notifications count against the pub/sub output limit as messages do: a
// pattern subscriber that never reads is disconnected once 32 MiB wait
// for it, whichever kind filled it, and the writes and other clients go on.
func TestSlowPatternSubscriberOutputLimit(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	pub := n.soloClient(t)
	admin := n.soloClient(t)
	ctx := tctx(t)
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "E$").Err(); err != nil {
		t.Fatal(err)
	}
	stalled := func(pattern string) (*rawConn, int64) {
		sub := dialRaw(t, n.addr)
		sub.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
		id := rawID(t, sub)
		sub.send("PSUBSCRIBE", pattern)
		if v := sub.read(); v.kind != '*' || len(v.elems) != 3 {
			t.Fatalf("PSUBSCRIBE: %v", v)
		}
		if line := clientIDs(t, admin)[id]; !strings.Contains(line, " flags=P ") || !strings.Contains(line, " sub=0 psub=1 ") {
			t.Errorf("CLIENT LIST of a pattern subscriber: %q", line)
		}
		return sub, id
	}
	const msgSize = 16 << 10
	// pmessages of PUBLISHes.
	sub, id := stalled("fire*")
	heard := 0
	for _, cnt := range publishMany(t, pub, "firehose", msgSize, 4000) {
		heard += int(cnt) * msgSize
	}
	waitGone(t, admin, id, 10*time.Second, "a pattern subscriber that never reads")
	expectClosed(t, sub, 10*time.Second, "the pattern subscriber's socket")
	if heard > 48<<20 {
		t.Errorf("the pattern subscriber was counted for %d MiB before it was closed", heard>>20)
	}
	// Keyspace notifications: each SET of a 16 KiB key name is a 16 KiB
	// __keyevent@0__:set message.
	sub, id = stalled("__keyevent@0__:*")
	key := strings.Repeat("k", msgSize)
	for done := 0; done < 4000; done += 64 {
		p := pub.Pipeline()
		for range 64 {
			p.Set(ctx, key, "v", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	waitGone(t, admin, id, 10*time.Second, "a keyspace subscriber that never reads")
	expectClosed(t, sub, 10*time.Second, "the keyspace subscriber's socket")
	if v := mustStr(t, admin, "PING"); v != "PONG" {
		t.Fatalf("PING = %q", v)
	}
}
