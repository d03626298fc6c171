package test

// The client package against real 3-node clusters: long and unbounded
// waits, loss detection, exactly-once through a
// connection-dropping proxy, a leader killed during Lock, -MOVED.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/client"
	"github.com/redis/go-redis/v9"
)

func clientDial(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, strings.Join(addrs, ","), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clientSession(t *testing.T, c *client.Client, ttl time.Duration) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.NewSession(ctx, client.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s
}

// lockHolder is LOCK.INFO's holder session ("" when the lock is free) and
// the number of waiters.
func lockHolder(t *testing.T, c *redis.Client, lock string) (holder string, waiters int) {
	t.Helper()
	li := getLockInfo(t, c, lock)
	return li.Holder, len(li.Waiters)
}

// Lock waits longer than go-redis's 5 s default read timeout, with a
// deadline and without one, through followers.
func TestClientLongWaits(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	fs := cl.followers(leader)
	raw := leader.client(t)

	holder := clientSession(t, clientDial(t, leader.addr), 30*time.Second).Mutex("long")
	if _, err := holder.Lock(tctx(t)); err != nil {
		t.Fatal(err)
	}
	type grant struct {
		tok  int64
		err  error
		took time.Duration
	}
	wait := func(c *client.Client, ctx context.Context) chan grant {
		ch := make(chan grant, 1)
		m := clientSession(t, c, 30*time.Second).Mutex("long")
		go func() {
			start := time.Now()
			tok, err := m.Lock(ctx)
			if err == nil {
				err = m.Unlock(context.Background())
			}
			ch <- grant{tok, err, time.Since(start)}
		}()
		return ch
	}
	noDeadline := wait(clientDial(t, fs[0].addr), context.Background())
	eventually(t, 10*time.Second, "the first waiter queued", func() bool { _, w := lockHolder(t, raw, "long"); return w == 1 })
	dctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	withDeadline := wait(clientDial(t, fs[1].addr), dctx)
	eventually(t, 10*time.Second, "the second waiter queued", func() bool { _, w := lockHolder(t, raw, "long"); return w == 2 })

	time.Sleep(6 * time.Second) // past go-redis's 5 s default read timeout
	if err := holder.Unlock(tctx(t)); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []chan grant{noDeadline, withDeadline} {
		g := <-ch
		if g.err != nil || g.tok <= 0 {
			t.Fatalf("waiter %d: token %d, %v", i, g.tok, g.err)
		}
		if g.took < 6*time.Second {
			t.Fatalf("waiter %d granted after %v, before the holder's release", i, g.took)
		}
	}
	if h, w := lockHolder(t, raw, "long"); h != "" || w != 0 {
		t.Fatalf("after both waiters: holder %q, %d waiters; want free", h, w)
	}
}

// A session killed with SESSION.KILL, or cut off by the network for longer
// than its TTL, closes Done and cancels the Mutex's Context within the TTL
// plus one heartbeat interval.
func TestClientSessionLoss(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	raw := leader.client(t)
	const ttl = 1500 * time.Millisecond
	bound := ttl + ttl/3 + 300*time.Millisecond // + scheduling slack

	t.Run("killed", func(t *testing.T) {
		s := clientSession(t, clientDial(t, cl.followers(leader)[0].addr), ttl)
		m := s.Mutex("loss-killed")
		if _, err := m.Lock(tctx(t)); err != nil {
			t.Fatal(err)
		}
		work := m.Context(context.Background())
		killed := time.Now()
		if _, err := do(tctx(t), raw, "SESSION.KILL", s.ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Done():
		case <-time.After(bound):
			t.Fatalf("Done not closed %v after SESSION.KILL", bound)
		}
		<-work.Done()
		t.Logf("Done %v after the kill", time.Since(killed))
		if !errors.Is(s.Err(), client.ErrSessionLost) || !errors.Is(context.Cause(work), client.ErrSessionLost) {
			t.Fatalf("Err %v, Context cause %v; want ErrSessionLost", s.Err(), context.Cause(work))
		}
	})
	t.Run("cut off", func(t *testing.T) {
		p := newFaultyProxy(t, leader.addr, 1)
		s := clientSession(t, clientDial(t, p.addr()), ttl)
		m := s.Mutex("loss-cut")
		if _, err := m.Lock(tctx(t)); err != nil {
			t.Fatal(err)
		}
		work := m.Context(context.Background())
		// A Lock of the same session waits behind another session.
		other := openSession(t, raw, 60000, "other")
		mustInt(t, raw, "FLOCK", "loss-cut-wait", other)
		waiting := make(chan error, 1)
		go func() { _, err := s.Mutex("loss-cut-wait").Lock(context.Background()); waiting <- err }()
		eventually(t, 10*time.Second, "the Lock queued", func() bool { _, w := lockHolder(t, raw, "loss-cut-wait"); return w == 1 })
		time.Sleep(ttl) // a few heartbeats go through
		p.blackhole(true)
		cut := time.Now()
		select {
		case <-s.Done():
		case <-time.After(bound):
			t.Fatalf("Done not closed %v after the cut (TTL %v)", bound, ttl)
		}
		<-work.Done()
		t.Logf("Done %v after the cut", time.Since(cut))
		select {
		case err := <-waiting:
			if !errors.Is(err, client.ErrSessionLost) {
				t.Fatalf("the waiting Lock: %v, want ErrSessionLost", err)
			}
		case <-time.After(time.Second):
			t.Fatal("the waiting Lock still waits after the session was lost")
		}
		if !errors.Is(s.Err(), client.ErrSessionLost) || !errors.Is(context.Cause(work), client.ErrSessionLost) {
			t.Fatalf("Err %v, Context cause %v; want ErrSessionLost", s.Err(), context.Cause(work))
		}
		// The server, too, lets the session go, and the lock with it.
		eventually(t, 10*time.Second, "the lock freed by the session's expiry", func() bool {
			h, _ := lockHolder(t, raw, "loss-cut")
			return h == ""
		})
	})
}

// holdCheck counts who holds a lock, as the holders see it: more than one
// at a time is a double grant; tokens must grow with every grant.
type holdCheck struct {
	mu      sync.Mutex
	holders int
	last    int64
	grants  int
	bad     []string
}

func (h *holdCheck) enter(who string, tok int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holders++
	h.grants++
	if h.holders > 1 {
		h.bad = append(h.bad, fmt.Sprintf("%s: granted token %d while another holds the lock", who, tok))
	}
	if tok <= h.last {
		h.bad = append(h.bad, fmt.Sprintf("%s: token %d not above the previous grant's %d", who, tok, h.last))
	}
	h.last = tok
}

func (h *holdCheck) leave() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holders--
}

