package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ClientTLS configures the TLS client port, with Redis's flag names and
// meanings: a second listener beside --listen that serves RESP over TLS.
type ClientTLS struct {
	Listen   string // --tls-listen; "" = no TLS port
	CertFile string // --tls-cert-file: the node's certificate (chain), PEM
	KeyFile  string // --tls-key-file: its private key, PEM
	CAFile   string // --tls-ca-cert-file: the CA that client certificates must chain to
	// AuthClients is --tls-auth-clients: "yes" requires a client
	// certificate verified against CAFile, "optional" verifies one if
	// presented, "no" does not ask for one.
	AuthClients string
}

func defaultClientTLS() ClientTLS { return ClientTLS{AuthClients: "yes"} }

// register adds the --tls-* flags to fs, writing into t.
func (t *ClientTLS) register(fs *flag.FlagSet) {
	fs.StringVar(&t.Listen, "tls-listen", t.Listen, "`ADDR` of the client port serving RESP over TLS, beside --listen")
	fs.StringVar(&t.CertFile, "tls-cert-file", t.CertFile, "certificate `FILE` (PEM) of the TLS port, reloaded on SIGHUP")
	fs.StringVar(&t.KeyFile, "tls-key-file", t.KeyFile, "private key `FILE` (PEM) of --tls-cert-file")
	fs.StringVar(&t.CAFile, "tls-ca-cert-file", t.CAFile, "CA `FILE` (PEM) that verifies client certificates")
	fs.StringVar(&t.AuthClients, "tls-auth-clients", t.AuthClients, "`MODE` of client certificates: yes (required), optional (verified if presented) or no")
}

// validate checks the shape of the TLS configuration, naming the flag that
// is missing or wrong; listen is --listen. The files are read by
// loadClientTLS.
func (t ClientTLS) validate(listen string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case listen == "" && t.Listen == "":
		return bad(`--listen "" turns the plaintext port off, so --tls-listen is required: a node needs a client port`)
	case t.AuthClients != "yes" && t.AuthClients != "no" && t.AuthClients != "optional":
		return bad("--tls-auth-clients must be yes, no or optional, got %q", t.AuthClients)
	case t.CertFile != "" && t.KeyFile == "":
		return bad("--tls-cert-file needs --tls-key-file")
	case t.KeyFile != "" && t.CertFile == "":
		return bad("--tls-key-file needs --tls-cert-file")
	case t.Listen == "" && (t.CertFile != "" || t.CAFile != ""):
		// Files that would secure nothing: an operator who meant TLS on
		// --listen must not get plaintext without noticing.
		return bad("--tls-cert-file and --tls-ca-cert-file need --tls-listen (the TLS port)")
	case t.Listen == "":
		return nil
	case t.CertFile == "":
		return bad("--tls-listen needs --tls-cert-file and --tls-key-file")
	case t.AuthClients != "no" && t.CAFile == "":
		return bad("--tls-auth-clients %s needs --tls-ca-cert-file (or --tls-auth-clients no)", t.AuthClients)
	}
	return nil
}

// tlsHandshakeTimeout bounds a TLS handshake, so that a client that
// connects and never finishes it doesn't hold a connection for good.
const tlsHandshakeTimeout = 10 * time.Second

// clientTLS serves the TLS port's configuration and swaps it on reload:
// every handshake asks for the current one (GetConfigForClient), so new
// connections get the new certificate and CA while established ones keep
// the session they negotiated.
type clientTLS struct {
	cfg ClientTLS
	cur atomic.Pointer[tls.Config]
}

