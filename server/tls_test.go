package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsTLS(t *testing.T) {
	full := []string{"--tls-listen", "127.0.0.1:6380", "--tls-cert-file", "n.crt", "--tls-key-file", "n.key", "--tls-ca-cert-file", "ca.crt"}
	with := func(args ...string) []string { return append(slices.Clone(full), args...) }
	t.Run("flags", func(t *testing.T) {
		c, err := ParseFlags(append([]string{"--listen", ""}, slices.Clone(full)...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := ClientTLS{Listen: "127.0.0.1:6380", CertFile: "n.crt", KeyFile: "n.key", CAFile: "ca.crt", AuthClients: "yes"}
		if c.TLS != want || c.Listen != "" {
			t.Fatalf("got listen %q, %+v; want plaintext off and %+v", c.Listen, c.TLS, want)
		}
	})
	t.Run("config file", func(t *testing.T) {
		// "listen" alone and listen "" both turn plaintext off.
		p := writeFile(t, "listen \"\"\ntls-listen 127.0.0.1:6380\ntls-cert-file /etc/fenced/n.crt\ntls-key-file /etc/fenced/n.key\ntls-auth-clients no\n")
		bare := writeFile(t, "listen\ntls-listen 127.0.0.1:6380\ntls-cert-file /etc/fenced/n.crt\ntls-key-file /etc/fenced/n.key\ntls-auth-clients no\n")
		for _, p := range []string{p, bare} {
			c, err := ParseFlags([]string{"--config", p}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := ClientTLS{Listen: "127.0.0.1:6380", CertFile: "/etc/fenced/n.crt", KeyFile: "/etc/fenced/n.key", AuthClients: "no"}
			if c.TLS != want || c.Listen != "" {
				t.Fatalf("got listen %q, %+v; want plaintext off and %+v", c.Listen, c.TLS, want)
			}
		}
	})
	t.Run("both ports", func(t *testing.T) {
		for _, auth := range []string{"yes", "optional", "no"} {
			c, err := ParseFlags(with("--tls-auth-clients", auth), io.Discard)
			if err != nil || c.TLS.AuthClients != auth || c.Listen != DefaultConfig().Listen {
				t.Errorf("--tls-auth-clients %s: %+v, %v", auth, c.TLS, err)
			}
		}
		// no needs no CA.
		if _, err := ParseFlags(append(slices.Clone(full[:6]), "--tls-auth-clients", "no"), io.Discard); err != nil {
			t.Errorf("--tls-auth-clients no without a CA: %v", err)
		}
	})
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(full); i += 2 {
			if full[i] != flag {
				out = append(out, full[i], full[i+1])
			}
		}
		return out
	}
	for name, tc := range map[string]struct {
		args []string
		msg  string
	}{
		"no client port":              {[]string{"--listen", ""}, "--tls-listen is required"},
		"no client port, only files":  {append([]string{"--listen", ""}, without("--tls-listen")...), "--tls-listen"},
		"tls-listen without cert":     {without("--tls-cert-file"), "--tls-key-file needs --tls-cert-file"},
		"tls-listen without key":      {without("--tls-key-file"), "--tls-cert-file needs --tls-key-file"},
		"tls-listen without either":   {[]string{"--tls-listen", "127.0.0.1:6380"}, "--tls-listen needs --tls-cert-file"},
		"yes without CA":              {without("--tls-ca-cert-file"), "--tls-auth-clients yes needs --tls-ca-cert-file"},
		"optional without CA":         {append(without("--tls-ca-cert-file"), "--tls-auth-clients", "optional"), "--tls-auth-clients optional needs --tls-ca-cert-file"},
		"cert without tls-listen":     {without("--tls-listen"), "need --tls-listen"},
		"CA alone":                    {[]string{"--tls-ca-cert-file", "ca.crt"}, "need --tls-listen"},
		"key alone":                   {[]string{"--tls-key-file", "n.key"}, "--tls-key-file needs --tls-cert-file"},
		"auth-clients bad":            {with("--tls-auth-clients", "maybe"), `--tls-auth-clients must be yes, no or optional, got "maybe"`},
		"auth-clients empty":          {with("--tls-auth-clients", ""), "--tls-auth-clients must be"},
		"auth-clients case":           {with("--tls-auth-clients", "YES"), "--tls-auth-clients must be"},
		"tls-listen non-loopback":     {with("--tls-listen", "0.0.0.0:6380"), "--tls-listen \"0.0.0.0:6380\": a non-loopback address needs a password"},
		"tls-listen bad address":      {with("--tls-listen", "nowhere"), "--tls-listen \"nowhere\""},
		"tls-listen on a public name": {with("--tls-listen", "example.com:6380"), "protected mode"},
	} {
		_, err := ParseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %q: error %v, want one containing %q", name, tc.args, err, tc.msg)
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v does not wrap ErrConfig", name, err)
		}
	}
}

// pki writes, under dir, a CA (ca.crt) and a certificate signed by it
// (node.crt, node.key) valid from notBefore to notAfter.
func pki(t *testing.T, dir string, notBefore, notAfter time.Time) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: notBefore, NotAfter: notAfter, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{
		"ca.crt": {Type: "CERTIFICATE", Bytes: caDER}, "node.crt": {Type: "CERTIFICATE", Bytes: der},
		"node.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadClientTLS checks that every file is read and checked at start,
// and that an error names the flag and the file.
func TestLoadClientTLS(t *testing.T) {
	dir, other, expired := t.TempDir(), t.TempDir(), t.TempDir()
	now := time.Now()
	pki(t, dir, now.Add(-time.Hour), now.Add(time.Hour))
	pki(t, other, now.Add(-time.Hour), now.Add(time.Hour))
	pki(t, expired, now.Add(-2*time.Hour), now.Add(-time.Hour))
	in := func(d, name string) string { return filepath.Join(d, name) }
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := ClientTLS{Listen: "127.0.0.1:0", CertFile: in(dir, "node.crt"), KeyFile: in(dir, "node.key"), CAFile: in(dir, "ca.crt"), AuthClients: "yes"}

	for auth, want := range map[string]tls.ClientAuthType{"yes": tls.RequireAndVerifyClientCert, "optional": tls.VerifyClientCertIfGiven, "no": tls.NoClientCert} {
		cfg := good
		cfg.AuthClients = auth
		ct, err := loadClientTLS(cfg)
		if err != nil {
			t.Fatalf("%s: %v", auth, err)
		}
		c := ct.cur.Load()
		if c.ClientAuth != want || c.MinVersion != tls.VersionTLS12 || c.ClientCAs == nil || ct.leaf().Subject.CommonName != "node" {
			t.Errorf("--tls-auth-clients %s: ClientAuth %v MinVersion %x CAs %v leaf %v", auth, c.ClientAuth, c.MinVersion, c.ClientCAs != nil, ct.leaf().Subject)
		}
	}

	for name, tc := range map[string]struct {
		edit func(*ClientTLS)
		msg  string
	}{
		"missing cert":     {func(c *ClientTLS) { c.CertFile = in(dir, "nope.crt") }, "--tls-cert-file: open " + in(dir, "nope.crt")},
		"missing key":      {func(c *ClientTLS) { c.KeyFile = in(dir, "nope.key") }, "--tls-key-file: open " + in(dir, "nope.key")},
		"missing CA":       {func(c *ClientTLS) { c.CAFile = in(dir, "nope.crt") }, "--tls-ca-cert-file: open " + in(dir, "nope.crt")},
		"garbage cert":     {func(c *ClientTLS) { c.CertFile = garbage }, "--tls-cert-file " + garbage + ": no PEM certificate"},
		"key as cert":      {func(c *ClientTLS) { c.CertFile = in(dir, "node.key") }, "--tls-cert-file " + in(dir, "node.key") + ": no PEM certificate"},
		"garbage key":      {func(c *ClientTLS) { c.KeyFile = garbage }, "--tls-key-file " + garbage + ": no PEM private key"},
		"cert as key":      {func(c *ClientTLS) { c.KeyFile = in(dir, "node.crt") }, "--tls-key-file " + in(dir, "node.crt") + ": no PEM private key"},
		"garbage CA":       {func(c *ClientTLS) { c.CAFile = garbage }, "--tls-ca-cert-file " + garbage + ": no PEM certificate"},
		"key of another":   {func(c *ClientTLS) { c.KeyFile = in(other, "node.key") }, "private key does not match public key"},
		"expired cert":     {func(c *ClientTLS) { c.CertFile, c.KeyFile = in(expired, "node.crt"), in(expired, "node.key") }, "--tls-cert-file " + in(expired, "node.crt") + ": valid only from"},
		"directory as key": {func(c *ClientTLS) { c.KeyFile = dir }, "--tls-key-file: read " + dir},
	} {
		cfg := good
		tc.edit(&cfg)
		_, err := loadClientTLS(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.msg)
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v does not wrap ErrConfig", name, err)
		}
	}

	// A reload that fails keeps what was loaded.
	cfg := good
	ct, err := loadClientTLS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := ct.cur.Load()
	ct.cfg.CertFile = garbage
	if err := ct.reload(); err == nil || ct.cur.Load() != before {
		t.Fatalf("reload of a garbage certificate: %v; configuration replaced: %v", err, ct.cur.Load() != before)
	}
	ct.cfg = good
	ct.cfg.CertFile, ct.cfg.KeyFile = in(other, "node.crt"), in(other, "node.key")
	if err := ct.reload(); err != nil || ct.cur.Load() == before {
		t.Fatalf("reload of another certificate: %v; configuration replaced: %v", err, ct.cur.Load() != before)
	}
}

// TestStartRefusesBadTLSFile: Start reads the files before it opens
// anything, so a bad one leaves no listener or data behind.
func TestStartRefusesBadTLSFile(t *testing.T) {
	dir := t.TempDir()
	pki(t, dir, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	cfg := DefaultConfig()
	cfg.Listen, cfg.RaftAddr, cfg.Data = "", "127.0.0.1:0", filepath.Join(t.TempDir(), "data")
	cfg.TLS = ClientTLS{Listen: "127.0.0.1:0", CertFile: filepath.Join(dir, "node.crt"), KeyFile: filepath.Join(dir, "ca.crt"), AuthClients: "no"}
	_, err := Start(cfg)
	if err == nil || !strings.Contains(err.Error(), "--tls-key-file") {
		t.Fatalf("Start with a certificate as the key: %v, want an error naming --tls-key-file", err)
	}
	if _, serr := os.Stat(cfg.Data); !os.IsNotExist(serr) {
		t.Fatalf("Start refused (%v) but created %s", err, cfg.Data)
	}
}
