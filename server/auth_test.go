package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

func TestAuthenticatorCheck(t *testing.T) {
	h := HashPassword("s3cret")
	a := authenticator{pass: &h}
	for _, tc := range []struct {
		user, pass string
		want       bool
	}{
		{"default", "s3cret", true},
		{"default", "s3cre", false},   // a prefix
		{"default", "s3cret ", false}, // longer
		{"default", "s3creT", false},  // the last byte
		{"default", "S3cret", false},  // the first byte
		{"default", "", false},
		{"Default", "s3cret", false}, // user names are case-sensitive
		{"alice", "s3cret", false},
		{"", "s3cret", false},
		{"default\x00", "s3cret", false},
	} {
		if got := a.check([]byte(tc.user), []byte(tc.pass)); got != tc.want {
			t.Errorf("check(%q, %q) = %v, want %v", tc.user, tc.pass, got, tc.want)
		}
	}
	// Only the digest is kept and compared: equal digests, equal answers.
	if got := HashPassword("s3cret"); got != h {
		t.Fatal("HashPassword is not deterministic")
	}
	if s := fmt.Sprint(h, &h); strings.Contains(s, fmt.Sprintf("%x", h[:4])) {
		t.Errorf("a PasswordHash prints its bytes: %s", s)
	}

	// Without a password the default user takes any password (nopass);
	// no other user exists.
	none := authenticator{}
	if !none.check([]byte("default"), []byte("anything")) || none.check([]byte("alice"), []byte("x")) {
		t.Error("without a password: default must take any password, and only default")
	}
	if none.required() || none.initialUser() != "default" || !a.required() || a.initialUser() != "" {
		t.Error("required/initialUser disagree with the password")
	}
}

func TestAuthenticatorMay(t *testing.T) {
	h := HashPassword("pw")
	a := authenticator{pass: &h}
	for _, spec := range commands.New().All() {
		if got, want := a.may("", spec), slices.Contains([]string{"auth", "hello", "quit", "reset"}, spec.Name); got != want {
			t.Errorf("%s before AUTH: may = %v, want %v", spec.Name, got, want)
		}
		if !a.may("default", spec) {
			t.Errorf("%s after AUTH: refused", spec.Name)
		}
	}
}

func TestAuthDelay(t *testing.T) {
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second, 3 * time.Second}
	for fails, w := range want {
		if got := authDelay(fails); got != w {
			t.Errorf("authDelay(%d) = %v, want %v", fails, got, w)
		}
	}
	if got := authDelay(1 << 30); got != authDelayMax {
		t.Errorf("authDelay(huge) = %v, want the cap %v", got, authDelayMax)
	}
	if authDelayMax >= ShutdownBound/2 {
		t.Errorf("authDelayMax %v would hold up a shutdown (%v for connections)", authDelayMax, ShutdownBound/2)
	}
}

func TestConnLimits(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	if got := s.connLimits(); got != resp.DefaultLimits() {
		t.Errorf("no password: %+v, want the configured limits", got)
	}
	h := HashPassword("pw")
	s.auth = authenticator{pass: &h}
	if got := s.connLimits(); got != resp.UnauthenticatedLimits() {
		t.Errorf("with a password: %+v, want %+v", got, resp.UnauthenticatedLimits())
	}
	s.cfg.Limits = resp.Limits{MaxBulk: 1000, MaxArgs: 4}
	if got, want := s.connLimits(), (resp.Limits{MaxBulk: 1000, MaxArgs: 4, MaxInline: 16 << 10, MaxCommand: 160 << 10}); got != want {
		t.Errorf("below the configured limits: %+v, want %+v", got, want)
	}
}

func dialRaw(t *testing.T, s *Server) *resp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := resp.Dial(ctx, s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// do sends one command and returns the reply's text; a broken connection
// is "closed".
func do(t *testing.T, c *resp.Client, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	v, err := c.Do(ctx, b...)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%.40q: no reply", args)
		}
		return "closed"
	}
	if v.IsError() {
		return "-" + v.Text()
	}
	return v.Text()
}

