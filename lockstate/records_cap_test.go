package lockstate

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// A hash, list or set record never grows past MaxRecord: the push, HSET or SADD that
// would take it there is refused and changes nothing; a pop or HDEL makes
// room again; the bytes counted survive a reload; and the largest record
// accepted encodes within what raftstore's snapshot reader takes
// (2 x MaxRecord).
func TestRecordCap(t *testing.T) {
	s := New(Config{})
	w := newMemWriter()
	index := uint64(0)
	exec := func(args ...string) reply.Value {
		t.Helper()
		index++
		r, err := s.Apply(index, Entry{Op: OpExec, Time: 10, Args: args}, w)
		if err != nil {
			t.Fatal(err)
		}
		return r.Reply
	}
	// Sets came with cluster version 3.
	for _, e := range []Entry{{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, {Op: OpSetVersion, Version: 3}} {
		index++
		if _, err := s.Apply(index, e, w); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(v reply.Value) bool {
		return v.Kind == reply.KindError && strings.Contains(v.Str, "would grow past 4 MiB")
	}
	big := strings.Repeat("v", 128<<10)
	for _, c := range []struct {
		name   string
		grow   func(i int) []string
		shrink []string
	}{
		{"list", func(int) []string { return []string{"RPUSH", "l", big} }, []string{"LPOP", "l"}},
		{"hash", func(i int) []string {
			return []string{"HSET", "h", strings.Repeat("f", 8) + string(rune('a'+i%26)) + strings.Repeat("x", i/26), big}
		},
			[]string{"HDEL", "h", "ffffffffa"}},
		{"set", func(i int) []string { return []string{"SADD", "s", strconv.Itoa(i) + big} }, []string{"SREM", "s", "0" + big}},
	} {
		n := 0
		for ; n < 64; n++ {
			if v := exec(c.grow(n)...); refused(v) {
				break
			} else if v.Kind == reply.KindError {
				t.Fatalf("%s: %v", c.name, v.Str)
			}
		}
		if n == 64 || n < 28 {
			t.Fatalf("%s: %d elements of 128 KiB accepted, want the refusal near 4 MiB", c.name, n)
		}
		before := s.Hash()
		if v := exec(c.grow(n)...); !refused(v) {
			t.Fatalf("%s: the element past the cap: %+v", c.name, v)
		}
		if s.Hash() != before {
			t.Fatalf("%s: a refused write changed the state", c.name)
		}
		var rec []byte
		_ = s.Records(func(k, v []byte) error {
			if len(v) > len(rec) {
				rec = append(rec[:0], v...)
			}
			return nil
		})
		if len(rec) > 2*MaxRecord || len(rec) < MaxRecord-(256<<10) {
			t.Fatalf("%s: the largest record is %d bytes, want near MaxRecord and within 2 x MaxRecord", c.name, len(rec))
		}
		exec(c.shrink...)
		if v := exec(c.grow(n)...); refused(v) {
			t.Fatalf("%s: no room after %v", c.name, c.shrink)
		}
		// The count is rebuilt by Load: a reloaded state refuses alike.
		r, err := reload(s)
		if err != nil {
			t.Fatal(err)
		}
		s, w = r, newMemWriter()
		if v := exec(c.grow(n + 1)...); !refused(v) {
			t.Fatalf("%s: after a reload, the element past the cap: %+v", c.name, v)
		}
	}
}

// One user's open sessions are capped (Config.MaxSessionsPerUser): at the
// cap the next SESSION.OPEN is refused and nothing changes, other users
// are not affected, an ended session makes room, and the count survives a
// reload.
func TestSessionsPerUserCap(t *testing.T) {
	s := New(Config{MaxSessionsPerUser: 2})
	index := uint64(0)
	open := func(user, id string) error {
		t.Helper()
		index++
		r, err := s.Apply(index, Entry{Op: OpSessionOpen, Time: 10, Session: id, User: user, TTL: 60000}, newMemWriter())
		if err != nil {
			t.Fatal(err)
		}
		return r.Err
	}
	for _, id := range []string{"a1", "a2"} {
		if err := open("alice", id); err != nil {
			t.Fatalf("session %s at the cap: %v", id, err)
		}
	}
	before := s.Hash()
	if err := open("alice", "a3"); err != ErrTooManyUserSessions {
		t.Fatalf("alice's third session: %v, want ErrTooManyUserSessions", err)
	}
	if s.Hash() != before {
		t.Fatal("the refused SESSION.OPEN changed the state")
	}
	if err := open("bob", "b1"); err != nil {
		t.Fatalf("bob's session: %v", err)
	}
	index++
	if _, err := s.Apply(index, Entry{Op: OpSessionKill, Time: 10, Session: "a1", User: "alice"}, newMemWriter()); err != nil {
		t.Fatal(err)
	}
	if err := open("alice", "a3"); err != nil {
		t.Fatalf("alice after ending one: %v", err)
	}
	r, err := reload(s)
	if err != nil {
		t.Fatal(err)
	}
	s = r
	if err := open("alice", "a4"); err != ErrTooManyUserSessions {
		t.Fatalf("after a reload, alice's third session: %v, want ErrTooManyUserSessions", err)
	}
}
