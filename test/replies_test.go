package test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// tctx is a context that ends with a generous bound, so that a test that
// would hang fails instead.
func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func do(ctx context.Context, c *redis.Client, args ...any) (any, error) {
	return c.Do(ctx, args...).Result()
}

// doWithin runs one command with its own timeout.
func doWithin(c *redis.Client, timeout time.Duration, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// isCode reports whether err is a RESP error reply with this code word.
func isCode(err error, code string) bool {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	return msg == code || strings.HasPrefix(msg, code+" ")
}

// mustInt runs a command that must answer an integer.
func mustInt(t testing.TB, c *redis.Client, args ...any) int64 {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if err != nil {
		t.Fatalf("%v: %v, want an integer", args, err)
	}
	i, ok := v.(int64)
	if !ok {
		t.Fatalf("%v: %T %v, want an integer", args, v, v)
	}
	return i
}

// mustStr runs a command that must answer a (bulk or simple) string.
func mustStr(t testing.TB, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if err != nil {
		t.Fatalf("%v: %v, want a string", args, err)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v: %T %v, want a string", args, v, v)
	}
	return s
}

// mustNil runs a command that must answer null.
func mustNil(t testing.TB, c *redis.Client, args ...any) {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("%v: (%T %v, %v), want null", args, v, v, err)
	}
}

// mustErr runs a command that must answer an error with this code.
func mustErr(t testing.TB, c *redis.Client, code string, args ...any) {
	t.Helper()
	v, err := do(tctx(t), c, args...)
	if !isCode(err, code) {
		t.Fatalf("%v: (%T %v, %v), want -%s", args, v, v, err, code)
	}
}

// openSession opens a session with this TTL (ms; 0 = default).
func openSession(t testing.TB, c *redis.Client, ttl int, name string) string {
	t.Helper()
	args := []any{"SESSION.OPEN"}
	if ttl > 0 {
		args = append(args, "TTL", ttl)
	}
	if name != "" {
		args = append(args, "NAME", name)
	}
	id := mustStr(t, c, args...)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("SESSION.OPEN answered %q, want 32 hex characters", id)
	}
	return id
}

// asMap turns a RESP3 map, or a RESP2 flat array of pairs, into a Go map.
func asMap(v any) (map[string]any, error) {
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, val := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %T %v is not a string", k, k)
			}
			out[ks] = val
		}
	case map[string]any:
		return m, nil
	case []any:
		if len(m)%2 != 0 {
			return nil, fmt.Errorf("flat map of odd length %d", len(m))
		}
		for i := 0; i < len(m); i += 2 {
			ks, ok := m[i].(string)
			if !ok {
				return nil, fmt.Errorf("map key %T %v is not a string", m[i], m[i])
			}
			out[ks] = m[i+1]
		}
	default:
		return nil, fmt.Errorf("%T %v is not a map", v, v)
	}
	return out, nil
}

func checkKeys(m map[string]any, keys ...string) error {
	if len(m) != len(keys) {
		return fmt.Errorf("map has keys %v, want exactly %v", mapKeys(m), keys)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("map has keys %v, want exactly %v", mapKeys(m), keys)
		}
	}
	return nil
}

func mapKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// waiterInfo is one waiter of LOCK.INFO.
type waiterInfo struct {
	Session, Owner string
	Remaining      int64
}

// lockInfo is a parsed LOCK.INFO reply. Held is false when holder is null;
// the token is then null too.
type lockInfo struct {
	Held          bool
	Holder, Owner string
	Count, Limit  int64
	Token         int64
	Waiters       []waiterInfo
}

func (li lockInfo) waiterSessions() []string {
	var ss []string
	for _, w := range li.Waiters {
		ss = append(ss, w.Session)
	}
	return ss
}

// withoutRemaining drops the waiters' remaining times, which change by
// themselves, for comparisons.
func (li lockInfo) withoutRemaining() lockInfo {
	c := li
	c.Waiters = nil
	for _, w := range li.Waiters {
		w.Remaining = 0
		c.Waiters = append(c.Waiters, w)
	}
	return c
}

