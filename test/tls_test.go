package test

// TLS for clients (--tls-listen and friends), against real processes with
// certificates made by scripts/certs.sh, the script the README tells users
// to run: go-redis, redis-cli, redis-py and ioredis connect; refusals;
// --listen ""; bad flags; SIGHUP reload.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// makeCerts runs scripts/certs.sh into a fresh directory: ca.crt, node.crt
// (127.0.0.1, localhost) and client.crt with their keys. Each call makes a
// new, unrelated CA.
func makeCerts(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		compatSkip(t, "openssl is not installed (apt-get install openssl)")
	}
	dir := t.TempDir()
	out, err := exec.Command("../scripts/certs.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/certs.sh %s: %v\n%s", dir, err, out)
	}
	if len(out) != 0 {
		t.Errorf("scripts/certs.sh printed on success:\n%s", out)
	}
	return dir
}

// tlsNode is a node with a TLS client port.
type tlsNode struct {
	*node
	tlsAddr string
	certs   string // the directory of the node's certificate, key and CA files
}

var tlsServingRE = regexp.MustCompile(`msg="fenced serving" .* tls=(\S+)`)

// tlsOpts configure startTLSNode.
type tlsOpts struct {
	auth      string // --tls-auth-clients; "" = the default (yes)
	noPlain   bool   // --listen "": TLS only
	fileDir   string // where the node's files are; default: a copy of certs
	password  string // --requirepass, which the test's default clients use
	extraArgs []string
}

// startTLSNode starts a node whose TLS port uses node.crt, node.key and
// ca.crt of certs, and waits until it serves a TLS client that has
// certs' client certificate.
func startTLSNode(t testing.TB, certs string, o tlsOpts) *tlsNode {
	t.Helper()
	files := o.fileDir
	if files == "" {
		files = certs
	}
	args := []string{"--tls-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--tls-cert-file", filepath.Join(files, "node.crt"), "--tls-key-file", filepath.Join(files, "node.key"),
		"--tls-ca-cert-file", filepath.Join(files, "ca.crt")}
	if o.auth != "" {
		args = append(args, "--tls-auth-clients", o.auth)
	}
	if o.noPlain {
		args = append(args, "--listen", "")
	}
	args = append(args, o.extraArgs...)
	if o.password != "" {
		args = append(args, "--requirepass", o.password)
	}
	n := &tlsNode{node: startNode(t, nodeOpts{args: args, noWait: true, password: o.password}), certs: certs}
	m := tlsServingRE.FindStringSubmatch(n.stderr())
	if m == nil {
		t.Fatalf("no TLS address in the serving line:\n%s", n.stderr())
	}
	n.tlsAddr = m[1]
	c := n.tlsClient(t, clientTLS(t, certs, certs))
	eventually(t, 30*time.Second, "the node to serve over TLS", func() bool {
		return errors.Is(c.Do(context.Background(), "FENCE", "__itest_ready_probe__").Err(), redis.Nil)
	})
	return n
}

// clientTLS is a client's TLS configuration: trusting the CA of caDir and,
// unless certDir is "", presenting certDir's client certificate.
func clientTLS(t testing.TB, caDir, certDir string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	for _, dir := range strings.Split(caDir, string(os.PathListSeparator)) {
		pem, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("CA %s: %v", dir, err)
		}
	}
	c := &tls.Config{RootCAs: pool}
	if certDir != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "client.crt"), filepath.Join(certDir, "client.key"))
		if err != nil {
			t.Fatal(err)
		}
		// Always present it: Go's client would otherwise leave out a
		// certificate whose CA the server did not list, and the server's
		// own check of a foreign certificate would go untested.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c
}

// tlsClient is a go-redis client of the TLS port, closed when the test ends.
func (n *tlsNode) tlsClient(t testing.TB, cfg *tls.Config) *redis.Client {
	o := n.options(3)
	o.Addr, o.TLSConfig = n.tlsAddr, cfg
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// tlsPing dials the TLS port with cfg and sends PING on the new connection.
// It returns the connection's state and the reply, or the error that ended
// it; a server that neither answers nor closes within 10 s fails the test.
func tlsPing(t testing.TB, addr string, cfg *tls.Config) (tls.ConnectionState, string, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, "", err
	}
	defer tc.Close()
	return tc.ConnectionState(), ping(t, tc), nil
}

