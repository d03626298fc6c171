package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"time"

	"github.com/fenced/fenced/acl"
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Authentication on the client port, with Redis's texts.
var (
	// ErrNoAuth answers every command but the table's NoAuth ones on a
	// connection that has not authenticated while a password is set.
	ErrNoAuth = reply.NewErr("NOAUTH", "Authentication required.")
	// ErrWrongPass answers AUTH and HELLO AUTH with a wrong user or password.
	ErrWrongPass = reply.NewErr("WRONGPASS", "invalid username-password pair or user is disabled.")
	// ErrNoPassword answers AUTH <password> when the default user has none.
	ErrNoPassword = reply.NewErr("ERR", "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	// ErrHelloNoAuth answers HELLO without AUTH on such a connection.
	ErrHelloNoAuth = reply.NewErr("NOAUTH", "HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
)

// defaultUser is Redis's user that AUTH <password> authenticates as, and
// that every connection is when no password is set.
const defaultUser = "default"

// PasswordHash is the SHA-256 of a password: all that fenced keeps of one
// once the flags are parsed.
type PasswordHash [sha256.Size]byte

// HashPassword returns the hash fenced keeps of pass.
func HashPassword(pass string) PasswordHash { return sha256.Sum256([]byte(pass)) }

// String keeps the hash out of logs and error texts: it is enough to try
// guesses offline.
func (PasswordHash) String() string { return "PasswordHash(redacted)" }

// authenticator answers who a connection may be and what it may run: the
// ACL users the cluster replicates (ACL SETUSER), and the default user,
// which without a record of its own has every permission and the password
// of --requirepass, or none.
type authenticator struct {
	pass  *PasswordHash // the default user's; nil: it has none (Redis's nopass)
	users *userCache    // the replicated users; nil: none (unit tests)
	def   *acl.User     // the default user without a record (newAuthenticator)
}

func newAuthenticator(pass *PasswordHash, users *userCache) authenticator {
	a := authenticator{pass: pass, users: users}
	a.def = a.defaultUser()
	return a
}

// defaultUser is the default user as --requirepass makes it.
func (a authenticator) defaultUser() *acl.User {
	h := ""
	if a.pass != nil {
		h = hex.EncodeToString(a.pass[:])
	}
	return acl.Default(h)
}

// user returns user name as the cluster has it.
func (a authenticator) user(name string) (*acl.User, bool) {
	if a.users != nil {
		if u, ok := a.users.get(name); ok {
			return u, true
		}
	}
	switch {
	case name != defaultUser:
		return nil, false
	case a.def != nil:
		return a.def, true
	}
	return a.defaultUser(), true
}

// required reports whether connections start unauthenticated: unless the
// default user is on without a password.
func (a authenticator) required() bool {
	u, _ := a.user(defaultUser)
	return !u.On || !u.NoPass
}

// initialUser is the user a new connection (or one after RESET) is
// authenticated as: "default" when it has no password, else none ("").
func (a authenticator) initialUser() string {
	if a.required() {
		return ""
	}
	return defaultUser
}

// check reports whether pass is user's password. Without a password the
// default user accepts any, as Redis's nopass does. The digests are
// compared in constant time, so the time taken tells nothing about how
// close a guess was.
func (a authenticator) check(user, pass []byte) bool {
	u, ok := a.user(string(user))
	if !ok {
		// The same work as for a user that exists, so that the time
		// taken does not tell which names exist.
		u = &acl.User{On: true, Passwords: []string{""}}
		u.CheckPassword(string(pass))
		return false
	}
	return u.CheckPassword(string(pass))
}

// may reports whether a connection authenticated as user ("" = not yet)
// may run spec. Before AUTH only the table's NoAuth commands run.
func (a authenticator) may(user string, spec *commands.Spec) bool {
	return user != "" || spec.Has(commands.NoAuth)
}

// userOf is the user c is authenticated as, "" if none.
func (s *Server) userOf(c *resp.Conn) string {
	if st, ok := c.State().(*connState); ok && st.user != "" {
		return st.user
	}
	return s.auth.initialUser()
}

// gate is the dispatcher's check (ServeRESP): the one place a command is
// checked against the connection's user, first whether it has
// authenticated, then what its ACL allows (permit).
func (s *Server) gate(c *resp.Conn, spec *commands.Spec, args [][]byte) error {
	if plant.On(plant.AuthSkipped) {
		return nil // the planted bug: the gate lets every command through
	}
	if !s.auth.may(s.userOf(c), spec) {
		return ErrNoAuth
	}
	return s.permit(c, spec, args)
}

// preAuthLimits are the reader limits of a connection that has not
// authenticated (Redis since CVE-2021-32675), never above the configured
// ones.
func (s *Server) preAuthLimits() resp.Limits {
	pre, lim := resp.UnauthenticatedLimits(), s.fullLimits()
	for _, f := range []struct{ pre, lim *int }{{&pre.MaxBulk, &lim.MaxBulk}, {&pre.MaxArgs, &lim.MaxArgs}, {&pre.MaxInline, &lim.MaxInline}, {&pre.MaxCommand, &lim.MaxCommand}} {
		if *f.lim > 0 {
			*f.pre = min(*f.pre, *f.lim)
		}
	}
	return pre
}

// connLimits are the limits a new connection starts with.
func (s *Server) connLimits() resp.Limits {
	if s.auth.required() {
		return s.preAuthLimits()
	}
	return s.fullLimits()
}

// authenticate runs the check of AUTH and HELLO AUTH. On success c is
// user from now on and reads with the full limits; a failure is answered
// after a delay that grows with the connection's failures.
func (s *Server) authenticate(c *resp.Conn, user, pass []byte) error {
	st := stateOf(c)
	if !s.auth.check(user, pass) {
		st.authFails++
		pause(c, authDelay(st.authFails))
		return ErrWrongPass
	}
	if s.auth.required() && st.user == "" {
		s.setFullLimits(c, true)
	}
	st.user, st.authFails = string(user), 0
	return nil
}

// deauthenticate returns c to the state of a new connection (RESET). The
// count of failed attempts stays: RESET must not undo the slowdown.
func (s *Server) deauthenticate(c *resp.Conn) {
	st := stateOf(c)
	if s.auth.required() && st.user != "" {
		s.setFullLimits(c, false)
	}
	st.user = ""
}

// Failed authentications on one connection are answered ever later, so a
// connection can't try passwords at the speed of the network. The delay
// holds up only that connection's executor; every connection has its own.
const (
	authDelayBase = 100 * time.Millisecond
	authDelayMax  = 3 * time.Second // below ShutdownBound/2: a shutdown waits for it
)

// authDelay is the pause before answering a connection's fails-th failed
// authentication: none for the first (a typo), then doubling from
// authDelayBase up to authDelayMax.
func authDelay(fails int) time.Duration {
	if fails <= 1 {
		return 0
	}
	d := authDelayBase
	for i := 2; i < fails && d < authDelayMax; i++ {
		d *= 2
	}
	return min(d, authDelayMax)
}

// pause waits for d, or until c's context ends (the client left, or the
// server closes).
func pause(c *resp.Conn, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.Context().Done():
	}
}

// authCmd implements AUTH [user] password. Without a password, AUTH
// <password> is a configuration mistake, as Redis answers it.
func (s *Server) authCmd(c *resp.Conn, args [][]byte) resp.Value {
	var user, pass []byte
	switch len(args) {
	case 2:
		if !s.auth.required() {
			return errorReply(ErrNoPassword)
		}
		user, pass = []byte(defaultUser), args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		return syntaxError("syntax error")
	}
	if err := s.authenticate(c, user, pass); err != nil {
		return errorReply(err)
	}
	return resp.SimpleString("OK")
}

// metricsAuth wraps the metrics endpoint's handler: on a non-loopback
// address with a password set, every request must carry HTTP basic auth
// of the default user (Prometheus's basic_auth), compared as AUTH does.
// On loopback it stays open, as the client port is without a password.
func (s *Server) metricsAuth(h http.Handler) http.Handler {
	if !s.auth.required() || isLoopbackAddr(s.cfg.Metrics) {
		return h
	}
	return basicAuth(s.auth, h)
}

// basicAuth answers 401 to a request without the right credentials.
func basicAuth(a authenticator, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || !a.check([]byte(user), []byte(pass)) {
			w.Header().Set("WWW-Authenticate", `Basic realm="fenced", charset="UTF-8"`)
			http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isLoopbackAddr reports whether a host:port address serves loopback only:
// "localhost" or a loopback IP. An empty host or 0.0.0.0 (every
// interface) is not.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