// closes reports whether a command over the limits closes c: at most a
// protocol error comes back, and nothing after it.
func closes(t *testing.T, c *resp.Client, args ...string) bool {
	t.Helper()
	got := do(t, c, args...)
	if got != "closed" && !strings.HasPrefix(got, "-ERR Protocol error: ") {
		return false
	}
	return do(t, c, "AUTH", "pw") == "closed"
}

func repeat(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestAuthLimitsSwitch: a connection starts with the pre-auth limits when a
// password is set, gets the configured ones from AUTH or HELLO AUTH, and
// the pre-auth ones again from RESET.
func TestAuthLimitsSwitch(t *testing.T) {
	s := startServerWith(t, func(c *Config) { h := HashPassword("pw"); c.RequirePass = &h })
	big := strings.Repeat("v", 17<<10)
	eleven := append([]string{"MGET"}, repeat(10, "a")...)

	c := dialRaw(t, s)
	if got := do(t, c, append([]string{"MGET"}, repeat(9, "a")...)...); got != "-NOAUTH Authentication required." {
		t.Fatalf("10 arguments before AUTH: %q", got)
	}
	if got := do(t, c, "ECHO", strings.Repeat("v", 16<<10)); got != "-NOAUTH Authentication required." {
		t.Fatalf("16 KiB before AUTH: %q", got)
	}
	if !closes(t, c, eleven...) {
		t.Fatal("11 arguments before AUTH: the connection is still open")
	}
	c = dialRaw(t, s)
	if !closes(t, c, "ECHO", big) {
		t.Fatal("17 KiB before AUTH: the connection is still open")
	}

	for _, auth := range [][]string{{"AUTH", "pw"}, {"AUTH", "default", "pw"}, {"HELLO", "2", "AUTH", "default", "pw"}} {
		c = dialRaw(t, s)
		if got := do(t, c, auth...); strings.HasPrefix(got, "-") {
			t.Fatalf("%q: %q", auth, got)
		}
		if got := do(t, c, "ECHO", big); got != big {
			t.Fatalf("17 KiB after %q: %.40q", auth, got)
		}
		if got := do(t, c, eleven...); got != "" { // ten nulls
			t.Fatalf("11 arguments after %q: %q", auth, got)
		}
		if got := do(t, c, "ECHO", strings.Repeat("v", 16<<10)); len(got) != 16<<10 {
			t.Fatalf("11 arguments after %q: %q", auth, got)
		}
		if got := do(t, c, "RESET"); got != "RESET" {
			t.Fatalf("RESET: %q", got)
		}
		if got := do(t, c, "PING"); got != "-NOAUTH Authentication required." {
			t.Fatalf("PING after RESET: %q", got)
		}
		if !closes(t, c, "ECHO", big) {
			t.Fatal("17 KiB after RESET: the connection is still open")
		}
	}

	// A failed AUTH changes nothing.
	c = dialRaw(t, s)
	if got := do(t, c, "AUTH", "nope"); got != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("wrong AUTH: %q", got)
	}
	if !closes(t, c, "ECHO", big) {
		t.Fatal("17 KiB after a failed AUTH: the connection is still open")
	}

	// Without a password nothing is limited before AUTH: today's clients.
	open := startServer(t)
	c = dialRaw(t, open)
	if got := do(t, c, "ECHO", big); got != big {
		t.Fatalf("no password, 17 KiB: %.40q", got)
	}
}