// ping sends PING on c and returns the reply line, or "" with the test
// failed if c neither answers nor closes in 10 s. An error that closed the
// connection is returned as the reply "error: ...".
func ping(t testing.TB, c net.Conn) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return "error: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("PING: neither a reply nor a close within 10 s")
		return ""
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// redisCLI runs redis-cli against addr with args and returns its output.
func redisCLI(t testing.TB, addr string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		compatSkip(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestTLSGoRedis: go-redis over TLS runs a FLOCK/FUNLOCK/FENCE cycle, the
// SET NX PX lock of redsync and redislock, while the plaintext port serves
// beside it; INFO reports both ports.
func TestTLSGoRedis(t *testing.T) {
	t.Parallel()
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{})
	c := n.tlsClient(t, clientTLS(t, certs, certs))

	sid := openSession(t, c, 60000, "tls")
	tok := mustInt(t, c, "FLOCK", "tls-lock", sid)
	if got := mustInt(t, c, "FENCE", "tls-lock"); got != tok || tok <= 0 {
		t.Fatalf("FENCE after FLOCK = %d, FLOCK = %d", got, tok)
	}
	if left := mustInt(t, c, "FUNLOCK", "tls-lock", sid, "FENCE", strconv.FormatInt(tok, 10)); left != 0 {
		t.Fatalf("FUNLOCK = %d, want 0", left)
	}
	mustNil(t, c, "FENCE", "tls-lock")
	if tok2 := mustInt(t, c, "FLOCK", "tls-lock", sid); tok2 <= tok {
		t.Fatalf("second FLOCK token %d, not above %d", tok2, tok)
	}

	if ok, err := c.SetNX(tctx(t), "tls-key", "v1", 10*time.Second).Result(); !ok || err != nil {
		t.Fatalf("SET NX PX: %v %v", ok, err)
	}
	if ok, err := c.SetNX(tctx(t), "tls-key", "v2", 10*time.Second).Result(); ok || err != nil {
		t.Fatalf("SET NX PX of a held key: %v %v, want false", ok, err)
	}
	if ms := mustInt(t, c, "PTTL", "tls-key"); ms <= 0 || ms > 10000 {
		t.Fatalf("PTTL = %d", ms)
	}
	if tok := mustInt(t, c, "FENCE", "tls-key"); tok <= 0 {
		t.Fatalf("FENCE of a SET NX key = %d", tok)
	}
	for _, lib := range goLibs(c) {
		held, err := lib.obtain(tctx(t), "tls-"+lib.name, 5*time.Second)
		if err != nil {
			t.Fatalf("%s obtain over TLS: %v", lib.name, err)
		}
		if ok, err := lib.tryOnce(tctx(t), "tls-"+lib.name, time.Second); ok || err != nil {
			t.Fatalf("%s: a second obtain of a held lock: %v, %v", lib.name, ok, err)
		}
		if err := held.release(tctx(t)); err != nil {
			t.Fatalf("%s release over TLS: %v", lib.name, err)
		}
	}

	// The plaintext port serves the same state.
	plain := n.client(t)
	if got := mustStr(t, plain, "GET", "tls-key"); got != "v1" {
		t.Fatalf("GET over plaintext = %q", got)
	}
	info := infoSection(t, c, "server")
	_, tlsPort, _ := strings.Cut(n.tlsAddr, ":")
	_, plainPort, _ := strings.Cut(n.addr, ":")
	if info["tls_port"] != tlsPort || info["tcp_port"] != plainPort {
		t.Fatalf("INFO tcp_port %q tls_port %q, want %s and %s", info["tcp_port"], info["tls_port"], plainPort, tlsPort)
	}
	// With both ports, the member table keeps the plaintext address.
	if addr := memberAddr(t, c); addr != n.addr {
		t.Fatalf("RAFT.STATUS member address %s, want the plaintext address %s", addr, n.addr)
	}
}

// memberAddr is the client address of the only member in c's RAFT.STATUS,
// once the node has recorded it.
func memberAddr(t testing.TB, c *redis.Client) string {
	t.Helper()
	var addr string
	eventually(t, 10*time.Second, "the node to record its client address", func() bool {
		v, err := do(tctx(t), c, "RAFT.STATUS")
		m, _ := asMap(v)
		nodes, _ := m["nodes"].([]any)
		if err != nil || len(nodes) != 1 {
			return false
		}
		nm, _ := asMap(nodes[0])
		addr = fmt.Sprint(nm["addr"])
		return addr != "" && addr != "<nil>"
	})
	return addr
}

// TestTLSClientAuth: --tls-auth-clients yes, optional and no, with go's TLS
// client and redis-cli: who is served and who is refused, TLS 1.2 as the
// least version, and a plaintext client on the TLS port gets no RESP reply.
func TestTLSClientAuth(t *testing.T) {
	t.Parallel()
	certs, other := makeCerts(t), makeCerts(t) // other: an unrelated CA
	both := certs + string(os.PathListSeparator) + other
	type client struct {
		name    string
		cfg     *tls.Config
		cliArgs []string // the same client as redis-cli; nil: none
	}
	noCert := client{"no client certificate", clientTLS(t, certs, ""),
		[]string{"--tls", "--cacert", filepath.Join(certs, "ca.crt")}}
	ownCA := client{"a certificate of the node's CA", clientTLS(t, certs, certs),
		[]string{"--tls", "--cacert", filepath.Join(certs, "ca.crt"), "--cert", filepath.Join(certs, "client.crt"), "--key", filepath.Join(certs, "client.key")}}
	otherCA := client{"a certificate of another CA", clientTLS(t, both, other),
		[]string{"--tls", "--cacert", filepath.Join(certs, "ca.crt"), "--cert", filepath.Join(other, "client.crt"), "--key", filepath.Join(other, "client.key")}}
	for _, mode := range []struct {
		auth            string
		served, refused []client
	}{
		{"yes", []client{ownCA}, []client{noCert, otherCA}},
		{"optional", []client{ownCA, noCert}, []client{otherCA}},
		{"no", []client{ownCA, noCert, otherCA}, nil},
	} {
		t.Run(mode.auth, func(t *testing.T) {
			t.Parallel()
			n := startTLSNode(t, certs, tlsOpts{auth: mode.auth, noPlain: mode.auth == "yes"})
			for _, c := range mode.served {
				if _, reply, err := tlsPing(t, n.tlsAddr, c.cfg); err != nil || reply != "+PONG" {
					t.Errorf("%s: PING = %q, %v; want +PONG", c.name, reply, err)
				}
				if out, err := redisCLI(t, n.tlsAddr, append(c.cliArgs, "PING")...); err != nil || out != "PONG" {
					t.Errorf("redis-cli with %s: %q, %v; want PONG", c.name, out, err)
				}
			}
			for _, c := range mode.refused {
				_, reply, err := tlsPing(t, n.tlsAddr, c.cfg)
				if err == nil && !strings.HasPrefix(reply, "error: ") {
					t.Errorf("%s: PING = %q, want the connection refused", c.name, reply)
				} else if err != nil {
					t.Logf("%s: refused at the handshake: %v", c.name, err)
				} else {
					t.Logf("%s: refused, PING got %s", c.name, reply)
				}
				if out, err := redisCLI(t, n.tlsAddr, append(c.cliArgs, "PING")...); err == nil || strings.Contains(out, "PONG") {
					t.Errorf("redis-cli with %s: %q, %v; want it refused", c.name, out, err)
				}
			}
			// TLS 1.2 is served, older versions are not.
			for _, v := range []struct {
				version uint16
				served  bool
			}{{tls.VersionTLS12, true}, {tls.VersionTLS11, false}, {tls.VersionTLS10, false}} {
				cfg := clientTLS(t, certs, certs)
				cfg.MinVersion, cfg.MaxVersion = v.version, v.version
				st, reply, err := tlsPing(t, n.tlsAddr, cfg)
				if ok := err == nil && reply == "+PONG" && st.Version == v.version; ok != v.served {
					t.Errorf("TLS version %x: PING = %q, %v (negotiated %x); want served = %v", v.version, reply, err, st.Version, v.served)
				}
			}
			// The server's certificate is verified: a client that trusts
			// only another CA refuses it.
			if _, _, err := tlsPing(t, n.tlsAddr, clientTLS(t, other, other)); err == nil {
				t.Errorf("a client trusting only another CA accepted the node's certificate")
			}
			checkNoRESPOnTLSPort(t, n.tlsAddr)
		})
	}
}

// checkNoRESPOnTLSPort sends plaintext RESP to the TLS port: the
// connection must end with no RESP reply (at most a TLS alert record).
func checkNoRESPOnTLSPort(t *testing.T, addr string) {
	t.Helper()
	for _, payload := range []string{"PING\r\n", encode("SET", "plain-on-tls", "1"), "POST / HTTP/1.1\r\nHost: x\r\n\r\nSET a 1\r\n"} {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(15 * time.Second))
		io.WriteString(nc, payload)
		got, err := io.ReadAll(nc)
		nc.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("plaintext %q on the TLS port: not closed within 15 s (read %q)", payload, got)
			continue
		}
		// 0x15 is a TLS alert record; a RESP reply starts with + - : $ * etc.
		if len(got) > 0 && got[0] != 0x15 {
			t.Errorf("plaintext %q on the TLS port was answered %q", payload, got)
		}
	}
}

