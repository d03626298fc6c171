package lockstate

import (
	"cmp"
	"slices"
)

// joinNode is OpNodeJoin: it records member e.Node and its addresses. An id
// that was removed stays removed. Result.Int is 1 when the member is new.
func (s *State) joinNode(e Entry) Result {
	if e.Node == "" || e.RaftAddr == "" || e.Addr == "" {
		return Result{Err: ErrBadEntry}
	}
	m := s.members[e.Node]
	switch {
	case m == nil:
		s.members[e.Node] = &Member{ID: e.Node, RaftAddr: e.RaftAddr, Addr: e.Addr}
		s.markDirty(memberKey(e.Node), nil)
		return Result{Int: 1}
	case m.Removed:
		return Result{Err: ErrNodeRemoved}
	case m.RaftAddr != e.RaftAddr || m.Addr != e.Addr:
		m.RaftAddr, m.Addr = e.RaftAddr, e.Addr
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
