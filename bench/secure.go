package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// security is what the fenced-3-secure target turns on, for SPEC P10:
// mutual TLS between the nodes, clients over TLS, a password, and an ACL
// user (without admin) that the workloads authenticate as.
type security struct {
	ca, cert, key string // PEM files made by scripts/certs.sh
	pass          string // the default user's password
}

// The workloads' ACL user on fenced-3-secure.
const (
	benchUser     = "bench"
	benchUserPass = "bench-pass"
)

// newSecurity makes a CA and a node certificate for 127.0.0.1 in dir with
// the repo's scripts/certs.sh, the script the README tells users to run.
func newSecurity(ctx context.Context, dir string) (*security, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("locate module root: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if msg, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "certs.sh"), dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("scripts/certs.sh: %w\n%s", err, msg)
	}
	return &security{ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "node.crt"), key: filepath.Join(dir, "node.key"), pass: "bench-admin-pass"}, nil
}

// flags are a node's security flags, its TLS client port at tlsAddr.
func (s *security) flags(tlsAddr string) []string {
	return []string{
		"--peer-cert-file", s.cert, "--peer-key-file", s.key, "--peer-trusted-ca-file", s.ca,
		"--tls-listen", tlsAddr, "--tls-cert-file", s.cert, "--tls-key-file", s.key, "--tls-ca-cert-file", s.ca,
		"--tls-auth-clients", "no", "--requirepass", s.pass,
	}
}

// url is the address newClient takes for user at addr over TLS.
func (s *security) url(user, pass, addr string) string {
	u := url.URL{Scheme: "rediss", User: url.UserPassword(user, pass), Host: addr, RawQuery: url.Values{"ca": {s.ca}}.Encode()}
	return u.String()
}

// createUser makes the workloads' ACL user through the node at adminURL.
func (s *security) createUser(ctx context.Context, adminURL string) error {
	rdb := newClient(adminURL, 1, 5*time.Second)
	defer rdb.Close()
	return rdb.Do(ctx, "ACL", "SETUSER", benchUser, "on", ">"+benchUserPass, "+@all", "-@admin", "~*", "&*").Err()
}

// secureOptions turns a rediss://user:pass@host:port?ca=FILE address into
// go-redis options.
func secureOptions(addr string) (*redis.Options, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(u.Query().Get("ca"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", u.Query().Get("ca"))
	}
	pass, _ := u.User.Password()
	return &redis.Options{
		Addr: u.Host, Username: u.User.Username(), Password: pass,
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12},
	}, nil
}
