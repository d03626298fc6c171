package lockstate

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/fenced/fenced/reply"
)

// sampleRecords returns the records of sampleState.
func sampleRecords(t testing.TB) (keys, values [][]byte) {
	_ = sampleState(t).Records(func(k, v []byte) error {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
		return nil
	})
	return keys, values
}

// sampleState returns a state with every kind of record.
func sampleState(t testing.TB) *State {
	s := New(Config{})
	for i, e := range []Entry{
		{Op: OpSessionOpen, Time: 1000, Session: "s1", TTL: 5000, Name: "n"},
		{Op: OpSessionOpen, Time: 1000, Session: "s2", TTL: 5000},
		{Op: OpFlock, Time: 1000, Session: "s1", Lock: "a", Req: "r1"},
		{Op: OpFlock, Time: 1000, Session: "s2", Lock: "a", Wait: 300, Req: "r2", WaitID: 1},
		{Op: OpFlock, Time: 1000, Session: "s2", Owner: "o", Lock: "a", Wait: 0, WaitID: 2},
		{Op: OpFunlock, Time: 1000, Session: "s2", Lock: "b", Req: "r3"},
		{Op: OpFlock, Time: 1000, Session: "s2", Lock: "c", Wait: NoWait, Req: "r4"},
		{Op: OpNodeJoin, Time: 1000, Node: "n1", RaftAddr: "10.0.0.1:7000", Addr: "10.0.0.1:6380"},
		{Op: OpNodeJoin, Time: 1000, Node: "n2", RaftAddr: "10.0.0.2:7000", Addr: "10.0.0.2:6380"},
		{Op: OpNodeRemove, Time: 1000, Node: "n2"},
		{Op: OpNodeRemove, Time: 1000, Node: "n3"},
		{Op: OpExec, Time: 1000, Args: []string{"SET", "str", "v", "PX", "500"}},
		{Op: OpExec, Time: 1000, Args: []string{"SET", "plain", ""}},
		{Op: OpExec, Time: 1000, Args: []string{"HSET", "hash", "f", "1", "e", "2"}},
		{Op: OpExec, Time: 1000, Args: []string{"RPUSH", "list", "x", "y"}},
	} {
		if _, err := s.Apply(uint64(i+1), e, newMemWriter()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestLoadRejects feeds Load corrupted records: each is refused with an
// error, never a panic.
func TestLoadRejects(t *testing.T) {
	keys, values := sampleRecords(t)
	find := func(prefix string) int {
		for i, k := range keys {
			if bytes.HasPrefix(k, []byte(prefix)) {
				return i
			}
		}
		t.Fatalf("no %s record", prefix)
		return -1
	}
	type edit func(k, v [][]byte)
	set := func(i int, v []byte) edit { return func(_, vs [][]byte) { vs[i] = v } }
	wl, ws, wm, ww, wn := find(prefixLock), find(prefixSession), find(prefixMemo), find(prefixWaiter), find(prefixMember)
	wk := find(prefixKV)
	for name, ed := range map[string]edit{
		"unknown key":     func(ks, _ [][]byte) { ks[0] = []byte("x/y") },
		"bad version":     set(ws, append([]byte{9}, values[ws][1:]...)),
		"empty value":     set(ws, nil),
		"trailing byte":   set(wl, append(bytes.Clone(values[wl]), 0)),
		"truncated":       set(ww, values[ww][:len(values[ww])-1]),
		"zero count":      set(wl, appendLock(nil, &lock{session: "s1", count: 0})),
		"deadline flag":   set(ww, []byte{1, 0, 0, 0, 0, 7, 0}),
		"memo kind":       set(wm, []byte{1, 1, 'r', 7}),
		"memo error code": set(wm, []byte{1, 1, 'r', memoErr, 0}),
		"memo no req":     set(wm, []byte{1, 0, memoNull}),
		"short seq key":   func(ks, _ [][]byte) { ks[wm] = []byte("r/s") },
		"member flag":     set(wn, []byte{1, 1, 'r', 1, 'a', 2}),
		"member no flag":  set(wn, []byte{1, 1, 'r', 1, 'a'}),
		"live no raft":    set(wn, []byte{1, 0, 1, 'a', memberLive}),
		"live no addr":    set(wn, []byte{1, 1, 'r', 0, memberLive}),
		"member v0":       set(wn, []byte{1, 1, 'r', 1, 'a', memberLive, 0}),
		"member v-1":      set(wn, []byte{1, 1, 'r', 1, 'a', memberLive, 1}),
		"member no id":    func(ks, _ [][]byte) { ks[wn] = []byte(prefixMember) },
		"member twice":    func(ks, vs [][]byte) { ks[wn+1], vs[wn+1] = ks[wn], vs[wn] },
		"waiter first": func(ks, vs [][]byte) {
			ks[wl], ks[ww] = ks[ww], ks[wl]
			vs[wl], vs[ww] = vs[ww], vs[wl]
		},
		"duplicate":         func(ks, vs [][]byte) { ks[wl+1], vs[wl+1] = ks[wl], vs[wl] },
		"key type 0":        set(wk, []byte{1, 0, 2, 0}),
		"key type 4":        set(wk, []byte{1, 4, 2, 0}),
		"key deadline flag": set(wk, []byte{1, byte(kvString), 2, 2, 1, 'v'}),
		"key no value":      set(wk, []byte{1, byte(kvString), 2, 0}),
		"key trailing":      set(wk, []byte{1, byte(kvString), 2, 0, 1, 'v', 0}),
		"empty hash":        set(wk, []byte{1, byte(kvHash), 2, 0, 0}),
		"hash field twice":  set(wk, []byte{1, byte(kvHash), 2, 0, 2, 1, 'f', 0, 1, 'f', 0}),
		"hash count > rest": set(wk, []byte{1, byte(kvHash), 2, 0, 9, 1, 'f', 0}),
		"empty list":        set(wk, []byte{1, byte(kvList), 2, 0, 0}),
		"list count > rest": set(wk, []byte{1, byte(kvList), 2, 0, 3, 0}),
		"key is a lock":     func(ks, _ [][]byte) { ks[wk] = []byte(prefixKV + "a") },
		"zero time": func(ks, vs [][]byte) {
			i := find(timeKey)
			vs[i] = []byte{1, 0}
		},
	} {
		ks, vs := append([][]byte(nil), keys...), append([][]byte(nil), values...)
		ed(ks, vs)
		s := New(Config{})
		var err error
		for i := range ks {
			if err = s.Load(ks[i], vs[i]); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	// And the untouched records load.
	s := New(Config{})
	for i := range keys {
		if err := s.Load(keys[i], values[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Members()); n != 3 {
		t.Fatalf("%d members loaded", n)
	}
}

// TestMembersReload: member records, live and removed, come back through
// Records and Load byte for byte, and the reloaded state hashes and
// behaves the same.
func TestMembersReload(t *testing.T) {
	orig := sampleState(t)
	var members []string
	_ = orig.Records(func(k, v []byte) error {
		if bytes.HasPrefix(k, []byte(prefixMember)) {
			members = append(members, string(k))
		}
		return nil
	})
	if want := []string{"n/n1", "n/n2", "n/n3"}; !slices.Equal(members, want) {
		t.Fatalf("member records %q, want %q", members, want)
	}
	s, err := reload(orig) // checks the order of Records, and the hash
	if err != nil {
		t.Fatal(err)
	}
	if s.Hash() != orig.Hash() {
		t.Fatal("reloaded state hashes differently")
	}
	want := []Member{{ID: "n1", RaftAddr: "10.0.0.1:7000", Addr: "10.0.0.1:6380"},
		{ID: "n2", RaftAddr: "10.0.0.2:7000", Addr: "10.0.0.2:6380", Removed: true}, {ID: "n3", Removed: true}}
	if got := s.Members(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Members() = %+v", got)
	}
	ws, wo := newMemWriter(), newMemWriter()
	_ = s.Records(func(k, v []byte) error { return ws.Set(k, v) })
	_ = orig.Records(func(k, v []byte) error { return wo.Set(k, v) })
	for i, e := range []Entry{
		{Op: OpNodeJoin, Time: 2000, Node: "n3", RaftAddr: "r:1", Addr: "a:1"},
		{Op: OpNodeJoin, Time: 2000, Node: "n2", RaftAddr: "r:1", Addr: "a:1"},
		{Op: OpNodeJoin, Time: 2000, Node: "n1", RaftAddr: "r:1", Addr: "a:1"},
		{Op: OpNodeRemove, Time: 2000, Node: "n1"},
		{Op: OpNodeJoin, Time: 2000, Node: "n4", RaftAddr: "r:4", Addr: "a:4"},
	} {
		r1, err1 := s.Apply(uint64(100+i), e, ws)
		r2, err2 := orig.Apply(uint64(100+i), e, wo)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(r1, r2) || s.Hash() != orig.Hash() {
			t.Fatalf("%+v: %+v and %+v", e, r1, r2)
		}
		if err := sameRecords(s, ws); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := s.Member("n3"); !m.Removed || m.Addr != "" {
		t.Fatalf("a removed id joined again after a reload: %+v", m)
	}
}

// FuzzLoad: records from arbitrary bytes never make Load panic; what Load
// accepts, Records gives back byte for byte; and the state then survives
// entries without panicking.
func FuzzLoad(f *testing.F) {
	keys, values := sampleRecords(f)
	var all []byte
	for i := range keys {
		all = appendString(all, string(keys[i]))
		all = appendString(all, string(values[i]))
	}
	f.Add(all)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := reader{b: b}
		s := New(Config{})
		loaded := map[string][]byte{}
		for len(r.b) > 0 {
			k, v := r.str(), r.str()
			if r.err != nil {
				return
			}
			if s.Load([]byte(k), []byte(v)) != nil {
				return
			}
			loaded[k] = []byte(v)
		}
		n := 0
		err := s.Records(func(k, v []byte) error {
			n++
			if !bytes.Equal(loaded[string(k)], v) {
				t.Fatalf("record %q loaded as %x, given back as %x", k, loaded[string(k)], v)
			}
			return nil
		})
		if err != nil || n != len(loaded) {
			t.Fatalf("%d records loaded, %d given back", len(loaded), n)
		}
		w := newMemWriter()
		index := uint64(1 << 40)
		for _, id := range s.Sessions() {
			index++
			_, _ = s.Apply(index, Entry{Op: OpFlock, Session: id, Lock: "a", Wait: 0}, w)
			index++
			_, _ = s.Apply(index, Entry{Op: OpSessionKill, Session: id}, w)
		}
		for _, m := range s.Members() {
			index++
			_, _ = s.Apply(index, Entry{Op: OpNodeJoin, Node: m.ID, RaftAddr: "r:1", Addr: "a:1"}, w)
			index++
			_, _ = s.Apply(index, Entry{Op: OpNodeRemove, Node: m.ID}, w)
		}
		for _, id := range s.WaitIDs() {
			index++
			_, _ = s.Apply(index, Entry{Op: OpCancelWaits, WaitID: id}, w)
		}
		if v := s.Exec([]string{"KEYS", "*"}, 0); v.Kind == reply.KindArray {
			for _, name := range v.Elems {
				for _, cmd := range [][]string{{"INCR"}, {"HINCRBY", "f", "1"}, {"LPOP"}, {"SET", "v", "KEEPTTL"}, {"HDEL", "f"}, {"DEL"}} {
					index++
					_, _ = s.Apply(index, Entry{Op: OpExec, Args: append([]string{cmd[0], name.Str}, cmd[1:]...)}, w)
				}
			}
		}
		_, _ = s.Apply(index+1, Entry{Op: OpTick, Time: 1 << 62}, w)
	})
}
