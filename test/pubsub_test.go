package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// receive reads n messages from ps, failing after a generous timeout.
func receive(t *testing.T, ps *redis.PubSub, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		m, err := ps.ReceiveTimeout(tctx(t), 10*time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if msg, ok := m.(*redis.Message); ok {
			got = append(got, msg.Channel+"="+msg.Payload)
		}
	}
	return got
}

// noMore checks that nothing more arrives on ps for a while.
func noMore(t *testing.T, ps *redis.PubSub, what string) {
	t.Helper()
	if m, err := ps.ReceiveTimeout(tctx(t), 300*time.Millisecond); err == nil {
		t.Fatalf("%s: unexpected %#v", what, m)
	}
}

// TestPubSubOnCluster: a subscriber on every node, over RESP2 and RESP3,
// hears each message once and in log order, whether it was published
// through the leader, a follower, or a script; PUBLISH answers the
// publishing node's own subscriber count.
func TestPubSubOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)

	var subs []*redis.PubSub
	for i, n := range c.nodes {
		ps := n.clientProto(t, 2+i%2).Subscribe(ctx, "ch", "other")
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the first confirmation
			t.Fatal(err)
		}
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	pubs := []func(i int) (int64, error){
		func(i int) (int64, error) { return fs[0].client(t).Publish(ctx, "ch", fmt.Sprint(i)).Result() },
		func(i int) (int64, error) { return leader.client(t).Publish(ctx, "ch", fmt.Sprint(i)).Result() },
		func(i int) (int64, error) {
			return fs[1].client(t).Eval(ctx, "return redis.call('publish', KEYS[1], ARGV[1])", []string{"ch"}, i).Int64()
		},
	}
	var want []string
	for i := range 30 {
		n, err := pubs[i%3](i)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		// A client's PUBLISH counts the publishing node's subscribers (1);
		// a script's is the same on every replica, 0.
		if wantN := int64(1 - i%3/2); n != wantN {
			t.Fatalf("publish %d answered %d, want %d", i, n, wantN)
		}
		want = append(want, fmt.Sprintf("ch=%d", i))
	}
	for i, ps := range subs {
		if got := receive(t, ps, len(want)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("node %d heard %v, want %v", i, got, want)
		}
		noMore(t, ps, fmt.Sprintf("node %d", i))
	}
	if n := mustInt(t, leader.client(t), "PUBLISH", "nobody", "x"); n != 0 {
		t.Fatalf("PUBLISH to a channel without subscribers = %d", n)
	}

	// After UNSUBSCRIBE nothing more arrives.
	if err := subs[0].Unsubscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	mustInt(t, leader.client(t), "PUBLISH", "ch", "late")
	mustInt(t, leader.client(t), "PUBLISH", "other", "o")
	if got := receive(t, subs[0], 1); got[0] != "other=o" {
		t.Fatalf("after UNSUBSCRIBE ch: %v", got)
	}
}

// TestPubSubNoReplay: a node that restarts does not deliver again the
// messages of the entries it applied before, nor those it replays.
func TestPubSubNoReplay(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	f := c.followers(leader)[0]
	ctx := tctx(t)
	for i := range 20 {
		mustInt(t, leader.client(t), "PUBLISH", "ch", fmt.Sprint("old", i))
	}
	stateHashes(t, c.nodes) // the follower applied them
	f.kill()
	f.start()
	ps := f.client(t).Subscribe(ctx, "ch")
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "publish after the restart", func() bool {
		_, err := do(ctx, c.leader(10*time.Second).client(t), "PUBLISH", "ch", "new")
		return err == nil
	})
	if got := receive(t, ps, 1); got[0] != "ch=new" {
		t.Fatalf("a restarted node delivered %v before the new message", got)
	}
}

// TestSubscribedModeRESP2: a RESP2 connection that listens may only run
// the pub/sub commands, PING (answered as an array) and QUIT/RESET, with
// Redis's error text; RESP3 has no such mode.
func TestSubscribedModeRESP2(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	r := dialRaw(t, n.addr)
	r.send("SUBSCRIBE", "a", "b")
	for _, want := range []string{`*[$"subscribe" $"a" :1]`, `*[$"subscribe" $"b" :2]`} {
		if got := r.read().String(); got != want {
			t.Fatalf("SUBSCRIBE reply %s, want %s", got, want)
		}
	}
	r.send("GET", "k")
	if got := r.read(); got.str != "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context" {
		t.Fatalf("GET while subscribed: %q", got.str)
	}
	r.send("PING")
	if got := r.read().String(); got != `*[$"pong" $""]` {
		t.Fatalf("PING while subscribed: %s", got)
	}
	r.send("UNSUBSCRIBE")
	for _, want := range []string{`*[$"unsubscribe" $"a" :1]`, `*[$"unsubscribe" $"b" :0]`} {
		if got := r.read().String(); got != want {
			t.Fatalf("UNSUBSCRIBE reply %s, want %s", got, want)
		}
	}
	r.send("PING")
	if got := r.read().String(); got != `+"PONG"` {
		t.Fatalf("PING after UNSUBSCRIBE: %s", got)
	}

	// RESP3: confirmations and messages are push frames, and a subscriber
	// may run any command; nulls are _.
	r3 := dialRaw(t, n.addr)
	r3.send("HELLO", "3")
	if got := r3.read(); got.kind != '%' {
		t.Fatalf("HELLO 3 = %s, want a map", got)
	}
	r3.send("SUBSCRIBE", "a")
	if got := r3.read().String(); got != `>[$"subscribe" $"a" :1]` {
		t.Fatalf("RESP3 SUBSCRIBE = %s", got)
	}
	r3.send("GET", "k")
	if got := r3.read().String(); got != "_<null>" {
		t.Fatalf("RESP3 GET while subscribed: %s", got)
	}
	r.send("PUBLISH", "a", "m")
	if got := r.read().String(); got != ":1" {
		t.Fatalf("PUBLISH = %s", got)
	}
	if got := r3.read().String(); got != `>[$"message" $"a" $"m"]` {
		t.Fatalf("RESP3 message = %s", got)
	}
	r3.send("BLPOP", "nothing", "0.05")
	if got := r3.read().String(); got != "_<null>" {
		t.Fatalf("RESP3 BLPOP timed out = %s", got)
	}
}
