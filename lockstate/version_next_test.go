//go:build fencednext

package lockstate

import "testing"

// The pretend next release's one change (version_next.go) takes effect at
// the OpSetVersion that moves the cluster to 3, not before: not at 1, and
// not at 2, the version this release shares with the current one.
func TestVersionNextIncr(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: 3}, Result{Int: 1}, "set n/n1")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 1 {
		t.Fatalf("INCR at version 1 = %+v", got.Reply)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 2}, Result{Int: 2}, "set m/version")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 2 {
		t.Fatalf("INCR at version 2 = %+v", got.Reply)
	}
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	if got := a.apply(Entry{Op: OpExec, Args: []string{"INCR", "c"}}); got.Reply.Int != 4 {
		t.Fatalf("INCR at version 3 = %+v", got.Reply)
	}
}
