package test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fenced/fenced/resp"
)

// The fault tests' clients: goroutines of this process, each with one
// connection per node, recording every operation with one monotonic clock
// and one of three outcomes. They use the repo's RESP client, which tells
// "never sent" from "sent, reply lost", so that an outcome is unknown only
// when it truly is.

type outcome uint8

const (
	outOK      outcome = iota // the server answered (a decided reply, errors included)
	outFail                   // definitely did not happen
	outUnknown                // may have happened, at any time after the call
)

func (o outcome) String() string {
	return [...]string{"ok", "fail", "unknown"}[o]
}

// chaosConn is a client's view of the cluster: a connection per node,
// redialed after it breaks.
type chaosConn struct {
	addrs      []string
	conns      []*resp.Client
	rng        *rand.Rand
	user, pass string      // AUTH on every new connection; "" = none
	tls        *tls.Config // TLS to the client port; nil = plain TCP
}

// as makes c authenticate as user on every connection it opens.
func (c *chaosConn) as(user, pass string) *chaosConn {
	c.user, c.pass = user, pass
	return c
}

// over makes c connect with TLS (nil: plain TCP).
func (c *chaosConn) over(cfg *tls.Config) *chaosConn {
	c.tls = cfg
	return c
}

// dialClientPort connects to a node's client port, with TLS when cfg is
// set (its ServerName taken from addr).
func dialClientPort(ctx context.Context, addr string, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if cfg == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	cfg = cfg.Clone()
	cfg.ServerName, _, _ = net.SplitHostPort(addr)
	return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", addr)
}

func newChaosConn(addrs []string, rng *rand.Rand) *chaosConn {
	return &chaosConn{addrs: addrs, conns: make([]*resp.Client, len(addrs)), rng: rng}
}

func (c *chaosConn) close() {
	for _, cl := range c.conns {
		if cl != nil {
			cl.Close()
		}
	}
}

// do sends args to node i and classifies the result: a reply (outOK, its
// error included, unless the error says the command was not applied or
// its outcome is unknown), outFail when nothing was sent or the server
// refused before proposing, outUnknown when the reply was lost or the
// server does not know.
func (c *chaosConn) do(ctx context.Context, i int, timeout time.Duration, args ...string) (resp.Value, outcome) {
	cl := c.conns[i]
	if cl == nil || cl.Broken() {
		if cl != nil {
			cl.Close()
		}
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		var err error
		var nc net.Conn
		if nc, err = dialClientPort(dctx, c.addrs[i], c.tls, 500*time.Millisecond); err == nil {
			cl = resp.NewClient(nc, resp.DefaultReplyLimits())
		}
		if err == nil && c.user != "" {
			var v resp.Value
			if v, err = cl.Do(dctx, []byte("AUTH"), []byte(c.user), []byte(c.pass)); err == nil && v.IsError() {
				err = fmt.Errorf("AUTH %s: %s", c.user, v.Text())
			}
			if err != nil {
				cl.Close()
			}
		}
		cancel()
		if err != nil {
			c.conns[i] = nil
			return resp.Value{}, outFail
		}
		c.conns[i] = cl
	}
	return send(ctx, cl, timeout, args...)
}

// doOn is do on node i's connection cl only: if cl has broken or been
// replaced, nothing is sent (outFail). A transaction must not go on over a
// new connection, which has none of its WATCH and MULTI.
func (c *chaosConn) doOn(ctx context.Context, i int, cl *resp.Client, timeout time.Duration, args ...string) (resp.Value, outcome) {
	if cl == nil || c.conns[i] != cl || cl.Broken() {
		return resp.Value{}, outFail
	}
	return send(ctx, cl, timeout, args...)
}

// drop closes node i's connection; the next do dials afresh.
func (c *chaosConn) drop(i int) {
	if c.conns[i] != nil {
		c.conns[i].Close()
		c.conns[i] = nil
	}
}

