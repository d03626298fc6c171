package raftstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// fakeSpace is a data directory's free space, set by the test, and how
// often it was read.
type fakeSpace struct{ n, reads atomic.Uint64 }

func (f *fakeSpace) free() (uint64, error) { f.reads.Add(1); return f.n.Load(), nil }

const testReserve = 8 << 20

// testDisk's clock moves on by freeMaxAge at every reading, so that each
// admit reads the space afresh: the tests that change the space under it
// see every change at once. TestDiskAdmitReusesReading stops the clock.
func testDisk(space *fakeSpace) *disk {
	d := newDisk("dir", testReserve, slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.setFree(space.free)
	var at time.Time
	d.now = func() time.Time { at = at.Add(freeMaxAge); return at }
	return d
}

// TestDiskAdmitReusesReading: within freeMaxAge a write well clear of the
// reserve is admitted on the last reading less the bytes admitted since;
// near the reserve, or once the reading is old, the space is read again, so
// a refusal is never decided on a stale reading.
func TestDiskAdmitReusesReading(t *testing.T) {
	space := &fakeSpace{}
	space.n.Store(testReserve * 4)
	d := testDisk(space)
	at := time.Unix(1e9, 0)
	d.now = func() time.Time { return at }
	admit := func(n int) {
		t.Helper()
		if err := d.admit(n, "x"); err != nil {
			t.Fatalf("admit(%d): %v", n, err)
		}
	}
	admit(1000)
	admit(1000)
	admit(1000)
	if got := space.reads.Load(); got != 1 {
		t.Fatalf("three small writes within freeMaxAge read the space %d times, want 1", got)
	}
	// Another process takes space: seen once the reading is freeMaxAge old.
	space.n.Store(testReserve - 1)
	at = at.Add(freeMaxAge - 1)
	admit(1000)
	if d.Err() != nil || space.reads.Load() != 1 {
		t.Fatalf("within freeMaxAge: Err %v, reads %d; want the old reading", d.Err(), space.reads.Load())
	}
	at = at.Add(1)
	admit(1000)
	if !errors.Is(d.Err(), ErrNoSpace) || space.reads.Load() != 2 {
		t.Fatalf("after freeMaxAge: Err %v, reads %d; want ErrNoSpace on a new reading", d.Err(), space.reads.Load())
	}
	// While low, every write reads the space.
	admit(1000)
	if got := space.reads.Load(); got != 3 {
		t.Fatalf("low: reads %d, want 3", got)
	}
	// The node's own writes count: they take a fresh reading before they
	// could bring the space near the reserve.
	space.n.Store(testReserve * 4)
	d.refresh()
	before := space.reads.Load()
	chunk := testReserve / 4
	for range 12 {
		admit(chunk)
	}
	// 4R free, reused while 1.5R would remain: 10 writes of R/4 take 2.5R
	// and reuse it, the 11th reads afresh.
	if got := space.reads.Load() - before; got != 1 {
		t.Fatalf("own writes toward the reserve: %d readings for 12 writes, want 1 (the 11th)", got)
	}
	// A reading "from the future" (a clock stepped back) is not fresh.
	space.n.Store(testReserve / 2)
	at = at.Add(-time.Hour)
	if err := d.admit(1, "x"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("half the reserve left: admit %v, want a refusal", err)
	}
}

// TestDiskAdmit: above the reserve all is well; below it the node reports
// low space but its own writes still pass; below half of it they are
// refused with MISCONF; the condition clears by itself once space is back.
func TestDiskAdmit(t *testing.T) {
	space := &fakeSpace{}
	space.n.Store(testReserve * 2)
	d := testDisk(space)
	if err := d.admit(1000, "x"); err != nil || d.Err() != nil {
		t.Fatalf("plenty of space: admit %v, Err %v", err, d.Err())
	}
	space.n.Store(testReserve - 1)
	if err := d.admit(1000, "x"); err != nil {
		t.Fatalf("below the reserve, above half: admit %v, want nil", err)
	}
	if err := d.Err(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("below the reserve: Err %v, want ErrNoSpace", err)
	}
	// A write that would take the space below half the reserve is refused.
	if err := d.admit(testReserve/2, "x"); !errors.Is(err, ErrCannotPersist) || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("write into the last half: admit %v, want MISCONF and ErrNoSpace", err)
	}
	if !strings.HasPrefix(err2str(d.admit(testReserve/2, "log append")), "MISCONF ") {
		t.Fatalf("refusal does not read as MISCONF: %v", d.admit(testReserve/2, "log append"))
	}
	// Leaving takes a margin: Pebble gives space back in steps.
	space.n.Store(testReserve)
	d.refresh()
	if err := d.Err(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("back at the reserve: Err %v, want still ErrNoSpace", err)
	}
	space.n.Store(testReserve * 3 / 2)
	d.refresh()
	if err := d.Err(); err != nil {
		t.Fatalf("space back: Err %v, want nil", err)
	}
}

