package lockstate

import (
	"fmt"
	"testing"

	"github.com/fenced/fenced/reply"
)

// Each draw of a set within one entry takes a seed of its own: a script's
// four SRANDMEMBERs of a 64-member set are not one member four times (they
// were, every draw seeded by the entry's index alone), and its two SPOPs
// take two members; the same entries on another state draw the same.
func TestSetDrawsInOneEntryDiffer(t *testing.T) {
	run := func() (draws, pops reply.Value) {
		a := newApplier(t)
		a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
		a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
		args := []string{"SADD", "s"}
		for i := range 64 {
			args = append(args, fmt.Sprintf("m%02d", i))
		}
		a.apply(Entry{Op: OpExec, Args: args})
		const four = "return {redis.call('SRANDMEMBER', KEYS[1]), redis.call('SRANDMEMBER', KEYS[1]), " +
			"redis.call('SRANDMEMBER', KEYS[1]), redis.call('SRANDMEMBER', KEYS[1])}"
		draws = a.apply(Entry{Op: OpExec, Args: []string{"EVAL", four, "1", "s"}}).Reply
		const two = "return {redis.call('SPOP', KEYS[1]), redis.call('SPOP', KEYS[1]), redis.call('SCARD', KEYS[1])}"
		pops = a.apply(Entry{Op: OpExec, Args: []string{"EVAL", two, "1", "s"}}).Reply
		return draws, pops
	}
	draws, pops := run()
	if len(draws.Elems) != 4 {
		t.Fatalf("four SRANDMEMBERs: %+v", draws)
	}
	seen := map[string]bool{}
	for _, e := range draws.Elems {
		seen[e.Str] = true
	}
	if len(seen) == 1 {
		t.Errorf("four SRANDMEMBERs in one script all drew %q", draws.Elems[0].Str)
	}
	if len(pops.Elems) != 3 || pops.Elems[0].Str == pops.Elems[1].Str || pops.Elems[2].Int != 62 {
		t.Errorf("two SPOPs then SCARD: %+v, want two members and 62", pops)
	}
	if d2, p2 := run(); fmt.Sprint(d2, p2) != fmt.Sprint(draws, pops) {
		t.Errorf("the same entries drew %v %v, then %v %v", draws, pops, d2, p2)
	}
}
