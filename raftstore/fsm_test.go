package raftstore

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// TestApplyBatchWritesEachRecordOnce: a batch writes every record it changed
// once, in its final form, so how the log is cut into batches (a leader's
// large groups, a follower's one by one) leaves the same storage, and a node
// reopened on it holds the same state.
func TestApplyBatchWritesEachRecordOnce(t *testing.T) {
	var logs []*raft.Log
	next := func(e lockstate.Entry) {
		e.Time = int64(len(logs) + 1)
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Term: 1, Type: raft.LogCommand, Data: e.Encode(nil)})
	}
	for i := range 4 {
		next(lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(i), TTL: 50})
	}
	for r := range 30 {
		s, lock := sessionID(r%3), fmt.Sprint("lock", r%5)
		switch r % 4 {
		case 0, 1:
			next(lockstate.Entry{Op: lockstate.OpFlock, Session: s, Lock: lock, Wait: lockstate.NoWait})
		case 2:
			next(lockstate.Entry{Op: lockstate.OpFunlock, Session: s, Lock: lock})
		case 3:
			next(lockstate.Entry{Op: lockstate.OpSessionHeartbeat, Session: s})
		}
	}
	// Session 3 is never used again: it expires inside a batch and its
	// records are deleted.
	next(lockstate.Entry{Op: lockstate.OpTick})

	cuts := []struct {
		name string
		size int
	}{{"one by one", 1}, {"in threes", 3}, {"in sevens", 7}, {"all at once", len(logs)}}
	var want map[string]string
	for _, cut := range cuts {
		name, size := cut.name, cut.size
		db, err := OpenDBFS("db", vfs.NewMem())
		if err != nil {
			t.Fatal(err)
		}
		f, err := newFSM(db, lockstate.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(logs); i += size {
			f.ApplyBatch(logs[i:min(i+size, len(logs))])
		}
		got := contents(t, db)
		var h [32]byte
		f.read(func(st *lockstate.State) { h = st.Hash() })
		reopened, err := newFSM(db, lockstate.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var rh [32]byte
		reopened.read(func(st *lockstate.State) { rh = st.Hash() })
		if rh != h {
			t.Errorf("%s: the state loaded from storage differs from the state that wrote it", name)
		}
		db.Close()
		if want == nil {
			want = got
			continue
		}
		if diff := diffContents(want, got); diff != "" {
			t.Errorf("storage after applying %s differs from one by one: %s", name, diff)
		}
	}
	if len(want) < 5 {
		t.Fatalf("storage holds %d records: the workload wrote too little to compare", len(want))
	}
}

func contents(t *testing.T, db *pebble.DB) map[string]string {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key())] = string(bytes.Clone(it.Value()))
	}
	return out
}

func diffContents(a, b map[string]string) string {
	for k, v := range a {
		if w, ok := b[k]; !ok {
			return fmt.Sprintf("%q missing", k)
		} else if w != v {
			return fmt.Sprintf("%q = %x, want %x", k, w, v)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return fmt.Sprintf("%q extra", k)
		}
	}
	return ""
}
