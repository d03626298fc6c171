package raftstore

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// fsmWorkload is 35 entries: sessions opened, locks taken, released and
// retaken, heartbeats, and a session that expires inside the run so that
// its records are deleted.
func fsmWorkload() []*raft.Log {
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
	next(lockstate.Entry{Op: lockstate.OpTick})
	return logs
}

func memFSMWriteBack(t *testing.T, writeBack uint64) *fsm {
	t.Helper()
	f := memFSM(t)
	f.writeBack = writeBack
	return f
}

// TestApplyBatchWritesEachRecordOnce: however the log is cut into batches (a
// leader's large groups, a follower's one by one) and however often the
// state is written back, storage ends up the same once written, and a node
// reopened on it holds the same state.
func TestApplyBatchWritesEachRecordOnce(t *testing.T) {
	logs := fsmWorkload()
	var want map[string]string
	for _, size := range []int{1, 3, 7, len(logs)} {
		for _, writeBack := range []uint64{1, 5, writeBackEntries} {
			name := fmt.Sprintf("batches of %d, written back every %d entries", size, writeBack)
			f := memFSMWriteBack(t, writeBack)
			for i := 0; i < len(logs); i += size {
				f.ApplyBatch(logs[i:min(i+size, len(logs))])
				if lag := f.applied - f.stored; lag >= writeBack {
					t.Fatalf("%s: storage lags %d entries behind", name, lag)
				}
			}
			if err := f.sync(); err != nil {
				t.Fatal(err)
			}
			got := contents(t, f.db)
			h := fsmHash(f)
			reopened, err := newFSM(f.db, lockstate.Config{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fsmHash(reopened) != h || reopened.appliedIndex() != uint64(len(logs)) {
				t.Errorf("%s: the state loaded from storage (applied %d) differs from the state that wrote it", name, reopened.appliedIndex())
			}
			if want == nil {
				want = got
				continue
			}
			if diff := diffContents(want, got); diff != "" {
				t.Errorf("%s: storage differs from batches of 1 written back every entry: %s", name, diff)
			}
		}
	}
	if len(want) < 5 {
		t.Fatalf("storage holds %d records: the workload wrote too little to compare", len(want))
	}
}

// TestWriteBackCrash: a node that stops without writing its state back (a
// crash) reopens on the state of the last write-back, with its applied
// index, and replaying the log from the start (raft hands it every entry
// after its last snapshot) skips what is stored and ends where the node
// was.
func TestWriteBackCrash(t *testing.T) {
	logs := fsmWorkload()
	f := memFSMWriteBack(t, 10)
	for _, l := range logs {
		f.ApplyBatch([]*raft.Log{l})
	}
	want := fsmHash(f)
	stored := f.stored
	if stored != 30 || f.applied != uint64(len(logs)) {
		t.Fatalf("stored %d applied %d, want 30 and %d", stored, f.applied, len(logs))
	}

	// The crash: the in-memory state is lost, Pebble keeps what was written.
	crashed, err := newFSM(f.db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := crashed.appliedIndex(); got != stored {
		t.Fatalf("reopened at applied %d, want the stored %d", got, stored)
	}
	if fsmHash(crashed) == want {
		t.Fatal("the reopened state already equals the final one: the test needs entries after the last write-back")
	}
	crashed.ApplyBatch(logs)
	if fsmHash(crashed) != want {
		t.Fatal("replaying the log after a crash did not end in the state the node had")
	}

	// A snapshot writes back first: the stored state is the snapshot's.
	g := memFSMWriteBack(t, 1000)
	g.ApplyBatch(logs)
	snap := snapshotBytes(t, g)
	if g.stored != g.applied {
		t.Fatalf("after a snapshot stored %d, applied %d", g.stored, g.applied)
	}
	h := memFSMWriteBack(t, 1000)
	if err := h.Restore(nopCloser{bytes.NewReader(snap)}); err != nil {
		t.Fatal(err)
	}
	if fsmHash(h) != want || h.appliedIndex() != uint64(len(logs)) {
		t.Fatal("the snapshot of a state not yet written back lacks its last entries")
	}
}

// TestWriteBackBoundsRecords: entries that each change many records (MSETs
// of 1,000 keys) are written back before the pending records pass
// writeBackRecords, however few entries that is.
func TestWriteBackBoundsRecords(t *testing.T) {
	f := memFSMWriteBack(t, writeBackEntries)
	for i := range 20 {
		args := []string{"MSET"}
		for k := range 1000 {
			args = append(args, fmt.Sprintf("k:%d:%d", i, k), "v")
		}
		e := lockstate.Entry{Op: lockstate.OpExec, Time: int64(i + 1), Args: args}
		f.ApplyBatch([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: e.Encode(nil)}})
		var pending int
		f.read(func(st *lockstate.State) { pending = st.Unflushed() })
		if pending >= writeBackRecords {
			t.Fatalf("after entry %d, %d records wait to be written back", i+1, pending)
		}
	}
	if f.stored == 0 {
		t.Fatal("nothing was written back")
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

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
