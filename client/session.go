package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SessionOption configures NewSession.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	ttl  time.Duration
	name string
}

// WithTTL sets the session's time to live (default 10 s; the server
// refuses values outside its bounds, by default 500 ms to 24 h). The
// session heartbeats every TTL/3.
func WithTTL(d time.Duration) SessionOption { return func(c *sessionConfig) { c.ttl = d } }

// WithName sets the label SESSION.INFO shows.
func WithName(label string) SessionOption { return func(c *sessionConfig) { c.name = label } }

// Session is one client process's liveness lease: every lock taken
// through its Mutexes is released when it ends. It renews itself until
// Close or until it is lost.
type Session struct {
	c   *Client
	id  string
	ttl time.Duration

	ctx  context.Context // cancelled, with the reason as cause, when the session ends
	end  context.CancelCauseFunc
	beat context.Context // the heartbeats' context: ctx, also cancelled by Close
	stop context.CancelFunc
	done chan struct{} // closed when the heartbeat loop has returned
}

// NewSession opens a session (SESSION.OPEN) and starts its heartbeats.
// SESSION.OPEN carries no request id: when its answer is lost and it is
// sent again, the first session stays unused and expires after its TTL.
func (c *Client) NewSession(ctx context.Context, opts ...SessionOption) (*Session, error) {
	cfg := sessionConfig{ttl: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	ms := cfg.ttl.Milliseconds()
	if ms <= 0 {
		return nil, fmt.Errorf("client: session TTL %v: must be at least 1 ms", cfg.ttl)
	}
	args := []any{"SESSION.OPEN", "TTL", ms}
	if cfg.name != "" {
		args = append(args, "NAME", cfg.name)
	}
	sent := time.Now()
	v, _, err := c.call(ctx, 0, args...)
	if err != nil {
		return nil, fmt.Errorf("client: SESSION.OPEN: %w", err)
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return nil, fmt.Errorf("client: SESSION.OPEN answered %v (%T), want a session id", v, v)
	}
	s := &Session{c: c, id: id, ttl: cfg.ttl, done: make(chan struct{})}
	s.ctx, s.end = context.WithCancelCause(context.Background())
	s.beat, s.stop = context.WithCancel(s.ctx)
	go s.heartbeats(sent)
	return s, nil
}

// ID is the session's id, as SESSION.* commands name it.
func (s *Session) ID() string { return s.id }

// TTL is the session's time to live.
func (s *Session) TTL() time.Duration { return s.ttl }

// Done is closed when the session has ended: lost (Err wraps
// ErrSessionLost) or closed.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session lives, and then says why it ended.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// lose ends the session with err (the first reason wins).
func (s *Session) lose(err error) {
	if !errors.Is(err, ErrSessionLost) {
		err = fmt.Errorf("%w: %v", ErrSessionLost, err)
	}
	s.end(err)
}

// heartbeats renews the session every TTL/3. A renewal's TTL counts from
// when the server applies it, so counting from its send time is on the
// safe side: the session is given up once a whole TTL has passed since
// the send time of the last renewal that was answered.
func (s *Session) heartbeats(lastOK time.Time) {
	defer close(s.done)
	interval := s.ttl / 3
	next := lastOK.Add(interval)
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-s.beat.Done():
			t.Stop()
			return
		case <-t.C:
		}
		expiry := lastOK.Add(s.ttl)
		ctx, cancel := context.WithDeadline(s.beat, expiry)
		sent := time.Now()
		_, _, err := s.c.call(ctx, 0, "SESSION.HEARTBEAT", s.id)
		cancel()
		switch {
		case s.beat.Err() != nil:
			return // closed or lost meanwhile
		case err == nil:
			lastOK = sent
			next = sent.Add(interval)
		case errCode(err) == "NOSESSION":
			s.lose(err)
		case !time.Now().Before(expiry):
			s.lose(fmt.Errorf("no heartbeat answered for %v: %v", s.ttl, err))
		default:
			// A decided error other than NOSESSION (-NOPERM, ...): try
			// again soon, until the TTL runs out.
			next = time.Now().Add(min(interval, backoffMax))
		}
	}
}

// Close ends the session: it stops the heartbeats and sends SESSION.KILL,
// which releases every lock the session holds (with their whole reentrant
// count) and answers its waiting Locks. A session that is already lost is
// only stopped.
func (s *Session) Close(ctx context.Context) error {
	s.stop()
	<-s.done
	if s.ctx.Err() != nil {
		return nil
	}
	s.end(fmt.Errorf("%w: closed", ErrSessionLost))
	if _, _, err := s.c.call(ctx, 0, "SESSION.KILL", s.id); err != nil {
		return fmt.Errorf("client: SESSION.KILL: %w", err)
	}
	return nil
}
