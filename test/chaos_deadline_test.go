package test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced/resp"
)

// The aimed session kill. One Raft entry used to be able to grant
// a lock twice with one token: the first entry after the holder's session
// deadline expires the holder and hands the lock to the head of its queue,
// then the entry's own operation ends that new holder (a SESSION.KILL of
// its session) and the lock went to the next waiter with the same token.
// The window is the millisecond or so between the deadline and the leader's
// tick, so random kills hit it by luck only. kill-at-deadline hits it on
// purpose: it pauses a holder inside its critical section (its heartbeats
// stop), reads its session's remaining time at the leader until it knows
// the expiry moment to a fraction of a ms, and then kills the session of
// the head waiter of that lock's queue (LOCK.INFO), sending straight to the
// leader. A short staircase of such kills, a fraction of a ms apart, each
// at the waiter that is then the head, spreads them before, on and after
// the expiry, so that one likely lands between the expiry and the tick.

const (
	aimPause   = 3 * time.Second // how long to wait for a client to enter a critical section
	aimFinal   = 40 * time.Millisecond
	aimKills   = 3                      // kills in one staircase, at most
	aimKillGap = 450 * time.Microsecond // between them
)

// killAtDeadline is the kill-at-deadline fault.
func (nm *nemesis) killAtDeadline(ctx context.Context) {
	cc := nm.cc
	ph, ok := nm.w.pauseNextHolder(ctx, 3*nm.ttl, aimPause)
	if !ok {
		return
	}
	nm.count("kill-at-deadline: holder paused")
	l := cc.leaderNow()
	if l == nil {
		return
	}
	li := slices.Index(cc.nodes, l)
	conn := newChaosConn(cc.addrs, nm.rng).as(nm.w.admin()).over(cc.tls)
	defer conn.close()

	// The expiry moment: the leader's clock reads whole ms, and a session
	// ends with the first entry stamped after its deadline, so if SESSION.INFO
	// answered rem ms, read by the leader at some time t between our send
	// and its answer, the first entry that expires it is stamped at t+rem+1
	// ms minus the fraction of a ms the leader's clock had run: the moment
	// is in (send+rem, answer+rem+1]. Read until close to it, to leave no
	// room for drift or a last heartbeat that renewed the session, then a
	// few times more: each read narrows the interval.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	reads := 0
	for {
		sent := nm.h.now()
		rem, at, ok := nm.sessionRemaining(ctx, conn, li, ph.holder)
		if !ok || rem == 0 {
			return // gone (another fault?) or due already: the moment is lost
		}
		reads++
		ms := int64(time.Millisecond)
		lo, hi = max(lo, sent+rem*ms), min(hi, at+(rem+1)*ms)
		if lo >= hi {
			// A renewal moved the deadline (or a read's bounds were
			// wrong): start again from this read.
			lo, hi, reads = sent+rem*ms, at+(rem+1)*ms, 1
		}
		wait := time.Duration(lo - nm.h.now())
		if wait > 2*aimFinal {
			nm.sleep(ctx, wait-aimFinal)
		} else if wait > aimFinal/4 && reads < 12 {
			nm.sleep(ctx, 2*time.Millisecond+time.Duration(nm.rng.Int64N(int64(time.Millisecond))))
		} else {
			break
		}
		if ctx.Err() != nil {
			return
		}
	}
	expiry := (lo + hi) / 2
	// The head waiter: the first in queue order whose wait lasts past the
	// expiry (one that times out before it is gone by then). The double
	// grant needs a second one behind it, to take the lock a second time.
	info, ok := nm.lockInfo(ctx, conn, li, ph.lock)
	if !ok || info.holder != ph.holder {
		return
	}
	left := time.Duration(expiry-nm.h.now()) + 20*time.Millisecond
	var live []string
	for _, w := range info.waiters {
		if w.session != ph.holder && (w.remaining < 0 || time.Duration(w.remaining)*time.Millisecond > left) {
			live = append(live, w.session)
		}
	}
	if len(live) == 0 {
		return
	}
	if len(live) >= 2 {
		nm.count("kill-at-deadline: 2+ waiters")
	}

	// Aim a short staircase of kills, each at the head waiter of the moment:
	// the first one at a random offset in [-0.9, +0.1) ms from the
	// estimated expiry, the next ones aimKillGap apart, each at the next
	// waiter in the queue, which is the head once the kill before it
	// landed before the expiry. So the kills land before, on and after the
	// expiry, and one of them likely between the expiry and the leader's
	// tick. At least one waiter stays behind the last one, to take the lock
	// a second time if an entry grants it twice. One goroutine sends them
	// all, on connections dialled beforehand, without waiting for answers
	// in between, so that nothing but the aim decides when each leaves.
	kills := max(1, min(aimKills, len(live)-1))
	first := expiry - int64(900*time.Microsecond) + nm.rng.Int64N(int64(time.Millisecond))
	type shot struct {
		session string
		target  int64
		conn    net.Conn
		op      histOp
	}
	var shots []*shot
	for k := range kills {
		c, err := dialClientPort(context.Background(), cc.addrs[li], cc.tls, 200*time.Millisecond)
		if err != nil {
			break
		}
		defer c.Close()
		if user, pass := nm.w.admin(); user != "" {
			// Authenticated before the aim, as the nemesis: the default user.
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(user), user, len(pass), pass)
			if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
				break
			}
		}
		shots = append(shots, &shot{session: live[k], target: first + int64(k)*int64(aimKillGap), conn: c})
	}
	if len(shots) == 0 {
		return
	}
	// Sleep to within 2 ms of the first kill, then spin, so that timer
	// slack does not blur the aim.
	if d := time.Duration(first-nm.h.now()) - 2*time.Millisecond; d > 0 {
		nm.sleep(ctx, d)
	}
	if ctx.Err() != nil {
		return
	}
	for k, sh := range shots {
		for nm.h.now() < sh.target {
		}
		sh.op = histOp{Client: nm.w.clients + k, Kind: "kill", Session: sh.session, Call: nm.h.now(), Outcome: outUnknown}
		sh.conn.SetDeadline(time.Now().Add(2 * time.Second))
		cmd := fmt.Sprintf("*2\r\n$12\r\nSESSION.KILL\r\n$%d\r\n%s\r\n", len(sh.session), sh.session)
		if _, err := sh.conn.Write([]byte(cmd)); err != nil {
			sh.op.Outcome = outFail // maybe sent in part: unknown would do too
		}
	}
	var said []string
	for _, sh := range shots {
		if sh.op.Outcome == outUnknown {
			line, err := bufio.NewReader(sh.conn).ReadString('\n')
			sh.op.Return = nm.h.now()
			if err == nil {
				sh.op.Outcome = killOutcome(strings.TrimRight(line, "\r\n"))
			}
		} else {
			sh.op.Return = nm.h.now()
		}
		nm.h.add(sh.op)
		said = append(said, fmt.Sprintf("%.8s %+.2f ms (%s)", sh.session, float64(sh.op.Call-expiry)/1e6, sh.op.Outcome))
	}
	nm.count("kill-at-deadline: aimed")
	if nm.logf != nil {
		nm.logf("kill-at-deadline: %s held by %.8s (c%d, token %d), %d waiters; expiry estimated to ±%.2f ms (%d reads); killed %s",
			ph.lock, ph.holder, ph.client, ph.token, len(live), float64(hi-lo)/2e6, reads, strings.Join(said, ", "))
	}
}

