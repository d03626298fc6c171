package test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acceptance d: wall clocks an hour apart change no expiry. n2 runs an hour
// ahead, n3 an hour behind; leadership moves n1 -> n2 -> n3 -> n1 (or the
// same rotation from wherever it starts). Sessions renewed every ~600 ms
// with a TTL of 2 s, through every node in turn, stay alive throughout;
// sessions that stop being renewed expire no sooner than their TTL after
// the client sent the last renewal, including when leadership moves (to a
// node with another wall clock) during their countdown.
func TestClusterClockOffsetNoEarlyExpiry(t *testing.T) {
	t.Parallel()
	const ttl = 2000
	start := time.Now()
	c := startCluster(t, 3, nil, []string{"--clock-offset", "1h"}, []string{"--clock-offset", "-1h"})
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = n.client(t)
	}

	// Renewed sessions.
	type renewer struct {
		id             string
		ok, retry      int
		maxGap         time.Duration // between acknowledged renewals' send times
		lastAckSent    time.Time
		expired, other error
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var renewers []*renewer
	for i := range 4 {
		sent := time.Now()
		r := &renewer{id: openSession(t, clients[i%3], ttl, fmt.Sprintf("renewed-%d", i)), lastAckSent: sent}
		renewers = append(renewers, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; ; k++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(r.lastAckSent.Add(600 * time.Millisecond))):
				}
				for {
					sent := time.Now()
					v, err := doWithin(clients[k%3], 5*time.Second, "SESSION.HEARTBEAT", r.id)
					switch {
					case err == nil && v == int64(ttl):
						r.maxGap = max(r.maxGap, sent.Sub(r.lastAckSent))
						r.lastAckSent = sent
						r.ok++
					case isCode(err, "NOSESSION"):
						r.expired = fmt.Errorf("renewed session %s answered %v through %s, %v after its last acknowledged renewal was sent (TTL %d ms)",
							r.id, err, c.ids[k%3], sent.Sub(r.lastAckSent).Round(time.Millisecond), ttl)
						t.Error(r.expired)
						return
					case err == nil:
						r.other = fmt.Errorf("SESSION.HEARTBEAT = %v, want %d", v, ttl)
						t.Error(r.other)
						return
					case isReplyErr(err) && !notServing(err):
						r.other = fmt.Errorf("SESSION.HEARTBEAT through %s: %v", c.ids[k%3], err)
						t.Error(r.other)
						return
					default: // not served, or the outcome is unknown: try again
						r.retry++
						time.Sleep(50 * time.Millisecond)
						k++
						continue
					}
					break
				}
			}
		}()
	}
	stopRenewers := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer stopRenewers()

	// Probes: sessions renewed once more (and holding a lock), then left
	// alone; polled with SESSION.INFO until they are gone.
	type probe struct {
		name, id, lock string
		lastSent       time.Time
		leaderAtSent   string
		done           chan struct{}
		goneSent       time.Time // send time of the first SESSION.INFO that answered NOSESSION
		goneDone       time.Time // and its reply
		lastAlive      time.Time
		maxRemaining   int64
		err            error
	}
	var probes []*probe
	startProbe := func(name string, via, poll int) *probe {
		t.Helper()
		l := c.leader(20 * time.Second)
		p := &probe{name: name, lock: "lock-" + name, done: make(chan struct{}), leaderAtSent: c.id(l)}
		p.id = openSession(t, clients[via], ttl, name)
		mustInt(t, clients[via], "FLOCK", p.lock, p.id)
		p.lastSent = time.Now()
		if got := mustInt(t, clients[via], "SESSION.HEARTBEAT", p.id); got != ttl {
			t.Fatalf("SESSION.HEARTBEAT = %d, want %d", got, ttl)
		}
		probes = append(probes, p)
		go func() {
			defer close(p.done)
			for {
				sent := time.Now()
				if sent.Sub(p.lastSent) > 30*time.Second {
					p.err = fmt.Errorf("probe %s: session still alive 30s after its last renewal (TTL %d ms)", name, ttl)
					return
				}
				v, err := doWithin(clients[poll], 5*time.Second, "SESSION.INFO", p.id)
				switch {
				case isCode(err, "NOSESSION"):
					p.goneSent, p.goneDone = sent, time.Now()
					return
				case err == nil:
					si, perr := parseSessionInfo(v)
					if perr != nil {
						p.err = perr
						return
					}
					p.lastAlive = sent
					p.maxRemaining = max(p.maxRemaining, si.Remaining)
					if si.Remaining > ttl {
						p.err = fmt.Errorf("probe %s: remaining %d > TTL %d", name, si.Remaining, ttl)
						return
					}
				case isReplyErr(err) && !notServing(err):
					p.err = fmt.Errorf("probe %s: SESSION.INFO: %v", name, err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		return p
	}

	// Rotation of leaders from the current one: every node leads once more,
	// so both offset nodes lead.
	first := c.leader(20 * time.Second)
	fi := 0
	for i, n := range c.nodes {
		if n == first {
			fi = i
		}
	}
	startProbe(fmt.Sprintf("probe0-%s", c.id(first)), (fi+1)%3, (fi+2)%3)
	var changes []time.Time // when each new leader was seen ready
	for step := 1; step <= 3; step++ {
		time.Sleep(500 * time.Millisecond) // well inside the probe's TTL
		target := c.nodes[(fi+step)%3]
		transferLeadership(t, c, target)
		changes = append(changes, time.Now())
		// A probe whose countdown starts under this leader and crosses the
		// next leader change (the last one expires under this leader).
		startProbe(fmt.Sprintf("probe%d-%s", step, c.id(target)), (fi+step+1)%3, (fi+step+2)%3)
	}

	spanned := 0
	for _, p := range probes {
		select {
		case <-p.done:
		case <-time.After(40 * time.Second):
			t.Fatalf("probe %s never finished", p.name)
		}
		if p.err != nil {
			t.Error(p.err)
			continue
		}
		after := p.goneDone.Sub(p.lastSent)
		crossed := 0
		for _, ch := range changes {
			if ch.After(p.lastSent) && ch.Before(p.goneSent) {
				crossed++
			}
		}
		if crossed > 0 {
			spanned++
		}
		t.Logf("%s (last renewal under leader %s, %d leader changes in its countdown): last seen alive %v after the renewal was sent, gone at %v-%v: %v late at most, %v at least",
			p.name, p.leaderAtSent, crossed, p.lastAlive.Sub(p.lastSent).Round(time.Millisecond),
			p.goneSent.Sub(p.lastSent).Round(time.Millisecond), after.Round(time.Millisecond),
			(after - ttl*time.Millisecond).Round(time.Millisecond),
			max(0, p.goneSent.Sub(p.lastSent)-ttl*time.Millisecond).Round(time.Millisecond))
		if after < ttl*time.Millisecond {
			t.Errorf("%s expired %v after its last renewal was sent, before its TTL of %d ms", p.name, after, ttl)
		}
		// Its lock was released with it, in the same step.
		cl := clients[0]
		mustErr(t, cl, "NOSESSION", "FENCE", p.lock, p.id)
		if li := getLockInfo(t, cl, p.lock); li.Held || len(li.Waiters) != 0 {
			since := time.Since(p.goneDone)
			freed := "never, within 5s"
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if l2 := getLockInfo(t, cl, p.lock); !l2.Held {
					freed = fmt.Sprintf("%v after SESSION.INFO first answered NOSESSION", time.Since(p.goneDone).Round(time.Millisecond))
					break
				}
			}
			t.Errorf("%s: SESSION.INFO answered NOSESSION, but %v later LOCK.INFO %s still shows it held: %+v (freed: %s)",
				p.name, since.Round(time.Millisecond), p.lock, li, freed)
		}
	}

	if spanned == 0 {
		t.Errorf("no probe's countdown crossed a leader change: the test did not test that")
	}

	// The renewed sessions lived through it all.
	time.Sleep(time.Second)
	stopRenewers()
	for _, r := range renewers {
		if r.expired != nil || r.other != nil {
			continue
		}
		t.Logf("renewed %s: %d renewals, %d retries, longest gap between acknowledged renewals %v",
			r.id, r.ok, r.retry, r.maxGap.Round(time.Millisecond))
		for i, cl := range clients {
			si := getSessionInfo(t, cl, r.id)
			if si.Remaining <= 0 || si.Remaining > ttl {
				t.Errorf("SESSION.INFO %s through %s: remaining %d", r.id, c.ids[i], si.Remaining)
			}
		}
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