// TestTLSOnly: --listen "" with --tls-listen serves TLS only, and tells
// others (the member table, CLUSTER SLOTS) the TLS address.
func TestTLSOnly(t *testing.T) {
	t.Parallel()
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{noPlain: true})
	if !strings.Contains(n.stderr(), `msg="fenced serving" listen="" `) {
		t.Fatalf("serving line does not show the plaintext port off:\n%s", n.stderr())
	}
	c := n.tlsClient(t, clientTLS(t, certs, certs))
	info := infoSection(t, c, "server")
	_, tlsPort, _ := strings.Cut(n.tlsAddr, ":")
	if info["tcp_port"] != "0" || info["tls_port"] != tlsPort {
		t.Fatalf("INFO tcp_port %q tls_port %q, want 0 and %s", info["tcp_port"], info["tls_port"], tlsPort)
	}
	if addr := memberAddr(t, c); addr != n.tlsAddr {
		t.Fatalf("RAFT.STATUS member address %s, want the TLS address %s", addr, n.tlsAddr)
	}
	slots, err := do(tctx(t), c, "CLUSTER", "SLOTS")
	if err != nil || !strings.Contains(fmt.Sprint(slots), strings.Replace(n.tlsAddr, ":", " ", 1)) {
		t.Fatalf("CLUSTER SLOTS = %v, %v; want the TLS address %s", slots, err, n.tlsAddr)
	}
	// The plaintext port of startNode's flags was given up: nothing answers
	// RESP there.
	plainAddr := regexp.MustCompile(`--listen (127\.0\.0\.1:\d+)`).FindStringSubmatch(n.stderr())
	if plainAddr == nil {
		t.Fatal("no --listen in the node's command line")
	}
	if nc, err := net.DialTimeout("tcp", plainAddr[1], 2*time.Second); err == nil {
		reply := ping(t, nc)
		nc.Close()
		t.Fatalf("the overridden --listen %s accepted a connection (PING: %q)", plainAddr[1], reply)
	}
}

