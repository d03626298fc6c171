package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fenced/fenced/lockstate"
)

// bigState applies MSETs of keys*1 KiB values to f, from index 1, and
// returns the next index.
func bigState(t testing.TB, f *fsm, keys int) uint64 {
	t.Helper()
	val := strings.Repeat("v", 1<<10)
	var es []lockstate.Entry
	for lo := 0; lo < keys; lo += 500 {
		args := []string{"MSET"}
		for i := lo; i < min(lo+500, keys); i++ {
			args = append(args, fmt.Sprintf("k:%06d", i), val)
		}
		es = append(es, lockstate.Entry{Op: lockstate.OpExec, Time: int64(len(es) + 1), Args: args})
	}
	return applyEntries(t, f, 1, es...)
}

// countRange is the number of keys in [lo, hi).
func countRange(t testing.TB, db *pebble.DB, lo, hi []byte) int {
	t.Helper()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// staleRecords counts the records outside the live generation.
func staleRecords(t testing.TB, f *fsm) int {
	t.Helper()
	n := 0
	for _, r := range staleRanges(f.gen) {
		n += countRange(t, f.db, r[0], r[1])
	}
	return n
}

// TestRestoreInBatches: a 2 MiB snapshot restored with 64 KiB batches is
// committed in many batches, none much larger than the bound, and ends in
// the snapshot's state, in memory and loaded back; the old generation is
// gone.
func TestRestoreInBatches(t *testing.T) {
	src := memFSM(t)
	bigState(t, src, 2000)
	want, applied := fsmHash(src), src.appliedIndex()
	snap := snapshotBytes(t, src)

	dst := populated(t, 50)
	const limit = 64 << 10
	dst.restoreBatch = limit
	var sizes []int
	dst.restored = func(n, size int) {
		if n != len(sizes)+1 {
			t.Errorf("batch %d reported after %d", n, len(sizes))
		}
		sizes = append(sizes, size)
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	t.Logf("a %d-byte snapshot restored in %d batches", len(snap), len(sizes))
	if len(sizes) < len(snap)/limit {
		t.Fatalf("%d batches for a %d-byte snapshot with %d-byte batches", len(sizes), len(snap), limit)
	}
	for i, s := range sizes {
		// A batch is committed once it reaches the bound: it exceeds it by
		// at most one record (1 KiB here) and the batch's own framing.
		if s > limit+2<<10 {
			t.Fatalf("batch %d holds %d bytes, bound %d", i+1, s, limit)
		}
	}
	if dst.gen != 1 {
		t.Fatalf("generation %d after restoring into an old-format store, want 1", dst.gen)
	}
	if n := staleRecords(t, dst); n != 0 {
		t.Fatalf("%d records outside the live generation after a restore", n)
	}
	checkUnchanged(t, dst, want, applied)
	// And again, into generation 2, with the production bound: one batch.
	dst.restoreBatch, sizes = restoreBatchBytes, nil
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if dst.gen != 2 || len(sizes) != 1 {
		t.Fatalf("generation %d in %d batches, want 2 in 1", dst.gen, len(sizes))
	}
	if n := staleRecords(t, dst); n != 0 {
		t.Fatalf("%d records outside the live generation after a second restore", n)
	}
	checkUnchanged(t, dst, want, applied)
}

// TestRestoreCrash: a crash at any point of a restore (after every third
// of its batches, and with none, half or all of what was not synced lost) leaves
// a store that opens on the old state, whole, at its applied index, with
// nothing of the half-written one left; a crash once Restore has returned
// opens on the new state, even if everything not synced is lost.
func TestRestoreCrash(t *testing.T) {
	src := memFSM(t)
	bigState(t, src, 400)
	want, applied := fsmHash(src), src.appliedIndex()
	snap := snapshotBytes(t, src)

	for _, from := range []uint64{0, 1} {
		t.Run(fmt.Sprintf("from generation %d", from), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			db, err := OpenDBFS("db", fs)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			dst, err := newFSM(db, lockstate.Config{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if from == 1 {
				// A first restore moves the store to generation 1.
				if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, populated(t, 50))))); err != nil {
					t.Fatal(err)
				}
			} else {
				applyEntries(t, dst, 1, lockstate.Entry{Op: lockstate.OpExec, Time: 1, Args: []string{"SET", "old", "x"}})
				if err := dst.sync(); err != nil {
					t.Fatal(err)
				}
				if err := db.LogData(nil, pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}
			old, oldApplied := fsmHash(dst), dst.appliedIndex()
			if dst.gen != from {
				t.Fatalf("generation %d, want %d", dst.gen, from)
			}

			type crash struct {
				after   int // batches committed
				fs      *vfs.MemFS
				unsaved int // percent of the unsynced data the crash kept
			}
			var crashes []crash
			rng := rand.New(rand.NewPCG(1, 2))
			dst.restoreBatch = 32 << 10
			batches := 0
			dst.restored = func(n, _ int) {
				batches = n
				if n%3 != 1 {
					return // a third of them: each reopen takes a while under -race
				}
				for _, p := range []int{0, 50, 100} {
					crashes = append(crashes, crash{n, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: p, RNG: rng}), p})
				}
			}
			if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatal(err)
			}
			if batches < 10 {
				t.Fatalf("the restore committed %d batches: too few to crash between", batches)
			}
			after := fs.CrashClone(vfs.CrashCloneCfg{})

			leftovers := 0 // crashes that left records of the restore behind
			for _, c := range crashes {
				f, left := reopen(t, c.fs, from)
				if left > 0 {
					leftovers++
				}
				if got := fsmHash(f); got != old || f.appliedIndex() != oldApplied || f.gen != from {
					t.Fatalf("crash after batch %d of %d (%d %% of unsynced data kept): opened at applied %d, generation %d, hash equal %v; want the old state at %d, generation %d",
						c.after, batches, c.unsaved, f.appliedIndex(), f.gen, got == old, oldApplied, from)
				}
				if n := staleRecords(t, f); n != 0 {
					t.Fatalf("crash after batch %d: %d records of the interrupted restore left after open", c.after, n)
				}
			}
			// Pebble writes a NoSync batch to its log file in the background,
			// so not every crash finds one; most must, or the test would not
			// show that open drops them.
			t.Logf("%d of %d crashes left records of the restore behind; open dropped them", leftovers, len(crashes))
			if leftovers < len(crashes)/3 {
				t.Fatalf("only %d of %d crashes left records of the restore behind", leftovers, len(crashes))
			}
			f, _ := reopen(t, after, from+1)
			if got := fsmHash(f); got != want || f.appliedIndex() != applied || f.gen != from+1 {
				t.Fatalf("crash after the restore, unsynced data lost: applied %d, generation %d, hash equal %v; want the snapshot's at %d",
					f.appliedIndex(), f.gen, got == want, applied)
			}
			if n := staleRecords(t, f); n != 0 {
				t.Fatalf("%d records outside the live generation after a restore", n)
			}
		})
	}
}

