package lockstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/RaduBerinde/btreemap"
	"github.com/fenced/fenced/script"
)

// memWriter is a Writer that keeps the records in a map, as Pebble would.
type memWriter struct {
	m map[string][]byte
}

func newMemWriter() *memWriter { return &memWriter{m: make(map[string][]byte)} }

func (w *memWriter) Set(k, v []byte) error {
	w.m[string(k)] = bytes.Clone(v)
	return nil
}

func (w *memWriter) Delete(k []byte) error {
	delete(w.m, string(k))
	return nil
}

// sameRecords checks that what Apply wrote through w is exactly Records.
func sameRecords(s *State, w *memWriter) error {
	n := 0
	err := s.Records(func(k, v []byte) error {
		n++
		got, ok := w.m[string(k)]
		if !ok {
			return fmt.Errorf("record %q in Records but never written", k)
		}
		if !bytes.Equal(got, v) {
			return fmt.Errorf("record %q: written %x, Records %x", k, got, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n != len(w.m) {
		var extra []string
		for k := range w.m {
			if _, ok := s.lookup(nil, k); !ok {
				extra = append(extra, fmt.Sprintf("%q", k))
			}
		}
		slices.Sort(extra)
		return fmt.Errorf("written but not in Records (missing Delete): %v", extra)
	}
	return nil
}

// reload builds a new State from s's Records, as raftstore does at start-up.
func reload(s *State) (*State, error) {
	t := New(s.cfg)
	var prev []byte
	err := s.Records(func(k, v []byte) error {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("Records out of order: %q then %q", prev, k)
		}
		prev = bytes.Clone(k)
		return t.Load(k, v)
	})
	if err != nil {
		return nil, err
	}
	if t.Hash() != s.Hash() {
		return nil, errors.New("reloaded state hashes differently")
	}
	if t.Used() != s.Used() {
		return nil, fmt.Errorf("reloaded state counts %d bytes, the original %d", t.Used(), s.Used())
	}
	return t, nil
}

// recount is the state's size from scratch, by memory.go's rule but not
// its code: every record its key, its value and the overhead, except the
// keyspace's, which count their elements from the keys' contents (not
// kvKey.size) instead of their encoding.
func recount(s *State) int64 {
	var n int64
	_ = s.Records(func(k, v []byte) error {
		name, ok := bytes.CutPrefix(k, []byte(prefixKV))
		if !ok {
			n += int64(len(k) + len(v) + recordOverhead)
			return nil
		}
		kv := s.kv[string(name)]
		n += int64(len(k) + kvHeader + recordOverhead)
		if kv.mod != 0 { // the mod index a key carries from version 3
			n += 8
		}
		switch kv.typ {
		case kvString:
			n += int64(len(kv.str))
		case kvHash:
			for f, x := range kv.hash {
				n += int64(len(f) + len(x) + 2*binary.MaxVarintLen64)
			}
		case kvList:
			for _, e := range kv.list {
				n += int64(len(e) + binary.MaxVarintLen64)
			}
		case kvSet:
			for m := range kv.hash {
				n += int64(len(m) + binary.MaxVarintLen64)
			}
		}
		return nil
	})
	return n
}

// checkInvariants verifies that the indexes agree with the records and that
// the bounds and structural rules hold. It returns the first violation.
func checkInvariants(s *State) error {
	if n := recount(s); s.Used() != n {
		return fmt.Errorf("state counts %d bytes, its records %d", s.Used(), n)
	}
	ttls := 0
	for _, k := range s.kv {
		if k.ttl {
			ttls++
		}
	}
	if keys, expires := s.KeyspaceCounts(); expires != ttls || keys != len(s.kv)+len(s.locks) {
		return fmt.Errorf("KeyspaceCounts %d, %d; the keys say %d, %d", keys, expires, len(s.kv)+len(s.locks), ttls)
	}
	type so struct{ session, owner string }
	held := map[string]map[string]bool{}
	waiting := map[string]map[string]int{}
	nReq, nIDs, nWaiters, nTimers := 0, 0, 0, len(s.sessions)
	for name, l := range s.locks {
		if l.name != name {
			return fmt.Errorf("lock %q named %q", name, l.name)
		}
		if l.count < 1 {
			return fmt.Errorf("lock %q held with count %d", name, l.count)
		}
		if l.limit > 0 && l.count > l.limit {
			return fmt.Errorf("lock %q count %d over limit %d", name, l.count, l.limit)
		}
		if s.sessions[l.session] == nil {
			return fmt.Errorf("lock %q held by ended session %q", name, l.session)
		}
		if held[l.session] == nil {
			held[l.session] = map[string]bool{}
		}
		held[l.session][name] = true
		if len(l.queue) > s.cfg.MaxWaitersPerLock {
			return fmt.Errorf("lock %q has %d waiters", name, len(l.queue))
		}
		owners := map[so]bool{}
		nWaiters += len(l.queue)
		for i, w := range l.queue {
			if w.lock != l {
				return fmt.Errorf("waiter of %q points at another lock", name)
			}
			if i > 0 && l.queue[i-1].pos >= w.pos {
				return fmt.Errorf("queue of %q out of order", name)
			}
			if s.sessions[w.session] == nil {
				return fmt.Errorf("waiter on %q of ended session %q", name, w.session)
			}
			o := so{w.session, w.owner}
			if owners[o] || (o == so{l.session, l.owner}) {
				return fmt.Errorf("owner %v waits twice on %q or waits for itself", o, name)
			}
			owners[o] = true
			if waiting[w.session] == nil {
				waiting[w.session] = map[string]int{}
			}
			waiting[w.session][name]++
			if w.req != "" {
				nReq++
				if s.reqWaits[sessReq{w.session, w.req}] != w {
					return fmt.Errorf("waiter %v on %q not indexed by req", o, name)
				}
			}
			for _, id := range w.waitIDs {
				nIDs++
				if id == 0 || s.waitIDs[id] != w {
					return fmt.Errorf("wait id %d of %q not indexed", id, name)
				}
			}
			if w.timed != (w.timer.hi > 0) || w.timer.wait != w {
				return fmt.Errorf("waiter %v on %q: timed %v but scheduled %v", o, name, w.timed, w.timer.hi > 0)
			}
			if w.timed {
				nTimers++
				if w.timer.deadline < s.time {
					return fmt.Errorf("waiter %v on %q due at %d but time is %d", o, name, w.timer.deadline, s.time)
				}
			}
		}
	}
	if s.Waiters() != nWaiters {
		return fmt.Errorf("Waiters %d; the queues hold %d", s.Waiters(), nWaiters)
	}
	if len(s.reqWaits) != nReq || len(s.waitIDs) != nIDs {
		return fmt.Errorf("stale waiter indexes: %d/%d reqs, %d/%d ids", len(s.reqWaits), nReq, len(s.waitIDs), nIDs)
	}
	if len(s.sessions) > s.cfg.MaxSessions {
		return fmt.Errorf("%d sessions", len(s.sessions))
	}
	for id, ss := range s.sessions {
		if ss.id != id || ss.timer.sess != ss || ss.timer.hi == 0 {
			return fmt.Errorf("session %q not scheduled", id)
		}
		if ss.ttl > 0 && ss.timer.deadline < s.time {
			return fmt.Errorf("session %q due at %d but time is %d", id, ss.timer.deadline, s.time)
		}
	}
	nMemos := 0
	for id, rf := range s.refs {
		ss := s.sessions[id]
		if ss == nil {
			return fmt.Errorf("indexes of ended session %q", id)
		}
		if len(rf.held) > s.cfg.MaxLocksPerSession {
			return fmt.Errorf("session %q holds %d locks", id, len(rf.held))
		}
		if len(rf.held) != len(held[id]) {
			return fmt.Errorf("session %q held index %v, locks say %v", id, rf.held, held[id])
		}
		for name := range rf.held {
			if !held[id][name] {
				return fmt.Errorf("session %q held index has %q", id, name)
			}
		}
		if len(rf.waiting) != len(waiting[id]) {
			return fmt.Errorf("session %q waiting index %v, queues say %v", id, rf.waiting, waiting[id])
		}
		for name, n := range rf.waiting {
			if waiting[id][name] != n {
				return fmt.Errorf("session %q waiting index %v, queues say %v", id, rf.waiting, waiting[id])
			}
		}
		if len(rf.memos) > s.cfg.ReqMemory {
			return fmt.Errorf("session %q remembers %d requests", id, len(rf.memos))
		}
		for i, m := range rf.memos {
			if (i > 0 && rf.memos[i-1].seq >= m.seq) || m.seq >= ss.nextSeq || m.session != id {
				return fmt.Errorf("session %q memos out of order", id)
			}
			if s.memos[sessReq{id, m.req}] != m {
				return fmt.Errorf("memo %q/%q not indexed", id, m.req)
			}
			if m.err == ErrNoSession || (m.err != nil && errCode(m.err) == 0) {
				return fmt.Errorf("memo %q/%q remembers %v", id, m.req, m.err)
			}
		}
		nMemos += len(rf.memos)
	}
	for id := range held {
		if s.refs[id] == nil {
			return fmt.Errorf("session %q holds locks but has no index", id)
		}
	}
	for id := range waiting {
		if s.refs[id] == nil {
			return fmt.Errorf("session %q waits but has no index", id)
		}
	}
	if len(s.memos) != nMemos {
		return fmt.Errorf("%d memos indexed, %d listed", len(s.memos), nMemos)
	}
	for id, m := range s.members {
		if m.ID != id || id == "" {
			return fmt.Errorf("member %q recorded as %q", id, m.ID)
		}
		if !m.Removed && (m.RaftAddr == "" || m.Addr == "") {
			return fmt.Errorf("live member %q without its addresses", id)
		}
	}
	for name, k := range s.kv {
		if k.name != name || k.timer.key != k {
			return fmt.Errorf("key %q recorded as %q", name, k.name)
		}
		if s.locks[name] != nil {
			return fmt.Errorf("%q is both a key and a held lock", name)
		}
		if k.ttl != (k.timer.hi > 0) {
			return fmt.Errorf("key %q: ttl %v but scheduled %v", name, k.ttl, k.timer.hi > 0)
		}
		if k.ttl {
			nTimers++
			if k.timer.deadline < s.time {
				return fmt.Errorf("key %q due at %d but time is %d", name, k.timer.deadline, s.time)
			}
		}
		switch k.typ {
		case kvString:
			if k.hash != nil || k.fields != nil || k.list != nil {
				return fmt.Errorf("string %q has other values", name)
			}
		case kvHash:
			if len(k.fields) == 0 || len(k.fields) != len(k.hash) || k.list != nil {
				return fmt.Errorf("hash %q: %d fields, %d values", name, len(k.fields), len(k.hash))
			}
			for _, f := range k.fields {
				if _, ok := k.hash[f]; !ok {
					return fmt.Errorf("hash %q: field %q listed, not set", name, f)
				}
			}
		case kvList:
			if len(k.list) == 0 || k.hash != nil {
				return fmt.Errorf("list %q empty", name)
			}
		case kvSet:
			if len(k.fields) == 0 || len(k.fields) != len(k.hash) || k.list != nil {
				return fmt.Errorf("set %q: %d members listed, %d in its map", name, len(k.fields), len(k.hash))
			}
			for _, m := range k.fields {
				if v, ok := k.hash[m]; !ok || v != "" {
					return fmt.Errorf("set %q: member %q listed, not in its map", name, m)
				}
			}
		default:
			return fmt.Errorf("key %q of type %d", name, k.typ)
		}
	}
	if len(s.timers) != nTimers {
		return fmt.Errorf("%d timers, want %d", len(s.timers), nTimers)
	}
	for i, t := range s.timers {
		if t.hi != i+1 {
			return fmt.Errorf("timer %d has position %d", i, t.hi)
		}
		if i > 0 && s.timers.Less(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	byEval := 0
	for sha, sc := range s.scripts {
		if script.SHA1(sc.src) != sha {
			return fmt.Errorf("script %s under the wrong SHA-1", sha)
		}
		if sc.byEval {
			byEval++
		}
	}
	if byEval != len(s.evalOrder) || byEval > maxEvalScripts {
		return fmt.Errorf("%d scripts cached by EVAL, %d in evalOrder", byEval, len(s.evalOrder))
	}
	for i, sha := range s.evalOrder {
		if sc := s.scripts[sha]; sc == nil || !sc.byEval || (i > 0 && s.scripts[s.evalOrder[i-1]].seq >= sc.seq) {
			return fmt.Errorf("evalOrder broken at %d", i)
		}
	}
	return checkNameIndex(s)
}

// checkNameIndex verifies that SCAN's name index holds exactly the names of
// the keys and the held locks.
func checkNameIndex(s *State) error {
	if n := s.names.Len(); n != len(s.kv)+len(s.locks) {
		return fmt.Errorf("name index has %d names, %d keys and %d locks", n, len(s.kv), len(s.locks))
	}
	for k := range s.names.Ascend(btreemap.Min[nameKey](), btreemap.Max[nameKey]()) {
		if k.hash != s.nameHash(k.name) || (s.kv[k.name] == nil && s.locks[k.name] == nil) {
			return fmt.Errorf("name index has %q, which is neither a key nor a lock", k.name)
		}
	}
	return nil
}

func errName(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{ErrNoSession, "ErrNoSession"}, {ErrNotOwner, "ErrNotOwner"}, {ErrLimit, "ErrLimit"},
		{ErrStaleFence, "ErrStaleFence"}, {ErrCancelled, "ErrCancelled"},
		{ErrTooManySessions, "ErrTooManySessions"}, {ErrTooManyLocks, "ErrTooManyLocks"},
		{ErrTooManyWaiters, "ErrTooManyWaiters"}, {ErrSessionExists, "ErrSessionExists"},
		{ErrBadEntry, "ErrBadEntry"}, {ErrNodeRemoved, "ErrNodeRemoved"}, {ErrBadResult, "ErrBadResult"},
		{ErrWrongType, "ErrWrongType"}, {ErrTooManyUserSessions, "ErrTooManyUserSessions"},
	} {
		if err == c.err {
			return c.name
		}
	}
	return err.Error()
}

// fmtResult renders a Result (without its Wakes) for test output.
func fmtResult(r Result) string {
	switch {
	case r.Err != nil:
		return "err=" + errName(r.Err)
	case r.Queued:
		return "queued"
	case r.Null:
		return "null"
	case r.Str != "":
		return "str=" + r.Str
	}
	return fmt.Sprintf("int=%d", r.Int)
}
