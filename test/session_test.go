package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance d: a session that is not renewed expires between TTL and
// TTL+1 s after the send time of its last renewal (polled with SESSION.INFO),
// its locks, with their full reentrant count, pass to their waiters, and
// every later command naming it (FLOCK, FUNLOCK, FENCE with owner,
// SESSION.HEARTBEAT, SESSION.INFO) answers -NOSESSION.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const ttl = 1000
	s := openSession(t, c, ttl, "mortal")
	tok1 := mustInt(t, c, "FLOCK", "exp1", s)
	mustInt(t, c, "FLOCK", "exp1", s) // count 2: expiry releases both holds
	tok2 := mustInt(t, c, "FLOCK", "exp2", s, "OWNER", "t")

	heir := openSession(t, c, 60000, "heir")
	c1, c2 := n.soloClient(t), n.soloClient(t)
	r1 := async(c1, "FLOCK", "exp1", heir, "WAIT", 0)
	waitQueued(t, c, "exp1", heir)
	r2 := async(c2, "FLOCK", "exp2", heir, "OWNER", "second", "WAIT", 0)
	waitQueued(t, c, "exp2", heir)

	// The last renewal.
	sent := time.Now()
	if got := mustInt(t, c, "SESSION.HEARTBEAT", s); got != ttl {
		t.Fatalf("SESSION.HEARTBEAT = %d, want %d", got, ttl)
	}
	var firstGoneSent, firstGoneDone, lastAliveSent time.Time
	for {
		p := time.Now()
		v, err := do(tctx(t), c, "SESSION.INFO", s)
		if isCode(err, "NOSESSION") {
			firstGoneSent, firstGoneDone = p, time.Now()
			break
		}
		if err != nil {
			t.Fatalf("SESSION.INFO: %v", err)
		}
		si, err := parseSessionInfo(v)
		if err != nil {
			t.Fatal(err)
		}
		if si.Remaining > ttl {
			t.Fatalf("remaining %d > ttl %d", si.Remaining, ttl)
		}
		lastAliveSent = p
		if time.Since(sent) > ttl*time.Millisecond+5*time.Second {
			t.Fatalf("session still alive %v after its last renewal (ttl %d ms)", time.Since(sent), ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("last seen alive %v after the renewal was sent; gone %v-%v", lastAliveSent.Sub(sent), firstGoneSent.Sub(sent), firstGoneDone.Sub(sent))
	if early := firstGoneDone.Sub(sent); early < ttl*time.Millisecond {
		t.Errorf("session expired %v after its last renewal was sent, before its TTL of %d ms", early, ttl)
	}
	if late := firstGoneSent.Sub(sent); late > ttl*time.Millisecond+time.Second {
		t.Errorf("session still alive %v after its last renewal was sent, want expiry within TTL+1s", late)
	}

	// Its locks passed to their waiters.
	g1 := await(t, r1, "heir on exp1")
	g2 := await(t, r2, "heir on exp2")
	t1, t2 := replyInt(t, g1, "heir on exp1"), replyInt(t, g2, "heir on exp2")
	if t1 <= tok1 || t2 <= tok2 {
		t.Errorf("heir tokens %d, %d; want > %d, > %d", t1, t2, tok1, tok2)
	}
	if g1.done.Sub(sent) < ttl*time.Millisecond {
		t.Errorf("lock handed over %v after the last renewal, before the TTL", g1.done.Sub(sent))
	}
	if li := getLockInfo(t, c, "exp1"); !equalLockInfo(li, lockInfo{Held: true, Holder: heir, Count: 1, Token: t1}) {
		t.Errorf("exp1 after expiry: %+v, want held once by the heir", li)
	}
	if li := getLockInfo(t, c, "exp2"); !equalLockInfo(li, lockInfo{Held: true, Holder: heir, Owner: "second", Count: 1, Token: t2}) {
		t.Errorf("exp2 after expiry: %+v, want held by the heir", li)
	}

	// Every command naming the expired session answers -NOSESSION.
	for _, args := range [][]any{
		{"FLOCK", "exp1", s},
		{"FLOCK", "exp-new", s},
		{"FLOCK", "exp-new", s, "WAIT", 0},
		{"FLOCK", "exp1", s, "WAIT", 100, "REQ", "late"},
		{"FUNLOCK", "exp1", s},
		{"FUNLOCK", "exp1", s, "FENCE", tok1},
		{"FUNLOCK", "exp2", s, "OWNER", "t"},
		{"FENCE", "exp1", s},
		{"FENCE", "exp2", s, "OWNER", "t"},
		{"FENCE", "exp-new", s},
		{"SESSION.HEARTBEAT", s},
		{"SESSION.INFO", s},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := do(ctx, c, args...)
		cancel()
		if !isCode(err, "NOSESSION") {
			t.Errorf("%v after expiry: %v, want -NOSESSION", args, err)
		}
	}
	if got := mustInt(t, c, "SESSION.KILL", s); got != 0 {
		t.Errorf("SESSION.KILL of an expired session = %d, want 0", got)
	}
	mustNil(t, c, "FENCE", "exp-new") // the refused FLOCK created nothing
	if slices.Contains(sessionList(t, c), s) {
		t.Errorf("SESSION.LIST still lists the expired session")
	}
	// The heir's locks are untouched by those commands.
	if f := mustInt(t, c, "FENCE", "exp1"); f != t1 {
		t.Errorf("FENCE exp1 = %d, want %d", f, t1)
	}
}

// Acceptance d: sessions renewed every TTL/3 never expire over 20 TTLs
// (TTL 500 ms, 10 s): one by SESSION.HEARTBEAT, one only by its FLOCK and
// FUNLOCK. A control session that is never renewed does expire meanwhile.
func TestSessionRenewedNeverExpires(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const ttl = 500
	hb := openSession(t, c, ttl, "heartbeats")
	op := openSession(t, c, ttl, "operations")
	control := openSession(t, c, ttl, "control")
	tokHB := mustInt(t, c, "FLOCK", "renew-hb", hb)
	tokOp := mustInt(t, c, "FLOCK", "renew-op", op)
	mustInt(t, c, "FLOCK", "renew-control", control)

	type result struct {
		err    error
		maxGap time.Duration
	}
	renew := func(cl *redis.Client, step func(i int) error) <-chan result {
		ch := make(chan result, 1)
		go func() {
			tick := time.NewTicker(ttl * time.Millisecond / 3)
			defer tick.Stop()
			end := time.Now().Add(20 * ttl * time.Millisecond)
			last := time.Now()
			var res result
			for i := 0; time.Now().Before(end); i++ {
				<-tick.C
				now := time.Now()
				res.maxGap = max(res.maxGap, now.Sub(last))
				last = now
				if err := step(i); err != nil {
					res.err = fmt.Errorf("renewal %d at %v: %w", i, now.Sub(end.Add(-20*ttl*time.Millisecond)), err)
					break
				}
			}
			ch <- res
		}()
		return ch
	}
	chb := n.soloClient(t)
	hbDone := renew(chb, func(int) error {
		v, err := do(context.Background(), chb, "SESSION.HEARTBEAT", hb)
		if err == nil && v != int64(ttl) {
			err = fmt.Errorf("SESSION.HEARTBEAT = %v, want %d", v, ttl)
		}
		return err
	})
	cop := n.soloClient(t)
	opDone := renew(cop, func(i int) error {
		if i%2 == 0 {
			v, err := do(context.Background(), cop, "FLOCK", "renew-op", op)
			if err == nil && v != tokOp {
				err = fmt.Errorf("reentrant FLOCK = %v, want %d", v, tokOp)
			}
			return err
		}
		v, err := do(context.Background(), cop, "FUNLOCK", "renew-op", op)
		if err == nil && v != int64(1) {
			err = fmt.Errorf("FUNLOCK = %v, want 1", v)
		}
		return err
	})
	for name, ch := range map[string]<-chan result{"heartbeat": hbDone, "operations": opDone} {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Errorf("%s session: %v (largest gap between renewals %v)", name, r.err, r.maxGap)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s renewals did not finish", name)
		}
	}
	if si := getSessionInfo(t, c, hb); !slices.Equal(si.Locks, []string{"renew-hb"}) {
		t.Errorf("heartbeat session after 20 TTLs: %+v", si)
	}
	if si := getSessionInfo(t, c, op); !slices.Equal(si.Locks, []string{"renew-op"}) {
		t.Errorf("operations session after 20 TTLs: %+v", si)
	}
	if f := mustInt(t, c, "FENCE", "renew-hb", hb); f != tokHB {
		t.Errorf("FENCE renew-hb = %d, want %d", f, tokHB)
	}
	if f := mustInt(t, c, "FENCE", "renew-op", op); f != tokOp {
		t.Errorf("FENCE renew-op = %d, want %d", f, tokOp)
	}
	// The control shows expiry was working all along.
	mustErr(t, c, "NOSESSION", "SESSION.INFO", control)
	mustNil(t, c, "FENCE", "renew-control")
}
