package ctl

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// globals are the flags every command takes.
type globals struct {
	endpoints string // comma-separated host:port list
	user      string
	pass      string
	tls       bool
	cacert    string
	cert, key string
	timeout   time.Duration
	output    string // table or json

	addrs []string // endpoints, split and checked by Validate
}

func defaultGlobals() globals {
	return globals{endpoints: "127.0.0.1:6379", timeout: 5 * time.Second, output: "table"}
}

// register adds the global flags to fs with their current values as
// defaults, so that a second flag set (the command's, for flags given
// after it) keeps what the first one parsed.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoints, "endpoints", g.endpoints, "nodes' client `addresses`, comma-separated")
	fs.StringVar(&g.user, "user", g.user, "ACL `user`")
	// Never shown as a default: the help would print it.
	fs.StringVar(&g.pass, "pass", g.pass, "`password` (default: $"+envPassword+")")
	fs.BoolVar(&g.tls, "tls", g.tls, "connect with TLS")
	fs.StringVar(&g.cacert, "cacert", g.cacert, "CA bundle (PEM)")
	fs.StringVar(&g.cert, "cert", g.cert, "client certificate (PEM)")
	fs.StringVar(&g.key, "key", g.key, "the key (PEM) of --cert")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "bound on each connection attempt and request")
	fs.StringVar(&g.output, "write-out", g.output, "table or json")
	fs.StringVar(&g.output, "w", g.output, "table or json")
}

// Validate checks the flags together and splits the endpoints. Nothing is
// sent to a node before it passes.
func (g *globals) Validate() error {
	g.addrs = g.addrs[:0]
	for a := range strings.SplitSeq(g.endpoints, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if err := checkAddr(a); err != nil {
			return fmt.Errorf("%w: --endpoints: %v", ErrUsage, err)
		}
		g.addrs = append(g.addrs, a)
	}
	switch {
	case len(g.addrs) == 0:
		return fmt.Errorf("%w: --endpoints %q: no address", ErrUsage, g.endpoints)
	case g.timeout <= 0:
		return fmt.Errorf("%w: --timeout %v: must be positive", ErrUsage, g.timeout)
	case g.output != "table" && g.output != "json":
		return fmt.Errorf("%w: --write-out %q: table or json", ErrUsage, g.output)
	case !g.tls && (g.cacert != "" || g.cert != "" || g.key != ""):
		return fmt.Errorf("%w: --cacert, --cert and --key need --tls", ErrUsage)
	case (g.cert == "") != (g.key == ""):
		return fmt.Errorf("%w: --cert and --key go together", ErrUsage)
	}
	return nil
}

// checkAddr accepts host:port with a port number, as the nodes' --listen.
func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q: %v", a, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || host == "" {
		return fmt.Errorf("%q: want HOST:PORT with a port from 1 to 65535", a)
	}
	return nil
}

// tlsConfig is the client side of --tls. The server name is left empty:
// the dialer takes it from each endpoint's host.
func (g *globals) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if g.cacert != "" {
		pem, err := os.ReadFile(g.cacert)
		if err != nil {
			return nil, fmt.Errorf("%w: --cacert: %v", ErrUsage, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --cacert %s: no certificate", ErrUsage, g.cacert)
		}
	}
	if g.cert != "" {
		pair, err := tls.LoadX509KeyPair(g.cert, g.key)
		if err != nil {
			return nil, fmt.Errorf("%w: --cert/--key: %v", ErrUsage, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
