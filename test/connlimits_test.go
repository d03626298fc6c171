package test

// Slow and idle clients: a subscriber that does
// not read is disconnected at the pub/sub output limit in bytes and the
// node's memory stays bounded; a client that stops reading its replies is
// disconnected after --write-timeout; --timeout closes idle connections but
// not subscribers nor clients waiting in FLOCK; CLIENT KILL in Redis 7's
// forms.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pid is the node's current process id.
func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// rssBytes is the node's resident set size, from /proc.
func (n *node) rssBytes(t testing.TB) int64 {
	t.Helper()
	return n.statusBytes(t, "VmRSS")
}

// peakRSSBytes is the most the node's process has held resident (VmHWM).
func (n *node) peakRSSBytes(t testing.TB) int64 {
	t.Helper()
	return n.statusBytes(t, "VmHWM")
}

// statusBytes reads a "Name: N kB" field of the node's /proc status.
func (n *node) statusBytes(t testing.TB, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.pid()))
	if err != nil {
		t.Skipf("no /proc to measure memory: %v", err)
	}
	v, ok := statusField(b, field)
	if !ok {
		t.Fatalf("no %s in /proc status", field)
	}
	return v
}

// statusField is a "Field: N kB" line of /proc/PID/status, in bytes.
func statusField(status []byte, field string) (int64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, true
		}
	}
	return 0, false
}

// clientIDs returns the ids CLIENT LIST shows.
func clientIDs(t testing.TB, c *redis.Client) map[int64]string {
	t.Helper()
	list := mustStr(t, c, "CLIENT", "LIST")
	ids := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "id=") {
			continue
		}
		id, _ := strconv.ParseInt(strings.TrimPrefix(f[0], "id="), 10, 64)
		ids[id] = line
	}
	return ids
}

