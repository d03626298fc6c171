package lockstate

import (
	"bytes"
	"testing"
)

// sampleRecords returns the records of a state with every kind of record.
func sampleRecords(t testing.TB) (keys, values [][]byte) {
	s := New(Config{})
	for i, e := range []Entry{
		{Op: OpSessionOpen, Time: 1000, Session: "s1", TTL: 5000, Name: "n"},
		{Op: OpSessionOpen, Time: 1000, Session: "s2", TTL: 5000},
		{Op: OpFlock, Time: 1000, Session: "s1", Lock: "a", Req: "r1"},
		{Op: OpFlock, Time: 1000, Session: "s2", Lock: "a", Wait: 300, Req: "r2", WaitID: 1},
		{Op: OpFlock, Time: 1000, Session: "s2", Owner: "o", Lock: "a", Wait: 0, WaitID: 2},
		{Op: OpFunlock, Time: 1000, Session: "s2", Lock: "b", Req: "r3"},
		{Op: OpFlock, Time: 1000, Session: "s2", Lock: "c", Wait: NoWait, Req: "r4"},
	} {
		if _, err := s.Apply(uint64(i+1), e, newMemWriter()); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Records(func(k, v []byte) error {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
		return nil
	})
	return keys, values
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
	wl, ws, wm, ww := find(prefixLock), find(prefixSession), find(prefixMemo), find(prefixWaiter)
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
		"waiter first": func(ks, vs [][]byte) {
			ks[wl], ks[ww] = ks[ww], ks[wl]
			vs[wl], vs[ww] = vs[ww], vs[wl]
		},
		"duplicate": func(ks, vs [][]byte) { ks[wl+1], vs[wl+1] = ks[wl], vs[wl] },
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
		_, _ = s.Apply(index+1, Entry{Op: OpTick, Time: 1 << 62}, w)
	})
}
