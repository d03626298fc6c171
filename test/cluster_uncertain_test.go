package test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// uncCalls returns the calls of one command in INFO commandstats of the
// node behind c (0 when the command has no line yet).
func uncCalls(t testing.TB, c *redis.Client, name string) int64 {
	t.Helper()
	s, err := c.Info(tctx(t), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	prefix := "cmdstat_" + name + ":"
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				var n int64
				if _, err := fmt.Sscan(v, &n); err != nil {
					t.Fatalf("INFO commandstats line %q: %v", line, err)
				}
				return n
			}
		}
		t.Fatalf("INFO commandstats line %q has no calls=", line)
	}
	return 0
}

// uncWaitStopped waits until every thread of n's process is stopped
// (state T in /proc), so that nothing it does after the SIGSTOP can reach
// the leader.
func uncWaitStopped(t testing.TB, n *node) {
	t.Helper()
	n.mu.Lock()
	pid := n.cmd.Process.Pid
	n.mu.Unlock()
	eventually(t, 5*time.Second, fmt.Sprintf("process %d to stop", pid), func() bool {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatalf("reading the threads of process %d: %v", pid, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				return false
			}
			// The state follows the command name in parentheses.
			_, rest, _ := strings.Cut(string(b), ") ")
			if !strings.HasPrefix(rest, "T") && !strings.HasPrefix(rest, "t") {
				return false
			}
		}
		return true
	})
}

// uncDefaultClient is a go-redis client with the library's default retry
// and timeout settings (MaxRetries 0 means 3 retries: go-redis resends a
// command answered -TRYAGAIN or -CLUSTERDOWN, or not answered in time).
func uncDefaultClient(t testing.TB, n *node) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:     n.addr,
		Protocol: 3,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClusterUncertainNotRetried (see DESIGN.md, Uncertain outcome): a
