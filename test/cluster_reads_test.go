package test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance c: a node cut off from the majority never answers with stale
// data. Two partitions on one cluster:
//
//  1. the followers are frozen (SIGSTOP): the leader is cut off; once it
//     answers FENCE, LOCK.INFO or SESSION.HEARTBEAT with an error, none of
//     them answers data again while it stays cut off;
//  2. the leader is frozen: the others elect a new leader and change the
//     state (release, kill the holder's session, grant to another session
//     with a new token); when the old leader wakes, requests that were
//     queued on its sockets while it was frozen and the ones sent right
//     after are answered with errors or the new state, never the old one.
func TestClusterNoStaleRead(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := startCluster(t, 3)
	staleCutOffLeader(t, c)
	if t.Failed() {
		return
	}
	staleOldLeaderWakes(t, c)
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// staleAnswer is one answer of a node under test.
type staleAnswer struct {
	cmd        string
	val        any
	err        error
	sent, done time.Time
}

func (a staleAnswer) isData() bool { return a.err == nil || errors.Is(a.err, redis.Nil) }

func staleCutOffLeader(t *testing.T, c *cluster) {
	leader := c.leader(20 * time.Second)
	lc := leader.client(t)
	s := openSession(t, lc, 60000, "cut-off")
	tok := mustInt(t, lc, "FLOCK", "cut", s)

	cl := leader.soloClient(t)
	cmds := [][]any{{"FENCE", "cut"}, {"LOCK.INFO", "cut"}, {"SESSION.HEARTBEAT", s}}
	// checkData checks an answer that is data: the only state there is.
	checkData := func(a staleAnswer) {
		switch a.cmd {
		case "FENCE":
			if v, ok := a.val.(int64); !ok || v != tok {
				t.Errorf("FENCE cut answered %v, want %d", a.val, tok)
			}
		case "LOCK.INFO":
			li, err := parseLockInfo(a.val)
			if err != nil || li.Holder != s || li.Token != tok {
				t.Errorf("LOCK.INFO cut answered %+v (%v), want held by %s with token %d", li, err, s, tok)
			}
		}
	}

	fs := c.followers(leader)
	for _, f := range fs {
		f.pause()
	}
	paused := time.Now()
	t.Logf("followers %s and %s frozen; leader %s is cut off", c.id(fs[0]), c.id(fs[1]), c.id(leader))

	var firstErr time.Time
	errSeen := map[string]int{}
	dataBefore, dataAfter, noAnswer := 0, 0, 0
	codes := map[string]int{}
	for i := 0; ; i++ {
		now := time.Now()
		if firstErr.IsZero() && now.Sub(paused) > 10*time.Second {
			t.Fatalf("the cut-off leader still answered with data %v after its followers were frozen", now.Sub(paused))
		}
		if !firstErr.IsZero() && now.Sub(firstErr) > 2*time.Second && len(errSeen) == len(cmds) {
			break
		}
		if now.Sub(paused) > 20*time.Second {
			t.Fatalf("not every command answered an error within 20s: %v", errSeen)
		}
		args := cmds[i%len(cmds)]
		a := staleAnswer{cmd: args[0].(string), sent: now}
		a.val, a.err = doWithin(cl, 3*time.Second, args...)
		a.done = time.Now()
		switch {
		case a.isData():
			checkData(a)
			if firstErr.IsZero() {
				dataBefore++
			} else {
				dataAfter++
				t.Errorf("%v sent %v after the first error answered data %v while the node is still cut off",
					args, a.sent.Sub(firstErr).Round(time.Millisecond), a.val)
			}
		case notServing(a.err):
			if firstErr.IsZero() {
				firstErr = a.done
			}
			errSeen[a.cmd]++
			codes[firstWord(a.err)]++
		case isReplyErr(a.err):
			t.Errorf("%v on the cut-off leader: %v, want -TRYAGAIN, -CLUSTERDOWN or -UNCERTAIN", args, a.err)
		default:
			noAnswer++ // client timeout: no data either
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("cut-off leader: first error %v after the freeze; data answers before it %d, after it %d; errors %v by code %v; client timeouts %d",
		firstErr.Sub(paused).Round(time.Millisecond), dataBefore, dataAfter, errSeen, codes, noAnswer)

	// Heal: the cluster serves the same state through every node.
	for _, f := range fs {
		f.resume()
	}
	l := c.leader(20 * time.Second)
	t.Logf("healed; leader %s", c.id(l))
	for _, n := range c.nodes {
		nc := n.client(t)
		eventually(t, 20*time.Second, "node "+c.id(n)+" to serve reads after the heal", func() bool {
			_, err := doWithin(nc, 3*time.Second, "FENCE", "cut")
			return err == nil
		})
		if f := mustInt(t, nc, "FENCE", "cut"); f != tok {
			t.Errorf("FENCE cut through %s after the heal = %d, want %d", c.id(n), f, tok)
		}
		if li := getLockInfo(t, nc, "cut"); li.Holder != s || li.Token != tok || li.Count != 1 {
			t.Errorf("LOCK.INFO cut through %s after the heal = %+v", c.id(n), li)
		}
	}
	if n := mustInt(t, c.nodes[0].client(t), "FUNLOCK", "cut", s); n != 0 {
		t.Errorf("FUNLOCK = %d, want 0", n)
	}
}

func staleOldLeaderWakes(t *testing.T, c *cluster) {
	old := c.leader(20 * time.Second)
	oc := old.client(t)
	s1 := openSession(t, oc, 60000, "old-holder")
	tok1 := mustInt(t, oc, "FLOCK", "stale", s1)

	// Connections to the old leader, opened now; while it is frozen,
	// requests on them wait in its socket buffers.
	type poller struct {
		cl   *redis.Client
		args []any
	}
	var polls []poller
	for range 2 {
		for _, args := range [][]any{
			{"FENCE", "stale"},
			{"LOCK.INFO", "stale"},
			{"FENCE", "stale", s1},
			{"SESSION.INFO", s1},
			{"SESSION.HEARTBEAT", s1},
		} {
			cl := old.soloClient(t)
			if err := cl.Ping(tctx(t)).Err(); err != nil {
				t.Fatal(err)
			}
			polls = append(polls, poller{cl, args})
		}
	}

	old.pause()
	t.Logf("leader %s frozen", c.id(old))
	nl := c.leader(30 * time.Second)
	nc := nl.client(t)
	t.Logf("new leader %s", c.id(nl))
	// The new state: s1 releases and dies, s2 gets the lock.
	if n := mustInt(t, nc, "FUNLOCK", "stale", s1); n != 0 {
		t.Fatalf("FUNLOCK on the new leader = %d, want 0", n)
	}
	if n := mustInt(t, nc, "SESSION.KILL", s1); n != 1 {
		t.Fatalf("SESSION.KILL on the new leader = %d, want 1", n)
	}
	s2 := openSession(t, nc, 60000, "new-holder")
	tok2 := mustInt(t, nc, "FLOCK", "stale", s2)
	if tok2 <= tok1 {
		t.Fatalf("new token %d, want > %d", tok2, tok1)
	}
	newState := time.Now()

	// checkAnswer: data must be the new state; errors must be "not
	// serving" or, for commands naming s1, -NOSESSION.
	check := func(a staleAnswer, args []any) (stale bool) {
		if !a.isData() {
			if notServing(a.err) || !isReplyErr(a.err) {
				return false
			}
			if isCode(a.err, "NOSESSION") && (args[0] == "SESSION.INFO" || args[0] == "SESSION.HEARTBEAT" || len(args) == 3) {
				return false
			}
			t.Errorf("%v on the old leader: unexpected error %v", args, a.err)
			return false
		}
		switch {
		case args[0] == "FENCE" && len(args) == 2:
			if v, ok := a.val.(int64); !ok || v != tok2 {
				t.Errorf("FENCE stale on the woken old leader (sent %v after the new state) = %v, want %d (old token %d)",
					a.sent.Sub(newState).Round(time.Millisecond), a.val, tok2, tok1)
				return true
			}
		case args[0] == "LOCK.INFO":
			li, err := parseLockInfo(a.val)
			if err != nil || li.Holder != s2 || li.Token != tok2 {
				t.Errorf("LOCK.INFO stale on the woken old leader = %+v (%v), want holder %s token %d (old: %s, %d)",
					li, err, s2, tok2, s1, tok1)
				return true
			}
		default: // commands naming the killed session: any data is stale
			t.Errorf("%v on the woken old leader answered %v; the session was killed", args, a.val)
			return true
		}
		return false
	}

	var mu sync.Mutex
	var answers []staleAnswer
	var wg sync.WaitGroup
	var resumed time.Time
	end := make(chan struct{})
	for _, p := range polls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				a := staleAnswer{cmd: fmt.Sprint(p.args...), sent: time.Now()}
				a.val, a.err = doWithin(p.cl, 10*time.Second, p.args...)
				a.done = time.Now()
				stale := check(a, p.args)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
				if stale {
					return
				}
				select {
				case <-end:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the first requests reach the frozen node's sockets
	old.resume()
	resumed = time.Now()
	time.Sleep(2 * time.Second)
	close(end)
	wg.Wait()

	data, errs, timeouts := 0, map[string]int{}, 0
	var firstData time.Time
	for _, a := range answers {
		switch {
		case a.isData():
			data++
			if firstData.IsZero() || a.done.Before(firstData) {
				firstData = a.done
			}
		case isReplyErr(a.err):
			errs[firstWord(a.err)]++
		default:
			timeouts++
		}
	}
	fd := "none"
	if !firstData.IsZero() {
		fd = firstData.Sub(resumed).Round(time.Millisecond).String()
	}
	t.Logf("woken old leader %s: %d answers in 2s (%d queued while frozen): data %d (first %s after SIGCONT), errors %v, client timeouts %d",
		c.id(old), len(answers), len(polls), data, fd, errs, timeouts)

	// After the heal every node serves the new state.
	for _, n := range c.nodes {
		cl := n.client(t)
		eventually(t, 20*time.Second, "node "+c.id(n)+" to serve the new state", func() bool {
			v, err := doWithin(cl, 3*time.Second, "FENCE", "stale")
			if err == nil && v != tok2 {
				t.Fatalf("FENCE stale through %s after the heal = %v, want %d", c.id(n), v, tok2)
			}
			return err == nil
		})
		if li := getLockInfo(t, cl, "stale"); li.Holder != s2 || li.Token != tok2 || li.Count != 1 {
			t.Errorf("LOCK.INFO stale through %s after the heal = %+v, want holder %s token %d", c.id(n), li, s2, tok2)
		}
		mustErr(t, cl, "NOSESSION", "SESSION.INFO", s1)
		mustErr(t, cl, "NOSESSION", "SESSION.HEARTBEAT", s1)
	}
}

// firstWord is the code of an error reply.
func firstWord(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == ' ' {
			return s[:i]
		}
	}
	return s
}