// 1,000 Lock/Unlock cycles by 4 contending sessions through proxies that
// drop connections after forwarding a request (the server applies it, the
// answer is lost) and before: no double hold, no leaked hold, the lock
// free at the end, and every session holding nothing.
func TestClientExactlyOnceThroughDrops(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	raw := leader.client(t)
	var proxies []*faultyProxy
	var addrs []string
	for i, n := range cl.nodes {
		p := newFaultyProxy(t, n.addr, uint64(i+1))
		p.setDrops(0.08, 0.04)
		proxies = append(proxies, p)
		addrs = append(addrs, p.addr())
	}
	const workers, cycles = 4, 250
	var check holdCheck
	var sessions []string
	var errs atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		c := clientDial(t, append(addrs[w%3:], addrs[:w%3]...)...)
		s := clientSession(t, c, 20*time.Second)
		sessions = append(sessions, s.ID())
		m := s.Mutex("drops")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cycles {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				tok, err := m.Lock(ctx)
				if err != nil {
					cancel()
					errs.Add(1)
					t.Errorf("worker %d cycle %d: Lock: %v", w, i, err)
					return
				}
				check.enter(fmt.Sprintf("worker %d cycle %d", w, i), tok)
				check.leave()
				err = m.Unlock(ctx)
				cancel()
				if err != nil {
					errs.Add(1)
					t.Errorf("worker %d cycle %d: Unlock: %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var drops int64
	for _, p := range proxies {
		drops += p.drops.Load()
	}
	t.Logf("%d grants, %d dropped connections", check.grants, drops)
	for _, b := range check.bad {
		t.Error(b)
	}
	if check.grants != workers*cycles {
		t.Fatalf("%d grants, want %d", check.grants, workers*cycles)
	}
	if drops < 100 {
		t.Fatalf("only %d connections dropped: the test did not test", drops)
	}
	if h, w := lockHolder(t, raw, "drops"); h != "" || w != 0 {
		t.Fatalf("after the cycles: holder %q, %d waiters; want free (a leaked or doubled hold)", h, w)
	}
	for _, id := range sessions {
		v, err := do(tctx(t), raw, "SESSION.INFO", id)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := v.(map[any]any)
		if locks, _ := info["locks"].([]any); len(locks) != 0 {
			t.Fatalf("session %s still holds %v", id, locks)
		}
	}
}

// The leader is killed while Locks are in flight: each call returns a
// grant or an error, no lock is granted twice, and the lock ends free.
func TestClientLeaderKilledDuringLock(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	leader := cl.leader(30 * time.Second)
	// Every client starts on the leader and moves on when it dies.
	addrs := []string{leader.addr}
	for _, f := range cl.followers(leader) {
		addrs = append(addrs, f.addr)
	}
	const workers = 4
	var check holdCheck
	var grants, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ms []*client.Mutex
	for w := range workers {
		m := clientSession(t, clientDial(t, addrs...), 20*time.Second).Mutex("killed")
		ms = append(ms, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				tok, err := m.Lock(ctx)
				if err != nil {
					cancel()
					failures.Add(1)
					t.Logf("worker %d: Lock: %v", w, err)
					continue
				}
				grants.Add(1)
				check.enter(fmt.Sprintf("worker %d cycle %d", w, i), tok)
				time.Sleep(2 * time.Millisecond)
				check.leave()
				if err := m.Unlock(ctx); err != nil {
					failures.Add(1)
					t.Logf("worker %d: Unlock: %v", w, err)
				}
				cancel()
			}
		}()
	}
	time.Sleep(time.Second)
	before := grants.Load()
	leader.kill()
	newLeader := cl.leader(30 * time.Second)
	time.Sleep(2 * time.Second)
	after := grants.Load()
	close(stop)
	wg.Wait()
	t.Logf("%d grants before the kill, %d by 2 s after a new leader, %d failed calls", before, after, failures.Load())
	for _, b := range check.bad {
		t.Error(b)
	}
	if after <= before {
		t.Fatalf("no grant after the leader was killed (%d before, %d after)", before, after)
	}
	raw := newLeader.client(t)
	eventually(t, 10*time.Second, "the lock free", func() bool {
		h, w := lockHolder(t, raw, "killed")
		return h == "" && w == 0
	})
	for _, m := range ms {
		if tok := m.Token(); tok != 0 {
			t.Fatalf("a Mutex still holds token %d", tok)
		}
	}
}

// With --redirect, followers answer -MOVED: a Client dialled to a
// follower follows it, and one made from a go-redis ClusterClient routes
// by itself.
func TestClientRedirect(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3, []string{"--redirect"}, []string{"--redirect"}, []string{"--redirect"})
	leader := cl.leader(30 * time.Second)
	f := cl.followers(leader)[0]
	raw := leader.client(t)
	use := func(name string, c *client.Client) {
		t.Helper()
		m := clientSession(t, c, 10*time.Second).Mutex(name)
		tok, err := m.Lock(tctx(t))
		if err != nil || tok <= 0 {
			t.Fatalf("%s: Lock: %d, %v", name, tok, err)
		}
		if h, _ := lockHolder(t, raw, name); h == "" {
			t.Fatalf("%s: not held after Lock", name)
		}
		if err := m.Unlock(tctx(t)); err != nil {
			t.Fatalf("%s: Unlock: %v", name, err)
		}
	}
	use("moved", clientDial(t, f.addr))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{f.addr}})
	defer cc.Close()
	c := client.New(cc)
	defer c.Close()
	use("cluster", c)
}
