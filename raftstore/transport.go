package raftstore

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with two differences from
// raft.NewTCPTransport's: it advertises an address of the caller's choosing
// (a node behind a NAT or a proxy), and it dials its peers from the IP it
// listens on, so that a peer, or a proxy in front of one, can tell from a
// connection's source which node made it (the fault tests' partitions rely
// on it).
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	local     *net.TCPAddr // source of outgoing connections; nil = any
}

func newStreamLayer(bind, advertise string) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raftstore: raft address %q: %w", bind, err)
	}
	s := &streamLayer{ln: ln, advertise: ln.Addr()}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil || a.IP == nil || a.IP.IsUnspecified() || a.Port == 0 {
			ln.Close()
			return nil, fmt.Errorf("raftstore: raft advertise address %q: a host and a port are needed", advertise)
		}
		s.advertise = a
	} else if ip := ln.Addr().(*net.TCPAddr).IP; ip.IsUnspecified() {
		ln.Close()
		return nil, errors.New("raftstore: a raft address on all interfaces needs an advertise address")
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		s.local = &net.TCPAddr{IP: ip}
	}
	return s, nil
}

func (s *streamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *streamLayer) Close() error              { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr            { return s.advertise }

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if s.local != nil {
		d.LocalAddr = s.local
	}
	return d.Dial("tcp", string(addr))
}
