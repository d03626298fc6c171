package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance b of the cluster issue: a client of a follower can do
// everything a client of the leader can, FLOCK ... WAIT included, and its
// pipelined commands are answered in order.
func TestClusterFollowerServesEverything(t *testing.T) {
	t.Parallel()
	// n3 runs in redirect mode; the forwarding checks use the other nodes.
	c := startCluster(t, 3, nil, nil, []string{"--redirect"})
	leader := c.leader(10 * time.Second)
	redirecting := c.nodes[2]
	var fs []*node
	for _, f := range c.followers(leader) {
		if f != redirecting {
			fs = append(fs, f)
		}
	}
	if len(fs) == 1 {
		fs = append(fs, fs[0]) // n3 leads: both clients use the one forwarding follower
	}
	f1, f2 := fs[0], fs[1]
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			a := f1.clientProto(t, proto) // on a follower
			b := f2.clientProto(t, proto) // on the other follower
			l := leader.clientProto(t, proto)
			lock := fmt.Sprintf("orders-%d", proto)

			s1 := openSession(t, a, 5000, "follower-a")
			s2 := openSession(t, b, 5000, "follower-b")
			if ttl := mustInt(t, a, "SESSION.HEARTBEAT", s1); ttl != 5000 {
				t.Fatalf("SESSION.HEARTBEAT through a follower = %d, want 5000", ttl)
			}
			tok := mustInt(t, a, "FLOCK", lock, s1)
			if got := mustInt(t, a, "FLOCK", lock, s1); got != tok {
				t.Fatalf("reentrant FLOCK through a follower = %d, want the same token %d", got, tok)
			}
			// Reads through either follower and the leader agree.
			for _, cl := range []*redis.Client{a, b, l} {
				if got := mustInt(t, cl, "FENCE", lock); got != tok {
					t.Fatalf("FENCE = %d, want %d", got, tok)
				}
				li := getLockInfo(t, cl, lock)
				if li.Holder != s1 || li.Count != 2 || li.Token != tok {
					t.Fatalf("LOCK.INFO = %+v, want holder %s count 2 token %d", li, s1, tok)
				}
			}
			if si := getSessionInfo(t, b, s1); len(si.Locks) != 1 || si.Locks[0] != lock {
				t.Fatalf("SESSION.INFO through a follower = %+v, want it to hold %s", si, lock)
			}
			mustErr(t, b, "NOTOWNER", "FUNLOCK", lock, s2)
			mustNil(t, b, "FLOCK", lock, s2) // held by another, no WAIT

			// A waiter on the other follower is handed the lock when the
			// holder on the first follower releases it.
			w := async(b, "FLOCK", lock, s2, "WAIT", 0)
			waitQueued(t, l, lock, s2)
			if n := mustInt(t, a, "FUNLOCK", lock, s1); n != 1 {
				t.Fatalf("FUNLOCK = %d, want 1 hold left", n)
			}
			if _, still := pending(w); !still {
				t.Fatal("the waiter was answered while the lock was still held once")
			}
			if n := mustInt(t, a, "FUNLOCK", lock, s1); n != 0 {
				t.Fatalf("FUNLOCK = %d, want 0", n)
			}
			got := replyInt(t, await(t, w, "FLOCK WAIT through a follower"), "FLOCK WAIT")
			if got <= tok {
				t.Fatalf("waiter's token %d, want more than %d", got, tok)
			}

			// WAIT with a timeout through a follower answers null and leaves
			// the queue.
			start := time.Now()
			mustNil(t, a, "FLOCK", lock, s1, "WAIT", 300)
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("WAIT 300 answered after %v", d)
			}
			waitQueued(t, l, lock)

			// Closing a follower connection that waits cancels its wait.
			solo := f1.soloClient(t)
			ch := async(solo, "FLOCK", lock, s1, "WAIT", 0)
			waitQueued(t, l, lock, s1)
			solo.Close()
			<-ch
			waitQueued(t, l, lock)

			if n := mustInt(t, b, "FUNLOCK", lock, s2); n != 0 {
				t.Fatalf("FUNLOCK = %d, want 0", n)
			}
			if n := mustInt(t, a, "SESSION.KILL", s2); n != 1 {
				t.Fatalf("SESSION.KILL through a follower = %d, want 1", n)
			}
			mustErr(t, a, "NOSESSION", "FLOCK", lock, s2)
			list := sessionList(t, b)
			found := false
			for _, id := range list {
				if id == s1 {
					found = true
				}
				if id == s2 {
					t.Fatalf("SESSION.LIST through a follower still lists the killed session")
				}
			}
			if !found {
				t.Fatalf("SESSION.LIST through a follower = %v, want %s in it", list, s1)
			}
		})
	}
	if redirecting != leader {
		t.Run("redirect", func(t *testing.T) { redirectChecks(t, c, leader, redirecting) })
	}
}

