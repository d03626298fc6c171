package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// receiveP reads pmessages from ps until one on channel with payload
// arrives, and returns them all as "pattern channel payload".
func receiveP(t *testing.T, ps *redis.PubSub, channel, payload string) []string {
	t.Helper()
	var got []string
	for {
		m, err := ps.ReceiveTimeout(tctx(t), 15*time.Second)
		if err != nil {
			t.Fatalf("after %d messages (last %v): %v", len(got), got[max(0, len(got)-3):], err)
		}
		msg, ok := m.(*redis.Message)
		if !ok {
			continue
		}
		got = append(got, msg.Pattern+" "+msg.Channel+" "+msg.Payload)
		if msg.Channel == channel && msg.Payload == payload {
			return got
		}
	}
}

// TestKeyspaceEventsOnCluster: notify-keyspace-events is set through a
// follower and holds on every node; a subscriber of '__key*__:*' on each of
// the three nodes, over RESP2 and RESP3, hears the same notifications in
// the same order, for writes sent through every node, scripts, and keys
// that expire on their own (the leader's ticks), and PUBLISHes among them.
func TestKeyspaceEventsOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)
	if err := fs[0].client(t).ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		// The node applied it before answering, or soon after: every
		// node's CONFIG GET reads the cluster's setting.
		eventually(t, 10*time.Second, "CONFIG GET on "+n.addr, func() bool {
			v, err := n.client(t).ConfigGet(ctx, "notify-keyspace-events").Result()
			return err == nil && v["notify-keyspace-events"] == "AKE"
		})
	}
	var subs []*redis.PubSub
	for i, n := range c.nodes {
		ps := n.clientProto(t, 2+i%2).PSubscribe(ctx, "__key*__:*")
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		// And a channel of keyspace notifications, to hear a message and
		// a pmessage for one event.
		if err := ps.Subscribe(ctx, "__keyevent@0__:del"); err != nil {
			t.Fatal(err)
		}
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	via := []*redis.Client{leader.client(t), fs[0].client(t), fs[1].client(t)}
	for i := range 12 {
		cl := via[i%3]
		k := fmt.Sprintf("k%d", i)
		for _, args := range [][]any{
			{"SET", k, "v", "PX", "150"}, // expires through the leader's tick
			{"INCR", "n"}, {"HSET", "h", "f", i}, {"LPUSH", "l", i},
			{"EVAL", "redis.call('set', KEYS[1], 'x') redis.call('publish', '__keyspace@0__:note', 'p') return redis.call('del', KEYS[1])", 1, "s"},
			{"EXPIRE", "n", 100}, {"PERSIST", "n"},
		} {
			if _, err := do(ctx, cl, args...); err != nil {
				t.Fatalf("%v through node %d: %v", args, i%3, err)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // the last keys' deadlines pass
	if err := fs[1].client(t).Set(ctx, "end", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var seqs [][]string
	for i, ps := range subs {
		seqs = append(seqs, receiveP(t, ps, "__keyevent@0__:set", "end"))
		if i > 0 && !slices.Equal(seqs[i], seqs[0]) {
			t.Fatalf("node %d heard\n %v\nnode 0 heard\n %v", i, seqs[i], seqs[0])
		}
	}
	all := strings.Join(seqs[0], "\n")
	for _, want := range []string{
		"__key*__:* __keyevent@0__:expired k11", "__key*__:* __keyspace@0__:k0 expired", "__key*__:* __keyevent@0__:incrby n",
		"__key*__:* __keyevent@0__:hset h", "__key*__:* __keyevent@0__:lpush l", "__key*__:* __keyspace@0__:note p",
		" __keyevent@0__:del s", "__key*__:* __keyevent@0__:del s", "__key*__:* __keyevent@0__:persist n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q among the %d notifications", want, len(seqs[0]))
		}
	}
	// 12 keys expired, each once, and each after it was set.
	if n := strings.Count(all, "__keyevent@0__:expired"); n != 12 {
		t.Errorf("%d expired events, want 12", n)
	}
	if i, j := strings.Index(all, "__keyspace@0__:k3 set"), strings.Index(all, "__keyspace@0__:k3 expired"); i < 0 || j < i {
		t.Errorf("k3: set at %d, expired at %d", i, j)
	}
	// A script's notifications and PUBLISH keep their order: set, the
	// message, del.
	if i := strings.Index(all, "__keyevent@0__:set s"); i < 0 || !strings.HasPrefix(all[i:], "__keyevent@0__:set s\n__key*__:* __keyspace@0__:note p\n__key*__:* __keyspace@0__:s del\n") {
		t.Errorf("a script's events out of order near %q", all[max(0, i-40):min(len(all), i+200)])
	}

	// The setting is replicated state: a restarted node (after a snapshot)
	// has it and raises the events again.
	if _, err := do(ctx, leader.client(t), "RAFT.SNAPSHOT"); err != nil {
		t.Fatal(err)
	}
	f := fs[1]
	f.kill()
	f.start()
	eventually(t, 20*time.Second, "the restarted node's CONFIG GET", func() bool {
		v, err := f.client(t).ConfigGet(ctx, "notify-keyspace-events").Result()
		return err == nil && v["notify-keyspace-events"] == "AKE"
	})
	ps := f.client(t).PSubscribe(ctx, "__keyevent@0__:*")
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a write after the restart", func() bool {
		_, err := do(ctx, c.leader(10*time.Second).client(t), "SET", "after-restart", "1")
		return err == nil
	})
	if got := receiveP(t, ps, "__keyevent@0__:set", "after-restart"); len(got) != 1 {
		t.Fatalf("the restarted node delivered %v", got)
	}
}