// waitGone waits until CLIENT LIST no longer shows id, for at most bound;
// it reports how long that took, or fails.
func waitGone(t testing.TB, c *redis.Client, id int64, bound time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if _, ok := clientIDs(t, c)[id]; !ok {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: connection %d still open after %v", what, id, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectClosed fails unless the server closed c: reading gives EOF or a
// reset (after what was already sent), never a timeout.
func expectClosed(t testing.TB, c *rawConn, bound time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	c.nc.SetReadDeadline(deadline)
	buf := make([]byte, 1<<20)
	for {
		_, err := c.r.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the connection is still open after %v", what, bound)
		}
		return
	}
}

// rawID is the id of a raw connection (CLIENT ID).
func rawID(t testing.TB, c *rawConn) int64 {
	t.Helper()
	c.send("CLIENT", "ID")
	v := c.read()
	if v.kind != ':' {
		t.Fatalf("CLIENT ID: %v", v)
	}
	return v.num
}

// publishMany publishes count messages of size bytes on ch, pipelined 64
// at a time, and returns the subscriber count each PUBLISH answered.
func publishMany(t testing.TB, c *redis.Client, ch string, size, count int) []int64 {
	t.Helper()
	payload := strings.Repeat("m", size)
	var counts []int64
	for done := 0; done < count; {
		p := c.Pipeline()
		batch := min(64, count-done)
		cmds := make([]*redis.IntCmd, batch)
		for i := range cmds {
			cmds[i] = p.Publish(tctx(t), ch, payload)
		}
		if _, err := p.Exec(tctx(t)); err != nil {
			t.Fatalf("PUBLISH: %v", err)
		}
		for _, cmd := range cmds {
			counts = append(counts, cmd.Val())
		}
		done += batch
	}
	return counts
}

// TestSlowSubscriberOutputLimit: a subscriber that never reads while 100
// MiB is published is disconnected once its pending output passes the
// pub/sub hard limit (Redis's default, 32 MiB) — not at a count of
// messages — and the node's RSS grows by no more than the limit plus a
// margin; PUBLISH counts the subscriber no more, and other clients are
// served throughout.
//
// The node's RSS while publishing holds the Raft log cache (16 MiB of
// recent entries) and Pebble's memtables, with or without
// subscribers, so the test first publishes enough to fill those and
// measures the growth after that.
func TestSlowSubscriberOutputLimit(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	pub := n.soloClient(t)
	admin := n.soloClient(t)
	const msgSize = 16 << 10
	publishMany(t, pub, "warm-up", msgSize, 5000)
	warm := n.rssBytes(t)

	sub := dialRaw(t, n.addr)
	// A small receive buffer: the kernel holds little of what is not read.
	sub.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	id := rawID(t, sub)
	sub.send("SUBSCRIBE", "firehose")
	if v := sub.read(); v.kind != '*' || len(v.elems) != 3 {
		t.Fatalf("SUBSCRIBE: %v", v)
	}
	if line := clientIDs(t, admin)[id]; !strings.Contains(line, " flags=P ") || !strings.Contains(line, " sub=1 ") {
		t.Errorf("CLIENT LIST of a subscriber: %q", line)
	}

	const limit, total = 32 << 20, 100 << 20
	peak, heard := warm, 0
	for published := 0; published < total; published += 640 * msgSize {
		for _, cnt := range publishMany(t, pub, "firehose", msgSize, 640) {
			heard += int(cnt) * msgSize
		}
		peak = max(peak, n.rssBytes(t))
		if v := mustStr(t, admin, "PING"); v != "PONG" {
			t.Fatalf("PING = %q", v)
		}
	}
	waitGone(t, admin, id, 10*time.Second, "a subscriber that never reads")
	t.Logf("the subscriber was counted for %d MiB of messages; RSS %d MiB after the warm-up, peak %d MiB while publishing %d MiB to it (limit %d MiB)",
		heard>>20, warm>>20, peak>>20, total>>20, limit>>20)
	// What it was sent before the close: the limit, plus what the kernel's
	// buffers took (a few MiB).
	if heard > limit+16<<20 {
		t.Errorf("the subscriber was sent %d MiB before it was disconnected, limit %d MiB", heard>>20, limit>>20)
	}
	// Allocator and GC slack; the race detector's shadow memory multiplies
	// it all (a -race server grew by 206 MiB where a plain one grew by 47).
	margin := int64(96 << 20)
	if raceServer() {
		margin = 8*(limit+margin) - limit
	}
	if peak-warm > limit+margin {
		t.Errorf("RSS grew by %d MiB, more than the limit (%d MiB) plus %d MiB", (peak-warm)>>20, limit>>20, margin>>20)
	}
	expectClosed(t, sub, 10*time.Second, "the subscriber's socket")
	if !strings.Contains(n.stderr(), "output buffer limits") {
		t.Error("the node did not log why it closed the subscriber")
	}
	// Others are served: a new subscriber hears new messages.
	sub2 := dialRaw(t, n.addr)
	sub2.send("SUBSCRIBE", "firehose")
	sub2.read()
	if got := mustInt(t, pub, "PUBLISH", "firehose", "hello"); got != 1 {
		t.Errorf("PUBLISH to a new subscriber counted %d", got)
	}
	if v := sub2.read(); len(v.elems) != 3 || v.elems[2].str != "hello" {
		t.Errorf("the new subscriber got %v", v)
	}
}

// TestSlowSubscriberSoftLimit: over the soft limit for longer than its
// seconds disconnects the subscriber, well before the hard limit
// (--client-output-buffer-limit "pubsub 64mb 1mb 1").
func TestSlowSubscriberSoftLimit(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--client-output-buffer-limit", "pubsub 64mb 1mb 1"}})
	pub := n.soloClient(t)
	admin := n.soloClient(t)
	sub := dialRaw(t, n.addr)
	sub.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	id := rawID(t, sub)
	sub.send("SUBSCRIBE", "drip")
	sub.read()
	payload := strings.Repeat("d", 64<<10)
	published := 0
	start := time.Now()
	for mustInt(t, pub, "PUBLISH", "drip", payload) == 1 {
		published += len(payload)
		if published > 60<<20 {
			t.Fatalf("still subscribed after %d MiB in %v: the soft limit did not apply", published>>20, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("disconnected by the soft limit after %d KiB in %v", published>>10, time.Since(start))
	waitGone(t, admin, id, 10*time.Second, "a subscriber over the soft limit")
}

// TestWriteTimeoutSlowReader: a client that pipelines commands and never
// reads its replies is disconnected after --write-timeout, and its
// connection is gone from CLIENT LIST; other clients are served meanwhile.
func TestWriteTimeoutSlowReader(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--write-timeout", "1s"}})
	admin := n.soloClient(t)
	// The ids, not their count: a connection closing as the test starts
	// (the harness's readiness probe) may still be listed here.
	before := clientIDs(t, admin)
	c := dialRaw(t, n.addr)
	c.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	id := rawID(t, c)
	cmd := encode("ECHO", strings.Repeat("e", 64<<10))
	writeErr := make(chan error, 1)
	go func() {
		c.nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
		for range 4000 { // 256 MiB of replies
			if _, err := c.nc.Write([]byte(cmd)); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	took := waitGone(t, admin, id, 30*time.Second, "a client that never reads its replies")
	t.Logf("disconnected %v after the check began (--write-timeout 1s)", took)
	select {
	case err := <-writeErr:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the client's writes timed out instead of failing on the closed connection: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the client's writes still block: the server kept the connection")
	}
	if v := mustStr(t, admin, "PING"); v != "PONG" {
		t.Errorf("PING = %q", v)
	}
	for id, line := range clientIDs(t, admin) {
		if _, ok := before[id]; !ok {
			t.Errorf("a connection that was not there before is left: %s", line)
		}
	}
}

// TestIdleTimeout: --timeout closes a connection idle that long, but not a
// subscriber nor a client waiting in FLOCK ... WAIT, which is granted the
// lock afterwards.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--timeout", "1"}})
	idle := dialRaw(t, n.addr)
	idle.send("PING")
	idle.read()
	sub := dialRaw(t, n.addr)
	sub.send("SUBSCRIBE", "quiet")
	sub.read()

	holder := dialRaw(t, n.addr)
	holder.send("SESSION.OPEN", "TTL", "120000")
	s1 := holder.read().str
	holder.send("FLOCK", "idle-lock", s1)
	if v := holder.read(); v.kind != ':' {
		t.Fatalf("FLOCK: %v", v)
	}
	waiter := dialRaw(t, n.addr)
	waiter.send("SESSION.OPEN", "TTL", "120000")
	s2 := waiter.read().str
	waiter.send("FLOCK", "idle-lock", s2, "WAIT", "0")

	expectClosed(t, idle, 15*time.Second, "an idle connection with --timeout 1")
	time.Sleep(2 * time.Second) // twice the timeout past the idle one's close
	sub.send("PING")
	if v := sub.read(); v.kind != '*' || len(v.elems) != 2 || v.elems[0].str != "pong" {
		t.Errorf("the subscriber after the timeout: %v", v)
	}
	// A fresh connection sends FUNLOCK at once: a server starved past the
	// 1 s timeout still reads it rather than reaping the connection (the
	// reaper spares a connection with input in its socket; CI 15:10 saw
	// EOF here before it did).
	rel := dialRaw(t, n.addr)
	rel.send("FUNLOCK", "idle-lock", s1)
	if v, err := rel.tryRead(10 * time.Second); err != nil || v.kind != ':' || v.num != 0 {
		t.Fatalf("FUNLOCK: %v %v", v, err)
	}
	if v := waiter.read(); v.kind != ':' || v.num <= 0 {
		t.Errorf("the waiting FLOCK after the timeout: %v, want its token", v)
	}
	// The holder, idle all along, was closed.
	expectClosed(t, holder, 15*time.Second, "the idle holder's connection")
}

// TestClientKill: Redis 7's CLIENT KILL forms, each closing the connection
// it names for real; a FLOCK waiting on a killed connection leaves the
// queue; a user without @admin gets -NOPERM.
func TestClientKill(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	admin := n.soloClient(t)
	k := dialRaw(t, n.addr)
	kid := rawID(t, k)
	kill := func(want string, args ...string) {
		t.Helper()
		k.send(append([]string{"CLIENT", "KILL"}, args...)...)
		if v := k.read(); v.String() != want {
			t.Errorf("CLIENT KILL %q = %v, want %s", args, v, want)
		}
	}
	victim := func() (*rawConn, int64, string) {
		c := dialRaw(t, n.addr)
		return c, rawID(t, c), c.nc.LocalAddr().String()
	}

	a, aid, _ := victim()
	kill(":1", "ID", fmt.Sprint(aid))
	expectClosed(t, a, 10*time.Second, "CLIENT KILL ID")

	b, _, baddr := victim()
	kill(":1", "ADDR", baddr)
	expectClosed(t, b, 10*time.Second, "CLIENT KILL ADDR")

	c, _, caddr := victim()
	kill(`+"OK"`, caddr)
	expectClosed(t, c, 10*time.Second, "CLIENT KILL addr (old form)")
	kill(`-"ERR No such client"`, caddr)

	d, did, _ := victim()
	kill(":0", "LADDR", "127.0.0.1:1", "ID", fmt.Sprint(did))
	kill(":1", "LADDR", n.addr, "ID", fmt.Sprint(did))
	expectClosed(t, d, 10*time.Second, "CLIENT KILL LADDR")

	e, _, _ := victim()
	e.send("SUBSCRIBE", "ch")
	e.read()
	kill(":1", "TYPE", "pubsub")
	expectClosed(t, e, 10*time.Second, "CLIENT KILL TYPE pubsub")

	setUser(t, admin, "app", "on", ">pw", "allkeys", "allchannels", "+@all", "-@admin")
	u1, u2 := asUser(t, n, "app", "pw"), asUser(t, n, "app", "pw")
	u1.send("CLIENT", "KILL", "ID", fmt.Sprint(kid))
	if v := u1.read(); v.kind != '-' || !strings.HasPrefix(v.str, "NOPERM") {
		t.Errorf("CLIENT KILL as a user without @admin: %v, want -NOPERM", v)
	}
	kill(":2", "USER", "app")
	expectClosed(t, u1, 10*time.Second, "CLIENT KILL USER (1)")
	expectClosed(t, u2, 10*time.Second, "CLIENT KILL USER (2)")

	// A waiting FLOCK of a killed connection is cancelled through Raft.
	s1 := openSession(t, admin, 120000, "")
	s2 := openSession(t, admin, 120000, "")
	mustInt(t, admin, "FLOCK", "kill-lock", s1)
	w, wid, _ := victim()
	w.send("FLOCK", "kill-lock", s2, "WAIT", "0")
	eventually(t, 10*time.Second, "the FLOCK queued", func() bool { return waiters(t, admin, "kill-lock") == 1 })
	kill(":1", "ID", fmt.Sprint(wid))
	expectClosed(t, w, 10*time.Second, "CLIENT KILL of a waiting FLOCK")
	eventually(t, 10*time.Second, "the killed FLOCK left the queue", func() bool { return waiters(t, admin, "kill-lock") == 0 })

	// SKIPME: yes by default, so the caller survives its own id; no kills
	// it after its reply.
	kill(":0", "ID", fmt.Sprint(kid))
	kill(":1", "ID", fmt.Sprint(kid), "SKIPME", "no")
	expectClosed(t, k, 10*time.Second, "CLIENT KILL of the caller with SKIPME no")
	if v := mustStr(t, admin, "PING"); v != "PONG" {
		t.Errorf("PING = %q", v)
	}
}

// waiters is the number of FLOCKs queued on lock (LOCK.INFO).
func waiters(t testing.TB, c *redis.Client, lock string) int {
	t.Helper()
	v, err := do(tctx(t), c, "LOCK.INFO", lock)
	if err != nil {
		t.Fatalf("LOCK.INFO: %v", err)
	}
	m, _ := v.(map[any]any)
	w, _ := m["waiters"].([]any)
	return len(w)
}