// TestTLSBadFlags: every bad TLS flag value, half configuration and bad
// file makes fenced exit non-zero before serving, naming the flag.
func TestTLSBadFlags(t *testing.T) {
	t.Parallel()
	certs, other := makeCerts(t), makeCerts(t)
	f := func(name string) string { return filepath.Join(certs, name) }
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	// inUse is a port something else holds.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	samePort := port()
	good := func(extra ...string) []string {
		return append([]string{"--tls-listen", port(), "--tls-cert-file", f("node.crt"), "--tls-key-file", f("node.key"), "--tls-ca-cert-file", f("ca.crt")}, extra...)
	}
	conf := filepath.Join(t.TempDir(), "fenced.conf")
	if err := os.WriteFile(conf, []byte("tls-listen "+port()+"\ntls-cert-file "+f("node.crt")+"\ntls-key-file "+f("node.key")+"\ntls-auth-clients sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no client port", []string{"--listen", ""}, "--tls-listen is required"},
		{"tls-listen alone", []string{"--tls-listen", port()}, "--tls-listen needs --tls-cert-file"},
		{"no key", []string{"--tls-listen", port(), "--tls-cert-file", f("node.crt"), "--tls-auth-clients", "no"}, "--tls-cert-file needs --tls-key-file"},
		{"no cert", []string{"--tls-listen", port(), "--tls-key-file", f("node.key"), "--tls-auth-clients", "no"}, "--tls-key-file needs --tls-cert-file"},
		{"yes without CA", []string{"--tls-listen", port(), "--tls-cert-file", f("node.crt"), "--tls-key-file", f("node.key")}, "--tls-ca-cert-file"},
		{"optional without CA", []string{"--tls-listen", port(), "--tls-cert-file", f("node.crt"), "--tls-key-file", f("node.key"), "--tls-auth-clients", "optional"}, "--tls-ca-cert-file"},
		{"files without tls-listen", []string{"--tls-cert-file", f("node.crt"), "--tls-key-file", f("node.key")}, "need --tls-listen"},
		{"bad auth-clients", good("--tls-auth-clients", "required"), "--tls-auth-clients must be yes, no or optional"},
		{"auth-clients in a config file", []string{"--config", conf}, "--tls-auth-clients must be"},
		{"non-loopback", good("--tls-listen", "0.0.0.0:"+strconv.Itoa(freePort(t))), "--tls-listen"},
		{"bad address", good("--tls-listen", "127.0.0.1"), "--tls-listen"},
		{"missing cert file", good("--tls-cert-file", f("nope.crt")), "--tls-cert-file: open " + f("nope.crt")},
		{"missing CA file", good("--tls-ca-cert-file", f("nope.crt")), "--tls-ca-cert-file: open " + f("nope.crt")},
		{"key as cert", good("--tls-cert-file", f("node.key")), "--tls-cert-file " + f("node.key") + ": no PEM certificate"},
		{"cert as key", good("--tls-key-file", f("node.crt")), "--tls-key-file " + f("node.crt") + ": no PEM private key"},
		{"corrupt cert", good("--tls-cert-file", garbage), "--tls-cert-file " + garbage},
		{"key of another cert", good("--tls-key-file", filepath.Join(other, "node.key")), "private key does not match"},
		{"key as CA", good("--tls-ca-cert-file", f("node.key")), "--tls-ca-cert-file " + f("node.key") + ": no PEM certificate"},
		{"TLS port in use", good("--tls-listen", ln.Addr().String()), "tls listen"},
		{"TLS port is the plaintext port", good("--listen", samePort, "--tls-listen", samePort), "tls listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data", filepath.Join(t.TempDir(), "data"), "--listen", port(), "--raft-addr", port()}, tc.args...)
			bin := binPath(t) // before the clock starts: the first call builds it
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("fenced %s: %v, want a non-zero exit\n%s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "fenced serving") {
				t.Fatalf("fenced %s: output does not name %q (or it served):\n%s", strings.Join(args, " "), tc.want, out)
			}
		})
	}
}

