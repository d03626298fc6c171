package test

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The Redis keyspace on a cluster: SET NX PX through
// a follower, GET/PTTL/DEL, FENCE of a plain key strictly increasing across
// delete, re-create and a leader change, KEYS sorted, and one keyspace
// shared with fenced locks (WRONGTYPE both ways).
func TestKeysOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	f := c.followers(leader)[0].client(t)
	l := leader.client(t)

	if v := mustStr(t, f, "SET", "res", "owner-1", "NX", "PX", 10000); v != "OK" {
		t.Fatalf("SET NX PX through a follower = %q", v)
	}
	mustNil(t, f, "SET", "res", "owner-2", "NX", "PX", 10000)
	if v := mustStr(t, l, "GET", "res"); v != "owner-1" {
		t.Fatalf("GET = %q, want owner-1", v)
	}
	if ms := mustInt(t, f, "PTTL", "res"); ms <= 0 || ms > 10000 {
		t.Fatalf("PTTL = %d, want in (0, 10000]", ms)
	}
	var last int64
	for round := range 3 {
		tok := mustInt(t, f, "FENCE", "res")
		if tok <= last {
			t.Fatalf("round %d: FENCE res = %d, want more than %d", round, tok, last)
		}
		last = tok
		if n := mustInt(t, l, "DEL", "res"); n != 1 {
			t.Fatalf("DEL = %d, want 1", n)
		}
		mustNil(t, l, "FENCE", "res")
		if round == 1 {
			// Move leadership: tokens must keep increasing on the new leader.
			target := c.followers(leader)[0]
			mustStr(t, l, "RAFT.TRANSFER", c.id(target))
			leader = c.leader(10 * time.Second)
			l = leader.client(t)
			f = c.followers(leader)[0].client(t)
		}
		if v := mustStr(t, f, "SET", "res", fmt.Sprintf("owner-%d", round+3), "NX", "PX", 10000); v != "OK" {
			t.Fatalf("SET after DEL = %q", v)
		}
	}
	if tok := mustInt(t, l, "FENCE", "res"); tok <= last {
		t.Fatalf("FENCE after re-create = %d, want more than %d", tok, last)
	}

	// One keyspace: a held fenced lock is not a string, a string is not a lock.
	s := openSession(t, l, 10000, "keys")
	mustInt(t, l, "FLOCK", "held", s)
	mustErr(t, f, "WRONGTYPE", "SET", "held", "x")
	mustErr(t, f, "WRONGTYPE", "FLOCK", "res", s)
	if typ := mustStr(t, f, "TYPE", "held"); typ != "fencedlock" {
		t.Fatalf("TYPE of a held lock = %q", typ)
	}
	if typ := mustStr(t, f, "TYPE", "res"); typ != "string" {
		t.Fatalf("TYPE of a string = %q", typ)
	}

	for _, k := range []string{"b", "a", "c"} {
		mustStr(t, l, "SET", "k:"+k, "v")
	}
	keys, err := l.Keys(tctx(t), "k:*").Result()
	if err != nil || !slices.Equal(keys, []string{"k:a", "k:b", "k:c"}) {
		t.Fatalf("KEYS k:* = %v, %v, want sorted [k:a k:b k:c]", keys, err)
	}
}