// loadClientTLS reads and checks the certificate, key and CA of cfg.
func loadClientTLS(cfg ClientTLS) (*clientTLS, error) {
	t := &clientTLS{cfg: cfg}
	if err := t.reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// reload reads the files again; on error the current configuration stays.
func (t *clientTLS) reload() error {
	c, err := t.load()
	if err != nil {
		return err
	}
	t.cur.Store(c)
	return nil
}

// leaf is the certificate new handshakes present.
func (t *clientTLS) leaf() *x509.Certificate { return t.cur.Load().Certificates[0].Leaf }

func (t *clientTLS) load() (*tls.Config, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	certPEM, err := os.ReadFile(t.cfg.CertFile)
	if err != nil {
		return nil, bad("--tls-cert-file: %v", err)
	}
	keyPEM, err := os.ReadFile(t.cfg.KeyFile)
	if err != nil {
		return nil, bad("--tls-key-file: %v", err)
	}
	// tls.X509KeyPair's errors don't say which file is wrong.
	if !hasPEM(certPEM, "CERTIFICATE") {
		return nil, bad("--tls-cert-file %s: no PEM certificate in it", t.cfg.CertFile)
	}
	if !hasPEM(keyPEM, "PRIVATE KEY") {
		return nil, bad("--tls-key-file %s: no PEM private key in it", t.cfg.KeyFile)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, bad("--tls-cert-file %s with --tls-key-file %s: %v", t.cfg.CertFile, t.cfg.KeyFile, err)
	}
	// Serving a certificate every client refuses helps nobody; say so now.
	if now := time.Now(); now.After(cert.Leaf.NotAfter) || now.Before(cert.Leaf.NotBefore) {
		return nil, bad("--tls-cert-file %s: valid only from %v to %v", t.cfg.CertFile, cert.Leaf.NotBefore, cert.Leaf.NotAfter)
	}
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// Every connection is verified against the CA loaded now, never
		// resumed from a ticket issued before a reload.
		SessionTicketsDisabled: true,
	}
	switch t.cfg.AuthClients {
	case "yes":
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		c.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		c.ClientAuth = tls.NoClientCert
	}
	if t.cfg.CAFile != "" {
		caPEM, err := os.ReadFile(t.cfg.CAFile)
		if err != nil {
			return nil, bad("--tls-ca-cert-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, bad("--tls-ca-cert-file %s: no PEM certificate in it", t.cfg.CAFile)
		}
		c.ClientCAs = pool
	}
	return c, nil
}

// hasPEM reports whether b holds a PEM block whose type ends in typ
// ("PRIVATE KEY" also finds "EC PRIVATE KEY" and "RSA PRIVATE KEY").
func hasPEM(b []byte, typ string) bool {
	for {
		var p *pem.Block
		p, b = pem.Decode(b)
		if p == nil {
			return false
		}
		if strings.HasSuffix(p.Type, typ) {
			return true
		}
	}
}

// listen binds the TLS port.
func (t *clientTLS) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", t.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("server: tls listen: %w", err)
	}
	return &tlsListener{Listener: ln, cfg: &tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return t.cur.Load(), nil },
	}}, nil
}

// tlsListener is tls.NewListener with a bound on the handshake.
type tlsListener struct {
	net.Listener
	cfg *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tlsConn{Conn: tls.Server(c, l.cfg)}, nil
}

// tlsConn runs the handshake on first use, as tls.Conn does, but within
// tlsHandshakeTimeout. A plaintext client, or a certificate the
// configuration refuses, fails it: the connection ends with a TLS alert
// and no RESP byte is read or written. The embedded *tls.Conn keeps
// ConnectionState reachable for whoever needs the client's certificate.
type tlsConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *tlsConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
		defer cancel()
		c.err = c.Conn.HandshakeContext(ctx)
	})
	return c.err
}

func (c *tlsConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *tlsConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// reloadTLS reloads the certificate, key and CA on each signal from
// s.cfg.Reload until ctx ends. A failed reload keeps the old ones.
func (s *Server) reloadTLS(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Reload:
		}
		if err := s.tls.reload(); err != nil {
			s.log.Error("TLS reload failed; still serving the previous certificate", "err", err)
			continue
		}
		leaf := s.tls.leaf()
		s.log.Info("TLS certificate reloaded", "cert", s.cfg.TLS.CertFile, "subject", leaf.Subject.String(),
			"serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

// notifyReload connects SIGHUP to cfg.Reload when the node has a TLS port
// and the caller set no Reload of its own. Run does this, not Start or
// Serve: signals belong to the process, and the in-process tests run many
// servers in one process and reload through Reload directly. Without TLS
// there is nothing to reload and SIGHUP keeps its default action. The
// returned function stops the notification.
func notifyReload(cfg *Config) (stop func()) {
	if cfg.TLS.Listen == "" || cfg.Reload != nil {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	cfg.Reload = ch
	return func() { signal.Stop(ch) }
}