// TestTLSBadInput: hostile bytes and stalled handshakes on the TLS port
// end their connection, and the node keeps serving TLS clients.
func TestTLSBadInput(t *testing.T) {
	t.Parallel()
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{})
	cfg := clientTLS(t, certs, certs)
	hello := clientHello(t)
	for _, tc := range []struct {
		name    string
		payload []byte
		// stall: send the payload and then nothing; the handshake bound
		// (10 s) must close the connection.
		stall bool
	}{
		{"garbage", bytes.Repeat([]byte{0xff, 0x00, 0x16}, 1000), false},
		{"huge record length", []byte{0x16, 0x03, 0x01, 0xff, 0xff}, true},
		{"half a ClientHello", hello[:len(hello)/2], true},
		{"nothing", nil, true},
		{"a ClientHello, then garbage", append(append([]byte{}, hello...), bytes.Repeat([]byte{0x17}, 4096)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nc, err := net.DialTimeout("tcp", n.tlsAddr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			start := time.Now()
			nc.SetDeadline(start.Add(30 * time.Second))
			nc.Write(tc.payload)
			_, err = io.Copy(io.Discard, nc)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("still open after %v", time.Since(start).Round(time.Millisecond))
			}
			if took := time.Since(start); tc.stall && took > 20*time.Second {
				t.Fatalf("a stalled handshake was closed after %v, want about 10 s", took)
			}
			if _, reply, err := tlsPing(t, n.tlsAddr, cfg); err != nil || reply != "+PONG" {
				t.Fatalf("a good client after %s: %q, %v", tc.name, reply, err)
			}
		})
	}
}

// clientHello returns the first flight of a Go TLS client, as the bytes a
// real client sends first.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{ServerName: "localhost"}).Handshake()
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16<<10)
	n, err := b.Read(buf)
	if err != nil || n < 5 || buf[0] != 0x16 {
		t.Fatalf("capturing a ClientHello: %d bytes, %v", n, err)
	}
	return buf[:n]
}