// TestPatternPubSubOnCluster: a pattern subscriber on every node hears
// each message once, in log order, published through any node or a
// script; PUBLISH answers the publishing node's receivers, patterns
// included; PUBSUB answers for its own node; RESET and a closed connection
// end a connection's patterns.
func TestPatternPubSubOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	fs := c.followers(leader)
	ctx := tctx(t)
	nodes := []*node{leader, fs[0], fs[1]}
	var subs []*redis.PubSub
	for i, n := range nodes {
		ps := n.clientProto(t, 3-i%2).PSubscribe(ctx, "news.*")
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	// The leader's subscriber also listens on news.a itself.
	if err := subs[0].Subscribe(ctx, "news.a"); err != nil {
		t.Fatal(err)
	}
	if _, err := subs[0].Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 18 {
		ch := []string{"news.a", "news.b", "other"}[i%3]
		var n int64
		var err error
		if i%4 == 3 {
			n, err = nodes[i%3].client(t).Eval(ctx, "return redis.call('publish', KEYS[1], ARGV[1])", []string{ch}, i).Int64()
		} else {
			n, err = nodes[i%3].client(t).Publish(ctx, ch, fmt.Sprint(i)).Result()
		}
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		wantN := int64(0)
		switch {
		case i%4 == 3: // a script's PUBLISH answers 0 on every replica
		case ch == "news.a" && i%3 == 0:
			wantN = 2 // the leader's subscriber, by channel and by pattern
		case ch != "other":
			wantN = 1
		}
		if n != wantN {
			t.Fatalf("publish %d to %s through node %d answered %d, want %d", i, ch, i%3, n, wantN)
		}
		if ch != "other" {
			want = append(want, fmt.Sprintf("news.* %s %d", ch, i))
		}
	}
	mustInt(t, leader.client(t), "PUBLISH", "news.end", "x")
	want = append(want, "news.* news.end x")
	for i, ps := range subs {
		got := receiveP(t, ps, "news.end", "x")
		if i == 0 { // the channel's messages come before their pmessages
			var only []string
			for _, g := range got {
				if !strings.HasPrefix(g, " ") {
					only = append(only, g)
				} else if !slices.Contains(got, "news.*"+g) {
					t.Fatalf("a message %q without its pmessage", g)
				}
			}
			if n := len(got) - len(only); n != 6 {
				t.Fatalf("node 0 heard %d messages of news.a, want 6", n)
			}
			for j, g := range got[:len(got)-1] {
				if strings.HasPrefix(g, " ") && got[j+1] != "news.*"+g {
					t.Fatalf("message %q not followed by its pmessage: %q", g, got[j+1])
				}
			}
			got = only
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("node %d heard\n %v\nwant\n %v", i, got, want)
		}
	}
	for i, n := range nodes {
		if v := mustInt(t, n.client(t), "PUBSUB", "NUMPAT"); v != 1 {
			t.Errorf("PUBSUB NUMPAT on node %d = %d", i, v)
		}
	}
	// RESET ends a connection's patterns; so does closing it.
	r := dialRaw(t, fs[0].addr)
	r.send("PSUBSCRIBE", "x.*", "y.*")
	r.read()
	r.read()
	if v := mustInt(t, fs[0].client(t), "PUBSUB", "NUMPAT"); v != 3 {
		t.Fatalf("NUMPAT with x.* and y.* = %d", v)
	}
	r.send("RESET")
	if got := r.read().String(); got != `+"RESET"` {
		t.Fatalf("RESET: %s", got)
	}
	if v := mustInt(t, fs[0].client(t), "PUBSUB", "NUMPAT"); v != 1 {
		t.Fatalf("NUMPAT after RESET = %d", v)
	}
	r.send("PSUBSCRIBE", "z.*")
	r.read()
	r.nc.Close()
	subs[1].Close()
	eventually(t, 10*time.Second, "closed connections' patterns to go", func() bool {
		return mustInt(t, fs[0].client(t), "PUBSUB", "NUMPAT") == 0
	})
	if v := mustInt(t, fs[0].client(t), "PUBLISH", "news.a", "late"); v != 0 {
		t.Fatalf("PUBLISH with no subscriber left on the node = %d", v)
	}
}