// write that the leader proposed but could not commit
// before it lost its majority is answered -UNCERTAIN, which go-redis does
// not resend (it would resend -TRYAGAIN or -CLUSTERDOWN), so the command
// reaches the server exactly once; its outcome can then be resolved with
// LOCK.INFO and a retry with the same REQ takes effect at most once. A
// read on the cut-off leader answers an error, never data.
func TestClusterUncertainNotRetried(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	admin := leader.client(t) // MaxRetries -1, for INFO
	lockCl := uncDefaultClient(t, leader)
	hbCl := uncDefaultClient(t, leader)
	readCl := leader.soloClient(t) // MaxRetries -1: the raw answer

	s := openSession(t, lockCl, 60000, "uncertain")

	// The instrument works: one FLOCK through the default client counts
	// one call.
	f0 := uncCalls(t, admin, "flock")
	if tok, err := lockCl.Do(tctx(t), "FLOCK", "control", s).Int64(); err != nil || tok <= 0 {
		t.Fatalf("FLOCK control: %v %v", tok, err)
	}
	if f1 := uncCalls(t, admin, "flock"); f1 != f0+1 {
		t.Fatalf("cmdstat_flock calls went from %d to %d after one FLOCK, want +1", f0, f1)
	}
	// Warm connections, so nothing is dialled after the freeze.
	for _, cl := range []*redis.Client{lockCl, hbCl, readCl} {
		if err := cl.Ping(tctx(t)).Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
	}
	flockBefore := uncCalls(t, admin, "flock")
	hbBefore := uncCalls(t, admin, "session.heartbeat")

	fs := c.followers(leader)
	for _, f := range fs {
		f.pause()
	}
	for _, f := range fs {
		uncWaitStopped(t, f)
	}
	paused := time.Now()
	// Sent at once: the leader still leads (its lease lasts until it has
	// heard from no majority for a while), so it proposes both.
	flockCh := async(lockCl, "FLOCK", "u", s, "REQ", "u-1")
	hbCh := async(hbCl, "SESSION.HEARTBEAT", s)
	fenceCh := async(readCl, "FENCE", "control")

	fr := await(t, flockCh, "FLOCK on the cut-off leader")
	hr := await(t, hbCh, "SESSION.HEARTBEAT on the cut-off leader")
	rr := await(t, fenceCh, "FENCE on the cut-off leader")
	flockCalls := uncCalls(t, admin, "flock") - flockBefore
	hbCalls := uncCalls(t, admin, "session.heartbeat") - hbBefore
	st, _ := raftStatusOf(leader, 3*time.Second)
	t.Logf("followers frozen; FLOCK sent %v later, answered (%v, %v) after %v; SESSION.HEARTBEAT answered (%v, %v) after %v; FENCE answered (%v, %v) after %v; the old leader is now %q",
		fr.sent.Sub(paused).Round(time.Microsecond), fr.val, fr.err, fr.done.Sub(fr.sent).Round(time.Millisecond),
		hr.val, hr.err, hr.done.Sub(hr.sent).Round(time.Millisecond),
		rr.val, rr.err, rr.done.Sub(rr.sent).Round(time.Millisecond), st.fields["role"])

	for _, x := range []struct {
		what  string
		r     reply
		calls int64
	}{{"FLOCK", fr, flockCalls}, {"SESSION.HEARTBEAT", hr, hbCalls}} {
		if !isCode(x.r.err, "UNCERTAIN") {
			t.Errorf("%s proposed on a leader that lost its majority answered (%v, %v), want -UNCERTAIN", x.what, x.r.val, x.r.err)
		}
		if x.calls != 1 {
			t.Errorf("%s reached the server %d times through a go-redis client with default retries, want exactly once", x.what, x.calls)
		}
	}
	// The read answers an error, never data; a read applies nothing, so
	// the error is a retryable one.
	switch {
	case rr.err == nil || errors.Is(rr.err, redis.Nil):
		t.Errorf("FENCE on the cut-off leader answered data (%v, %v), want an error", rr.val, rr.err)
	case !foRetryable(rr.err):
		t.Errorf("FENCE on the cut-off leader answered %v, want -TRYAGAIN or -CLUSTERDOWN", rr.err)
	}
	if v, err := doWithin(readCl, 10*time.Second, "FENCE", "control"); err == nil || errors.Is(err, redis.Nil) || !isReplyErr(err) {
		t.Errorf("FENCE on the cut-off leader after its step-down answered (%v, %v), want an error", v, err)
	}

	for _, f := range fs {
		f.resume()
	}
	l := c.leader(20 * time.Second)
	lc := l.client(t)
	li := getLockInfo(t, lc, "u")
	switch {
	case !li.Held:
		t.Logf("after the heal (leader %s): the uncertain FLOCK was not applied", c.id(l))
		if len(li.Waiters) != 0 {
			t.Errorf("LOCK.INFO u = %+v, want free with no waiters", li)
		}
	case li.Holder == s && li.Owner == "" && li.Count == 1 && li.Token > 0 && len(li.Waiters) == 0:
		t.Logf("after the heal (leader %s): the uncertain FLOCK was applied, token %d", c.id(l), li.Token)
	default:
		t.Errorf("LOCK.INFO u = %+v: neither the uncertain FLOCK's outcome nor its absence", li)
	}
	// A retry with the same REQ takes effect at most once: it returns the
	// first grant's token if there was one, and the hold count stays 1.
	tok := mustInt(t, lc, "FLOCK", "u", s, "REQ", "u-1")
	if li.Held && tok != li.Token {
		t.Errorf("retried FLOCK u REQ u-1 = %d, want the token of the applied original %d", tok, li.Token)
	}
	if li2 := getLockInfo(t, lc, "u"); li2.Holder != s || li2.Count != 1 || li2.Token != tok {
		t.Errorf("LOCK.INFO u after the retry = %+v, want held once by %s with token %d", li2, s, tok)
	}
	if si := getSessionInfo(t, lc, s); si.TTL != 60000 {
		t.Errorf("SESSION.INFO after the uncertain heartbeat = %+v, want the session alive with TTL 60000", si)
	}
}
