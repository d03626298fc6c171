package lockstate

import (
	"cmp"
	"fmt"
	"slices"
)

// The cluster version names the semantics with which every replica applies
// entries: what an entry means, which entry formats the leader may write,
// and the script cost model. A binary knows the versions up to MaxVersion
// and applies each entry with the cluster's version, never with its own
// newest, so that nodes running different releases agree during a rolling
// upgrade (etcd's cluster version plays the same part).
//
// The cluster moves up one way only: every member announces the
// MaxVersion of its binary in its OpNodeJoin (server: announceSelf), and
// the leader proposes OpSetVersion once every member of the Raft
// configuration has announced one that knows a higher version. The state
// machine checks the same condition against the member table when it
// applies the entry, so the switch happens at one log index on every
// replica, and only once no live member would have to guess.
//
// Version 1 is the semantics of every release before the gate, so a state
// without a version record is at version 1, and a member that never
// announced a version counts as 1.

// versionKey holds the cluster version once it is above 1 (so that a state
// never raised keeps the records, and RAFT.HASH, it had before).
const versionKey = "m/version"

// Version returns the cluster version the state applies entries with.
func (s *State) Version() int64 { return max(s.version, 1) }

// maxVersion is the highest version this replica knows.
func (s *State) maxVersion() int64 { return cmp.Or(s.cfg.MaxVersion, MaxVersion) }

// setVersion is OpSetVersion.
func (s *State) setVersion(e Entry) Result {
	switch {
	case e.Version <= s.Version():
		return Result{}
	case e.Version > s.maxVersion():
		return Result{Err: ErrVersionUnknown}
	}
	if id, _ := s.behind(e.Version); id != "" {
		return Result{Err: ErrVersionBehind}
	}
	s.version = e.Version
	s.markDirty(versionKey, nil)
	return Result{Int: e.Version}
}

// behind returns a live member whose binary does not know version v, and
// the version it announced; "" when there is none.
func (s *State) behind(v int64) (string, int64) {
	for _, m := range s.Members() {
		if !m.Removed && max(m.Version, 1) < v {
			return m.ID, max(m.Version, 1)
		}
	}
	return "", 0
}

// NextVersion returns the version the leader may propose with
// OpSetVersion: the highest version that this binary and every member of
// the Raft configuration (ids) know, when it is above the cluster's. Else
// it returns 0 and why the cluster stays where it is ("" when it already
// runs the newest version this binary knows).
func (s *State) NextVersion(ids []string) (int64, string) {
	target := s.maxVersion()
	for _, id := range slices.SortedFunc(slices.Values(ids), cmp.Compare) {
		m := s.members[id]
		if m == nil || m.Removed {
			return 0, fmt.Sprintf("member %s has not announced its version", id)
		}
		target = min(target, max(m.Version, 1))
	}
	if target <= s.Version() {
		return 0, ""
	}
	// A live member outside the configuration blocks the switch too, as
	// setVersion checks every live member.
	if id, v := s.behind(target); id != "" {
		return 0, fmt.Sprintf("member %s knows cluster version %d only", id, v)
	}
	return target, ""
}
