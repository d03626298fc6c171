package lockstate

import (
	"slices"
	"sort"
)

// remember stores r as the answer to (ss, req), so a retry of the request
// gets it again instead of acting twice. ErrNoSession is never stored: it
// changes nothing, and the session's memory is gone with it anyway. Each
// session keeps its last cfg.ReqMemory answers, oldest evicted first.
func (s *State) remember(ss *session, req string, r Result) {
	if req == "" || r.Err == ErrNoSession {
		return
	}
	k := sessReq{ss.id, req}
	if old := s.memos[k]; old != nil {
		s.forget(old) // only when a client reused a REQ across commands
	}
	m := &memo{session: ss.id, req: req, seq: ss.nextSeq, err: r.Err, null: r.Null, int: r.Int}
	ss.nextSeq++
	s.markDirty(sessionKey(ss.id), &ss.cost)
	rf := s.refsOf(ss.id)
	rf.memos = append(rf.memos, m)
	s.memos[k] = m
	s.markDirty(memoKey(m.session, m.seq), &m.cost)
	for len(rf.memos) > s.cfg.ReqMemory {
		s.forget(rf.memos[0])
	}
}

// forget drops one memo.
func (s *State) forget(m *memo) {
	if rf := s.refs[m.session]; rf != nil {
		i := 0 // the oldest, evicted by remember: the common case, without a search
		if len(rf.memos) == 0 || rf.memos[0] != m {
			i = sort.Search(len(rf.memos), func(i int) bool { return rf.memos[i].seq >= m.seq })
		}
		switch {
		case i == len(rf.memos) || rf.memos[i] != m:
		case i == 0:
			rf.memos[0] = nil
			rf.memos = rf.memos[1:] // the FIFO case: no copying
		default:
			rf.memos = slices.Delete(rf.memos, i, i+1)
		}
	}
	delete(s.memos, sessReq{m.session, m.req})
	s.markDirty(memoKey(m.session, m.seq), &m.cost)
}
