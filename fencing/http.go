package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Header is the HTTP request header that carries the token.
const Header = "Fencing-Token"

// Store keeps the highest token seen per resource for Middleware.
type Store interface {
	// Observe atomically records token for resource unless a higher token
	// is recorded, and returns the highest token after the call: token
	// itself when accepted, a higher one when token is stale. token is > 0.
	Observe(ctx context.Context, resource string, token int64) (highest int64, err error)
}

// MemoryStore is a Store in this process's memory: a map under a mutex,
// one entry per resource ever seen, lost on restart (so a restarted process
// accepts a stale token it would have refused before: keep the tokens in a
// SQLStore when that matters). The zero value is ready to use.
type MemoryStore struct {
	mu      sync.Mutex
	highest map[string]int64
}

// Observe implements Store.
func (s *MemoryStore) Observe(_ context.Context, resource string, token int64) (int64, error) {
	if err := checkToken(token); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.highest[resource]; h > token {
		return h, nil
	}
	if s.highest == nil {
		s.highest = map[string]int64{}
	}
	s.highest[resource] = token
	return token, nil
}

// SQLStore is a Store in a SQL table through a Guard: each Observe is one
// short transaction of its own on db.
type SQLStore struct {
	db    *sql.DB
	guard *Guard
}

// NewSQLStore returns a Store that records tokens in guard's table on db.
func NewSQLStore(db *sql.DB, guard *Guard) *SQLStore {
	return &SQLStore{db: db, guard: guard}
}

// Observe implements Store.
func (s *SQLStore) Observe(ctx context.Context, resource string, token int64) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("fencing: %w", err)
	}
	defer tx.Rollback() // a no-op once committed
	var stale *StaleTokenError
	switch err := s.guard.Check(ctx, tx, resource, token); {
	case errors.As(err, &stale):
		return stale.Highest, nil
	case err != nil:
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("fencing: committing token %d for %q: %w", token, resource, err)
	}
	return token, nil
}

// Option configures Middleware.
type Option func(*middleware)

// WithResource names the resource a request writes to (default: its URL
// path). Requests with the same name share one highest token.
func WithResource(f func(*http.Request) string) Option {
	return func(m *middleware) { m.resource = f }
}

// WithStoreError answers a request whose token the store failed to record
// (default: 500 Internal Server Error with a generic body, since the
// store's error may describe the database). Log err here.
func WithStoreError(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(m *middleware) { m.storeError = f }
}

// Middleware returns net/http middleware that fences each request by its
// Fencing-Token header against store: 400 Bad Request when the header is
// missing, repeated or not a token (> 0), 409 Conflict when the token is
// lower than the highest seen for the request's resource, 500 (see
// WithStoreError) when the store fails; otherwise the request goes on to the handler, its token
// recorded. Wrap the handlers that write, not those that only read.
//
// In this process the check and the handler run under a lock per resource:
// the next request for a resource is checked only once the handler of the
// previous one has returned. Otherwise a request that passed the check with
// token 5 could still be writing when one with token 6 passes and writes,
// and the older write would land last. Requests to different resources run
// in parallel. Several processes sharing one SQLStore are each serialised
// only within themselves: when they write to a shared database, fence that
// write with Guard.Check in its own transaction instead.
func Middleware(store Store, opts ...Option) func(http.Handler) http.Handler {
	m := &middleware{
		store:    store,
		resource: func(r *http.Request) string { return r.URL.Path },
		storeError: func(w http.ResponseWriter, _ *http.Request, _ error) {
			http.Error(w, "fencing: the token store failed", http.StatusInternalServerError)
		},
	}
	for _, o := range opts {
		o(m)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}
}

type middleware struct {
	store      Store
	resource   func(*http.Request) string
	storeError func(http.ResponseWriter, *http.Request, error)
	locks      resourceLocks
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	vals := r.Header.Values(Header)
	if len(vals) != 1 {
		msg := "fencing: missing " + Header + " header"
		if len(vals) > 1 {
			msg = "fencing: more than one " + Header + " header"
		}
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	token, err := ParseToken(vals[0])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resource := m.resource(r)
	unlock := m.locks.lock(resource)
	defer unlock()
	highest, err := m.store.Observe(r.Context(), resource, token)
	if err != nil {
		m.storeError(w, r, err)
		return
	}
	if highest > token {
		stale := &StaleTokenError{Resource: resource, Token: token, Highest: highest}
		http.Error(w, stale.Error(), http.StatusConflict)
		return
	}
	next.ServeHTTP(w, r)
}

// resourceLocks is a mutex per resource name, kept only while someone
// holds or waits for it.
type resourceLocks struct {
	mu sync.Mutex
	m  map[string]*resourceLock
}

type resourceLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry goes at 0
}

func (l *resourceLocks) lock(name string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*resourceLock{}
	}
	rl := l.m[name]
	if rl == nil {
		rl = &resourceLock{}
		l.m[name] = rl
	}
	rl.refs++
	l.mu.Unlock()
	rl.mu.Lock()
	return func() {
		rl.mu.Unlock()
		l.mu.Lock()
		if rl.refs--; rl.refs == 0 {
			delete(l.m, name)
		}
		l.mu.Unlock()
	}
}