// killOutcome classifies the RESP reply line of a SESSION.KILL as
// chaosConn.do does: an integer is done; an error saying it was not
// applied is a failure, -UNCERTAIN unknown; any other error changed
// nothing either.
func killOutcome(line string) outcome {
	switch {
	case strings.HasPrefix(line, ":"):
		return outOK
	case strings.HasPrefix(line, "-UNCERTAIN"):
		return outUnknown
	}
	return outFail
}

// sessionRemaining asks node i for session id's remaining ms; at is when
// the answer came, on the history's clock.
func (nm *nemesis) sessionRemaining(ctx context.Context, conn *chaosConn, i int, id string) (rem, at int64, ok bool) {
	v, o := conn.do(ctx, i, time.Second, "SESSION.INFO", id)
	at = nm.h.now()
	if o != outOK || v.IsError() {
		return 0, at, false
	}
	f := fields(v)
	r, ok := f["remaining"]
	if !ok {
		return 0, at, false
	}
	return r.Integer(), at, true
}

type aimedLock struct {
	holder  string
	waiters []aimedWaiter
}

type aimedWaiter struct {
	session   string
	remaining int64 // ms, -1 for no deadline
}

// lockInfo reads LOCK.INFO lock at node i.
func (nm *nemesis) lockInfo(ctx context.Context, conn *chaosConn, i int, lock string) (aimedLock, bool) {
	v, o := conn.do(ctx, i, time.Second, "LOCK.INFO", lock)
	if o != outOK || v.IsError() {
		return aimedLock{}, false
	}
	f := fields(v)
	info := aimedLock{holder: f["holder"].Text()}
	for _, w := range f["waiters"].Elems() {
		wf := fields(w)
		info.waiters = append(info.waiters, aimedWaiter{session: wf["session"].Text(), remaining: wf["remaining"].Integer()})
	}
	return info, true
}

// fields reads a map reply (or its RESP2 flat array) by key.
func fields(v resp.Value) map[string]resp.Value {
	m := make(map[string]resp.Value)
	e := v.Elems()
	for i := 0; i+1 < len(e); i += 2 {
		m[strings.ToLower(e[i].Text())] = e[i+1]
	}
	return m
}
