package lockstate

import (
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// TestSortReplyBound: SORT's GETs may fetch a value per element and per
// pattern, so what they gather is bounded (MaxSortReply) and a SORT past it
// is refused, stored or not, changing nothing; below it the same SORT runs.
func TestSortReplyBound(t *testing.T) {
	s := New(Config{})
	w := newMemWriter()
	index := uint64(0)
	apply := func(e Entry) reply.Value {
		t.Helper()
		index++
		r, err := s.Apply(index, e, w)
		if err != nil {
			t.Fatal(err)
		}
		return r.Reply
	}
	apply(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion})
	apply(Entry{Op: OpSetVersion, Version: 3})
	member := strings.Repeat("m", 100<<10)
	apply(Entry{Op: OpExec, Time: 10, Args: []string{"SADD", "s", member}})
	sortGets := func(n int, store bool) []string {
		args := []string{"SORT", "s", "BY", "nosort"}
		for range n {
			args = append(args, "GET", "#")
		}
		if store {
			args = append(args, "STORE", "dst")
		}
		return args
	}
	ro := sortGets(300, false)
	ro[0] = "SORT_RO"
	if v := s.Exec(ro, 10); v.Kind != reply.KindArray || len(v.Elems) != 300 {
		t.Fatalf("300 GETs of a 100 KiB member (30 MiB): %v, want them all", v.Kind)
	}
	for _, store := range []bool{false, true} {
		before := s.Hash()
		v := apply(Entry{Op: OpExec, Time: 10, Args: sortGets(400, store)})
		if v.Kind != reply.KindError || !strings.Contains(v.Str, "larger than 32 MiB") {
			t.Errorf("400 GETs of a 100 KiB member (40 MiB), store %v: %v %.60s, want the bound's error", store, v.Kind, v.Str)
		}
		if s.Hash() != before {
			t.Errorf("a refused SORT (store %v) changed the state", store)
		}
	}
}
