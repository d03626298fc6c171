package test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// chaosNet cuts links between nodes. Every node listens on its own
// loopback IP (127.0.0.11, .12, ...) and advertises, for Raft and for its
// forwarding links, an address of a proxy here; nodes dial from their own
// IP, so the proxy knows which node a connection comes from. A cut link is
// a black hole, as a dropped packet is: nothing is forwarded any more and
// the connection stays open, so Raft times out instead of seeing a reset.
// Heal closes the black-holed connections; the nodes dial again.
type chaosNet struct {
	t testing.TB

	mu      sync.Mutex
	names   map[string]string  // source IP -> node name
	blocked map[[2]string]bool // (from, to) node names
	deaf    map[string]bool    // nodes that hear no answers on the connections they make
	links   map[*chaosLink]struct{}
	proxies []*chaosProxy

	cuts atomic.Int64 // connections black-holed
}

type chaosProxy struct {
	ln     net.Listener
	to     string // node name behind it
	target string // its real address
}

type chaosLink struct {
	from, to string
	a, b     net.Conn
	holed    atomic.Bool // nothing passes either way
	deaf     atomic.Bool // requests pass, answers do not
}

func newChaosNet(t testing.TB) *chaosNet {
	n := &chaosNet{t: t, names: make(map[string]string), blocked: make(map[[2]string]bool), deaf: make(map[string]bool), links: make(map[*chaosLink]struct{})}
	t.Cleanup(n.close)
	return n
}

// addNode records that connections from ip come from node name.
func (n *chaosNet) addNode(name, ip string) {
	n.mu.Lock()
	n.names[ip] = name
	n.mu.Unlock()
}

// proxy listens on a free port of 127.0.0.1 and forwards to target, the
// real address of node to. It returns the proxy's address.
func (n *chaosNet) proxy(to, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatal(err)
	}
	p := &chaosProxy{ln: ln, to: to, target: target}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	go n.accept(p)
	return ln.Addr().String()
}

func (n *chaosNet) accept(p *chaosProxy) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		n.mu.Lock()
		from := n.names[ip]
		n.mu.Unlock()
		if from == "" {
			from = "client"
		}
		go n.serve(&chaosLink{from: from, to: p.to, a: c}, p.target)
	}
}

func (n *chaosNet) serve(l *chaosLink, target string) {
	n.mu.Lock()
	n.links[l] = struct{}{}
	cut := n.cutLocked(l.from, l.to)
	l.deaf.Store(n.deaf[l.from])
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.links, l)
		n.mu.Unlock()
		l.a.Close()
		if l.b != nil {
			l.b.Close()
		}
	}()
	if cut {
		// A new connection across a cut: hold it open, forward nothing.
		l.holed.Store(true)
		io.Copy(io.Discard, l.a)
		return
	}
	b, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	n.mu.Lock()
	l.b = b
	n.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, answers bool) {
		buf := make([]byte, 32<<10)
		for {
			k, err := src.Read(buf)
			if k > 0 && !l.holed.Load() && !(answers && l.deaf.Load()) {
				if _, werr := dst.Write(buf[:k]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(b, l.a, false)
	go pipe(l.a, b, true)
	<-done
}

func (n *chaosNet) cutLocked(from, to string) bool {
	return n.blocked[[2]string{from, to}] || n.blocked[[2]string{to, from}]
}

// partition lets nodes talk only within their group.
func (n *chaosNet) partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	group := make(map[string]int)
	for i, g := range groups {
		for _, name := range g {
			group[name] = i
		}
	}
	clear(n.blocked)
	for a, ga := range group {
		for b, gb := range group {
			if ga != gb {
				n.blocked[[2]string{a, b}] = true
			}
		}
	}
	n.applyLocked()
}

// bridge cuts a from b while both still reach via.
func (n *chaosNet) bridge(a, via, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.blocked)
	n.blocked[[2]string{a, b}] = true
	n.applyLocked()
	_ = via
}

// deafen drops, from now on, every answer to the connections node makes:
// its requests (Raft's AppendEntries, when it leads) still arrive and are
// acted on, but it never learns the outcome.
func (n *chaosNet) deafen(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deaf[node] = true
	for l := range n.links {
		if l.from == node {
			l.deaf.Store(true)
		}
	}
}

// applyLocked black-holes the open links the rules now cut.
func (n *chaosNet) applyLocked() {
	for l := range n.links {
		if n.cutLocked(l.from, l.to) && !l.holed.Swap(true) {
			n.cuts.Add(1)
		}
	}
}

// heal removes every cut and closes the black-holed connections.
func (n *chaosNet) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.blocked)
	clear(n.deaf)
	for l := range n.links {
		if l.holed.Load() || l.deaf.Load() {
			l.a.Close()
			if l.b != nil {
				l.b.Close()
			}
		}
	}
}

func (n *chaosNet) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.proxies {
		p.ln.Close()
	}
	for l := range n.links {
		l.a.Close()
		if l.b != nil {
			l.b.Close()
		}
	}
}
