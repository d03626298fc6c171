//go:build fencednext

package lockstate

// This file builds a binary of a pretend next release, for the rolling
// upgrade test (test/upgrade_test.go): it knows cluster version 4, whose
// one change is that INCR adds 2. The change is meant to be visible: to a
// client, which sees the step, and to RAFT.HASH, which would tell apart a
// replica that applied an INCR with the other version's semantics.

// MaxVersion is the highest cluster version this binary knows.
const MaxVersion = 4

// incrStep is what INCR adds: 2 from cluster version 4 on.
func (s *State) incrStep() int64 {
	if s.Version() >= 4 {
		return 2
	}
	return 1
}
