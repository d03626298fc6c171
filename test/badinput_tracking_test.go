package test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBadTracking attacks CLIENT TRACKING: huge and overlapping prefix
// lists, more tracked keys than the cap from a client that reads its
// pushes and from one that never does, and REDIRECT to clients that have
// gone; the node keeps serving, within the cap.
func TestBadTracking(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	hello3 := func(c *rawConn) {
		c.send("HELLO", "3")
		c.read()
	}
	wantErr := func(c *rawConn, what, want string, args ...string) {
		t.Helper()
		start := time.Now()
		c.send(args...)
		v := c.read()
		if v.kind != '-' || !strings.HasPrefix(v.str, want) {
			t.Errorf("%s: %v, want -%s", what, v, want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v", what, d)
		}
	}

	// Prefixes: past 1024 or 1 MiB refused; 1024 whose only overlap is
	// the last pair answered at once (the check is quadratic, as Redis's).
	c := dialRaw(t, n.addr)
	hello3(c)
	many := func(k int, last string) []string {
		args := []string{"CLIENT", "TRACKING", "ON", "BCAST"}
		for i := range k {
			args = append(args, "PREFIX", fmt.Sprintf("p%05d:", i))
		}
		if last != "" {
			args = append(args, "PREFIX", last)
		}
		return args
	}
	wantErr(c, "1025 prefixes", "ERR too many tracking prefixes", many(1025, "")...)
	wantErr(c, "1024 with the overlap last", "ERR Prefix 'p01022:' overlaps", many(1023, "p01022:x")...)
	big := strings.Repeat("x", 400<<10)
	wantErr(c, "1.2 MB of prefixes", "ERR too many tracking prefixes", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", big+"a", "PREFIX", big+"b", "PREFIX", big+"c")
	c.send(many(1024, "")...)
	if v := c.read(); v.str != "OK" {
		t.Fatalf("1024 prefixes: %v", v)
	}
	wantErr(c, "one more after 1024", "ERR too many tracking prefixes", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz")

	// The cap: 20,000 keys tracked by a client that reads its pushes and
	// 20,000 by one that never reads; the table stays at 1,000.
	admin := dialRaw(t, n.addr)
	admin.send("CONFIG", "SET", "tracking-table-max-keys", "1000")
	admin.read()
	reader, deaf := dialRaw(t, n.addr), dialRaw(t, n.addr)
	for _, r := range []*rawConn{reader, deaf} {
		hello3(r)
		r.send("CLIENT", "TRACKING", "ON")
		r.read()
	}
	var wg sync.WaitGroup
	var pushes atomic.Int64
	wg.Go(func() {
		for {
			v, err := reader.tryRead(5 * time.Second)
			if err != nil {
				return
			}
			if v.kind == '>' {
				pushes.Add(1)
			}
		}
	})
	for _, r := range []*rawConn{reader, deaf} {
		var b strings.Builder
		for i := range 200 {
			keys := []string{"MGET"}
			for j := range 100 {
				keys = append(keys, "cap:"+strconv.Itoa(i*100+j))
			}
			b.WriteString(encode(keys...))
		}
		r.write(b.String())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		admin.send("INFO", "stats")
		info := admin.read().str
		keys := trackingInfoInt(info, "tracking_total_keys")
		if keys > 1000 {
			t.Fatalf("tracking_total_keys %d past the cap", keys)
		}
		if pushes.Load() >= 19000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	reader.nc.Close()
	wg.Wait()
	if n := pushes.Load(); n < 19000 {
		t.Errorf("the reading client got %d evictions' invalidations, want at least 19,000", n)
	}

	// REDIRECT to a client that has gone: RESP3 hears tracking-redir-broken
	// at each invalidation, RESP2 nothing; a REDIRECT to it now is refused.
	gone := dialRaw(t, n.addr)
	gone.send("CLIENT", "ID")
	goneID := strconv.FormatInt(gone.read().num, 10)
	r3, r2, w := dialRaw(t, n.addr), dialRaw(t, n.addr), dialRaw(t, n.addr)
	hello3(r3)
	for _, r := range []*rawConn{r3, r2} {
		r.send("CLIENT", "TRACKING", "ON", "REDIRECT", goneID)
		if v := r.read(); v.str != "OK" {
			t.Fatalf("REDIRECT: %v", v)
		}
	}
	gone.nc.Close()
	time.Sleep(100 * time.Millisecond)
	for i := range 50 {
		for _, r := range []*rawConn{r3, r2} {
			r.send("GET", "rd")
			r.read()
		}
		w.send("SET", "rd", strconv.Itoa(i))
		w.read()
		if v := r3.read(); v.kind != '>' || len(v.elems) != 2 || v.elems[0].str != "tracking-redir-broken" || strconv.FormatInt(v.elems[1].num, 10) != goneID {
			t.Fatalf("RESP3 after the target went: %v", v)
		}
	}
	wantErr(w, "REDIRECT to the gone client", "ERR The client ID you want redirect to does not exist", "CLIENT", "TRACKING", "ON", "REDIRECT", goneID)
	for _, cc := range []*rawConn{c, admin, deaf, r3, r2, w} {
		cc.send("PING")
		for {
			v, err := cc.tryRead(10 * time.Second)
			if err != nil {
				if cc == deaf {
					break // closed at its output limit, or still draining: either is fine
				}
				t.Fatalf("PING at the end: %v", err)
			}
			if v.str == "PONG" {
				break
			}
		}
	}
}

// trackingInfoInt reads an integer field of an INFO reply.
func trackingInfoInt(info, name string) int {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}
