package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// MutexOption configures Session.Mutex.
type MutexOption func(*Mutex)

// WithOwner sets the owner tag: the lock's owner is the pair (session,
// tag), so tasks that share a session exclude each other by using
// different tags. Default: the empty tag.
func WithOwner(tag string) MutexOption { return func(m *Mutex) { m.owner = tag } }

// WithLimit fixes the reentrancy limit of an ownership taken by this
// Mutex: 1 makes the lock not reentrant (a second Lock fails with
// ErrLimit), 0 (the default) means unlimited.
func WithLimit(n int) MutexOption { return func(m *Mutex) { m.limit = n } }

// Mutex is a fenced lock held by one owner of a session. Lock is
// reentrant for that owner (up to WithLimit): each Lock adds a hold that
// an Unlock gives back. Goroutines that must exclude each other need
// different owners (WithOwner) or sessions; one Mutex is one owner.
type Mutex struct {
	s     *Session
	name  string
	owner string
	limit int

	mu     sync.Mutex
	token  int64                     // the current ownership's token; 0 when not held
	unreq  string                    // REQ of an Unlock whose outcome is unknown, reused by the next
	holds  int64                     // hold count as of the last FLOCK/FUNLOCK
	held   context.Context           // the current ownership, cancelled when it ends
	unheld context.CancelCauseFunc   // ends held
	users  []context.CancelCauseFunc // of the contexts Context made for it
}

// errReleased is the cause of a Mutex's Context after Unlock released it.
var errReleased = errors.New("client: lock released")

