package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/resp"
)

// workload is the fenced mutex workload: clients with sessions kept alive
// by heartbeats take locks with FLOCK ... WAIT, increment a counter in a
// fenced store and in an unfenced control store inside the lock, release
// with FUNLOCK ... FENCE, and now and then read a lock's token with FENCE.
// Every request carries a REQ id and is retried on another node while its
// outcome is unknown; some granted FLOCKs are sent once more with the same
// REQ, as a network retransmission would, and must change nothing.
type workload struct {
	h       *history
	clients int
	addrs   []string
	locks   []string
	ttl     time.Duration
	limit   int64   // FLOCK LIMIT: 0 none, 2 for the reentrant variant
	dupRate float64 // share of grants whose FLOCK is resent with its REQ

	stores map[string][2]*fencedStore // per lock: fenced, control

	// pause asks a client to stop inside its next critical section, its
	// heartbeats stopped too, for this long (a GC pause, a stalled VM).
	pauseMu sync.Mutex
	pause   map[int]time.Duration
	// pauseAny asks whichever client next enters a critical section to
	// pause there, and to say where on pauseAnyC (the nemesis's aimed
	// kills need a paused holder).
	pauseAny  time.Duration
	pauseAnyC chan pausedHolder

	// password is the default user's, "" for none; with users, client id
	// authenticates as ACL user c<id> (without admin) instead.
	password string
	users    bool
	tls      *tls.Config // to the client ports; nil = plain TCP

	dedupViolations atomic.Int64 // a resent REQ answered differently
	opens           atomic.Int64
}

func newWorkload(h *history, addrs, locks []string, ttl time.Duration) *workload {
	w := &workload{h: h, addrs: addrs, locks: locks, ttl: ttl, dupRate: 0.1,
		stores: make(map[string][2]*fencedStore), pause: make(map[int]time.Duration)}
	for _, l := range locks {
		w.stores[l] = [2]*fencedStore{{check: true}, {}}
	}
	return w
}

// cred is what client id authenticates as ("" = nothing).
func (w *workload) cred(id int) (user, pass string) {
	switch {
	case w.users:
		return fmt.Sprintf("c%d", id), fmt.Sprintf("p%d", id)
	case w.password != "":
		return "default", w.password
	}
	return "", ""
}

// admin is what the nemesis authenticates as: the default user, who may
// kill anyone's session.
func (w *workload) admin() (user, pass string) {
	if w.password == "" {
		return "", ""
	}
	return "default", w.password
}

// pauseClient makes client id pause for d inside its next critical section.
func (w *workload) pauseClient(id int, d time.Duration) {
	w.pauseMu.Lock()
	w.pause[id] = d
	w.pauseMu.Unlock()
}

// takePause returns how long client id, in its critical section of lock
// as holder with token, is to pause: 0 for not at all.
func (w *workload) takePause(id int, lock, holder string, token int64) time.Duration {
	w.pauseMu.Lock()
	defer w.pauseMu.Unlock()
	d := w.pause[id]
	delete(w.pause, id)
	if d == 0 && w.pauseAnyC != nil {
		d = w.pauseAny
		w.pauseAnyC <- pausedHolder{client: id, lock: lock, holder: holder, token: token}
		w.pauseAny, w.pauseAnyC = 0, nil
	}
	return d
}

// pausedHolder is a client paused in its critical section: it holds lock
// with token in session (or SET NX value) holder, and renews nothing.
type pausedHolder struct {
	client int
	lock   string
	holder string
	token  int64
}

// pauseNextHolder makes the next client to enter a critical section pause
// there for d, and returns where, or false if none did within wait.
func (w *workload) pauseNextHolder(ctx context.Context, d, wait time.Duration) (pausedHolder, bool) {
	ch := make(chan pausedHolder, 1)
	w.pauseMu.Lock()
	w.pauseAny, w.pauseAnyC = d, ch
	w.pauseMu.Unlock()
	select {
	case p := <-ch:
		return p, true
	case <-ctx.Done():
	case <-time.After(wait):
	}
	w.pauseMu.Lock()
	if w.pauseAnyC == ch {
		w.pauseAny, w.pauseAnyC = 0, nil
	}
	w.pauseMu.Unlock()
	select {
	case p := <-ch: // taken meanwhile
		return p, true
	default:
		return pausedHolder{}, false
	}
}

