package test

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// faultyProxy forwards TCP connections to a fenced node and breaks them
// the way networks do to a client: it drops a connection right after
// forwarding a request (the server gets it, the client never sees the
// answer), drops it before forwarding (the request is lost), or, while
// blackholed, stops forwarding anything with every socket left open.
type faultyProxy struct {
	t        testing.TB
	ln       net.Listener
	target   string
	mu       sync.Mutex
	rng      *rand.Rand
	after    float64 // probability of a drop right after forwarding a client write
	before   float64 // probability of a drop instead of forwarding it
	hole     atomic.Bool
	drops    atomic.Int64
	accepted atomic.Int64
}

func newFaultyProxy(t testing.TB, target string, seed uint64) *faultyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultyProxy{t: t, ln: ln, target: target, rng: rand.New(rand.NewPCG(seed, 1))}
	go p.accept()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *faultyProxy) addr() string { return p.ln.Addr().String() }

// setDrops sets the probabilities of a drop after and before forwarding.
func (p *faultyProxy) setDrops(after, before float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.after, p.before = after, before
}

func (p *faultyProxy) blackhole(on bool) { p.hole.Store(on) }

// roll decides the fate of one client write.
func (p *faultyProxy) roll() (dropBefore, dropAfter bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rng.Float64()
	return r < p.before, r >= p.before && r < p.before+p.after
}

func (p *faultyProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		go p.pipe(c, s)
	}
}

func (p *faultyProxy) pipe(c, s net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { c.Close(); s.Close() }) }
	defer closeBoth()
	go func() {
		defer closeBoth()
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && !p.hole.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && !p.hole.Load() {
			before, after := p.roll()
			if before {
				p.drops.Add(1)
				return
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
			if after {
				p.drops.Add(1)
				return
			}
		}
		if err != nil {
			return
		}
	}
}
