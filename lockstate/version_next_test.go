//go:build fencednext

package lockstate

import "testing"

// The pretend next release's one change (version_next.go) takes effect at
// the OpSetVersion that moves the cluster to 4, not before: not at 1, 2 or
// 3 (3 is the version this release shares with the current one).
func TestVersionNextIncr(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 4}, Result{Int: 1}, "set n/n1")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 1 {
		t.Fatalf("INCR at version 1 = %+v", got.Reply)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 2 {
		t.Fatalf("INCR at version 2 = %+v", got.Reply)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 3 {
		t.Fatalf("INCR at version 3 = %+v", got.Reply)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 4}, Result{Int: 4}, "set m/version")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 5 {
		t.Fatalf("INCR at version 4 = %+v", got.Reply)
	}
}