func parseLockInfo(v any) (lockInfo, error) {
	var li lockInfo
	m, err := asMap(v)
	if err != nil {
		return li, err
	}
	if err := checkKeys(m, "holder", "owner", "count", "limit", "token", "waiters"); err != nil {
		return li, err
	}
	var ok bool
	switch h := m["holder"].(type) {
	case nil:
		if m["owner"] != nil || m["token"] != nil {
			return li, fmt.Errorf("holder is null but owner %v, token %v", m["owner"], m["token"])
		}
	case string:
		li.Held, li.Holder = true, h
		if li.Owner, ok = m["owner"].(string); !ok {
			return li, fmt.Errorf("owner is %T %v, want a string", m["owner"], m["owner"])
		}
		if li.Token, ok = m["token"].(int64); !ok {
			return li, fmt.Errorf("token is %T %v, want an integer", m["token"], m["token"])
		}
	default:
		return li, fmt.Errorf("holder is %T %v", h, h)
	}
	if li.Count, ok = m["count"].(int64); !ok {
		return li, fmt.Errorf("count is %T %v, want an integer", m["count"], m["count"])
	}
	if li.Limit, ok = m["limit"].(int64); !ok {
		return li, fmt.Errorf("limit is %T %v, want an integer", m["limit"], m["limit"])
	}
	ws, ok := m["waiters"].([]any)
	if !ok {
		return li, fmt.Errorf("waiters is %T %v, want an array", m["waiters"], m["waiters"])
	}
	for _, wv := range ws {
		wm, err := asMap(wv)
		if err != nil {
			return li, fmt.Errorf("waiter: %v", err)
		}
		if err := checkKeys(wm, "session", "owner", "remaining"); err != nil {
			return li, fmt.Errorf("waiter: %v", err)
		}
		var w waiterInfo
		s, ok1 := wm["session"].(string)
		o, ok2 := wm["owner"].(string)
		r, ok3 := wm["remaining"].(int64)
		if !ok1 || !ok2 || !ok3 {
			return li, fmt.Errorf("waiter fields have wrong types: %v", wm)
		}
		w.Session, w.Owner, w.Remaining = s, o, r
		li.Waiters = append(li.Waiters, w)
	}
	return li, nil
}

func getLockInfo(t testing.TB, c *redis.Client, lock string) lockInfo {
	t.Helper()
	v, err := do(tctx(t), c, "LOCK.INFO", lock)
	if err != nil {
		t.Fatalf("LOCK.INFO %s: %v", lock, err)
	}
	li, err := parseLockInfo(v)
	if err != nil {
		t.Fatalf("LOCK.INFO %s: %v (reply %v)", lock, err, v)
	}
	return li
}

// sessionInfo is a parsed SESSION.INFO reply.
type sessionInfo struct {
	ID, Name       string
	TTL, Remaining int64
	Created        string
	Locks, Waiting []string
}

func parseSessionInfo(v any) (sessionInfo, error) {
	var si sessionInfo
	m, err := asMap(v)
	if err != nil {
		return si, err
	}
	if err := checkKeys(m, "id", "name", "ttl", "remaining", "created", "locks", "waiting"); err != nil {
		return si, err
	}
	var ok [5]bool
	si.ID, ok[0] = m["id"].(string)
	si.Name, ok[1] = m["name"].(string)
	si.TTL, ok[2] = m["ttl"].(int64)
	si.Remaining, ok[3] = m["remaining"].(int64)
	si.Created, ok[4] = m["created"].(string)
	for i, o := range ok {
		if !o {
			return si, fmt.Errorf("field %d of %v has the wrong type", i, m)
		}
	}
	if si.Locks, err = stringArray(m["locks"]); err != nil {
		return si, fmt.Errorf("locks: %v", err)
	}
	if si.Waiting, err = stringArray(m["waiting"]); err != nil {
		return si, fmt.Errorf("waiting: %v", err)
	}
	return si, nil
}