// TestAuthFailuresSlowed: failures on one connection are answered ever
// later, the wait ends with the connection, and no other connection waits.
func TestAuthFailuresSlowed(t *testing.T) {
	s := startServerWith(t, func(c *Config) { h := HashPassword("pw"); c.RequirePass = &h })
	bad := dialRaw(t, s)
	start := time.Now()
	for range 4 { // 0 + 100 + 200 + 400 ms
		if got := do(t, bad, "AUTH", "guess"); !strings.HasPrefix(got, "-WRONGPASS") {
			t.Fatalf("wrong AUTH: %q", got)
		}
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Fatalf("4 failures answered in %v, want at least 700ms", d)
	}

	// The fifth waits 800 ms; meanwhile another connection is served.
	fifth := make(chan struct{})
	go func() {
		defer close(fifth)
		do(t, bad, "AUTH", "guess")
	}()
	time.Sleep(50 * time.Millisecond)
	good := dialRaw(t, s)
	if got := do(t, good, "AUTH", "pw"); got != "OK" {
		t.Fatalf("right AUTH on another connection: %q", got)
	}
	if got := do(t, good, "PING"); got != "PONG" {
		t.Fatalf("PING: %q", got)
	}
	select {
	case <-fifth:
		t.Fatal("the other connection was answered after the slowed one")
	default:
	}
	<-fifth

	// The sixth waits 1.6 s, but a connection that leaves meanwhile is
	// gone at once.
	conns := s.rs.NumConns()
	go func() {
		time.Sleep(100 * time.Millisecond)
		bad.Close()
	}()
	start = time.Now()
	do(t, bad, "AUTH", "guess")
	for s.rs.NumConns() >= conns {
		if time.Since(start) > time.Second {
			t.Fatal("a connection closed during its AUTH delay still counts after 1 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A success ends the slowdown: the next failure is answered at once,
	// not after 400 ms.
	c := dialRaw(t, s)
	for range 3 {
		do(t, c, "AUTH", "guess")
	}
	if got := do(t, c, "AUTH", "pw"); got != "OK" {
		t.Fatalf("right AUTH after failures: %q", got)
	}
	start = time.Now()
	do(t, c, "AUTH", "guess")
	if d := time.Since(start); d >= 300*time.Millisecond {
		t.Fatalf("the first failure after a success took %v", d)
	}
	// ... but RESET does not: the count survives it.
	for range 2 {
		do(t, c, "AUTH", "guess")
	}
	do(t, c, "RESET")
	start = time.Now()
	do(t, c, "AUTH", "guess") // the 4th: 400 ms
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Fatalf("a failure after RESET took %v: RESET cleared the count", d)
	}
}

func TestBasicAuth(t *testing.T) {
	h := HashPassword("pw")
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") })
	handler := basicAuth(authenticator{pass: &h}, ok)
	for _, tc := range []struct {
		name       string
		user, pass string
		basic      bool
		want       int
	}{
		{"none", "", "", false, http.StatusUnauthorized},
		{"wrong password", "default", "nope", true, http.StatusUnauthorized},
		{"wrong user", "prometheus", "pw", true, http.StatusUnauthorized},
		{"empty", "", "", true, http.StatusUnauthorized},
		{"right", "default", "pw", true, http.StatusOK},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if tc.basic {
			r.SetBasicAuth(tc.user, tc.pass)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if tc.want == http.StatusUnauthorized && (!strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") || strings.Contains(w.Body.String(), "metrics")) {
			t.Errorf("%s: 401 without a Basic challenge, or with the metrics: %v %q", tc.name, w.Header(), w.Body)
		}
	}

	// Which addresses need it: only beyond loopback, with a password.
	for _, tc := range []struct {
		addr    string
		pass    bool
		guarded bool
	}{
		{"127.0.0.1:9100", true, false},
		{"localhost:9100", true, false},
		{"[::1]:9100", true, false},
		{"0.0.0.0:9100", true, true},
		{":9100", true, true},
		{"10.0.0.1:9100", true, true},
		{"127.0.0.1:9100", false, false},
	} {
		s := &Server{cfg: Config{Metrics: tc.addr}}
		if tc.pass {
			s.auth = authenticator{pass: &h}
		}
		w := httptest.NewRecorder()
		s.metricsAuth(ok).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if guarded := w.Code == http.StatusUnauthorized; guarded != tc.guarded {
			t.Errorf("metrics on %s (password %v): %d, guarded = %v, want %v", tc.addr, tc.pass, w.Code, guarded, tc.guarded)
		}
	}
}

func TestMetricsServerTimeouts(t *testing.T) {
	for _, loopback := range []bool{false, true} {
		hs := newMetricsServer(http.NotFoundHandler(), loopback)
		if hs.ReadHeaderTimeout <= 0 || hs.ReadTimeout <= 0 || hs.WriteTimeout <= 0 || hs.IdleTimeout <= 0 || hs.MaxHeaderBytes <= 0 {
			t.Errorf("loopback %v: unbounded: %+v", loopback, hs)
		}
		if loopback && hs.WriteTimeout <= 30*time.Second {
			t.Errorf("loopback: WriteTimeout %v refuses pprof's default 30 s profile", hs.WriteTimeout)
		}
	}
}