// TestTLSReloadOnSIGHUP: SIGHUP reloads the certificate, key and CA from
// the same paths; the connection made before keeps working, new ones get
// the new certificate (and the new CA verifies them); a reload of a bad
// file keeps the current one.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	a, b := makeCerts(t), makeCerts(t) // two unrelated CAs, so A's and B's files can't be mixed up
	files := t.TempDir()
	install := func(from string) {
		t.Helper()
		for _, name := range []string{"node.crt", "node.key", "ca.crt"} {
			data, err := os.ReadFile(filepath.Join(from, name))
			if err != nil {
				t.Fatal(err)
			}
			// Write beside, then rename: the node never reads half a file.
			tmp := filepath.Join(files, name+".tmp")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(files, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	leafOf := func(dir string) *x509.Certificate {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key"))
		if err != nil {
			t.Fatal(err)
		}
		return cert.Leaf
	}
	leafA, leafB := leafOf(a), leafOf(b)
	install(a)
	n := startTLSNode(t, a, tlsOpts{fileDir: files})
	trustBoth := a + string(os.PathListSeparator) + b
	withA, withB := clientTLS(t, trustBoth, a), clientTLS(t, trustBoth, b)

	// A connection made with A's certificate, kept open across the reload.
	old, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.tlsAddr, withA)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := old.ConnectionState().PeerCertificates[0]; !got.Equal(leafA) {
		t.Fatalf("before the reload the node presented %v (serial %x), want A's", got.Subject, got.SerialNumber)
	}
	if r := ping(t, old); r != "+PONG" {
		t.Fatalf("PING before the reload: %q", r)
	}

	reloads := func() int { return strings.Count(n.stderr(), `msg="TLS certificate reloaded"`) }
	hup := func() {
		t.Helper()
		n.mu.Lock()
		cmd := n.cmd
		n.mu.Unlock()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	install(b)
	hup()
	eventually(t, 10*time.Second, "the reload to be logged", func() bool { return reloads() == 1 })
	if !strings.Contains(n.stderr(), fmt.Sprintf("serial=%x", leafB.SerialNumber)) {
		t.Errorf("the reload's log line does not name B's serial %x:\n%s", leafB.SerialNumber, n.stderr())
	}
	if !n.alive() {
		t.Fatal("the node exited on SIGHUP")
	}
	if r := ping(t, old); r != "+PONG" {
		t.Fatalf("PING on the connection made before the reload: %q", r)
	}
	if got := old.ConnectionState().PeerCertificates[0]; !got.Equal(leafA) {
		t.Fatalf("the old connection's certificate changed")
	}
	st, reply, err := tlsPing(t, n.tlsAddr, withB)
	if err != nil || reply != "+PONG" || !st.PeerCertificates[0].Equal(leafB) {
		t.Fatalf("a new connection after the reload: %q, %v; want +PONG from B's certificate", reply, err)
	}
	// The CA was reloaded too: A's client certificate is no longer trusted.
	if _, reply, err := tlsPing(t, n.tlsAddr, withA); err == nil && !strings.HasPrefix(reply, "error: ") {
		t.Fatalf("A's client certificate after the CA changed to B's: %q, want refused", reply)
	}

	// A reload that fails keeps B and says so.
	if err := os.WriteFile(filepath.Join(files, "node.crt"), []byte("truncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	eventually(t, 10*time.Second, "the failed reload to be logged", func() bool {
		return strings.Contains(n.stderr(), `level=ERROR msg="TLS reload failed; still serving the previous certificate"`)
	})
	if !strings.Contains(n.stderr(), "--tls-cert-file "+filepath.Join(files, "node.crt")) {
		t.Errorf("the failed reload's log does not name the file:\n%s", n.stderr())
	}
	st, reply, err = tlsPing(t, n.tlsAddr, withB)
	if err != nil || reply != "+PONG" || !st.PeerCertificates[0].Equal(leafB) {
		t.Fatalf("after a failed reload: %q, %v; want +PONG from B's certificate", reply, err)
	}
	if r := ping(t, old); r != "+PONG" {
		t.Fatalf("PING on the first connection after a failed reload: %q", r)
	}
	// go-redis over the reloaded port runs a lock cycle.
	c := n.tlsClient(t, withB)
	sid := openSession(t, c, 60000, "after-reload")
	if tok := mustInt(t, c, "FLOCK", "reloaded", sid); tok <= 0 {
		t.Fatalf("FLOCK = %d", tok)
	}
}

// compatUser makes the ACL user the lock-library programs authenticate
// as over TLS: every command but the admin ones, every key.
func compatUser(t testing.TB, n *tlsNode, certs string) {
	t.Helper()
	admin := n.tlsClient(t, clientTLS(t, certs, certs))
	if _, err := do(tctx(t), admin, "ACL", "SETUSER", "compat", "on", ">compat-pass", "+@all", "-@admin", "~*", "&*"); err != nil {
		t.Fatal(err)
	}
}

// TestTLSCompatPython runs redis-py's Lock over TLS (ssl=True with a client
// certificate, --tls-auth-clients yes, plaintext off), authenticated as an
// ACL user: the basic checks and three contending workers.
func TestTLSCompatPython(t *testing.T) {
	t.Parallel()
	py, version := findPython(t)
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{noPlain: true, password: testPass})
	compatUser(t, n, certs)
	tlsArgs := []string{"--tls-ca", filepath.Join(certs, "ca.crt"), "--tls-cert", filepath.Join(certs, "client.crt"), "--tls-key", filepath.Join(certs, "client.key"),
		"--user", "compat", "--password", "compat-pass"}
	const dir, prog = "compat/python", "redis_py_lock.py"
	t.Logf("redis-py %s (%s) over TLS at %s", version, py, n.tlsAddr)
	t.Run("basic", func(t *testing.T) {
		sum := runCompat(t, 2*time.Minute, dir, py, append([]string{prog, "basic", "--addr", n.tlsAddr, "--fence", "--prefix", "py-tls"}, tlsArgs...)...)
		checkTLSSummary(t, sum)
		checkFenceTokens(t, &compatTarget{fence: true}, sum, 5)
	})
	t.Run("contention", func(t *testing.T) {
		const workers, iterations = 3, 10
		var argvs [][]string
		for i := range workers {
			argvs = append(argvs, append([]string{prog, "worker", "--addr", n.tlsAddr, "--prefix", "py-tls-c", "--fence",
				"--id", strconv.Itoa(i), "--iterations", strconv.Itoa(iterations), "--announce", "py-tls-c:waiting"}, tlsArgs...))
		}
		sums := runContending(t, n.tlsClient(t, clientTLS(t, certs, certs)), "py-tls-c:lock", "py-tls-c:waiting", workers,
			3*time.Minute, dir, py, argvs)
		for _, s := range sums {
			checkTLSSummary(t, s)
		}
		checkTLSContention(t, n, sums, "py-tls-c:counter", workers*iterations, workers)
	})
	// The program itself would fail without the client certificate: the
	// node does require it.
	if _, err := execCompat(time.Minute, dir, py, prog, "basic", "--addr", n.tlsAddr, "--prefix", "py-tls-nocert", "--tls-ca", filepath.Join(certs, "ca.crt")); err == nil {
		t.Errorf("redis-py without a client certificate was served by a node with --tls-auth-clients yes")
	}
}

// TestTLSCompatNode runs ioredis + node-redlock over TLS (tls: {ca, cert,
// key}, --tls-auth-clients yes, plaintext off), authenticated as an ACL
// user: the basic checks with both ioredis and redlock versions, and
// contending Redlock clients.
func TestTLSCompatNode(t *testing.T) {
	t.Parallel()
	node, major := findNode(t)
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{noPlain: true, password: testPass})
	compatUser(t, n, certs)
	tlsArgs := []string{"--tls-ca", filepath.Join(certs, "ca.crt"), "--tls-cert", filepath.Join(certs, "client.crt"), "--tls-key", filepath.Join(certs, "client.key"),
		"--user", "compat", "--password", "compat-pass"}
	const prog = "redlock_workload.js"
	for _, v := range []struct{ client, protocol, redlock string }{{"ioredis", "3", "5"}, {"ioredis5", "2", "4"}} {
		t.Run(fmt.Sprintf("basic/%s/resp%s/redlock%s", v.client, v.protocol, v.redlock), func(t *testing.T) {
			if v.client == "ioredis" && major < 20 {
				t.Skipf("ioredis 6 needs node >= 20, this is node v%d", major)
			}
			sum := runCompat(t, 2*time.Minute, nodeCompatDir, node, append([]string{prog, "basic", "--addr", n.tlsAddr,
				"--client", v.client, "--protocol", v.protocol, "--redlock", v.redlock, "--fence",
				"--prefix", "node-tls-" + v.client}, tlsArgs...)...)
			checkTLSSummary(t, sum)
			checkFenceTokens(t, &compatTarget{fence: true}, sum, 4)
		})
	}
	t.Run("contention", func(t *testing.T) {
		const workers, iterations = 3, 8
		sums := runContending(t, n.tlsClient(t, clientTLS(t, certs, certs)), "node-tls-c:lock", "node-tls-c:waiting", workers,
			3*time.Minute, nodeCompatDir, node, [][]string{append([]string{prog, "contention",
				"--addr", n.tlsAddr, "--client", "ioredis5", "--protocol", "2", "--redlock", "4", "--prefix", "node-tls-c", "--fence",
				"--workers", strconv.Itoa(workers), "--iterations", strconv.Itoa(iterations), "--announce", "node-tls-c:waiting"}, tlsArgs...)})
		checkTLSSummary(t, sums[0])
		checkTLSContention(t, n, sums, "node-tls-c:counter", workers*iterations, workers)
	})
	if _, err := execCompat(time.Minute, nodeCompatDir, node, prog, "basic", "--addr", n.tlsAddr, "--client", "ioredis5",
		"--protocol", "2", "--prefix", "node-tls-nocert", "--tls-ca", filepath.Join(certs, "ca.crt")); err == nil {
		t.Errorf("ioredis without a client certificate was served by a node with --tls-auth-clients yes")
	}
}