// redirectChecks: a follower started with --redirect answers -MOVED 0
// leader:port for lock commands, and CLUSTER presents the leader as the
// master of every slot, so Redis Cluster clients route to it.
func redirectChecks(t *testing.T, c *cluster, leader, n *node) {
	cl := n.client(t)
	_, err := do(tctx(t), cl, "FENCE", "anything")
	if err == nil || err.Error() != "MOVED 0 "+leader.addr {
		t.Fatalf("FENCE on a redirecting follower: %v, want MOVED 0 %s", err, leader.addr)
	}
	if v := mustStr(t, cl, "PING"); v != "PONG" {
		t.Fatalf("PING = %q", v)
	}
	shards, err := cl.ClusterShards(tctx(t)).Result()
	if err != nil || len(shards) != 1 || len(shards[0].Slots) != 1 || shards[0].Slots[0].Start != 0 || shards[0].Slots[0].End != 16383 || len(shards[0].Nodes) != 3 {
		t.Fatalf("CLUSTER SHARDS = %+v, %v: want one shard with slots 0-16383 and 3 nodes", shards, err)
	}
	if nd := shards[0].Nodes[0]; nd.Role != "master" || fmt.Sprintf("%s:%d", nd.IP, nd.Port) != leader.addr {
		t.Fatalf("CLUSTER SHARDS master = %+v, want the leader %s", nd, leader.addr)
	}
	// SLOTS, which older cluster clients use, says the same.
	slots, err := do(tctx(t), cl, "CLUSTER", "SLOTS")
	if sl, ok := slots.([]any); err != nil || !ok || len(sl) != 1 || !strings.Contains(fmt.Sprint(sl[0]), strings.Replace(leader.addr, ":", " ", 1)) {
		t.Fatalf("CLUSTER SLOTS = %v, %v: want one range naming the leader %s", slots, err, leader.addr)
	}
	// A Redis Cluster client pointed at the redirecting follower finds the
	// leader and locks through it.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n.addr}, MaxRedirects: 3})
	defer cc.Close()
	sid, err := cc.Do(tctx(t), "SESSION.OPEN").Text()
	if err != nil {
		t.Fatalf("SESSION.OPEN through a cluster client: %v", err)
	}
	tok, err := cc.Do(tctx(t), "FLOCK", "redirected", sid).Int64()
	if err != nil || tok <= 0 {
		t.Fatalf("FLOCK through a cluster client: %d, %v", tok, err)
	}
	if got := mustInt(t, leader.client(t), "FENCE", "redirected"); got != tok {
		t.Fatalf("FENCE on the leader = %d, want %d", got, tok)
	}
}

// Pipelined commands through a follower are answered in the order sent,
// writes and reads and connection commands mixed.
func TestClusterFollowerPipelineInOrder(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(10 * time.Second)
	f := c.followers(leader)[0]
	cl := f.soloClient(t)
	s := openSession(t, cl, 10000, "pipe")
	const n = 60
	pipe := cl.Pipeline()
	var cmds []*redis.Cmd
	for i := range n {
		cmds = append(cmds, pipe.Do(tctx(t), "FLOCK", "p", s))
		cmds = append(cmds, pipe.Do(tctx(t), "ECHO", fmt.Sprint(i)))
		cmds = append(cmds, pipe.Do(tctx(t), "LOCK.INFO", "p"))
	}
	for i := range n {
		cmds = append(cmds, pipe.Do(tctx(t), "FUNLOCK", "p", s))
		cmds = append(cmds, pipe.Do(tctx(t), "ECHO", fmt.Sprint(n+i)))
	}
	if _, err := pipe.Exec(tctx(t)); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	var token int64
	for i := range n {
		tok, err := cmds[3*i].Int64()
		if err != nil {
			t.Fatalf("FLOCK #%d: %v", i, err)
		}
		if i == 0 {
			token = tok
		} else if tok != token {
			t.Fatalf("FLOCK #%d = %d, want the reentrant token %d", i, tok, token)
		}
		if e, _ := cmds[3*i+1].Text(); e != fmt.Sprint(i) {
			t.Fatalf("ECHO #%d = %q: replies out of order", i, e)
		}
		li, err := parseLockInfo(cmds[3*i+2].Val())
		if err != nil || li.Count != int64(i+1) {
			t.Fatalf("LOCK.INFO after %d FLOCKs: %+v %v, want count %d", i+1, li, err, i+1)
		}
	}
	for i := range n {
		left, err := cmds[3*n+2*i].Int64()
		if err != nil || left != int64(n-1-i) {
			t.Fatalf("FUNLOCK #%d = %d %v, want %d", i, left, err, n-1-i)
		}
		if e, _ := cmds[3*n+2*i+1].Text(); e != fmt.Sprint(n+i) {
			t.Fatalf("ECHO #%d = %q: replies out of order", n+i, e)
		}
	}
}
