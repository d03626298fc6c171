package lockstate

import (
	"slices"
	"testing"
)

// TestChanges: every entry reports the plain keys and lock names it
// modified, once each, in the order it first changed them: writes,
// deletes, expiry at the entry whose time passes the deadline, a script's
// writes with the point of its first read, a lock granted and released;
// reads, refused writes and writes to nothing report none.
func TestChanges(t *testing.T) {
	c := newExecCheck()
	step := func(e Entry) *Changes {
		t.Helper()
		r, err := c.apply(e)
		if err != nil {
			t.Fatal(err)
		}
		return r.Changes
	}
	exec := func(args ...string) *Changes { return step(Entry{Op: OpExec, Args: args}) }
	want := func(what string, got *Changes, keys []string, readAt int) {
		t.Helper()
		if keys == nil && readAt < 0 {
			if got != nil {
				t.Errorf("%s: changes %+v, want none", what, *got)
			}
			return
		}
		if got == nil {
			t.Fatalf("%s: no changes, want %q", what, keys)
		}
		if !slices.Equal(got.Keys, keys) || got.ReadAt != readAt || got.Flushed {
			t.Errorf("%s: keys %q read at %d (flushed %v), want %q at %d", what, got.Keys, got.ReadAt, got.Flushed, keys, readAt)
		}
	}
	want("SET", exec("SET", "a", "1"), []string{"a"}, -1)
	got := exec("MSET", "c", "1", "b", "2", "c", "3")
	want("MSET", got, []string{"c", "b"}, -1)
	if got.Op != OpExec || !slices.Equal(got.Args, []string{"MSET", "c", "1", "b", "2", "c", "3"}) {
		t.Errorf("MSET: changes name op %d args %q", got.Op, got.Args)
	}
	want("GET", exec("GET", "a"), nil, -1)
	want("SET NX on a taken key", exec("SET", "a", "2", "NX"), nil, -1)
	want("DEL of nothing", exec("DEL", "zz"), nil, -1)
	want("DEL", exec("DEL", "b", "zz", "a"), []string{"b", "a"}, -1)
	want("HSET", exec("HSET", "h", "f", "v"), []string{"h"}, -1)
	want("LPUSH", exec("LPUSH", "l", "x"), []string{"l"}, -1)
	want("PEXPIRE", exec("PEXPIRE", "c", "100"), []string{"c"}, -1)
	// The key expires in the first entry whose time is past its deadline.
	c.time += 50
	want("tick before the deadline", step(Entry{Op: OpTick}), nil, -1)
	c.time += 51
	want("tick past the deadline", step(Entry{Op: OpTick}), []string{"c"}, -1)
	// A script: a write before its first read, then writes after it.
	src := "redis.call('SET', KEYS[1], 'x'); redis.call('GET', KEYS[2]); redis.call('SET', KEYS[2], 'y'); redis.call('DEL', KEYS[1]); return 1"
	want("script", exec("EVAL", src, "2", "s1", "s2"), []string{"s1", "s2"}, 1)
	want("script that only reads", exec("EVAL", "return redis.call('GET', KEYS[1])", "1", "s2"), []string{}, 0)
	want("script that only writes", exec("EVAL", "return redis.call('SET', KEYS[1], 'z')", "1", "s3"), []string{"s3"}, -1)
	want("script error before anything", exec("EVAL", "return redis.call('NOPE')", "0"), nil, -1)
	// A fenced lock is a key of the keyspace too.
	r, err := c.apply(Entry{Op: OpFlock, Lock: "L", Session: "s", Wait: NoWait})
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	want("FLOCK", r.Changes, []string{"L"}, -1)
	want("FUNLOCK", step(Entry{Op: OpFunlock, Lock: "L", Session: "s"}), []string{"L"}, -1)
	// A flush reports itself, not the keys it deleted.
	c.s.keyspaceFlushed()
	r, _ = c.apply(Entry{Op: OpTick})
	if r.Changes == nil || !r.Changes.Flushed || len(r.Changes.Keys) != 0 {
		t.Errorf("flush: changes %+v, want Flushed and no keys", r.Changes)
	}
}

// TestChangesInEvents: Events gathers the entries' changes in log order.
func TestChangesInEvents(t *testing.T) {
	var ev Events
	a, b := &Changes{Keys: []string{"a"}}, &Changes{Keys: []string{"b"}}
	ev.Add(&Result{Changes: a})
	ev.Add(&Result{})
	ev.Add(&Result{Changes: b})
	if len(ev.Changes) != 2 || ev.Changes[0] != a || ev.Changes[1] != b {
		t.Errorf("events changes %v, want a then b", ev.Changes)
	}
}