// reopen opens a store on a crashed filesystem, and reports how many
// records were outside generation gen before it was loaded.
func reopen(t *testing.T, fs vfs.FS, gen uint64) (*fsm, int) {
	t.Helper()
	db, err := OpenDBFS("db", fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	left := 0
	for _, r := range staleRanges(gen) {
		left += countRange(t, db, r[0], r[1])
	}
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, left
}

// TestLoadOldFormat: a data directory written before generations (records
// under prefixFSM, no generation key) loads as it did, keeps writing there,
// snapshots, and moves to generation 1 on its first restore.
func TestLoadOldFormat(t *testing.T) {
	src := populated(t, 0)
	want, applied := fsmHash(src), src.appliedIndex()
	// The records as the old code wrote them: prefixFSM + the state's key,
	// and the applied index; nothing else.
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n := 0
	for k, v := range contents(t, src.db) {
		if k[0] == prefixFSM || k == string(appliedKey) {
			if err := db.Set([]byte(k), []byte(v), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("%d records copied", n)
	}
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.gen != 0 {
		t.Fatalf("generation %d, want 0", f.gen)
	}
	checkUnchanged(t, f, want, applied)

	// Writes go on under prefixFSM, and a snapshot carries them.
	next := applyEntries(t, f, applied+1, lockstate.Entry{Op: lockstate.OpExec, Time: 5000, Args: []string{"SET", "after", "1"}})
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if c := countRange(t, db, []byte{prefixGen}, []byte{prefixGen + 1}); c != 0 {
		t.Fatalf("%d records written outside prefixFSM", c)
	}
	want2 := fsmHash(f)
	snap := snapshotBytes(t, f)
	fresh := memFSM(t)
	if err := fresh.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, fresh, want2, next-1)

	// Its first restore moves it to generation 1 and empties prefixFSM
	// but for the guard, which an old binary's state machine refuses to
	// load, so that it does not take the state for empty.
	if err := f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, src)))); err != nil {
		t.Fatal(err)
	}
	if f.gen != 1 || countRange(t, db, []byte{prefixFSM}, []byte{prefixFSM + 1}) != 1 {
		t.Fatalf("generation %d after a restore; prefixFSM holds %d records, want the guard only", f.gen, countRange(t, db, []byte{prefixFSM}, []byte{prefixFSM + 1}))
	}
	old := lockstate.New(lockstate.Config{})
	for k, v := range contents(t, db) {
		if k[0] == prefixFSM {
			if err := old.Load([]byte(k[1:]), []byte(v)); err == nil {
				t.Fatalf("a binary from before generations loads %q", k)
			}
		}
	}
	checkUnchanged(t, f, want, applied)
	// The guard survives reopening (dropStale leaves it) and a later
	// restore.
	if err := dropStale(db, f.gen); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, src)))); err != nil {
		t.Fatal(err)
	}
	if err := dropStale(db, f.gen); err != nil {
		t.Fatal(err)
	}
	if c := countRange(t, db, []byte{prefixFSM}, []byte{prefixFSM + 1}); f.gen != 2 || c != 1 {
		t.Fatalf("generation %d, %d records under prefixFSM; want 2 and the guard", f.gen, c)
	}
}

// TestRestoreFailedLeavesNothing: a restore that fails on its last check
// (the checksum) after committing batches leaves the old state live and no
// records of its own behind, and the next restore succeeds.
func TestRestoreFailedLeavesNothing(t *testing.T) {
	src := memFSM(t)
	bigState(t, src, 300)
	snap := snapshotBytes(t, src)
	dst := populated(t, 50)
	old, oldApplied := fsmHash(dst), dst.appliedIndex()
	dst.restoreBatch = 16 << 10
	batches := 0
	dst.restored = func(int, int) { batches++ }
	bad := bytes.Clone(snap)
	bad[len(bad)-1] ^= 1
	if err := dst.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
		t.Fatal("a snapshot with a bad checksum was restored")
	}
	if batches < 5 {
		t.Fatalf("the failed restore committed %d batches before failing", batches)
	}
	if n := staleRecords(t, dst); n != 0 {
		t.Fatalf("%d records of the failed restore left", n)
	}
	checkUnchanged(t, dst, old, oldApplied)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, dst, fsmHash(src), src.appliedIndex())
}
