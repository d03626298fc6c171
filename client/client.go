package client

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Timing of the retry loop. The exactly-once
// guarantee comes from REQ, so these only trade latency against load.
const (
	// attemptTimeout bounds one attempt of a request that does not wait;
	// a node that has stopped answering shows up as a timeout, and the
	// request moves on to the next endpoint.
	attemptTimeout = 5 * time.Second
	// waitMargin is added to a waiting FLOCK's read deadline, so the
	// server's own answer at the end of the wait (null) arrives before the
	// client stops listening.
	waitMargin = 5 * time.Second
	backoffMin = 20 * time.Millisecond
	backoffMax = time.Second
)

// Client sends fenced's native commands through go-redis. It is safe for
// concurrent use; open sessions with NewSession.
type Client struct {
	mu   sync.Mutex
	eps  []endpoint // at least one
	cur  int        // the endpoint requests go to now
	tmpl *redis.Options
	own  bool // Close closes the endpoints' connection pools
}

// endpoint is one way into the cluster: a node's address, or a go-redis
// cluster client that routes by itself.
type endpoint struct {
	addr string
	rdb  redis.UniversalClient
}

// Dial connects to a fenced cluster. addr is one node's host:port or a
// comma-separated list of the cluster's nodes; opts (nil for defaults)
// carries credentials, TLS and pool settings for every node, and its Addr
// is ignored. Dial returns once a node answers PING, or when ctx ends.
func Dial(ctx context.Context, addr string, opts *redis.Options) (*Client, error) {
	var tmpl redis.Options
	if opts != nil {
		tmpl = *opts
	}
	configure(&tmpl)
	c := &Client{tmpl: &tmpl, own: true}
	for a := range strings.SplitSeq(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.eps = append(c.eps, c.dialEndpoint(a))
		}
	}
	if len(c.eps) == 0 {
		return nil, fmt.Errorf("client: no address in %q", addr)
	}
	if _, _, err := c.call(ctx, 0, "PING"); err != nil {
		c.Close()
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	return c, nil
}

// New returns a Client that sends through rdb's nodes with rdb's settings
// (address, credentials, TLS, pool), but through connection pools of its
// own, configured as the package needs: reads bounded by each call's
// context instead of a fixed read timeout, and no resends by go-redis.
// rdb's hooks do not apply to them. rdb may be a *redis.Client or a
// *redis.ClusterClient (a cluster whose nodes run with --redirect); any
// other UniversalClient is used as it is, and its read timeout must then
// outlast every wait. Close the Client when done; rdb stays open.
func New(rdb redis.UniversalClient) *Client {
	switch r := rdb.(type) {
	case *redis.Client:
		o := *r.Options()
		configure(&o)
		c := &Client{tmpl: &o, own: true}
		c.eps = []endpoint{c.dialEndpoint(o.Addr)}
		return c
	case *redis.ClusterClient:
		o := *r.Options()
		o.ContextTimeoutEnabled, o.ReadTimeout, o.MaxRetries = true, -1, -1
		o.DisableIdentity = true
		return &Client{eps: []endpoint{{rdb: redis.NewClusterClient(&o)}}, own: true}
	}
	return &Client{eps: []endpoint{{rdb: rdb}}}
}

// configure sets what correctness needs in a node's go-redis options.
func configure(o *redis.Options) {
	// No read deadline but the context's: a FLOCK ... WAIT may rightly
	// block for minutes, and each call below sets its own deadline.
	o.ReadTimeout = -1
	o.ContextTimeoutEnabled = true
	// go-redis would re-send on EOF and -TRYAGAIN by itself; call does it
	// with the same REQ and moves to another node.
	o.MaxRetries = -1
	// No connect-time extras (CLIENT SETINFO, maintenance notifications):
	// one round trip less per new connection.
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

func (c *Client) dialEndpoint(addr string) endpoint {
	o := *c.tmpl
	o.Addr = addr
	return endpoint{addr: addr, rdb: redis.NewClient(&o)}
}

// Close closes the connection pools the Client made. Sessions are not
// closed: close them first, or let them expire.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.own {
		return nil
	}
	var errs []error
	for _, ep := range c.eps {
		errs = append(errs, ep.rdb.Close())
	}
	return errors.Join(errs...)
}

// endpoint returns the endpoint to use now and its index.
func (c *Client) endpoint() (endpoint, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eps[c.cur], c.cur
}

// failed moves past endpoint i after a connection error (unless another
// request already did).
func (c *Client) failed(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == i {
		c.cur = (c.cur + 1) % len(c.eps)
	}
}

// moved switches to the node a -MOVED reply named, adding it when it is
// not among the endpoints yet.
func (c *Client) moved(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ep := range c.eps {
		if ep.addr == addr {
			c.cur = i
			return
		}
	}
	if c.tmpl == nil {
		return // a client given to New as it is: it routes by itself
	}
	c.eps = append(c.eps, c.dialEndpoint(addr))
	c.cur = len(c.eps) - 1
}

// waitForever is call's wait for a FLOCK ... WAIT 0: no read deadline.
const waitForever = time.Duration(-1)

// call sends args until it gets an answer that is not "try again": a
// reply, a decided error, or the end of ctx. Every resend carries the same
// arguments, hence the same REQ. wait is how long the server may rightly
// take (a FLOCK's WAIT; 0 for a command that does not wait, waitForever
// for WAIT 0); a waiting attempt is not cut short by ctx's cancellation,
// only by its deadline (plus waitMargin): the caller cancels a wait
// through the server (Mutex.Lock). resent reports whether args went out
// more than once.
func (c *Client) call(ctx context.Context, wait time.Duration, args ...any) (v any, resent bool, err error) {
	backoff := backoffMin
	for attempt := 0; ; attempt++ {
		ep, i := c.endpoint()
		actx, cancel := attemptContext(ctx, wait)
		v, err = ep.rdb.Do(actx, args...).Result()
		cancel()
		if !retryable(err) {
			if to := movedTo(err); to != "" && attempt < 16 {
				c.moved(to)
				resent = true
				continue
			}
			return v, attempt > 0, err
		}
		if ctx.Err() != nil {
			return nil, attempt > 0, fmt.Errorf("%w (last: %v)", context.Cause(ctx), err)
		}
		if errCode(err) == "" {
			c.failed(i) // a connection error: this node may be gone
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, true, fmt.Errorf("%w (last: %v)", context.Cause(ctx), err)
		case <-t.C:
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// attemptContext bounds one attempt: attemptTimeout for a request that
// does not wait, the wait plus waitMargin for one that does.
func attemptContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	switch {
	case wait == 0:
		return context.WithTimeout(ctx, attemptTimeout)
	case wait == waitForever:
		return context.WithCancel(context.WithoutCancel(ctx))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), wait+waitMargin)
}

// newReq is a fresh request id: 128 random bits, so ids never collide
// within a session's memory of them.
func newReq() string { return crand.Text() }
