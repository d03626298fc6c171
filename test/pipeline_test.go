package test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLeaderPipelinedWrites: on the leader, consecutive pipelined writes
// start before the earlier ones have committed (they share commits); their
// replies still come in order, and a read after them sees every one. That
// the writes did start early is what INFO stats total_pipelined_writes
// counts: writes proposed while an earlier write of the connection was
// still unanswered, which only pipelining produces.
func TestLeaderPipelinedWrites(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	cl := n.soloClient(t)
	s := openSession(t, cl, 10000, "pipe")
	pipelinedBefore := pipelinedWrites(t, cl)
	const rounds, run = 10, 20
	pipe := cl.Pipeline()
	type step struct {
		cmd  *redis.Cmd
		want string
	}
	var steps []step
	add := func(want string, args ...any) { steps = append(steps, step{pipe.Do(tctx(t), args...), want}) }
	holds := 0
	// mayPipeline counts the writes that follow another write of the
	// pipeline (not the first one, nor one after a read, which waits).
	mayPipeline := 0
	for r := range rounds {
		for i := range run {
			k := fmt.Sprintf("k%d", i)
			v := fmt.Sprintf("%d.%d", r, i)
			add("OK", "SET", k, v)
			add("", "FLOCK", "p", s) // token checked below
			holds++
			add("10000", "SESSION.HEARTBEAT", s)
		}
		mayPipeline += 3*run - 1
		// Reads wait for the writes before them.
		for i := range run {
			add(fmt.Sprintf("%d.%d", r, i), "GET", fmt.Sprintf("k%d", i))
		}
		add(fmt.Sprint(holds), "LOCK.INFO", "p")
	}
	for i := range holds {
		add(fmt.Sprint(holds-1-i), "FUNLOCK", "p", s)
	}
	mayPipeline += holds - 1
	if _, err := pipe.Exec(tctx(t)); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	var token int64
	for i, st := range steps {
		args := st.cmd.Args()
		switch args[0] {
		case "FLOCK":
			tok, err := st.cmd.Int64()
			if err != nil || tok <= 0 || token != 0 && tok != token {
				t.Fatalf("step %d %v = %d %v, want the one reentrant token %d", i, args, tok, err, token)
			}
			token = tok
		case "LOCK.INFO":
			li, err := parseLockInfo(st.cmd.Val())
			if err != nil || fmt.Sprint(li.Count) != st.want {
				t.Fatalf("step %d LOCK.INFO = %+v %v, want count %s", i, li, err, st.want)
			}
		default:
			got, err := st.cmd.Text()
			if err != nil {
				got = fmt.Sprint(st.cmd.Val())
			}
			if got != st.want {
				t.Fatalf("step %d %v = %q %v, want %q (replies out of order or a read ran ahead)", i, args, got, err, st.want)
			}
		}
	}
	if v, err := cl.Do(tctx(t), "FENCE", "p").Result(); err != redis.Nil {
		t.Fatalf("after releasing every hold FENCE p = %v %v, want null", v, err)
	}
	// The connection's writes were proposed without waiting for each
	// other: most of those that could be were, and no other command was
	// counted.
	pipelined := pipelinedWrites(t, cl) - pipelinedBefore
	t.Logf("%d of the %d writes that followed another write were proposed before it was answered", pipelined, mayPipeline)
	if pipelined < int64(mayPipeline)/2 || pipelined > int64(mayPipeline) {
		t.Errorf("INFO stats total_pipelined_writes grew by %d over the pipeline, want at least half of the %d writes that followed another write (and at most all of them)",
			pipelined, mayPipeline)
	}
}

// pipelinedWrites is INFO stats total_pipelined_writes.
func pipelinedWrites(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	return infoInt(t, infoSection(t, c, "stats"), "total_pipelined_writes")
}

// TestPublishThenWrites: PUBLISH answers once its entry is applied (with
// the receivers it reached), and leaves nothing of it pending on the
// connection, so the writes after it, each sent only once the one before it
// is answered, are not counted as pipelined. (PUBLISH once dropped the
// pending reply of its proposal: the connection then counted every later
// write as proposed ahead of an unanswered one.)
func TestPublishThenWrites(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	cl := n.soloClient(t)
	sub := n.soloClient(t)
	ps := sub.Subscribe(tctx(t), "ch")
	defer ps.Close()
	if _, err := ps.Receive(tctx(t)); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	before := pipelinedWrites(t, cl)
	for i := range 5 {
		if got, err := cl.Publish(tctx(t), "ch", fmt.Sprint(i)).Result(); err != nil || got != 1 {
			t.Fatalf("PUBLISH ch %d = %d %v, want 1 receiver", i, got, err)
		}
		if err := cl.Set(tctx(t), fmt.Sprintf("after%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET after PUBLISH: %v", err)
		}
	}
	if got := pipelinedWrites(t, cl) - before; got != 0 {
		t.Errorf("INFO stats total_pipelined_writes grew by %d over writes sent one at a time, want 0", got)
	}
}

// TestFollowerProposalsShareLink: a follower's clients' writes go to the
// leader over one shared link, where the leader proposes each before the
// earlier ones are answered (RAFT.PROPOSE runs ahead), so they share
// commits: the leader's total_pipelined_writes grows while many clients of
// a follower write at once, and every write is answered as if alone.
func TestFollowerProposalsShareLink(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	f := cl.followers(leader)[0]
	lc := leader.client(t)
	before := pipelinedWrites(t, lc)
	const clients, writes = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := f.soloClient(t)
			for j := range writes {
				k := fmt.Sprintf("share:%d:%d", i, j)
				if err := c.Set(tctx(t), k, j, 0).Err(); err != nil {
					errs <- fmt.Errorf("SET %s via the follower: %v", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range clients {
		k := fmt.Sprintf("share:%d:%d", i, writes-1)
		if v, err := lc.Get(tctx(t), k).Int(); err != nil || v != writes-1 {
			t.Fatalf("GET %s on the leader = %d, %v", k, v, err)
		}
	}
	grew := pipelinedWrites(t, lc) - before
	t.Logf("%d of the %d forwarded writes were proposed while an earlier one on the link was unanswered", grew, clients*writes)
	if grew == 0 {
		t.Error("the leader proposed no forwarded write ahead of an unanswered one: the follower's clients did not share a link, or RAFT.PROPOSE waited for each commit")
	}
}
