package test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential test of client-side caching: every CLIENT TRACKING,
// CACHING, GETREDIR and TRACKINGINFO form against redis-server 7.0.15,
// reply for reply, and the invalidations a tracking connection receives,
// frame for frame, in RESP3 and through REDIRECT to RESP2 and RESP3.

// trackPair is one scenario's connections, each to fenced and to Redis.
type trackPair struct {
	t      *testing.T
	fenced map[string]*rawConn
	redis  map[string]*rawConn
	faddr  string
	raddr  string
	// ids maps a fenced connection id to the Redis one of the same
	// connection, as text, so that replies naming them compare.
	ids map[string]string
	// names, fids and rids remember each connection's ids once read.
	names, fids, rids map[string]string
}

func newTrackPair(t *testing.T, faddr, raddr string) *trackPair {
	return &trackPair{t: t, fenced: map[string]*rawConn{}, redis: map[string]*rawConn{}, faddr: faddr, raddr: raddr, ids: map[string]string{},
		names: map[string]string{}, fids: map[string]string{}, rids: map[string]string{}}
}

// conn opens (once) the connection named name on both sides.
func (p *trackPair) conn(name string) (f, r *rawConn) {
	if p.fenced[name] == nil {
		p.fenced[name], p.redis[name] = dialRaw(p.t, p.faddr), dialRaw(p.t, p.raddr)
	}
	return p.fenced[name], p.redis[name]
}

// id is connection name's CLIENT ID on each side.
func (p *trackPair) id(name string) (f, r string) {
	fc, rc := p.conn(name)
	fc.send("CLIENT", "ID")
	rc.send("CLIENT", "ID")
	f, r = strconv.FormatInt(fc.read().num, 10), strconv.FormatInt(rc.read().num, 10)
	p.ids[f] = r
	p.names[name], p.fids[name], p.rids[name] = "x", f, r
	return f, r
}

// hello switches connection name to proto on both sides (the replies
// differ in version and id).
func (p *trackPair) hello(name, proto string) {
	fc, rc := p.conn(name)
	fc.send("HELLO", proto)
	rc.send("HELLO", proto)
	fc.read()
	rc.read()
}

// do sends args on connection name, with "$id:<conn>" replaced by that
// connection's id on each side, and compares the next frame of each.
func (p *trackPair) do(name string, args ...string) {
	p.t.Helper()
	fc, rc := p.conn(name)
	fa, ra := slicesClone(args), slicesClone(args)
	for i, a := range args {
		if other, ok := strings.CutPrefix(a, "$id:"); ok {
			if p.names[other] == "" {
				p.names[other] = "x"
				p.fids[other], p.rids[other] = p.id(other)
			}
			fa[i], ra[i] = p.fids[other], p.rids[other]
		}
	}
	fc.send(fa...)
	rc.send(ra...)
	p.frames(name, 1, args...)
}

// frames compares the next n frames of connection name.
func (p *trackPair) frames(name string, n int, what ...string) {
	p.t.Helper()
	fc, rc := p.conn(name)
	for range n {
		fv, r := fc.read(), rc.read().String()
		if fv.kind == ':' && p.ids[strconv.FormatInt(fv.num, 10)] != "" {
			fv.num, _ = strconv.ParseInt(p.ids[strconv.FormatInt(fv.num, 10)], 10, 64)
		}
		f := fv.String()
		// Inside CLIENT TRACKINGINFO: each side's id becomes the name.
		for name, fid := range p.fids {
			f = strings.ReplaceAll(f, "redirect\" :"+fid+" ", "redirect\" :"+name+" ")
		}
		for name, rid := range p.rids {
			r = strings.ReplaceAll(r, "redirect\" :"+rid+" ", "redirect\" :"+name+" ")
		}
		if f != r {
			p.t.Errorf("%s %q:\n  fenced: %s\n  redis:  %s", name, what, f, r)
		}
	}
}

// settle lets a write's invalidation reach the other connections (fenced
// delivers it from its apply loop), then checks with a PING that name has
// nothing else pending on either side.
func (p *trackPair) settle(name string) {
	p.t.Helper()
	time.Sleep(50 * time.Millisecond)
	p.do(name, "PING")
}

func slicesClone(a []string) []string { return append([]string(nil), a...) }