// Mutex returns the lock called name, held through this session.
func (s *Session) Mutex(name string, opts ...MutexOption) *Mutex {
	m := &Mutex{s: s, name: name}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name is the lock's name.
func (m *Mutex) Name() string { return m.name }

// Token is the current ownership's fencing token, 0 when this Mutex does
// not hold the lock.
func (m *Mutex) Token() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// TryLock takes the lock if it is free (or already this owner's) and
// returns its fencing token; ErrNotObtained if another owner holds it.
func (m *Mutex) TryLock(ctx context.Context) (int64, error) { return m.lock(ctx, false) }

// Lock takes the lock and returns its fencing token. While another owner
// holds it, Lock waits in the lock's FIFO queue on the server, until the
// lock is handed over or ctx ends (ErrNotObtained, with ctx's error). A
// ctx without a deadline waits without one.
func (m *Mutex) Lock(ctx context.Context) (int64, error) { return m.lock(ctx, true) }

func (m *Mutex) lock(ctx context.Context, wait bool) (int64, error) {
	for {
		if err := m.s.Err(); err != nil {
			return 0, err
		}
		args := []any{"FLOCK", m.name, m.s.id, "OWNER", m.owner}
		if m.limit != 0 {
			args = append(args, "LIMIT", m.limit)
		}
		var w time.Duration // how long the server may wait: 0 none, waitForever
		if wait {
			w = waitForever
			if d, ok := ctx.Deadline(); ok {
				if w = time.Until(d).Round(time.Millisecond); w <= 0 {
					return 0, fmt.Errorf("%w: %w", ErrNotObtained, context.DeadlineExceeded)
				}
			}
			args = append(args, "WAIT", max(w, 0).Milliseconds()) // WAIT 0: no deadline
		}
		args = append(args, "REQ", newReq())
		m.mu.Lock()
		before := m.holds
		m.mu.Unlock()

		v, resent, err := m.send(ctx, w, before, args)
		if unknown(err) {
			// ctx ended while the FLOCK's fate was unknown (a broken
			// connection, a timeout): one more try with the same REQ
			// learns it, so a grant is not left behind unknown.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
			v, _, err = m.s.c.call(rctx, 0, args...)
			cancel()
			resent = true
		}
		if errCode(err) == "CANCELLED" && (resent || strings.Contains(err.Error(), "shutting down")) {
			// Not a newer Lock of this owner: the wait ended with the
			// connection it came on (the server cancels such waits), or
			// with its node. It took nothing; queue again.
			continue
		}
		switch {
		case errors.Is(err, redis.Nil):
			if wait {
				return 0, fmt.Errorf("%w: %w", ErrNotObtained, context.DeadlineExceeded)
			}
			return 0, ErrNotObtained
		case err != nil:
			if errCode(err) == "NOSESSION" {
				m.s.lose(err)
			}
			if unknown(err) {
				return 0, fmt.Errorf("client: FLOCK %s: outcome unknown, the lock may be held until the session ends: %w", m.name, err)
			}
			return 0, typed(err)
		}
		tok, ok := v.(int64)
		if !ok || tok <= 0 {
			return 0, fmt.Errorf("client: FLOCK answered %v (%T), want a token", v, v)
		}
		m.granted(tok, before)
		return tok, nil
	}
}

// unknown reports an error that is not the server's answer: the request
// may or may not have been applied.
func unknown(err error) bool {
	return err != nil && errCode(err) == "" && !errors.Is(err, redis.Nil) &&
		!errors.Is(err, ErrNotObtained) && !errors.Is(err, ErrSessionLost)
}

// send runs a FLOCK. go-redis does not notice a context's cancellation
// while it is blocked in a read, so a waiting FLOCK whose ctx is cancelled
// (before its deadline: the server's wait shares the deadline and ends by
// itself) is ended on the server: a FLOCK of the same owner with a new REQ
// and no WAIT cancels the queued one, which is then answered -CANCELLED.
// That FLOCK takes the lock if it is free by then; whatever the Lock took
// is given back. The waiting FLOCK runs on the caller's goroutine: a hop
// to another one costs a scheduling delay on every grant, a fifth of a
// contended lock's throughput on two cores.
func (m *Mutex) send(ctx context.Context, wait time.Duration, before int64, args []any) (any, bool, error) {
	if wait == 0 {
		return m.s.c.call(ctx, 0, args...)
	}
	var (
		answered  atomic.Bool  // the waiting FLOCK has returned
		cancelled atomic.Bool  // ctx was cancelled before its deadline
		taken     atomic.Int64 // the token a cancelling FLOCK got, if any
		ended     = make(chan struct{})
	)
	stop := context.AfterFunc(ctx, func() {
		defer close(ended)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return
		}
		cancelled.Store(true)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
		defer cancel()
		// Again until the waiting FLOCK returns: it may reach the server
		// after the first cancelling one.
		for !answered.Load() {
			v, _, err := m.s.c.call(cctx, 0, "FLOCK", m.name, m.s.id, "OWNER", m.owner, "REQ", newReq())
			if tok, ok := v.(int64); ok && err == nil {
				taken.Store(tok)
			}
			select {
			case <-cctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	var v any
	var resent bool
	var err error
	if wait == waitForever {
		v, resent, err = m.waitOrLost(ctx, args)
	} else {
		v, resent, err = m.s.c.call(ctx, wait, args...)
	}
	answered.Store(true)
	if stop() {
		return v, resent, err // ctx did not end meanwhile
	}
	<-ended
	if !cancelled.Load() {
		return v, resent, err // its deadline: the server answered it
	}
	tok, _ := v.(int64)
	if err != nil || tok <= 0 {
		tok = taken.Load()
	}
	if tok > 0 {
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
		defer cancel()
		m.giveBack(gctx, tok, before)
	}
	return nil, false, fmt.Errorf("%w: %w", ErrNotObtained, context.Cause(ctx))
}

// waitOrLost runs a FLOCK ... WAIT 0 until it is answered or the session
// is lost. With no deadline, a node cut off from the client would
// otherwise hold the read until TCP gives up; the server ends the lost
// session's waits by itself. This one runs on a goroutine of its own.
func (m *Mutex) waitOrLost(ctx context.Context, args []any) (any, bool, error) {
	type result struct {
		v      any
		resent bool
		err    error
	}
	ch := make(chan result, 1)
	go func() {
		v, resent, err := m.s.c.call(ctx, waitForever, args...)
		ch <- result{v, resent, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.resent, r.err
	case <-m.s.Done():
		return nil, false, m.s.Err()
	}
}

// giveBack releases the holds a cancelled Lock took, down to the count
// this Mutex had before it (nothing if the session is gone: its locks go
// with it).
func (m *Mutex) giveBack(ctx context.Context, tok, before int64) {
	for range 64 {
		v, _, err := m.s.c.call(ctx, 0, "FUNLOCK", m.name, m.s.id, "OWNER", m.owner, "FENCE", tok, "REQ", newReq())
		if left, ok := v.(int64); err != nil || !ok || left <= before {
			return
		}
	}
}

// granted records an ownership (or one more hold of it).
func (m *Mutex) granted(tok, before int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token != tok || m.held == nil {
		m.endLocked(errReleased)
		m.held, m.unheld = context.WithCancelCause(m.s.ctx)
		before = 0
	}
	m.token, m.holds, m.unreq = tok, before+1, ""
}

// released records that the ownership ended (cause says how).
func (m *Mutex) released(cause error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endLocked(cause)
	m.token, m.holds, m.held, m.unheld, m.unreq = 0, 0, nil, nil, ""
}

// endLocked cancels the current ownership's contexts before the caller
// returns, so work under Context stops no later than Unlock returns.
func (m *Mutex) endLocked(cause error) {
	for _, cancel := range m.users {
		cancel(cause)
	}
	m.users = nil
	if m.unheld != nil {
		m.unheld(cause)
	}
}

// Unlock gives back one hold (FUNLOCK ... FENCE token): the lock is free,
// or handed to the next waiter, once every hold is given back.
// ErrNotOwner if this Mutex does not hold the lock (any more);
// ErrStaleFence if the owner holds it again under a newer ownership.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	tok, req := m.token, m.unreq
	if req == "" {
		req = newReq()
		m.unreq = req
	}
	m.mu.Unlock()
	if tok == 0 {
		return fmt.Errorf("%w: this Mutex does not hold %q", ErrNotOwner, m.name)
	}
	v, _, err := m.s.c.call(ctx, 0, "FUNLOCK", m.name, m.s.id, "OWNER", m.owner, "FENCE", tok, "REQ", req)
	if unknown(err) {
		// Kept in unreq: the next Unlock re-sends this REQ, so a release
		// that was applied is not applied twice.
		return fmt.Errorf("client: FUNLOCK %s: outcome unknown, call Unlock again: %w", m.name, err)
	}
	m.mu.Lock()
	m.unreq = ""
	m.mu.Unlock()
	if err != nil {
		switch errCode(err) {
		case "NOSESSION":
			m.s.lose(err)
			fallthrough
		case "NOTOWNER", "STALEFENCE":
			m.released(typed(err))
		}
		return typed(err)
	}
	left, ok := v.(int64)
	if !ok || left < 0 {
		return fmt.Errorf("client: FUNLOCK answered %v (%T), want a count", v, v)
	}
	if left == 0 {
		m.released(errReleased)
		return nil
	}
	m.mu.Lock()
	m.holds = left
	m.mu.Unlock()
	return nil
}

// Context returns a context derived from ctx that is cancelled when this
// Mutex's current ownership ends: released, or lost with the session
// (context.Cause then wraps ErrSessionLost). Work done under the lock
// should run under it. If the Mutex does not hold the lock, the context
// is already cancelled.
func (m *Mutex) Context(ctx context.Context) context.Context {
	out, cancel := context.WithCancelCause(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		cancel(fmt.Errorf("%w: this Mutex does not hold %q", ErrNotOwner, m.name))
		return out
	}
	m.users = append(m.users, cancel)
	held := m.held // ends with the session too
	context.AfterFunc(held, func() { cancel(context.Cause(held)) })
	return out
}

// Locker returns the Mutex as a sync.Locker, for APIs that take one. Its
// Lock waits without a deadline, and since sync.Locker cannot return an
// error, both methods panic when the lock cannot be taken or given back
// (the session was lost).
func (m *Mutex) Locker() sync.Locker { return locker{m} }

type locker struct{ m *Mutex }

func (l locker) Lock() {
	if _, err := l.m.Lock(context.Background()); err != nil {
		panic(err)
	}
}

func (l locker) Unlock() {
	if err := l.m.Unlock(context.Background()); err != nil {
		panic(err)
	}
}