// call runs one operation: the command on a random node, then, while the
// outcome is unknown, the same command (same REQ) on other nodes, a few
// times. The result is the first decided answer; Return is when it came.
func (w *workload) call(ctx context.Context, cc *chaosConn, op histOp, timeout time.Duration, args ...string) (resp.Value, histOp) {
	op.Call = w.h.now()
	op.Outcome = outFail
	var v resp.Value
	attempts := 4
	if !slices.Contains(args, "REQ") && op.Kind != "fence" && op.Kind != "token" {
		attempts = 1 // without a REQ a retry could act twice; reads can't
	}
	for attempt := 0; attempt < attempts && ctx.Err() == nil; attempt++ {
		var o outcome
		v, o = cc.do(ctx, cc.pick(), timeout, args...)
		if o == outOK {
			op.Outcome = outOK
			break
		}
		if o == outUnknown {
			op.Outcome = outUnknown
		}
		time.Sleep(time.Duration(20+cc.rng.IntN(80)) * time.Millisecond)
	}
	op.Return = w.h.now()
	if op.Outcome == outOK && v.IsError() {
		op.Err, _, _ = strings.Cut(v.Text(), " ")
	}
	return v, op
}

// run is one client until ctx ends.
func (w *workload) run(ctx context.Context, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	cc := newChaosConn(w.addrs, rng).as(w.cred(id)).over(w.tls)
	defer cc.close()
	var (
		sess   string
		stopHB func()
		seq    int
		paused atomic.Bool // heartbeats stop while the client is paused
	)
	endSession := func() {
		if stopHB != nil {
			stopHB()
			stopHB = nil
		}
		sess = ""
	}
	defer endSession()
	// Half the requests carry a REQ id: those are retried while their
	// outcome is unknown; the others are sent once.
	withReq := func(args ...string) []string {
		if rng.IntN(2) == 0 {
			return args
		}
		seq++
		return append(args, "REQ", fmt.Sprintf("c%d.%d", id, seq))
	}
	for ctx.Err() == nil {
		if sess == "" {
			ttl := strconv.FormatInt(w.ttl.Milliseconds(), 10)
			v, op := w.call(ctx, cc, histOp{Client: id, Kind: "open", TTL: w.ttl.Milliseconds()}, time.Second, "SESSION.OPEN", "TTL", ttl)
			if op.Outcome == outOK && op.Err == "" {
				op.Session = v.Text()
				sess = op.Session
				w.opens.Add(1)
				stopHB = w.heartbeat(ctx, id, seed, sess, &paused)
			}
			w.h.add(op)
			if sess == "" {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		lock := w.locks[rng.IntN(len(w.locks))]
		if rng.IntN(5) == 0 {
			w.readFence(ctx, cc, id, lock)
			continue
		}
		holds := 1
		if w.limit >= 2 && rng.IntN(3) == 0 {
			holds = 2 // take it twice, release it twice
		}
		var token int64
		for i := 0; i < holds; i++ {
			args := withReq("FLOCK", lock, sess, "WAIT", "1000")
			if w.limit > 0 {
				args = append(args, "LIMIT", strconv.FormatInt(w.limit, 10))
			}
			v, op := w.call(ctx, cc, histOp{Client: id, Kind: "acquire", Lock: lock, Session: sess}, 3*time.Second, args...)
			op.Null, op.Token = v.Kind() == resp.KindNull, v.Integer()
			w.h.add(op)
			if op.Outcome != outOK || op.Err != "" || op.Null {
				switch op.Err {
				case "NOSESSION":
					endSession()
				case "LIMIT":
					// Holds left over from releases whose outcome was unknown:
					// give one back, or this client only ever hits the limit.
					if v, o := cc.do(ctx, cc.pick(), time.Second, "FENCE", lock, sess); o == outOK && v.Kind() == resp.KindInt {
						token, holds = v.Integer(), i+1
						i = holds // leave the loop holding one more to release
						continue
					}
				}
				holds = i
				break
			}
			token = op.Token
			if slices.Contains(args, "REQ") && rng.Float64() < w.dupRate {
				// A retransmission of the same request: the same answer,
				// no second hold. Unless the session has ended meanwhile
				// (a kill aimed just after the grant, an expiry): its
				// request ids went with it, and -NOSESSION is the answer.
				if v2, o := cc.do(ctx, cc.pick(), time.Second, args...); o == outOK && (v2.IsError() || v2.Integer() != token) {
					if code, _, _ := strings.Cut(v2.Text(), " "); !v2.IsError() || code != "NOSESSION" {
						w.dedupViolations.Add(1)
					}
				}
			}
		}
		if holds == 0 {
			continue
		}
		w.critical(ctx, id, lock, sess, token, &paused)
		for i := 0; i < holds && sess != ""; i++ {
			v, op := w.call(ctx, cc, histOp{Client: id, Kind: "release", Lock: lock, Session: sess, Token: token}, 3*time.Second,
				withReq("FUNLOCK", lock, sess, "FENCE", strconv.FormatInt(token, 10))...)
			op.Count = v.Integer()
			w.h.add(op)
			if op.Err == "NOSESSION" {
				endSession()
			}
			if op.Outcome != outOK || op.Err != "" {
				break
			}
		}
	}
}

// readFence records a FENCE read of lock's token.
func (w *workload) readFence(ctx context.Context, cc *chaosConn, id int, lock string) {
	v, op := w.call(ctx, cc, histOp{Client: id, Kind: "fence", Lock: lock}, time.Second, "FENCE", lock)
	op.Null, op.Token = v.Kind() == resp.KindNull, v.Integer()
	w.h.add(op)
}

// critical increments both counters of lock, read and written with token
// by holder (the session, or the SET NX value). A pause, when asked for,
// comes between the read and the write, with the heartbeats stopped: the
// session expires meanwhile and the lock passes on, so the write must be
// refused by the fenced store.
func (w *workload) critical(ctx context.Context, id int, lock, holder string, token int64, paused *atomic.Bool) {
	st := w.stores[lock]
	fv, fok := st[0].read(token, holder)
	cv, _ := st[1].read(token, holder)
	if d := w.takePause(id, lock, holder, token); d > 0 {
		paused.Store(true)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		paused.Store(false)
	} else {
		time.Sleep(time.Millisecond)
	}
	if fok {
		st[0].write(token, holder, fv+1)
	}
	st[1].write(token, holder, cv+1)
}

// heartbeat renews sess every TTL/4 until stopped or the session is gone.
func (w *workload) heartbeat(ctx context.Context, id int, seed uint64, sess string, paused *atomic.Bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cc := newChaosConn(w.addrs, rand.New(rand.NewPCG(seed, uint64(id)<<32|1))).as(w.cred(id)).over(w.tls)
		defer cc.close()
		t := time.NewTicker(w.ttl / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if paused.Load() {
				continue
			}
			op := histOp{Client: id, Kind: "heartbeat", Session: sess, Call: w.h.now()}
			v, o := cc.do(ctx, cc.pick(), w.ttl/4, "SESSION.HEARTBEAT", sess)
			op.Return, op.Outcome = w.h.now(), o
			if o == outOK && v.IsError() {
				op.Err, _, _ = strings.Cut(v.Text(), " ")
			}
			if ctx.Err() != nil && o != outOK {
				return // cancelled mid-call: not an operation of the history
			}
			w.h.add(op)
			if op.Err == "NOSESSION" {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