func err2str(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestLogStoreRefusedWhenFull: a refused append stores nothing, changes no
// bound, and the same append succeeds once space is back.
func TestLogStoreRefusedWhenFull(t *testing.T) {
	s, _ := newMemStore(t)
	space := &fakeSpace{}
	space.n.Store(testReserve * 4)
	s.disk = testDisk(space)
	if err := s.StoreLogs([]*raft.Log{testLog(1), testLog(2)}); err != nil {
		t.Fatal(err)
	}
	space.n.Store(testReserve / 4)
	err := s.StoreLogs([]*raft.Log{testLog(3)})
	if !errors.Is(err, ErrCannotPersist) {
		t.Fatalf("append on a full disk: %v, want ErrCannotPersist", err)
	}
	if last, _ := s.LastIndex(); last != 2 {
		t.Fatalf("last index %d after a refused append, want 2", last)
	}
	var l raft.Log
	if err := s.GetLog(3, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("refused entry readable: %v", err)
	}
	// The stable store is never refused for space: a term must be saved.
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatalf("stable store on a full disk: %v", err)
	}
	space.n.Store(testReserve * 4)
	if err := s.StoreLogs([]*raft.Log{testLog(3)}); err != nil {
		t.Fatalf("append once space is back: %v", err)
	}
	if last, _ := s.LastIndex(); last != 3 {
		t.Fatalf("last index %d, want 3", last)
	}
}

// TestPebbleWriteFailure: a WAL that cannot be written (ENOSPC injected
// under Pebble) makes the append fail with MISCONF instead of ending the
// process (Pebble's logger would os.Exit, its commitWrite panic), marks the
// storage failed, and every later write fails at once instead of hanging
// in Pebble's locked commit pipeline. The stable store does not return:
// Raft panics on a term it cannot save, and must not believe it saved.
func TestPebbleWriteFailure(t *testing.T) {
	var broken atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if broken.Load() && strings.HasSuffix(op.Path, ".log") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	space := &fakeSpace{}
	space.n.Store(1 << 40)
	d := testDisk(space)
	db, err := openDB("db", fs, nil, d.fatal)
	if err != nil {
		t.Fatal(err)
	}
	// The DB is left open: after the failure Pebble's commit pipeline may
	// be locked, and closing it could wait for good.
	s, err := NewLogStore(db)
	if err != nil {
		t.Fatal(err)
	}
	s.disk = d
	if err := s.StoreLogs([]*raft.Log{testLog(1)}); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	err = s.StoreLogs([]*raft.Log{testLog(2)})
	if !errors.Is(err, ErrCannotPersist) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("append with a failing WAL: %v, want MISCONF naming ENOSPC", err)
	}
	t.Logf("failed append: %v", err)
	if !d.Failed() || !errors.Is(d.Err(), ErrStorageFailed) {
		t.Fatalf("storage not marked failed: %v", d.Err())
	}
	if last, _ := s.LastIndex(); last != 1 {
		t.Fatalf("last index %d after a failed append, want 1", last)
	}
	// Later writes fail at once, even after the disk is fine again: the
	// database cannot take them in this process.
	broken.Store(false)
	done := make(chan error, 1)
	go func() { done <- s.StoreLogs([]*raft.Log{testLog(2)}) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCannotPersist) {
			t.Fatalf("append after the failure: %v, want MISCONF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("append after the failure hangs")
	}
	set := make(chan error, 1)
	go func() { set <- s.SetUint64([]byte("CurrentTerm"), 9) }()
	select {
	case err := <-set:
		t.Fatalf("stable store returned %v on failed storage; it must not return", err)
	case <-time.After(200 * time.Millisecond):
	}
	// Reads still work.
	var l raft.Log
	if err := s.GetLog(1, &l); err != nil {
		t.Fatalf("read after the failure: %v", err)
	}
}