// checkTLSSummary checks that a compat program really ran over TLS 1.2+.
func checkTLSSummary(t testing.TB, sum compatSummary) {
	t.Helper()
	if sum.TLS != "TLSv1.2" && sum.TLS != "TLSv1.3" {
		t.Fatalf("the program's connection reports TLS %q, want TLSv1.2 or TLSv1.3", sum.TLS)
	}
}

// checkTLSContention is checkContention with the counter read over TLS.
func checkTLSContention(t testing.TB, n *tlsNode, sums []compatSummary, counter string, want, minContended int) {
	t.Helper()
	c := n.tlsClient(t, clientTLS(t, n.certs, n.certs))
	got, err := c.Get(tctx(t), counter).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", counter, err)
	}
	checkContentionValue(t, &compatTarget{fence: true}, sums, counter, got, want, minContended)
}

// TestTLSCertsScript checks what scripts/certs.sh makes beyond the default
// set the other tests use: node certificates for given names, good as TLS
// server and client (peers reuse them), client certificates by name, all
// from the one CA the directory keeps; and bad usage writes nothing.
func TestTLSCertsScript(t *testing.T) {
	t.Parallel()
	dir := makeCerts(t)
	script := func(args ...string) (string, error) {
		out, err := exec.Command("../scripts/certs.sh", args...).CombinedOutput()
		return string(out), err
	}
	if out, err := script(dir, "node", "n2", "IP:127.0.0.2", "DNS:n2.test"); err != nil || out != "" {
		t.Fatalf("certs.sh node: %v %q", err, out)
	}
	if out, err := script(dir, "client", "alice"); err != nil || out != "" {
		t.Fatalf("certs.sh client: %v %q", err, out)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	load := func(name string) *x509.Certificate {
		t.Helper()
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st, err := os.Stat(filepath.Join(dir, name+".key")); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s.key mode %v, %v; want 0600", name, st.Mode().Perm(), err)
		}
		return c.Leaf
	}
	for _, tc := range []struct {
		cert, host string
		usages     []x509.ExtKeyUsage
	}{
		{"node", "127.0.0.1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"node", "localhost", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"n2", "127.0.0.2", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"n2", "n2.test", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"client", "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"alice", "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		if _, err := load(tc.cert).Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.host, KeyUsages: tc.usages}); err != nil {
			t.Errorf("%s for %q %v: %v", tc.cert, tc.host, tc.usages, err)
		}
	}
	if _, err := load("n2").Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err == nil {
		t.Errorf("n2 is valid for 127.0.0.1, a name it was not made for")
	}
	if _, err := load("alice").Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Errorf("a client certificate is good for serverAuth")
	}
	if cn := load("alice").Subject.CommonName; cn != "alice" {
		t.Errorf("alice's CN is %q", cn)
	}
	before, _ := os.ReadDir(dir)
	for _, args := range [][]string{{}, {dir, "node"}, {dir, "node", "n3"}, {dir, "client"}, {dir, "client", "../x"}, {dir, "client", "ca"}, {dir, "bogus"}} {
		out, err := script(args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || out == "" {
			t.Errorf("certs.sh %q: %v, output %q; want exit 2 and a usage message", args, err, out)
		}
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("bad usage changed the directory: %d files, then %d", len(before), len(after))
	}
}