func TestDiffTracking(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	fd := startNode(t, nodeOpts{})

	// Replies and error texts, RESP2 and RESP3, on fresh connections.
	for _, proto := range []string{"2", "3"} {
		t.Run("forms RESP"+proto, func(t *testing.T) {
			p := newTrackPair(t, fd.addr, rd.leader)
			p.hello("c", proto)
			for _, args := range [][]string{
				{"CLIENT", "TRACKING"},
				{"CLIENT", "TRACKING", "maybe"},
				{"CLIENT", "TRACKING", "on", "PREFIX", "a"},
				{"CLIENT", "TRACKING", "on", "BCAST", "OPTIN"},
				{"CLIENT", "TRACKING", "on", "BCAST", "OPTOUT"},
				{"CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "99999"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "abc"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "0"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "-1"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "$id:c", "REDIRECT", "$id:c"},
				{"CLIENT", "TRACKING", "on", "REDIRECT", "99999", "FOO"},
				{"CLIENT", "TRACKING", "on", "FOO"},
				{"CLIENT", "TRACKING", "on", "PREFIX"},
				{"CLIENT", "TRACKING", "on", "REDIRECT"},
				{"CLIENT", "TRACKING", "maybe", "BCAST"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "ab"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "a"},
				{"CLIENT", "CACHING"},
				{"CLIENT", "CACHING", "yes"},
				{"CLIENT", "CACHING", "maybe"},
				{"CLIENT", "GETREDIR"},
				{"CLIENT", "GETREDIR", "x"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "TRACKINGINFO", "x"},
				{"CLIENT", "TRACKING", "off"},
				{"CLIENT", "TRACKING", "OFF", "BCAST", "PREFIX", "x"},
				{"CLIENT", "TRACKINGINFO"},
				// On, then against the mode in force.
				{"CLIENT", "TRACKING", "on", "optin", "noloop"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "CACHING", "no"},
				{"CLIENT", "CACHING", "YES", "extra"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "TRACKING", "on", "OPTOUT"},
				{"CLIENT", "TRACKING", "on", "BCAST"},
				{"CLIENT", "TRACKING", "on", "OPTIN", "REDIRECT", "$id:c"},
				{"CLIENT", "GETREDIR"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "TRACKING", "off"},
				{"CLIENT", "CACHING", "no"},
				{"CLIENT", "TRACKING", "on", "OPTOUT"},
				{"CLIENT", "CACHING", "no"},
				{"CLIENT", "CACHING", "yes"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "TRACKING", "off"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "cfg"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "us"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "cfgx"},
				{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "more"},
				{"CLIENT", "TRACKING", "on"},
				{"CLIENT", "TRACKING", "on", "BCAST", "OPTIN"},
				{"CLIENT", "TRACKINGINFO"},
				{"CLIENT", "TRACKING", "off"},
				{"CLIENT", "TRACKING", "on", "BCAST"},
				{"CLIENT", "TRACKINGINFO"},
				{"CONFIG", "GET", "tracking-table-max-keys"},
				{"CONFIG", "SET", "tracking-table-max-keys", "abc"},
				{"CONFIG", "SET", "tracking-table-max-keys", "-1"},
				{"CONFIG", "SET", "tracking-table-max-keys", "10k"},
				{"RESET"},
				{"CLIENT", "TRACKINGINFO"},
			} {
				p.do("c", args...)
			}
		})
	}

	// Invalidations in RESP3: default mode, the connection's own write
	// (after its reply), BCAST with prefixes, NOLOOP, OPTIN, a script's
	// read, a redirect to a RESP3 connection and to a RESP2 subscriber,
	// and a redirect to a connection that has gone.
	t.Run("pushes", func(t *testing.T) {
		p := newTrackPair(t, fd.addr, rd.leader)
		for _, c := range []string{"t", "w", "b", "n", "o", "r3", "tr"} {
			p.hello(c, "3")
		}
		p.do("w", "MSET", "m1", "1", "m2", "2")
		p.do("t", "CLIENT", "TRACKING", "on")
		p.do("t", "GET", "k")
		p.do("t", "MGET", "m1", "m2", "k")
		p.do("w", "SET", "k", "1")
		p.frames("t", 1, "SET's invalidation")
		// Nothing of t in flight when w writes: fenced serves connections
		// at once, not in arrival order as Redis's one thread does, so a
		// PING of t not yet answered may be answered after w's DEL
		// (make test 17:18: the invalidations came before its PONG).
		p.settle("t")
		p.do("w", "DEL", "m2", "nothing", "m1")
		p.frames("t", 2, "DEL's invalidations")
		p.settle("t")
		p.do("t", "GET", "x")
		p.do("t", "SET", "x", "1")
		p.frames("t", 1, "own SET's invalidation after its reply")
		p.settle("t")

		p.do("b", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "cfg")
		p.do("w", "MSET", "user:2", "a", "other", "b", "user:1", "c", "cfg", "d")
		p.frames("b", 2, "BCAST: one message per prefix")
		p.settle("b")

		p.do("n", "CLIENT", "TRACKING", "on", "NOLOOP")
		p.do("n", "GET", "nk")
		p.do("n", "SET", "nk", "1")
		p.settle("n")
		p.do("n", "GET", "nk")
		p.do("w", "SET", "nk", "2")
		p.frames("n", 1, "NOLOOP: another's write")
		p.settle("n")

		p.do("o", "CLIENT", "TRACKING", "on", "OPTIN")
		p.do("o", "GET", "o1")
		p.do("o", "CLIENT", "CACHING", "yes")
		p.do("o", "GET", "o2")
		p.do("o", "CLIENT", "CACHING", "yes")
		p.do("o", "EVAL", "return redis.call('GET', KEYS[1])", "1", "o3")
		p.do("w", "MSET", "o1", "1", "o2", "2", "o3", "3")
		p.frames("o", 2, "OPTIN: o2 and the script's o3")
		p.settle("o")

		p.do("tr", "CLIENT", "TRACKING", "on", "REDIRECT", "$id:r3")
		p.do("tr", "GET", "rk")
		p.do("w", "SET", "rk", "1")
		p.frames("r3", 1, "RESP3 redirect")
		p.settle("r3")
		p.settle("tr")

		// RESP2: only through a redirect to a subscribed connection.
		p.id("s2") // before SUBSCRIBE, which allows no CLIENT ID in RESP2
		p.do("s2", "SUBSCRIBE", "__redis__:invalidate")
		p.do("t2", "CLIENT", "TRACKING", "on", "REDIRECT", "$id:s2")
		p.do("t2", "GET", "k2")
		p.do("t2", "CLIENT", "TRACKINGINFO")
		p.do("w", "SET", "k2", "1")
		p.frames("s2", 1, "RESP2 redirect message")
		p.do("plain2", "CLIENT", "TRACKING", "on")
		p.do("plain2", "GET", "k2")
		p.do("w", "SET", "k2", "2")
		p.settle("plain2")

		// The redirect target goes: the tracking connection is told, with
		// the target's id (which differs between the two servers).
		fid, rid := p.id("r3")
		p.fenced["r3"].nc.Close()
		p.redis["r3"].nc.Close()
		time.Sleep(100 * time.Millisecond)
		p.do("tr", "GET", "rk")
		p.do("w", "SET", "rk", "2")
		fv, ferr := p.fenced["tr"].tryRead(5 * time.Second)
		rv, rerr := p.redis["tr"].tryRead(5 * time.Second)
		if ferr != nil || rerr != nil {
			t.Fatalf("broken redirect: fenced %v %v, redis %v %v", fv, ferr, rv, rerr)
		}
		f, r := fv.String(), rv.String()
		if strings.Replace(f, fid, "ID", 1) != strings.Replace(r, rid, "ID", 1) || !strings.Contains(r, "tracking-redir-broken") {
			t.Errorf("broken redirect:\n  fenced: %s\n  redis:  %s", f, r)
		}
		p.do("tr", "CLIENT", "TRACKINGINFO")
	})

	// The cap: past tracking-table-max-keys a key is evicted with an
	// invalidation, before the next command's reply (which key is drawn at
	// random on both).
	t.Run("cap", func(t *testing.T) {
		p := newTrackPair(t, fd.addr, rd.leader)
		p.hello("c", "3")
		p.do("c", "CONFIG", "SET", "tracking-table-max-keys", "1")
		defer p.do("c", "CONFIG", "SET", "tracking-table-max-keys", "1000000")
		p.do("c", "CLIENT", "TRACKING", "on")
		p.do("c", "GET", "e1")
		p.do("c", "GET", "e2")
		fc, rc := p.conn("c")
		fc.send("PING")
		rc.send("PING")
		for range 2 {
			f, r := fc.read().String(), rc.read().String()
			norm := func(s string) string { return strings.NewReplacer("e1", "eN", "e2", "eN").Replace(s) }
			if norm(f) != norm(r) {
				t.Errorf("eviction:\n  fenced: %s\n  redis:  %s", f, r)
			}
		}
	})

	// Scripts: EVAL_RO, EVALSHA_RO and FCALL track their declared keys
	// only if they call a read command; a key read before stays tracked.
	t.Run("scripts", func(t *testing.T) {
		p := newTrackPair(t, fd.addr, rd.leader)
		p.hello("t", "3")
		p.do("t", "CLIENT", "TRACKING", "on")
		p.do("t", "GET", "s0")
		p.do("t", "EVAL_RO", "return 1", "2", "s1", "s0")
		p.do("t", "EVAL_RO", "return redis.call('get', KEYS[1])", "1", "s2")
		p.do("w", "MSET", "s1", "1", "s2", "2", "s0", "0")
		p.frames("t", 2, "EVAL_RO through the log: s2 read, s0 tracked before")
		p.settle("t")
		p.do("t", "GET", "s0")
		p.do("t", "EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "2", "s3", "s0") // return 1
		p.do("t", "EVALSHA_RO", "4e6d8fc8bb01276962cce5371fa795a7763657ae", "1", "s4")       // the GET
		p.do("w", "MSET", "s3", "1", "s4", "2", "s0", "0")
		p.frames("t", 2, "EVALSHA_RO as a read")
		p.settle("t")
		p.do("w", "FUNCTION", "LOAD", "#!lua name=tl\nredis.register_function('tget', function(keys) return redis.call('get', keys[1]) end)\n"+
			"redis.register_function('tone', function(keys) return 1 end)")
		p.do("t", "FCALL", "tone", "1", "s5")
		p.do("t", "FCALL", "tget", "1", "s6")
		p.do("w", "MSET", "s5", "1", "s6", "2")
		p.frames("t", 1, "FCALL")
		p.settle("t")
		p.do("w", "FUNCTION", "DELETE", "tl")
	})

	// FLUSHALL forgets every tracked key, also those of a connection that
	// has turned tracking off; CONFIG SET of a lower cap evicts soon after
	// its reply, without another command.
	t.Run("flush and cap", func(t *testing.T) {
		p := newTrackPair(t, fd.addr, rd.leader)
		p.hello("t", "3")
		p.do("t", "CLIENT", "TRACKING", "on")
		p.do("t", "GET", "f1")
		p.do("t", "CLIENT", "TRACKING", "off")
		p.do("w", "FLUSHALL")
		p.do("t", "CLIENT", "TRACKING", "on")
		p.do("w", "SET", "f1", "1")
		p.settle("t")
		p.do("t", "MGET", "e1", "e2", "e3")
		p.do("t", "CONFIG", "SET", "tracking-table-max-keys", "1")
		defer p.do("t", "CONFIG", "SET", "tracking-table-max-keys", "1000000")
		fc, rc := p.conn("t")
		var f, r []string
		for range 2 {
			fv, ferr := fc.tryRead(2 * time.Second)
			rv, rerr := rc.tryRead(2 * time.Second)
			if ferr != nil || rerr != nil {
				t.Fatalf("evictions: fenced %v %v, redis %v %v", fv, ferr, rv, rerr)
			}
			f, r = append(f, fv.String()), append(r, rv.String())
		}
		norm := strings.NewReplacer("e1", "eN", "e2", "eN", "e3", "eN")
		if norm.Replace(strings.Join(f, " ")) != norm.Replace(strings.Join(r, " ")) || f[0] == f[1] {
			t.Errorf("evictions:\n  fenced: %s\n  redis:  %s", f, r)
		}
		p.settle("t")
	})
	if !fd.alive() {
		t.Fatal("fenced died")
	}
}
