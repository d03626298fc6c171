package test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFenceIfEq: FENCE key IFEQ value answers the key's token only while it
// holds exactly value. Holder A's key expires while A is paused and B takes
// it: A's read is null (never B's token), B's is above every earlier token,
// in RESP2 and RESP3, from a script and through a follower.
func TestFenceIfEq(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	follower := c.followers(leader)[0]
	for _, n := range []*node{leader, follower} {
		for _, proto := range []int{2, 3} {
			cl := n.clientProto(t, proto)
			key := "ifeq-" + c.id(n) + "-" + string(rune('0'+proto))
			if ok, err := cl.SetNX(tctx(t), key, "vA", 200*time.Millisecond).Result(); err != nil || !ok {
				t.Fatalf("A's SET NX: %v %v", ok, err)
			}
			tokA := mustInt(t, cl, "FENCE", key, "IFEQ", "vA")
			if v, err := cl.Do(tctx(t), "FENCE", key, "IFEQ", "other").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("FENCE IFEQ of another value: %v %v, want null", v, err)
			}
			time.Sleep(400 * time.Millisecond) // A is paused past its PX
			if ok, err := cl.SetNX(tctx(t), key, "vB", 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("B's SET NX after A's PX: %v %v", ok, err)
			}
			if v, err := cl.Do(tctx(t), "FENCE", key, "IFEQ", "vA").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("%s RESP%d: paused A's FENCE IFEQ = %v %v, want null (not the successor's token)", c.id(n), proto, v, err)
			}
			tokB := mustInt(t, cl, "FENCE", key, "IFEQ", "vB")
			if tokB <= tokA {
				t.Errorf("B's token %d is not above A's %d", tokB, tokA)
			}
			if bare := mustInt(t, cl, "FENCE", key); bare != tokB {
				t.Errorf("FENCE %s = %d, want B's %d (what a paused A must not use)", key, bare, tokB)
			}
			const script = "return redis.call('FENCE', KEYS[1], 'IFEQ', ARGV[1])"
			if v, err := cl.Eval(tctx(t), script, []string{key}, "vB").Result(); err != nil || v != tokB {
				t.Errorf("from a script, B: %v %v, want %d", v, err, tokB)
			}
			if v, err := cl.Eval(tctx(t), script, []string{key}, "vA").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("from a script, A: %v %v, want null", v, err)
			}
		}
	}
}