// send sends args on cl and classifies the result, as do says.
func send(ctx context.Context, cl *resp.Client, timeout time.Duration, args ...string) (resp.Value, outcome) {
	b := make([][]byte, len(args))
	for j, a := range args {
		b[j] = []byte(a)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := cl.Do(cctx, b...)
	switch {
	case err == nil:
	case errors.Is(err, resp.ErrNotSent):
		return resp.Value{}, outFail
	default:
		return resp.Value{}, outUnknown
	}
	if v.IsError() {
		switch code, _, _ := strings.Cut(v.Text(), " "); code {
		case "TRYAGAIN", "CLUSTERDOWN", "MOVED", "LOADING":
			return v, outFail
		case "UNCERTAIN":
			return v, outUnknown
		}
	}
	return v, outOK
}

// pick returns a random node index.
func (c *chaosConn) pick() int { return c.rng.IntN(len(c.addrs)) }

// histOp is one operation of the history. Call and Return are ns on the
// history's clock; an unknown operation's Return is when the client gave
// up on it.
type histOp struct {
	Client  int
	Kind    string // open, heartbeat, acquire, release, fence
	Lock    string
	Session string // fcall: the call's marker key
	Expect  string // fcall: the value its increment required, "" for none
	TTL     int64  // open: ms
	Token   int64  // acquire: granted; release: the FENCE sent; fence: read; fcall: the value left
	Null    bool   // acquire: held by another / timed out; fence: free
	Count   int64  // release: holds left; fcall: the value found; fcall_ro: the value read
	Err     string
	Outcome outcome
	Call    int64
	Return  int64
}

// history records operations on one monotonic clock.
type history struct {
	t0  time.Time
	mu  sync.Mutex
	ops []histOp
}

func newHistory() *history { return &history{t0: time.Now()} }

func (h *history) now() int64 { return time.Since(h.t0).Nanoseconds() }

func (h *history) add(op histOp) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

func (h *history) all() []histOp {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]histOp(nil), h.ops...)
}

// fencedStore is the storage a lock protects, kept in the harness: it
// accepts a read or a write only with a token at least as high as any it
// has seen, so a client that lost its lock without knowing can no longer
// change it. A token equal to the highest is accepted only from the holder
// (session, or SET NX acquisition) that first used it: a token names one
// grant, so the same token from another holder means the lock service
// granted one lock twice with one token (see DESIGN.md, Sessions, waits
// and handoff), and the store refuses it and counts it as a conflict, a
// violation. With check off it is the control: it accepts everything.
type fencedStore struct {
	check bool

	mu        sync.Mutex
	max       int64
	maxHolder string // who first used max
	value     int64
	accepted  []int64 // the values of accepted writes, in order
	rejected  int     // stale tokens refused: what fencing is for
	conflicts []string
}

// admit checks token and holder against the highest token seen, and
// records them; s.mu is held.
func (s *fencedStore) admit(token int64, holder, what string) bool {
	if s.check {
		switch {
		case token < s.max:
			s.rejected++
			return false
		case token == s.max && holder != s.maxHolder:
			s.conflicts = append(s.conflicts, fmt.Sprintf("%s with token %d by %.8s, which %.8s used first", what, token, holder, s.maxHolder))
			return false
		}
	}
	if token > s.max {
		s.max, s.maxHolder = token, holder
	}
	return true
}

// read returns the value, or false if token is stale or another holder's.
func (s *fencedStore) read(token int64, holder string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(token, holder, "read") {
		return 0, false
	}
	return s.value, true
}

// write stores v, or reports false if token is stale or another holder's.
func (s *fencedStore) write(token int64, holder string, v int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(token, holder, "write") {
		return false
	}
	s.value = v
	s.accepted = append(s.accepted, v)
	return true
}

// conflicted returns the accesses refused because another holder had used
// the same token: each is two holders with one token.
func (s *fencedStore) conflicted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.conflicts...)
}

// anomalies counts the accepted writes that did not increase the value by
// exactly one: increments lost to a holder that was not alone.
func (s *fencedStore) anomalies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, prev := 0, int64(0)
	for _, v := range s.accepted {
		if v != prev+1 {
			n++
		}
		prev = v
	}
	return n
}

func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }
