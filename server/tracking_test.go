package server

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// rawConn is a client that sees every frame in order, replies and pushes
// alike, as a client-side cache does.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	rd *resp.ReplyReader
	w  *bufio.Writer
}

func dialTrack(t *testing.T, s *Server, proto int) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &rawConn{t: t, nc: nc, rd: resp.NewReplyReader(nc, resp.DefaultReplyLimits()), w: bufio.NewWriter(nc)}
	if proto == 3 {
		r.do("HELLO", "3")
	}
	return r
}

func (r *rawConn) send(args ...string) {
	r.t.Helper()
	r.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		r.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if err := r.w.Flush(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) read() resp.Value {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := r.rd.Read()
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return v
}

// do sends a command and returns the next frame.
func (r *rawConn) do(args ...string) resp.Value {
	r.t.Helper()
	r.send(args...)
	return r.read()
}

// want reads the next frame and checks its form.
func (r *rawConn) want(what, form string) {
	r.t.Helper()
	if got := r.read().String(); got != form {
		r.t.Errorf("%s: got %s, want %s", what, got, form)
	}
}

// expect reads these pushes, in order, as the next frames, then checks
// that no other push comes before the reply of a PING sent a moment later.
func (r *rawConn) expect(what string, pushes ...string) {
	r.t.Helper()
	for _, p := range pushes {
		r.want(what, p)
	}
	time.Sleep(30 * time.Millisecond)
	r.send("PING")
	r.want(what+": nothing more", resp.SimpleString("PONG").String())
}

func (r *rawConn) id() string {
	r.t.Helper()
	return strconv.FormatInt(r.do("CLIENT", "ID").Integer(), 10)
}

func keysPush(kind string, keys ...string) string {
	vs := make([]resp.Value, len(keys))
	for i, k := range keys {
		vs[i] = resp.BulkString(k)
	}
	if kind == "message" {
		return resp.Push(resp.BulkString("message"), resp.BulkString(invalidateChannel), resp.Array(vs...)).String()
	}
	return resp.Push(resp.BulkString("invalidate"), resp.Array(vs...)).String()
}

func inval(keys ...string) string { return keysPush("invalidate", keys...) }

var ok = resp.SimpleString("OK").String()

// ok runs a command that must answer +OK.
func (r *rawConn) ok(args ...string) {
	r.t.Helper()
	r.send(args...)
	r.want(strings.Join(args, " "), ok)
}

// TestTrackingDefault: a key read by a tracking connection is invalidated
// by the next write of another connection, then forgotten; a connection's
// own write is invalidated after its reply; a read tracks it again; keys
// deleted by one command come in the order the entry deleted them.
func TestTrackingDefault(t *testing.T) {
	s := startServer(t)
	a, b := dialTrack(t, s, 3), dialTrack(t, s, 3)
	b.ok("MSET", "m1", "1", "m2", "2")
	a.ok("CLIENT", "TRACKING", "ON")
	a.do("GET", "k")
	a.do("MGET", "m1", "m2")
	a.do("HGET", "h", "f")
	b.ok("SET", "k", "1")
	a.expect("SET k", inval("k"))
	b.ok("SET", "k", "2")
	a.expect("k was forgotten after its invalidation")
	b.do("DEL", "m2", "x", "m1")
	a.expect("DEL", inval("m2"), inval("m1"))
	b.do("HSET", "h", "f", "v")
	a.expect("HSET", inval("h"))
	a.do("GET", "k")
	a.send("SET", "k", "3")
	a.want("own SET's reply first", ok)
	a.expect("then its invalidation", inval("k"))
	a.do("GET", "k")
	a.ok("CLIENT", "TRACKING", "OFF")
	b.ok("SET", "k", "4")
	a.expect("tracking off")
	// A RESP2 connection without REDIRECT hears nothing (Redis's rule).
	c := dialTrack(t, s, 2)
	c.ok("CLIENT", "TRACKING", "ON")
	c.do("GET", "k")
	b.ok("SET", "k", "5")
	c.expect("RESP2 without REDIRECT")
}

// TestTrackingBcastPrefix: BCAST sends every modified key that matches a
// prefix without any read, one message per prefix and entry, its keys
// sorted; BCAST without PREFIX is every key.
func TestTrackingBcastPrefix(t *testing.T) {
	s := startServer(t)
	a, b, all := dialTrack(t, s, 3), dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "cfg")
	all.ok("CLIENT", "TRACKING", "ON", "BCAST")
	b.ok("MSET", "user:2", "x", "other", "y", "user:1", "z", "cfg", "c")
	a.expect("MSET", inval("cfg"), inval("user:1", "user:2"))
	all.expect("MSET, no prefix", inval("cfg", "other", "user:1", "user:2"))
	b.ok("SET", "other", "1")
	a.expect("no prefix matches")
	all.expect("SET other", inval("other"))
	a.ok("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "more")
	got := a.do("CLIENT", "TRACKINGINFO").String()
	want := resp.Map(resp.BulkString("flags"), resp.Set(resp.BulkString("on"), resp.BulkString("bcast")),
		resp.BulkString("redirect"), resp.Int(0),
		resp.BulkString("prefixes"), resp.Array(resp.BulkString("cfg"), resp.BulkString("more"), resp.BulkString("user:"))).String()
	if got != want {
		t.Errorf("TRACKINGINFO %s, want %s", got, want)
	}
	a.send("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "us")
	a.want("overlap", resp.Error("ERR Prefix 'us' overlaps with an existing prefix 'user:'. Prefixes for a single client must not overlap.").String())
}

// TestTrackingOptInOptOut: OPTIN tracks only the reads right after CLIENT
// CACHING YES; OPTOUT all but those after CLIENT CACHING NO; the flag
// lasts one command.
func TestTrackingOptInOptOut(t *testing.T) {
	s := startServer(t)
	in, out, b := dialTrack(t, s, 3), dialTrack(t, s, 3), dialTrack(t, s, 3)
	in.ok("CLIENT", "TRACKING", "ON", "OPTIN")
	in.do("GET", "a")
	in.ok("CLIENT", "CACHING", "YES")
	in.do("GET", "b")
	in.do("GET", "c")
	out.ok("CLIENT", "TRACKING", "ON", "OPTOUT")
	out.ok("CLIENT", "CACHING", "NO")
	out.do("GET", "a")
	out.do("GET", "b")
	b.ok("MSET", "a", "1", "b", "2", "c", "3")
	in.expect("OPTIN: only b", inval("b"))
	out.expect("OPTOUT: only b", inval("b"))
	in.send("CLIENT", "CACHING", "NO")
	in.want("CACHING NO in OPTIN", resp.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.").String())
}

// TestTrackingNoLoop: a NOLOOP connection hears of others' writes, not of
// its own (a plain write or a script's), and forgets the key all the same.
func TestTrackingNoLoop(t *testing.T) {
	s := startServer(t)
	a, b := dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON", "NOLOOP")
	a.do("GET", "k")
	a.do("GET", "j")
	a.ok("SET", "k", "1")
	a.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "j")
	a.expect("own writes")
	b.ok("SET", "k", "2")
	a.expect("k forgotten at its own write")
	a.do("GET", "k")
	b.ok("SET", "k", "3")
	a.expect("another's write", inval("k"))
	// Without NOLOOP the same script's write is heard.
	c := dialTrack(t, s, 3)
	c.ok("CLIENT", "TRACKING", "ON")
	c.do("GET", "j")
	c.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "j")
	c.expect("own script write", inval("j"))
}

// TestTrackingScriptReads: a script's read tracks its declared keys for
// its caller at that read (Redis 7.0): a write before the read is not
// heard, a later write by another connection is.
func TestTrackingScriptReads(t *testing.T) {
	s := startServer(t)
	a, b := dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON", "OPTOUT")
	a.do("EVAL", "redis.call('SET', KEYS[1], 'v'); return redis.call('GET', KEYS[1])", "1", "s")
	a.do("EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "w")
	a.expect("writes before the read")
	b.ok("MSET", "s", "1", "w", "2")
	a.expect("s tracked by the script's read, w never read", inval("s"))
	// CLIENT CACHING NO before the script: its reads track nothing.
	a.ok("CLIENT", "CACHING", "NO")
	a.do("EVAL", "return redis.call('GET', KEYS[1])", "1", "s")
	b.ok("SET", "s", "3")
	a.expect("CACHING NO")
}

// TestTrackingRedirect: invalidations go to the REDIRECT connection: a
// RESP2 one subscribed hears a message on __redis__:invalidate, a RESP3
// one a push; once it is gone, the RESP3 tracking connection hears
// tracking-redir-broken and CLIENT TRACKINGINFO says broken_redirect.
func TestTrackingRedirect(t *testing.T) {
	s := startServer(t)
	sub, a, b := dialTrack(t, s, 2), dialTrack(t, s, 2), dialTrack(t, s, 3)
	subID := sub.id()
	sub.send("SUBSCRIBE", invalidateChannel)
	sub.want("subscribe", resp.Array(resp.BulkString("subscribe"), resp.BulkString(invalidateChannel), resp.Int(1)).String())
	a.ok("CLIENT", "TRACKING", "ON", "REDIRECT", subID)
	if got := a.do("CLIENT", "GETREDIR").Integer(); strconv.FormatInt(got, 10) != subID {
		t.Errorf("GETREDIR %d, want %s", got, subID)
	}
	a.do("GET", "k")
	b.ok("SET", "k", "1")
	sub.want("RESP2 redirect", resp.Array(resp.BulkString("message"), resp.BulkString(invalidateChannel), resp.Array(resp.BulkString("k"))).String())
	r3 := dialTrack(t, s, 3)
	c := dialTrack(t, s, 3)
	r3id := r3.id()
	c.ok("CLIENT", "TRACKING", "ON", "REDIRECT", r3id)
	c.do("GET", "k")
	b.ok("SET", "k", "2")
	r3.expect("RESP3 redirect", inval("k"))
	c.expect("nothing to the tracking connection")
	r3.nc.Close()
	time.Sleep(100 * time.Millisecond)
	c.do("GET", "k")
	b.ok("SET", "k", "3")
	c.expect("broken", resp.Push(resp.BulkString("tracking-redir-broken"), resp.Int(mustInt(t, r3id))).String())
	flags, _, _ := s.tracking.info(connOf(t, s, c))
	if !strings.Contains(strings.Join(flags, " "), "broken_redirect") {
		t.Errorf("flags %v, want broken_redirect", flags)
	}
	c.send("CLIENT", "TRACKING", "ON", "REDIRECT", "999999")
	c.want("unknown id", resp.Error("ERR The client ID you want redirect to does not exist").String())
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// connOf finds the server's side of r.
func connOf(t *testing.T, s *Server, r *rawConn) *resp.Conn {
	t.Helper()
	id := mustInt(t, r.id())
	if c := s.connByID(id); c != nil {
		return c
	}
	t.Fatalf("no connection %d", id)
	return nil
}

// TestTrackingCap: past tracking-table-max-keys, keys are evicted, each
// with an invalidation to the connections that tracked it; the table
// stays at the cap.
func TestTrackingCap(t *testing.T) {
	s := startServer(t)
	a := dialTrack(t, s, 3)
	a.ok("CONFIG", "SET", "tracking-table-max-keys", "3")
	a.ok("CLIENT", "TRACKING", "ON")
	for i := range 5 {
		a.send("GET", "k"+strconv.Itoa(i))
	}
	// Each eviction comes right after the reply of the read that took
	// the table past the cap (Redis: before the next command's reply).
	evicted := map[string]bool{}
	var frames []string
	for range 7 {
		v := a.read()
		if v.Kind() == resp.KindPush {
			if len(v.Elems()) != 2 || v.Elems()[0].Text() != "invalidate" {
				t.Fatalf("got %s, want an eviction's invalidation", v)
			}
			evicted[v.Elems()[1].Elems()[0].Text()] = true
			frames = append(frames, "push")
		} else {
			frames = append(frames, v.String())
		}
	}
	if got := strings.Join(frames, " "); got != "(nil) (nil) (nil) (nil) push (nil) push" {
		t.Errorf("frames %s", got)
	}
	a.expect("two evicted")
	if _, keys, items, _ := s.tracking.counts(); keys != 3 || items != 3 || len(evicted) != 2 {
		t.Errorf("table %d keys %d items, evicted %v; want 3, 3, two keys", keys, items, evicted)
	}
	if v := a.do("CONFIG", "GET", "tracking-table-max-keys").String(); !strings.Contains(v, `"3"`) {
		t.Errorf("CONFIG GET %s", v)
	}
	a.send("CONFIG", "SET", "tracking-table-max-keys", "-1")
	a.want("negative", resp.Error("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument must be between 0 and 9223372036854775807 inclusive").String())
}

// TestTrackingBytesCap: the table is bounded in bytes as well as in keys:
// reads of keys with long names evict the oldest ones past the bound, each
// with an invalidation, and the count returns to zero with the keys.
func TestTrackingBytesCap(t *testing.T) {
	s := startServer(t)
	s.tracking.mu.Lock()
	s.tracking.maxBytes = 64 << 10
	s.tracking.mu.Unlock()
	a := dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	const reads, nameLen = 20, 8 << 10
	// Evictions come after the reply of the read that made them: count
	// the pushes before each reply, and before a last PING's.
	evicted := 0
	next := func() {
		for a.read().Kind() == resp.KindPush {
			evicted++
		}
	}
	for i := range reads {
		a.send("GET", strings.Repeat("k", nameLen-3)+strconv.Itoa(100+i))
		next()
	}
	a.send("PING")
	next()
	fits := (64 << 10) / (nameLen + trackingKeyOverhead)
	_, keys, _, _ := s.tracking.counts()
	if b := s.tracking.tableBytes(); b > 64<<10 || keys != fits || evicted != reads-fits {
		t.Errorf("after %d reads of %d-byte names: %d bytes, %d keys, %d evicted; want at most 64 KiB, %d keys, %d evicted", reads, nameLen, b, keys, evicted, fits, reads-fits)
	}
	a.ok("FLUSHALL")
	if b := s.tracking.tableBytes(); b != 0 {
		t.Errorf("after FLUSHALL the table costs %d bytes", b)
	}
}

// TestTrackingFlush: a flush (a snapshot installed here, or FLUSHALL)
// sends every tracking connection a null invalidation and empties the
// table.
func TestTrackingFlush(t *testing.T) {
	s := startServer(t)
	a, bc := dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	bc.ok("CLIENT", "TRACKING", "ON", "BCAST")
	a.do("GET", "k")
	s.tracking.flushAll()
	null := resp.Push(resp.BulkString("invalidate"), resp.Null()).String()
	a.expect("flush", null)
	bc.expect("flush, BCAST", null)
	if _, keys, _, _ := s.tracking.counts(); keys != 0 {
		t.Errorf("%d keys after a flush", keys)
	}
}
