package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis 7's Functions are replicated state: on 3 nodes a library
// loaded through a follower is called from every node (FCALL through a
// follower is forwarded as one entry; FCALL_RO and FUNCTION LIST are
// served by the leader), survives a leader change (RAFT.TRANSFER), a
// follower's restart and a new node that catches up by installing a
// snapshot, and every node hashes alike.
func TestClusterFunctions(t *testing.T) {
	t.Parallel()
	flags := []string{"--trailing-logs", "16"}
	c := startCluster(t, 3, flags, flags, flags)
	leader := c.leader(30 * time.Second)
	f := c.followers(leader)[0]
	fc := f.client(t)

	code := "#!lua name=counter\n" +
		"redis.register_function('incr', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function('draw', function() return math.random(1000000) end)"
	if v := mustStr(t, fc, "FUNCTION", "FLUSH"); v != "OK" {
		t.Fatalf("FUNCTION FLUSH through a follower: %q", v)
	}
	if v := mustStr(t, fc, "FUNCTION", "LOAD", code); v != "counter" {
		t.Fatalf("FUNCTION LOAD through a follower: %q", v)
	}
	// Every node calls it; the writes are entries, so the counter counts
	// each call once.
	want := int64(0)
	for i, n := range c.nodes {
		want += int64(i + 1)
		if got := mustInt(t, n.client(t), "FCALL", "incr", "1", "ctr", i+1); got != want {
			t.Fatalf("FCALL incr on node %d: %d, want %d", i, got, want)
		}
		if got := mustStr(t, n.client(t), "FCALL_RO", "peek", "1", "ctr"); got != fmt.Sprint(want) {
			t.Fatalf("FCALL_RO peek on node %d: %q, want %d", i, got, want)
		}
	}
	if _, err := do(tctx(t), fc, "FCALL_RO", "incr", "1", "ctr", "1"); err == nil || !strings.Contains(err.Error(), "Can not execute a script with write flag using *_ro command.") {
		t.Fatalf("FCALL_RO of a writing function through a follower: %v", err)
	}
	// A library that loops at load stops at the step limit: the same
	// refusal on every replica (the hashes below agree). Sent to the
	// leader: under -race three nodes spending their step budget on two
	// cores can take longer than a follower's forwarding deadline.
	if _, err := do(tctx(t), leader.client(t), "FUNCTION", "LOAD", "#!lua name=loop\nwhile 1 do end"); err == nil || err.Error() != "ERR Error registering functions: ERR FUNCTION LOAD timeout" {
		t.Fatalf("a library that loops at load: %v", err)
	}
	// math.random draws from the entry's index: one answer, the same state
	// everywhere.
	mustInt(t, fc, "FCALL", "draw", "0")
	list := func(cl *redis.Client) string {
		v, err := do(tctx(t), cl, "FUNCTION", "LIST", "WITHCODE")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	wantList := list(leader.client(t))
	if !strings.Contains(wantList, "counter") || list(fc) != wantList {
		t.Fatalf("FUNCTION LIST: leader %s, follower %s", wantList, list(fc))
	}
	for _, n := range c.nodes {
		waitSameHash(t, n, leader, 30*time.Second)
	}

	// A leader change: the new leader has the library.
	transferLeadership(t, c, f)
	if got := mustInt(t, leader.client(t), "FCALL", "INCR", "1", "ctr", 10); got != want+10 {
		t.Fatalf("FCALL after RAFT.TRANSFER, through the old leader: %d", got)
	}
	want += 10

	// A follower's restart, after snapshots that truncate the log.
	for i := range 40 {
		mustStr(t, fc, "SET", fmt.Sprint("pad", i), "x")
	}
	newLeader := c.leader(30 * time.Second)
	for _, n := range c.nodes {
		if _, err := do(tctx(t), n.client(t), "RAFT.SNAPSHOT"); err != nil {
			t.Fatal(err)
		}
	}
	r := c.followers(newLeader)[0]
	r.kill()
	r.restart()
	if got := mustInt(t, r.client(t), "FCALL", "incr", "1", "ctr", 1); got != want+1 {
		t.Fatalf("FCALL on a restarted node: %d, want %d", got, want+1)
	}
	want++

	// A new node whose log would start past the truncation installs the
	// snapshot, libraries included.
	if first := mustRaftStatus(t, newLeader).int(t, "first_index"); first <= 1 {
		t.Fatalf("first_index %d: the new node would replay the log, not install a snapshot", first)
	}
	joined := c.add("n4", flags...)
	c.waitVoters(4)
	waitSameHash(t, joined, newLeader, 60*time.Second)
	jc := joined.client(t)
	if list(jc) != wantList {
		t.Fatalf("FUNCTION LIST on the new node: %s", list(jc))
	}
	if got := mustInt(t, jc, "FCALL", "incr", "1", "ctr", 1); got != want+1 {
		t.Fatalf("FCALL on the new node: %d, want %d", got, want+1)
	}
	if v := mustStr(t, jc, "FUNCTION", "DELETE", "counter"); v != "OK" {
		t.Fatalf("FUNCTION DELETE: %q", v)
	}
	for _, n := range c.nodes {
		if _, err := do(tctx(t), n.client(t), "FCALL", "incr", "1", "ctr", "1"); err == nil || err.Error() != "ERR Function not found" {
			t.Fatalf("FCALL after DELETE on %s: %v", c.id(n), err)
		}
		waitSameHash(t, n, newLeader, 30*time.Second)
	}
}
