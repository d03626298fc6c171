package fencing_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/fencing"
)

func TestParseToken(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "34": 34, "0034": 34, "9223372036854775807": 1<<63 - 1} {
		if got, err := fencing.ParseToken(in); err != nil || got != want {
			t.Errorf("ParseToken(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "00", "-1", "+5", " 5", "5 ", "5a", "0x10", "1e3", "9223372036854775808", "99999999999999999999", "٣"} {
		if got, err := fencing.ParseToken(in); !errors.Is(err, fencing.ErrInvalidToken) {
			t.Errorf("ParseToken(%q) = %d, %v; want ErrInvalidToken", in, got, err)
		}
	}
}

// stores are the Store implementations under test: memory, and SQL
// through the guard on both dialects.
func eachStore(t *testing.T, f func(t *testing.T, newStore func() fencing.Store)) {
	t.Run("Memory", func(t *testing.T) {
		f(t, func() fencing.Store { return new(fencing.MemoryStore) })
	})
	eachDialect(t, func(t *testing.T, tg target) {
		f(t, func() fencing.Store { return fencing.NewSQLStore(tg.db, tg.newGuard(t)) })
	})
}

// send makes one request through h and returns its status and body.
func send(h http.Handler, path string, tokens ...string) (int, string) {
	r := httptest.NewRequest(http.MethodPut, path, strings.NewReader("payload"))
	for _, tok := range tokens {
		r.Header.Add(fencing.Header, tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// TestMiddleware: 200 for a first, equal or higher token, 409 for a lower
// one, 400 for a missing, repeated or malformed header or a token <= 0,
// resources independent, and the handler reached only on 200.
func TestMiddleware(t *testing.T) {
	eachStore(t, func(t *testing.T, newStore func() fencing.Store) {
		var reached []string
		h := fencing.Middleware(newStore())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = append(reached, r.URL.Path+" "+r.Header.Get(fencing.Header))
			io.WriteString(w, "written")
		}))
		for i, c := range []struct {
			path   string
			tokens []string
			status int
			body   string
		}{
			{"/doc", []string{"33"}, 200, "written"},
			{"/doc", []string{"33"}, 200, "written"},
			{"/doc", []string{"34"}, 200, "written"},
			{"/doc", []string{"33"}, 409, `fencing: stale token 33 for "/doc" (highest seen 34)`},
			{"/doc", []string{"1"}, 409, "fencing: stale token 1"},
			{"/doc", nil, 400, "fencing: missing Fencing-Token header"},
			{"/doc", []string{""}, 400, "fencing: invalid token"},
			{"/doc", []string{"garbage"}, 400, "fencing: invalid token"},
			{"/doc", []string{"0"}, 400, "fencing: invalid token"},
			{"/doc", []string{"-35"}, 400, "fencing: invalid token"},
			{"/doc", []string{"99999999999999999999"}, 400, "fencing: invalid token"},
			{"/doc", []string{"35", "36"}, 400, "fencing: more than one Fencing-Token header"},
			{"/other", []string{"2"}, 200, "written"},
			{"/other", []string{"1"}, 409, "fencing: stale token 1"},
			{"/doc", []string{"35"}, 200, "written"},
		} {
			status, body := send(h, c.path, c.tokens...)
			if status != c.status || !strings.HasPrefix(body, c.body) {
				t.Errorf("#%d %s %v: %d %q, want %d %q", i, c.path, c.tokens, status, body, c.status, c.body)
			}
		}
		want := []string{"/doc 33", "/doc 33", "/doc 34", "/other 2", "/doc 35"}
		if !slices.Equal(reached, want) {
			t.Errorf("the handler saw %v, want %v", reached, want)
		}
	})
}

// TestMiddlewareWithResource: requests naming the same resource share one
// highest token whatever their path.
func TestMiddlewareWithResource(t *testing.T) {
	h := fencing.Middleware(new(fencing.MemoryStore), fencing.WithResource(func(r *http.Request) string {
		return r.URL.Query().Get("account")
	}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, c := range []struct {
		path   string
		token  string
		status int
	}{
		{"/deposit?account=1", "10", 200},
		{"/withdraw?account=1", "9", 409},
		{"/withdraw?account=2", "9", 200},
		{"/close?account=1", "10", 200},
	} {
		if status, body := send(h, c.path, c.token); status != c.status {
			t.Errorf("%s with %s: %d %q, want %d", c.path, c.token, status, body, c.status)
		}
	}
}

type failingStore struct{}

func (failingStore) Observe(context.Context, string, int64) (int64, error) {
	return 0, errors.New("connection refused to db.internal:5432")
}

// TestMiddlewareStoreError: a failing store answers 500 without its
// error's text and never reaches the handler; WithStoreError replaces the
// answer and gets the error.
func TestMiddlewareStoreError(t *testing.T) {
	handler := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })
	status, body := send(fencing.Middleware(failingStore{})(handler), "/doc", "5")
	if status != 500 || strings.Contains(body, "db.internal") {
		t.Errorf("store failure: %d %q, want 500 without the store's error", status, body)
	}
	var got error
	h := fencing.Middleware(failingStore{}, fencing.WithStoreError(func(w http.ResponseWriter, _ *http.Request, err error) {
		got = err
		w.WriteHeader(http.StatusServiceUnavailable)
	}))(handler)
	if status, _ := send(h, "/doc", "5"); status != 503 || got == nil || !strings.Contains(got.Error(), "db.internal") {
		t.Errorf("WithStoreError: %d, error %v", status, got)
	}
}

// TestMiddlewareConcurrent: many goroutines send random tokens for three
// resources to handlers that take a random while before they "write" (append
// the token to the resource's log). The model: each resource's log never
// goes down (a request checked before a higher one finished writing first),
// every 409 was below a token that was written before it was answered, and
// the store's highest is the largest written.
func TestMiddlewareConcurrent(t *testing.T) {
	eachStore(t, func(t *testing.T, newStore func() fencing.Store) {
		store := newStore()
		var mu sync.Mutex
		logs := map[string][]int64{}
		h := fencing.Middleware(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, _ := strconv.ParseInt(r.Header.Get(fencing.Header), 10, 64)
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			mu.Lock()
			logs[r.URL.Path] = append(logs[r.URL.Path], tok)
			mu.Unlock()
		}))
		srv := httptest.NewServer(h)
		defer srv.Close()
		resources := []string{"/a", "/b", "/c"}
		const workers, each = 16, 25
		var wg sync.WaitGroup
		var conflicts, oks int
		var grants atomic.Int64
		for range workers {
			wg.Go(func() {
				for range each {
					path := resources[rand.IntN(len(resources))]
					tok := max(1, grants.Add(1)-rand.Int64N(12)) // as in TestGuardConcurrent
					req, _ := http.NewRequest(http.MethodPost, srv.URL+path, nil)
					req.Header.Set(fencing.Header, strconv.FormatInt(tok, 10))
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					switch resp.StatusCode {
					case http.StatusOK:
						oks++
					case http.StatusConflict:
						conflicts++
						if !slices.ContainsFunc(logs[path], func(w int64) bool { return w > tok }) {
							t.Errorf("%s: %d refused, but no higher token had been written", path, tok)
						}
					default:
						t.Errorf("%s %d: status %d", path, tok, resp.StatusCode)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, p := range resources {
			log := logs[p]
			for i := 1; i < len(log); i++ {
				if log[i] < log[i-1] {
					t.Errorf("%s: token %d written after %d (log %v)", p, log[i], log[i-1], log)
					break
				}
			}
			if len(log) > 0 {
				if h, err := store.Observe(context.Background(), p, 1); err != nil || h != slices.Max(log) {
					t.Errorf("%s: store's highest %d (%v), want %d", p, h, err, slices.Max(log))
				}
			}
		}
		if oks == 0 || conflicts == 0 || oks+conflicts != workers*each {
			t.Errorf("%d ok, %d conflicts of %d requests", oks, conflicts, workers*each)
		}
		t.Logf("%d written, %d refused", oks, conflicts)
	})
}

func TestMemoryStoreRefusesInvalidTokens(t *testing.T) {
	var s fencing.MemoryStore
	for _, tok := range []int64{0, -1} {
		if _, err := s.Observe(context.Background(), "r", tok); !errors.Is(err, fencing.ErrInvalidToken) {
			t.Errorf("Observe(%d): %v", tok, err)
		}
	}
}
