package lockstate

import (
	"testing"

	"github.com/fenced/fenced/reply"
)

// TestFenceOf: FENCE's answer, from the one place both the command and a
// script's FENCE take it: a held lock's token, else a plain key's creating
// index, else Null; the owner form never falls back to a key.
func TestFenceOf(t *testing.T) {
	s := New(Config{})
	var index uint64
	var now int64
	step := func(e Entry) Result {
		t.Helper()
		index++
		now += 10
		e.Time = now
		r := s.Step(index, e)
		if r.Err != nil {
			t.Fatalf("%+v: %v", e, r.Err)
		}
		return r
	}
	// scriptFence is FENCE name from inside a script, applied as an entry.
	scriptFence := func(name string) reply.Value {
		t.Helper()
		return step(Entry{Op: OpExec, Args: []string{"EVAL", "return redis.call('FENCE', KEYS[1])", "1", name}}).Reply
	}
	type want struct {
		null bool
		tok  int64
		err  error
	}
	check := func(what string, got Result, w want) {
		t.Helper()
		if got.Null != w.null || got.Int != w.tok || got.Err != w.err {
			t.Errorf("%s = %+v, want %+v", what, got, w)
		}
	}
	// bothSay checks the command's no-owner form and the script's FENCE.
	bothSay := func(name string, w want) {
		t.Helper()
		check("FenceOf("+name+")", s.FenceOf(name, "", "", false, now), w)
		v := scriptFence(name)
		switch {
		case w.null && v.Kind != reply.KindNull, !w.null && (v.Kind != reply.KindInt || v.Int != w.tok):
			t.Errorf("script FENCE %s = %+v, want %+v", name, v, w)
		}
	}

	step(Entry{Op: OpSessionOpen, Session: "s", TTL: 1 << 40})
	bothSay("free", want{null: true})

	step(Entry{Op: OpExec, Args: []string{"SET", "k", "v"}})
	created := int64(index)
	bothSay("k", want{tok: created})
	step(Entry{Op: OpExec, Args: []string{"SET", "k", "w"}}) // an overwrite keeps the key
	bothSay("k", want{tok: created})
	check("FenceOf(k, s)", s.FenceOf("k", "s", "", true, now), want{err: ErrNotOwner})

	step(Entry{Op: OpExec, Args: []string{"SET", "short", "v", "PX", "15"}})
	bothSay("short", want{tok: int64(index)})
	now += 100 // the key's deadline has passed at the time of the read
	check("FenceOf(short) after its deadline", s.FenceOf("short", "", "", false, now), want{null: true})

	step(Entry{Op: OpFlock, Lock: "l", Session: "s", Wait: NoWait})
	token := int64(index)
	bothSay("l", want{tok: token})
	check("FenceOf(l, s)", s.FenceOf("l", "s", "", true, now), want{tok: token})
	check("FenceOf(l, s, other)", s.FenceOf("l", "s", "other", true, now), want{err: ErrNotOwner})
	check("FenceOf(l, nosuch)", s.FenceOf("l", "nosuch", "", true, now), want{err: ErrNoSession})

	step(Entry{Op: OpFunlock, Lock: "l", Session: "s"})
	bothSay("l", want{null: true})
	check("FenceOf(l, s) after FUNLOCK", s.FenceOf("l", "s", "", true, now), want{err: ErrNotOwner})
}

// TestKeyFenceIfEq: a string key's creating index while it holds exactly
// the value, and nothing for another value, a hash, a fenced lock's name or
// a key that expired; a key set again after it expired has a new index.
func TestKeyFenceIfEq(t *testing.T) {
	s := New(Config{})
	var index uint64
	var now int64
	step := func(args ...string) {
		t.Helper()
		index++
		now += 10
		s.Step(index, Entry{Op: OpExec, Time: now, Args: args})
	}
	step("SET", "k", "v", "PX", "100")
	created := int64(index)
	if tok, ok := s.KeyFenceIfEq("k", "v", now); !ok || tok != created {
		t.Errorf("FENCE k IFEQ v = %d %v, want %d", tok, ok, created)
	}
	for _, c := range []struct{ key, value string }{{"k", "V"}, {"k", ""}, {"none", "v"}} {
		if tok, ok := s.KeyFenceIfEq(c.key, c.value, now); ok {
			t.Errorf("FENCE %s IFEQ %q = %d, want none", c.key, c.value, tok)
		}
	}
	if _, ok := s.KeyFenceIfEq("k", "v", now+200); ok {
		t.Error("an expired key answered")
	}
	step("HSET", "h", "f", "v")
	if _, ok := s.KeyFenceIfEq("h", "v", now); ok {
		t.Error("a hash answered")
	}
	index++
	now += 10
	s.Step(index, Entry{Op: OpSessionOpen, Time: now, Session: "s", TTL: 10000})
	index++
	now += 10
	s.Step(index, Entry{Op: OpFlock, Time: now, Session: "s", Lock: "l", Wait: NoWait})
	if _, ok := s.KeyFenceIfEq("l", "", now); ok {
		t.Error("a fenced lock's name answered")
	}
	now += 200 // k's PX has passed: SET makes it anew
	step("SET", "k", "v")
	if tok, ok := s.KeyFenceIfEq("k", "v", now); !ok || tok != int64(index) {
		t.Errorf("after SET again: %d %v, want the new index %d", tok, ok, index)
	}
}
