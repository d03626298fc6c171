package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/lockstate"
)

// At cluster version 2 (a member on an older binary holds the cluster
// there) PSUBSCRIBE, PUNSUBSCRIBE and PUBSUB are unknown, in the words of a
// binary without them, and notify-keyspace-events is the immutable ""
// it was: nothing is proposed, no event raised.
func TestVersionTwoHasNoPatterns(t *testing.T) {
	s := startServerWith(t, func(c *Config) { c.State.MaxVersion = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 2)
	before, _ := s.node.StateHash()
	for _, args := range [][]any{{"PSUBSCRIBE", "a*"}, {"punsubscribe"}, {"PUBSUB", "NUMPAT"}, {"pubsub"}} {
		var b strings.Builder
		for _, a := range args[1:] {
			b.WriteString("'" + a.(string) + "' ")
		}
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: " + b.String()
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v at version 2: %v, want %q", args, err, want)
		}
	}
	want := "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - can't set immutable config"
	if err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEA").Err(); err == nil || err.Error() != want {
		t.Errorf("CONFIG SET notify-keyspace-events at version 2: %v", err)
	}
	if v, err := c.ConfigGet(ctx, "notify-keyspace-events").Result(); err != nil || v["notify-keyspace-events"] != "" {
		t.Errorf("CONFIG GET at version 2: %v %v", v, err)
	}
	if after, _ := s.node.StateHash(); after != before {
		t.Errorf("the applied index moved from %d to %d: something was proposed", before, after)
	}
	// The state machine refuses the entry too, should one reach it.
	res, err := s.node.Propose(ctx, lockstate.Entry{Op: lockstate.OpExec, Args: []string{"CONFIG", "SET", "notify-keyspace-events", "KEA"}})
	if err != nil || res.Reply.Str != "ERR 'config' is not a keyspace command" {
		t.Errorf("a CONFIG entry at version 2: %+v %v", res.Reply, err)
	}
}

// From version 3 (a new node's) they run, and CONFIG SET goes through
// the log: the state holds it.
func TestVersionThreeHasPatterns(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	var got string
	s.node.Local(func(st *lockstate.State) { got = st.NotifyKeyspaceEvents() })
	if got != "AKE" {
		t.Fatalf("the state holds %q", got)
	}
	ps := c.PSubscribe(ctx, "__keyevent@0__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := ps.ReceiveMessage(ctx)
	if err != nil || m.Pattern != "__keyevent@0__:*" || m.Channel != "__keyevent@0__:set" || m.Payload != "k" {
		t.Fatalf("pmessage %+v %v", m, err)
	}
	if n, err := c.Do(ctx, "PUBSUB", "NUMPAT").Int(); err != nil || n != 1 {
		t.Fatalf("PUBSUB NUMPAT = %d %v", n, err)
	}
}

// A message whose match would cost more than the apply loop spends on one
// is matched by the subscriber's own goroutine: delivered only if it
// matches, in its place among the others.
func TestDeliverDefersCostlyMatches(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	long := strings.Repeat("a", 100_000) // 100 KB × a 2-byte pattern: past inlineMatchWork
	ps := c.PSubscribe(ctx, "a*", "*b")
	defer ps.Close()
	for range 2 {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range []string{long, "ab", long + "b", "x"} {
		if err := c.Publish(ctx, ch, "m").Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 5 {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Pattern+" "+m.Channel[len(m.Channel)-1:]+" "+string(rune('0'+len(m.Channel)/100_000)))
	}
	if want := "a* a 1|a* b 0|*b b 0|a* b 1|*b b 1"; strings.Join(got, "|") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, "|"), want)
	}
	if n, err := c.Publish(ctx, long+"b", "m").Result(); err != nil || n != 2 {
		t.Fatalf("PUBLISH counts %d %v, want 2", n, err)
	}
}

// PUBLISH's count spends at most publishMatchWork steps of matching on the
// node's patterns, however many and however slow, and still counts the
// quick ones listed after the slow, and a short one that backtracks (*a:
// 256 K steps): what keeps PUBLISH prompt and its count right against
// hostile patterns. The hostile ones are costed by the bound glob.Match
// documents (pattern length × channel length: about a billion steps each
// here) rather than run, so that the test fails at once if the bound goes.
func TestPublishCountWithinWork(t *testing.T) {
	t.Parallel()
	ch := strings.Repeat("a", 256<<10)
	var pats []patternCount
	for i := range 64 {
		pats = append(pats, patternCount{"*" + strings.Repeat("a", 4090) + fmt.Sprintf("%03d", i) + "b", 1})
	}
	pats = append(pats, patternCount{"a*", 2}, patternCount{"*b", 3}, patternCount{"*a", 5})
	spent, calls := 0, 0
	match := func(pattern, str string, budget int) (bool, int) {
		calls++
		if budget <= 0 {
			t.Errorf("call %d: matched with a budget of %d", calls, budget)
		}
		if len(pattern) > 16 { // hostile: never matches an all-'a' channel
			cost := len(pattern) * len(str)
			spent += min(cost, budget)
			return false, budget - cost
		}
		ok, left := glob.MatchWithin(pattern, str, budget)
		spent += budget - max(left, 0)
		return ok, left
	}
	if n := matchingSubscribers(pats, ch, match); n != 7 {
		t.Errorf("counted %d subscribers, want 7 (a* and *a; *a was left uncounted behind the hostile ones before they were sorted)", n)
	}
	if spent > publishMatchWork {
		t.Errorf("spent %d steps, more than publishMatchWork (%d)", spent, publishMatchWork)
	}
	t.Logf("64 hostile patterns (%d steps each unbounded) and 3 quick ones: %d calls, %d steps", (4096)*len(ch), calls, spent)
}