// TestTLSACLUser: over TLS only, with a password, an ACL user made by the
// default user authenticates from go-redis (a lock cycle) and redis-cli;
// without credentials a TLS client is still refused every command.
func TestTLSACLUser(t *testing.T) {
	t.Parallel()
	certs := makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{noPlain: true, auth: "no", password: testPass})
	cfg := clientTLS(t, certs, "")
	admin := n.tlsClient(t, cfg)
	if _, err := do(tctx(t), admin, "ACL", "SETUSER", "locker", "on", ">locker-pass", "+@all", "-@admin", "~lock:*"); err != nil {
		t.Fatal(err)
	}
	o := n.options(3)
	o.Addr, o.TLSConfig, o.Username, o.Password = n.tlsAddr, cfg, "locker", "locker-pass"
	c := redis.NewClient(o)
	defer c.Close()
	sess := openSession(t, c, 10000, "")
	tok := mustInt(t, c, "FLOCK", "lock:a", sess)
	mustInt(t, c, "FUNLOCK", "lock:a", sess, "FENCE", tok)
	if _, err := c.Do(tctx(t), "FLOCK", "other", sess).Result(); !isCode(err, "NOPERM") {
		t.Errorf("FLOCK outside ~lock:* over TLS: %v, want -NOPERM", err)
	}
	if who, err := c.Do(tctx(t), "ACL", "WHOAMI").Result(); err != nil || who != "locker" {
		t.Errorf("ACL WHOAMI = %v %v", who, err)
	}
	out, err := redisCLI(t, n.tlsAddr, "--tls", "--cacert", filepath.Join(certs, "ca.crt"), "--user", "locker", "--pass", "locker-pass", "--no-auth-warning", "ACL", "WHOAMI")
	if err != nil || out != "locker" {
		t.Errorf("redis-cli --tls --user locker ACL WHOAMI: %q %v", out, err)
	}
	o.Username, o.Password = "", ""
	anon := redis.NewClient(o)
	defer anon.Close()
	if _, err := anon.Do(tctx(t), "GET", "lock:a").Result(); !isCode(err, "NOAUTH") {
		t.Errorf("a TLS client without credentials: %v, want -NOAUTH", err)
	}
}
