package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
	"github.com/fenced/fenced/script"
)

// TestTrackingReadOnlyScripts: EVAL_RO and EVALSHA_RO track their
// declared keys only if the script calls a read command (Redis 7.0), on
// both of their paths: through the log (EVAL_RO whose script is not cached
// yet) and as a read (cached). A key the connection tracked before stays
// tracked after a script that does not read.
func TestTrackingReadOnlyScripts(t *testing.T) {
	s := startServer(t)
	a, w := dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	const noRead = "return 1"
	const read = "return redis.call('GET', KEYS[1])"
	a.do("GET", "before")
	for _, path := range []string{"log", "read"} {
		if path == "read" {
			for _, src := range []string{noRead, read} {
				if sha := a.do("SCRIPT", "LOAD", src).Text(); sha != script.SHA1(src) {
					t.Fatalf("SCRIPT LOAD %q: %s", src, sha)
				}
			}
			a.do("EVALSHA_RO", script.SHA1(noRead), "2", "n"+path, "before")
			a.do("EVALSHA_RO", script.SHA1(read), "1", "r"+path)
		} else {
			a.do("EVAL_RO", noRead, "2", "n"+path, "before")
			a.do("EVAL_RO", read, "1", "r"+path)
		}
		w.ok("MSET", "n"+path, "1", "r"+path, "2", "before", "3")
		a.expect(path+": the reading script's key, and the one read before", inval("r"+path), inval("before"))
		a.do("GET", "before")
	}
	if _, keys, items, _ := s.tracking.counts(); keys != 1 || items != 1 {
		t.Errorf("table: %d keys, %d items; want only before", keys, items)
	}
}

// TestTrackingFlushForgetsAll: FLUSHALL empties the table even when no
// connection tracks any more (Redis frees it whole): a key read by a
// connection that then turned tracking off and on again is not
// invalidated by a write after the flush.
func TestTrackingFlushForgetsAll(t *testing.T) {
	s := startServer(t)
	a, w := dialTrack(t, s, 3), dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	a.do("GET", "k")
	a.ok("CLIENT", "TRACKING", "OFF")
	w.ok("FLUSHALL")
	if _, keys, items, _ := s.tracking.counts(); keys != 0 || items != 0 {
		t.Errorf("after FLUSHALL: %d keys, %d items", keys, items)
	}
	a.ok("CLIENT", "TRACKING", "ON")
	w.ok("SET", "k", "1")
	a.expect("k was forgotten at the flush")
}

// TestTrackingCapLowered: CONFIG SET tracking-table-max-keys below the
// table's size evicts at once (Redis's cron does so on an idle server),
// each key with its invalidation, after the CONFIG SET's reply.
func TestTrackingCapLowered(t *testing.T) {
	s := startServer(t)
	a := dialTrack(t, s, 3)
	a.ok("CLIENT", "TRACKING", "ON")
	for i := range 5 {
		a.do("GET", "c"+strconv.Itoa(i))
	}
	a.ok("CONFIG", "SET", "tracking-table-max-keys", "2")
	defer a.ok("CONFIG", "SET", "tracking-table-max-keys", "1000000")
	evicted := map[string]bool{}
	for range 3 {
		v := a.read()
		if v.Kind() != resp.KindPush || len(v.Elems()) != 2 || len(v.Elems()[1].Elems()) != 1 {
			t.Fatalf("got %s, want an eviction's invalidation", v)
		}
		evicted[v.Elems()[1].Elems()[0].Text()] = true
	}
	a.expect("three evicted")
	if _, keys, _, _ := s.tracking.counts(); keys != 2 || len(evicted) != 3 {
		t.Errorf("%d keys left, %d evicted; want 2 and 3", keys, len(evicted))
	}
}

// redirectedTracker starts a server with three RESP3 connections: a
// tracks k with its invalidations redirected to target (whose id is id),
// and w is free to write.
func redirectedTracker(t *testing.T) (s *Server, target, a, w *rawConn, id string) {
	t.Helper()
	s = startServer(t)
	target, a, w = dialTrack(t, s, 3), dialTrack(t, s, 3), dialTrack(t, s, 3)
	id = target.id()
	a.ok("CLIENT", "TRACKING", "ON", "REDIRECT", id)
	a.do("GET", "k")
	return s, target, a, w, id
}

// TestTrackingRedirectQuit: a redirect target that sent QUIT has gone as
// soon as it is answered, even while its client keeps the socket open:
// the next invalidation is a tracking-redir-broken push at once.
func TestTrackingRedirectQuit(t *testing.T) {
	s, target, a, w, id := redirectedTracker(t)
	target.ok("QUIT") // the socket stays open on this side
	// At once: the client may read QUIT's +OK a moment before the server
	// ends the connection's context (CI 12:27 and TestDiffClientReply
	// 14:20: the SET's invalidation went to the target instead), and the
	// target counts as gone from the moment QUIT is answered (Closing).
	quit := time.Now()
	w.ok("SET", "k", "1")
	a.want("broken", resp.Push(resp.BulkString("tracking-redir-broken"), resp.Int(mustInt(t, id))).String())
	if d := time.Since(quit); d > 300*time.Millisecond {
		t.Errorf("tracking-redir-broken after %v", d)
	}
	// And the connection ends within QUIT's reply, well before the 500 ms
	// linger the fix skips.
	for gone := false; !gone; time.Sleep(time.Millisecond) {
		gone = true
		for _, c := range s.rs.Conns() {
			if strconv.FormatInt(c.ID(), 10) == id && c.Context().Err() == nil {
				gone = false
			}
		}
		if !gone && time.Since(quit) > 300*time.Millisecond {
			t.Fatal("the redirect target's connection still lives 300 ms after QUIT")
		}
	}
}

// TestTrackingRedirectClosingTarget: a redirect target whose QUIT is
// answered counts as gone before its connection has ended (the moment
// TestTrackingRedirectQuit races with): here QUIT's handler runs and its
// reply is never written, so the connection lives on, and the next
// invalidation must still be a tracking-redir-broken push, not one sent
// to the closing target.
func TestTrackingRedirectClosingTarget(t *testing.T) {
	s, _, a, w, id := redirectedTracker(t)
	var tc *resp.Conn
	for _, c := range s.rs.Conns() {
		if strconv.FormatInt(c.ID(), 10) == id {
			tc = c
		}
	}
	if tc == nil {
		t.Fatalf("no connection %s", id)
	}
	s.quit(tc, nil) // QUIT decided; its reply not yet written
	if tc.Context().Err() != nil || !tc.Closing() {
		t.Fatalf("after QUIT's handler: context %v, closing %v; want live and closing", tc.Context().Err(), tc.Closing())
	}
	w.ok("SET", "k", "1")
	a.want("broken", resp.Push(resp.BulkString("tracking-redir-broken"), resp.Int(mustInt(t, id))).String())
}