// TestWriteBackRefusedThenRetried: a write-back refused for space neither
// panics nor loses anything. The state stays ahead of Pebble, Pebble keeps
// the older applied index with its records (what a restart replays the log
// from), and the next batch after space is back writes everything.
func TestWriteBackRefusedThenRetried(t *testing.T) {
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f, err := newFSM(db, lockstate.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	space := &fakeSpace{}
	space.n.Store(1 << 40)
	f.disk = testDisk(space)
	f.writeBack = 1
	apply := func(idx uint64, key string) {
		t.Helper()
		e := lockstate.Entry{Op: lockstate.OpExec, Time: int64(idx), Args: []string{"SET", key, "v"}}
		f.ApplyBatch([]*raft.Log{{Index: idx, Term: 1, Type: raft.LogCommand, Data: e.Encode(nil)}})
	}
	apply(1, "a")
	if f.stored != 1 {
		t.Fatalf("stored %d, want 1", f.stored)
	}
	space.n.Store(testReserve / 4)
	apply(2, "b")
	apply(3, "c")
	if f.applied != 3 || f.stored != 1 {
		t.Fatalf("applied %d stored %d on a full disk, want 3 and 1", f.applied, f.stored)
	}
	if got, _ := getUint64(db, appliedKey); got != 1 {
		t.Fatalf("Pebble's applied index %d, want 1", got)
	}
	want := fsmHash(f)
	space.n.Store(1 << 40)
	apply(4, "d")
	if f.stored != 4 {
		t.Fatalf("stored %d after space is back, want 4", f.stored)
	}
	// What Pebble holds is the state as applied: reload it.
	g, err := newFSM(db, lockstate.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	apply2 := f.state.Hash()
	if got := fsmHash(g); got != apply2 {
		t.Fatalf("reloaded state differs from the applied one")
	}
	if want == apply2 {
		t.Fatal("test is vacuous: entry 4 changed nothing")
	}
}

// TestNodeDiskFull: a single node below the reserve answers proposals as
// before; below half of it a proposal fails with MISCONF (nothing was
// applied, so not UNCERTAIN) and nothing panics; once space is back the
// node leads and commits again by itself.
func TestNodeDiskFull(t *testing.T) {
	n := openNode(t, t.TempDir())
	space := &fakeSpace{}
	space.n.Store(1 << 40)
	n.disk.setFree(space.free)
	n.disk.mu.Lock()
	n.disk.reserve = testReserve
	n.disk.mu.Unlock()
	propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(0), TTL: 60_000})

	space.n.Store(testReserve - 1)
	n.disk.refresh()
	if err := n.DiskError(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("DiskError %v, want ErrNoSpace", err)
	}
	if st := n.Status(); !strings.Contains(st.DiskError, "below --disk-reserve") {
		t.Fatalf("Status.DiskError %q", st.DiskError)
	}
	propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(1), TTL: 60_000})

	space.n.Store(testReserve / 4)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := n.Propose(ctx, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(2), TTL: 60_000})
	if !errors.Is(err, ErrCannotPersist) || errors.Is(err, ErrUncertain) {
		t.Fatalf("propose on a full disk: %v, want MISCONF", err)
	}
	applied := n.Status().Applied

	space.n.Store(1 << 40)
	deadline := time.Now().Add(10 * time.Second)
	for n.DiskError() != nil || !n.CanPropose() {
		if time.Now().After(deadline) {
			t.Fatalf("node did not recover: %+v", n.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(2), TTL: 60_000})
	if got := n.Status().Applied; got <= applied {
		t.Fatalf("applied %d after recovery, want > %d", got, applied)
	}
	closeNode(t, n)
}

// BenchmarkDiskAdmit is the check before every log append, on a real
// directory: "fresh" reads the free space each time (what every append did
// before readings were reused), "reused" is the steady state under load.
func BenchmarkDiskAdmit(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		name := map[bool]string{true: "fresh", false: "reused"}[fresh]
		b.Run(name, func(b *testing.B) {
			d := newDisk(b.TempDir(), testReserve, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if fresh {
				var at time.Time
				d.now = func() time.Time { at = at.Add(freeMaxAge); return at }
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.admit(512, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