func stringArray(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%T %v is not an array", v, v)
	}
	out := []string{}
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %T %v is not a string", e, e)
		}
		out = append(out, s)
	}
	return out, nil
}

func getSessionInfo(t testing.TB, c *redis.Client, id string) sessionInfo {
	t.Helper()
	v, err := do(tctx(t), c, "SESSION.INFO", id)
	if err != nil {
		t.Fatalf("SESSION.INFO %s: %v", id, err)
	}
	si, err := parseSessionInfo(v)
	if err != nil {
		t.Fatalf("SESSION.INFO %s: %v (reply %v)", id, err, v)
	}
	return si
}

func sessionList(t testing.TB, c *redis.Client) []string {
	t.Helper()
	v, err := do(tctx(t), c, "SESSION.LIST")
	if err != nil {
		t.Fatalf("SESSION.LIST: %v", err)
	}
	ss, err := stringArray(v)
	if err != nil {
		t.Fatalf("SESSION.LIST: %v", err)
	}
	return ss
}

// infoRaft returns the fields of INFO raft.
func infoRaft(t testing.TB, c *redis.Client) map[string]string {
	t.Helper()
	return infoSection(t, c, "raft")
}

// infoSection returns the fields of one section of INFO.
func infoSection(t testing.TB, c *redis.Client, section string) map[string]string {
	t.Helper()
	s, err := c.Info(tctx(t), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

func infoInt(t testing.TB, m map[string]string, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(m[key], 10, 64)
	if err != nil {
		t.Fatalf("INFO field %s = %q: %v", key, m[key], err)
	}
	return v
}

// eventually polls cond every 10 ms until it holds, failing the test after
// timeout. It is for waiting on state that changes asynchronously (a wait
// being queued, a cancellation going through Raft), never to assert how long
// that takes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond every 10 ms until it holds or timeout passes, and
// reports whether it held: eventually for a caller that says itself what
// failed.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// waitQueued waits until LOCK.INFO shows exactly these waiter sessions, in
// this order.
func waitQueued(t testing.TB, c *redis.Client, lock string, sessions ...string) lockInfo {
	t.Helper()
	var li lockInfo
	eventually(t, 10*time.Second, fmt.Sprintf("waiters of %s to be %v", lock, sessions), func() bool {
		li = getLockInfo(t, c, lock)
		got := li.waiterSessions()
		if len(got) != len(sessions) {
			return false
		}
		for i := range got {
			if got[i] != sessions[i] {
				return false
			}
		}
		return true
	})
	return li
}

// reply is the outcome of a command run in the background.
type reply struct {
	val  any
	err  error
	sent time.Time
	done time.Time
}

// async runs a command on c in a goroutine; its reply arrives on the
// channel.
func async(c *redis.Client, args ...any) <-chan reply {
	ch := make(chan reply, 1)
	sent := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		v, err := c.Do(ctx, args...).Result()
		ch <- reply{val: v, err: err, sent: sent, done: time.Now()}
	}()
	return ch
}

// await takes the reply of an async command, failing after 15 s.
func await(t testing.TB, ch <-chan reply, what string) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("no reply to %s within 15s", what)
		return reply{}
	}
}

// pending reports whether an async command has not been answered yet.
func pending(ch <-chan reply) (reply, bool) {
	select {
	case r := <-ch:
		return r, false
	default:
		return reply{}, true
	}
}

func replyInt(t testing.TB, r reply, what string) int64 {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v, want an integer", what, r.err)
	}
	i, ok := r.val.(int64)
	if !ok {
		t.Fatalf("%s: %T %v, want an integer", what, r.val, r.val)
	}
	return i
}

// appliedIndex is INFO raft's raft_applied_index.
func appliedIndex(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	return infoInt(t, infoRaft(t, c), "raft_applied_index")
}
