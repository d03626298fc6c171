package lockstate

import (
	"cmp"
	"slices"
)

// joinNode is OpNodeJoin: it records member e.Node, its addresses and the
// cluster version its binary knows. An id that was removed stays removed. Result.Int is 1 when the member is new.
func (s *State) joinNode(e Entry) Result {
	if e.Node == "" || e.RaftAddr == "" || e.Addr == "" {
		return Result{Err: ErrBadEntry}
	}
	m := s.members[e.Node]
	switch {
	case e.Version < 0:
		return Result{Err: ErrBadEntry}
	case m == nil:
		s.members[e.Node] = &Member{ID: e.Node, RaftAddr: e.RaftAddr, Addr: e.Addr, Version: e.Version}
		s.markDirty(memberKey(e.Node), nil)
		return Result{Int: 1}
	case m.Removed:
		return Result{Err: ErrNodeRemoved}
	}
	// A join that does not say its version (RAFT.JOIN, proposed for the
	// node by the leader) keeps the one the node announced.
	v := cmp.Or(e.Version, m.Version)
	if m.RaftAddr != e.RaftAddr || m.Addr != e.Addr || m.Version != v {
		m.RaftAddr, m.Addr, m.Version = e.RaftAddr, e.Addr, v
		s.markDirty(memberKey(e.Node), nil)
	}
	return Result{}
}

// removeNode is OpNodeRemove: it marks member e.Node removed, keeping its
// record (and its last addresses) so that the id is never reused. An id
// never seen is recorded as removed too. Result.Int is 1 when the member
// was live.
func (s *State) removeNode(e Entry) Result {
	if e.Node == "" {
		return Result{Err: ErrBadEntry}
	}
	m := s.members[e.Node]
	switch {
	case m == nil:
		s.members[e.Node] = &Member{ID: e.Node, Removed: true}
		s.markDirty(memberKey(e.Node), nil)
		return Result{}
	case m.Removed:
		return Result{}
	}
	m.Removed = true
	s.markDirty(memberKey(e.Node), nil)
	return Result{Int: 1}
}

// Member returns the record of member id, removed or not.
func (s *State) Member(id string) (Member, bool) {
	m := s.members[id]
	if m == nil {
		return Member{}, false
	}
	return *m, true
}

// Members returns every member ever recorded, removed ones included,
// sorted by ID.
func (s *State) Members() []Member {
	ms := make([]Member, 0, len(s.members))
	for _, m := range s.members {
		ms = append(ms, *m)
	}
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return ms
}
