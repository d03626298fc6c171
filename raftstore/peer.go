package raftstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/internal/plant"
)

// The peer channel is the Raft address: every connection between nodes goes
// there, Raft's own and the forwarding links alike, so that one mutual TLS
// configuration guards all of them. The dialer's first byte says which of
// the two a connection carries; with TLS that byte is read only after the
// handshake has verified the peer's certificate, so nothing of an
// unauthenticated peer reaches Raft or the link server.
const (
	kindRaft byte = 'R'
	kindLink byte = 'L'
)

// peerHandshake bounds a peer connection's TLS handshake and first byte.
const peerHandshake = 10 * time.Second

// ErrPeerTLS is wrapped by every error of loading the peer certificates.
var ErrPeerTLS = errors.New("raftstore: peer TLS")

// PeerTLS is the mutual TLS of the peer channel: this node's certificate,
// which it presents both as a server and as a client, and the CA that every
// peer's certificate must chain to (etcd's --peer-trusted-ca-file).
type PeerTLS struct {
	Cert tls.Certificate
	CAs  *x509.CertPool
}

// LoadPeerTLS reads a PEM certificate, its key and the trusted CA bundle.
func LoadPeerTLS(certFile, keyFile, caFile string) (*PeerTLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %s, %s: %v", ErrPeerTLS, certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPeerTLS, err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrPeerTLS, caFile)
	}
	return &PeerTLS{Cert: cert, CAs: cas}, nil
}

// server is the configuration of accepted connections: TLS 1.3 only, and a
// client certificate of the cluster's CA required.
func (p *PeerTLS) server() *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.CAs,
	}
	if plant.On(plant.PeerUnverified) {
		c.ClientAuth = tls.RequireAnyClientCert
	}
	return c
}

// client is the configuration of dialled connections: the peer's
// certificate must chain to the CA and name the host dialled.
func (p *PeerTLS) client(addr string) *tls.Config {
	host, _, _ := net.SplitHostPort(addr)
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.Cert},
		RootCAs:      p.CAs,
		ServerName:   host,
	}
}

// peerMux listens on the Raft address and hands each authenticated
// connection to Raft or to the link listener by its first byte. It is
// Raft's StreamLayer.
type peerMux struct {
	ln        net.Listener
	advertise net.Addr
	local     *net.TCPAddr // source of outgoing connections; nil = any
	tls       *PeerTLS     // nil: plain TCP (loopback only, see the server's Config)
	log       *slog.Logger

	raft  chan net.Conn
	links chan net.Conn

	closeOnce sync.Once
	closed    chan struct{}

	// dialed holds the Raft connections Dial made and not yet closed, for
	// abortDialed.
	dialedMu sync.Mutex
	dialed   map[*dialedConn]struct{}
}

// dialedConn is a Raft connection of Dial's, which leaves the set when
// closed.
type dialedConn struct {
	net.Conn
	m    *peerMux
	once sync.Once
}

func (c *dialedConn) Close() error {
	c.once.Do(func() {
		c.m.dialedMu.Lock()
		delete(c.m.dialed, c)
		c.m.dialedMu.Unlock()
	})
	return c.Conn.Close()
}

// abortDialed closes every Raft connection Dial made: an RPC blocked on a
// peer that stopped answering (a paused process) fails at once instead of
// after the transport's timeout.
func (m *peerMux) abortDialed() {
	m.dialedMu.Lock()
	cs := make([]*dialedConn, 0, len(m.dialed))
	for c := range m.dialed {
		cs = append(cs, c)
	}
	m.dialedMu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// newPeerMux listens on bind. The address other nodes dial is advertise,
// or the listener's own; dialled connections leave from the listening IP,
// so that a peer, or a proxy in front of one, can tell from a connection's
// source which node made it (the fault tests' partitions rely on it).
func newPeerMux(bind, advertise string, p *PeerTLS, log *slog.Logger) (*peerMux, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raftstore: raft address %q: %w", bind, err)
	}
	m := &peerMux{ln: ln, advertise: ln.Addr(), tls: p, log: log,
		raft: make(chan net.Conn), links: make(chan net.Conn), closed: make(chan struct{}), dialed: make(map[*dialedConn]struct{})}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil || a.IP == nil || a.IP.IsUnspecified() || a.Port == 0 {
			ln.Close()
			return nil, fmt.Errorf("raftstore: raft advertise address %q: a host and a port are needed", advertise)
		}
		m.advertise = a
	} else if ip := ln.Addr().(*net.TCPAddr).IP; ip.IsUnspecified() {
		ln.Close()
		return nil, errors.New("raftstore: a raft address on all interfaces needs an advertise address")
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		m.local = &net.TCPAddr{IP: ip}
	}
	go m.serve()
	return m, nil
}

func (m *peerMux) serve() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.Close()
			return
		}
		go m.route(c)
	}
}

// route authenticates c (the TLS handshake, when configured) and reads its
// kind, both within peerHandshake, then hands it on.
func (m *peerMux) route(c net.Conn) {
	if m.tls != nil {
		c = tls.Server(c, m.tls.server())
	}
	c.SetDeadline(time.Now().Add(peerHandshake))
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		// A peer without a certificate of the cluster's CA, a plain-TCP
		// client on a TLS port, a port scan: refused, and said so once.
		m.log.Warn("peer connection refused", "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	ch := m.raft
	switch kind[0] {
	case kindRaft:
	case kindLink:
		ch = m.links
	default:
		m.log.Warn("peer connection refused", "remote", c.RemoteAddr().String(), "err", fmt.Sprintf("unknown kind %#x", kind[0]))
		c.Close()
		return
	}
	select {
	case ch <- c:
	case <-m.closed:
		c.Close()
	}
}

// dial connects to the peer at addr for a connection of the given kind.
func (m *peerMux) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	d := net.Dialer{}
	if m.local != nil {
		d.LocalAddr = m.local
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if m.tls != nil {
		tc := tls.Client(c, m.tls.client(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("raftstore: peer %s: %w", addr, err)
		}
		c = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetWriteDeadline(dl)
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}

// Accept, Close, Addr and Dial make peerMux Raft's StreamLayer.

func (m *peerMux) Accept() (net.Conn, error) {
	select {
	case c := <-m.raft:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *peerMux) Close() error {
	m.closeOnce.Do(func() {
		close(m.closed)
		m.ln.Close()
	})
	return nil
}

func (m *peerMux) Addr() net.Addr { return m.advertise }

func (m *peerMux) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := m.dial(ctx, string(addr), kindRaft)
	if err != nil {
		return nil, err
	}
	dc := &dialedConn{Conn: c, m: m}
	m.dialedMu.Lock()
	m.dialed[dc] = struct{}{}
	m.dialedMu.Unlock()
	return dc, nil
}

// linkListener is the net.Listener of the forwarding links that reach this
// node on the peer channel. Closing it stops its Accept only: the peer
// channel stays open for Raft until the node closes.
type linkListener struct {
	m         *peerMux
	closeOnce sync.Once
	closed    chan struct{}
}

func (l *linkListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.links:
		return c, nil
	case <-l.m.closed:
	case <-l.closed:
	}
	return nil, net.ErrClosed
}

func (l *linkListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *linkListener) Addr() net.Addr { return l.m.advertise }
