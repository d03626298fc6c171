package lockstate

import (
	"fmt"
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
	// want checks the keys and the points of the script's reads (none:
	// nil); an OpExec always has Changes, other entries only with keys.
	want := func(what string, got *Changes, keys []string, reads ...int) {
		t.Helper()
		if got == nil {
			if keys != nil || reads != nil {
				t.Fatalf("%s: no changes, want %q", what, keys)
			}
			return
		}
		var at []int
		for _, r := range got.Reads {
			if r.Keys != nil {
				t.Errorf("%s: a script's read names keys %q", what, r.Keys)
			}
			at = append(at, r.At)
		}
		if !slices.Equal(got.Keys, keys) || !slices.Equal(at, reads) || got.Flushed {
			t.Errorf("%s: keys %q reads at %v (flushed %v), want %q at %v", what, got.Keys, at, got.Flushed, keys, reads)
		}
	}
	want("SET", exec("SET", "a", "1"), []string{"a"})
	got := exec("MSET", "c", "1", "b", "2", "c", "3")
	want("MSET", got, []string{"c", "b"})
	if got.Op != OpExec || !slices.Equal(got.Args, []string{"MSET", "c", "1", "b", "2", "c", "3"}) {
		t.Errorf("MSET: changes name op %d args %q", got.Op, got.Args)
	}
	want("a failed SET NX", exec("SET", "a", "x", "NX", "GET", "GET"), nil)
	want("SET NX on a taken key", exec("SET", "a", "2", "NX"), nil)
	want("DEL of nothing", exec("DEL", "zz"), nil)
	want("DEL", exec("DEL", "b", "zz", "a"), []string{"b", "a"})
	want("HSET", exec("HSET", "h", "f", "v"), []string{"h"})
	want("LPUSH", exec("LPUSH", "l", "x"), []string{"l"})
	want("PEXPIRE", exec("PEXPIRE", "c", "100"), []string{"c"})
	// The key expires in the first entry whose time is past its deadline.
	c.time += 50
	want("tick before the deadline", step(Entry{Op: OpTick}), nil)
	c.time += 51
	want("tick past the deadline", step(Entry{Op: OpTick}), []string{"c"})
	// A script: a write before its first read, then writes after it.
	src := "redis.call('SET', KEYS[1], 'x'); redis.call('GET', KEYS[2]); redis.call('SET', KEYS[2], 'y'); redis.call('DEL', KEYS[1]); return 1"
	want("script", exec("EVAL", src, "2", "s1", "s2"), []string{"s1", "s2"}, 1)
	src = "redis.call('GET', KEYS[1]); redis.call('EXISTS', KEYS[1]); redis.call('SET', KEYS[1], 'y'); redis.call('GET', KEYS[1]); return 1"
	want("script reading twice, writing, reading", exec("EVAL", src, "1", "s1"), []string{"s1"}, 0, 1)
	want("script that only reads", exec("EVAL", "return redis.call('GET', KEYS[1])", "1", "s2"), nil, 0)
	want("script that only writes", exec("EVAL", "return redis.call('SET', KEYS[1], 'z')", "1", "s3"), []string{"s3"})
	want("script error before anything", exec("EVAL", "return redis.call('NOPE')", "0"), nil)
	// A fenced lock is a key of the keyspace too.
	r, err := c.apply(Entry{Op: OpFlock, Lock: "L", Session: "s", Wait: NoWait})
	if err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	want("FLOCK", r.Changes, []string{"L"})
	want("FUNLOCK", step(Entry{Op: OpFunlock, Lock: "L", Session: "s"}), []string{"L"})
	want("a tick that changes nothing", step(Entry{Op: OpTick}), nil)
	// A flush reports itself, not the keys it deleted.
	exec("SET", "f", "1")
	c.s.track.applying = true
	c.s.noteChange(kvRecKey("f"))
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

// visible is what a client can read of the model's keyspace: each plain
// key's value and deadline, each held lock's holder, count and token.
func (m *model) visible() map[string]string {
	out := make(map[string]string, len(m.keys)+len(m.locks))
	for name, k := range m.keys {
		out[name] = fmt.Sprintf("key %s %v %d", k.look(), k.ttl, k.deadline)
	}
	for name, l := range m.locks {
		if l.holder != "" {
			out[name] = fmt.Sprintf("lock %s/%s %d %d", l.holder, l.owner, l.count, l.token)
		}
	}
	return out
}

// checkChanges checks an entry's Changes against the model, by the
// model's own keyspace before and after it: every name whose visible state
// changed is listed (an extra one, a write that changed nothing visible, is
// allowed, as Redis invalidates on any write), and none twice; an entry
// that flushed the keyspace covers every change.
func checkChanges(before, after map[string]string, ch *Changes) error {
	listed := map[string]bool{}
	if ch != nil {
		for _, k := range ch.Keys {
			if listed[k] {
				return fmt.Errorf("changes list %q twice: %q", k, ch.Keys)
			}
			listed[k] = true
		}
		if ch.Flushed {
			return nil // the whole keyspace changed: a client drops all it caches
		}
	}
	for name, v := range before {
		if after[name] != v && !listed[name] {
			return fmt.Errorf("%q changed (%s -> %s) but the changes %v miss it", name, v, after[name], ch)
		}
	}
	for name, v := range after {
		if _, ok := before[name]; !ok && !listed[name] {
			return fmt.Errorf("%q appeared (%s) but the changes %v miss it", name, v, ch)
		}
	}
	return nil
}
