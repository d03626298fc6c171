package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// sinceClock is the cluster clock of these tests: ms since start.
type sinceClock func() int64

func (c sinceClock) Now() int64            { return c() }
func (c sinceClock) Stamp() (int64, int64) { return c(), time.Now().UnixMilli() }
func (c sinceClock) Lead()                 {}
func (c sinceClock) Follow()               {}

func newSinceClock() sinceClock {
	start := time.Now()
	// +1 so that no entry is stamped with time 0.
	return func() int64 { return time.Since(start).Milliseconds() + 1 }
}

func testNodeConfig(dir string) Config {
	return Config{
		ID:                "n1",
		RaftAddr:          "127.0.0.1:0",
		Dir:               dir,
		Bootstrap:         true,
		Clock:             newSinceClock(),
		HeartbeatTimeout:  200 * time.Millisecond,
		ElectionTimeout:   200 * time.Millisecond,
		TrailingLogs:      5,
		SnapshotThreshold: 1 << 30,
	}
}

// openNode opens a node on dir and waits until it can propose. The caller
// closes it (closeNode), or it is closed at cleanup if still open.
func openNode(t testing.TB, dir string) *Node {
	t.Helper()
	n, err := Open(testNodeConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			n.Close()
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !n.CanPropose() {
		if time.Now().After(deadline) {
			t.Fatalf("node on %s did not become ready: %+v", dir, n.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	nodeClosers[n] = func() { closed = true }
	return n
}

// nodeClosers lets closeNode tell openNode's cleanup that a node is closed.
// Tests in this file do not run in parallel.
var nodeClosers = map[*Node]func(){}

func closeNode(t testing.TB, n *Node) {
	t.Helper()
	if f := nodeClosers[n]; f != nil {
		f()
		delete(nodeClosers, n)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func propose(t testing.TB, n *Node, e lockstate.Entry) lockstate.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := n.Propose(ctx, e)
	if err != nil {
		t.Fatalf("propose %v: %v", e.Op, err)
	}
	return res
}

func sessionID(i int) string { return fmt.Sprintf("%032x", i+1) }

// workload proposes about 200 entries: 10 sessions, reentrant FLOCKs on 20
// locks, some FUNLOCKs and contention. It returns the largest token granted.
func workload(t testing.TB, n *Node) int64 {
	t.Helper()
	var maxTok int64
	for i := 0; i < 10; i++ {
		res := propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(i), TTL: 3_600_000, Name: fmt.Sprint("s", i)})
		if res.Err != nil || res.Str != sessionID(i) {
			t.Fatalf("open session %d: %+v", i, res)
		}
	}
	for r := 0; r < 9; r++ {
		for l := 0; l < 20; l++ {
			lock := fmt.Sprint("lock", l)
			sess := sessionID(l % 10)
			if r == 4 && l%3 == 0 {
				res := propose(t, n, lockstate.Entry{Op: lockstate.OpFunlock, Lock: lock, Session: sess})
				if res.Err != nil {
					t.Fatalf("funlock %s: %+v", lock, res)
				}
				continue
			}
			res := propose(t, n, lockstate.Entry{Op: lockstate.OpFlock, Lock: lock, Session: sess, Wait: lockstate.NoWait})
			if res.Err != nil || res.Int <= 0 {
				t.Fatalf("flock %s: %+v", lock, res)
			}
			maxTok = max(maxTok, res.Int)
		}
	}
	// Contention: another session finds lock0 held.
	res := propose(t, n, lockstate.Entry{Op: lockstate.OpFlock, Lock: "lock0", Session: sessionID(9), Owner: "x", Wait: lockstate.NoWait})
	if !res.Null {
		t.Fatalf("flock of a held lock: %+v, want null", res)
	}
	return maxTok
}

func stateHash(n *Node) (h [32]byte) {
	n.Local(func(st *lockstate.State) { h = st.Hash() })
	return h
}

func holdCount(n *Node, lock string) int64 {
	var c int64
	n.Local(func(st *lockstate.State) { c = st.LockInfo(lock, 0).Count })
	return c
}

// TestSnapshotTruncatesAndReopens: a snapshot compacts the log, and a node
// reopened on the same directory has the same state and keeps granting
// increasing tokens.
func TestSnapshotTruncatesAndReopens(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	maxTok := workload(t, n)
	want := stateHash(n)
	wantCount := holdCount(n, "lock1")
	if wantCount < 2 {
		t.Fatalf("lock1 hold count %d, want a reentrant hold", wantCount)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	if st.FirstIndex <= 1 {
		t.Fatalf("first index %d after snapshot, want the log truncated (last %d)", st.FirstIndex, st.LastIndex)
	}
	if st.LastIndex-st.FirstIndex+1 > 5+3 {
		t.Fatalf("log [%d, %d] after snapshot keeps more than the 5 trailing logs", st.FirstIndex, st.LastIndex)
	}
	applied := st.Applied
	closeNode(t, n)

	n = openNode(t, dir)
	if got := stateHash(n); got != want {
		t.Fatalf("state hash after reopen %x, want %x", got, want)
	}
	if got := n.Status().Applied; got != applied {
		t.Fatalf("applied %d after reopen, want %d", got, applied)
	}
	if got := holdCount(n, "lock1"); got != wantCount {
		t.Fatalf("lock1 count %d after reopen, want %d", got, wantCount)
	}
	prev := maxTok
	for i := 0; i < 5; i++ {
		lock := fmt.Sprint("new", i)
		res := propose(t, n, lockstate.Entry{Op: lockstate.OpFlock, Lock: lock, Session: sessionID(0), Wait: lockstate.NoWait})
		if res.Err != nil || res.Int <= prev {
			t.Fatalf("flock %s after reopen: %+v, want a token > %d", lock, res, prev)
		}
		prev = res.Int
	}
	// A lock released and taken by another session gets a larger token.
	res := propose(t, n, lockstate.Entry{Op: lockstate.OpFunlock, Lock: "new0", Session: sessionID(0)})
	if res.Err != nil || res.Int != 0 {
		t.Fatalf("funlock new0: %+v", res)
	}
	res = propose(t, n, lockstate.Entry{Op: lockstate.OpFlock, Lock: "new0", Session: sessionID(1), Wait: lockstate.NoWait})
	if res.Err != nil || res.Int <= prev {
		t.Fatalf("flock new0 by another session: %+v, want a token > %d", res, prev)
	}
	closeNode(t, n)
}

// TestReopenSkipsReplayedEntries: without a snapshot, raft replays the
// whole log on restart; the entries at or below the applied index must be
// skipped, or a reentrant FLOCK would be counted twice.
func TestReopenSkipsReplayedEntries(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	workload(t, n)
	want := stateHash(n)
	wantCount := holdCount(n, "lock1")
	applied := n.Status().Applied
	closeNode(t, n)

	// The state and applied index are durable as they are.
	db, err := OpenDB(filepath.Join(dir, "pebble"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.appliedIndex(); got != applied {
		t.Errorf("durable applied index %d, want %d", got, applied)
	}
	if got := fsmHash(f); got != want {
		t.Errorf("durable state hash %x, want %x", got, want)
	}
	db.Close()

	n = openNode(t, dir)
	// Make raft commit in the new term and so replay the old entries.
	if err := n.Read(context.Background(), func(*lockstate.State, int64) {}); err != nil {
		t.Fatalf("read after reopen: %v", err)
	}
	if got := n.Status().FirstIndex; got != 1 {
		t.Fatalf("first index %d, want 1 (no snapshot was taken)", got)
	}
	if got := stateHash(n); got != want {
		t.Fatalf("state hash after replay %x, want %x", got, want)
	}
	if got := n.Status().Applied; got != applied {
		t.Fatalf("applied %d after replay, want %d", got, applied)
	}
	if got := holdCount(n, "lock1"); got != wantCount {
		t.Fatalf("lock1 count %d after replay, want %d", got, wantCount)
	}
	closeNode(t, n)
}

func TestReadIsConsistent(t *testing.T) {
	n := openNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The first read of a new leader: its log ends in a no-op and a barrier,
	// which the state machine never sees.
	var sessions int
	if err := n.Read(ctx, func(st *lockstate.State, _ int64) { sessions, _ = st.Counts() }); err != nil {
		t.Fatalf("first read: %v", err)
	}
	if sessions != 0 {
		t.Fatalf("%d sessions in a new cluster", sessions)
	}
	for i := 0; i < 20; i++ {
		id := sessionID(i)
		propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: id, TTL: 60_000})
		res := propose(t, n, lockstate.Entry{Op: lockstate.OpFlock, Lock: "L", Session: id, Wait: lockstate.NoWait})
		var got lockstate.LockInfo
		var now int64
		if err := n.Read(ctx, func(st *lockstate.State, t int64) { got, now = st.LockInfo("L", t), t }); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if got.Holder != id || got.Token != res.Int {
				t.Fatalf("read after grant: %+v, want holder %s token %d", got, id, res.Int)
			}
		} else if !res.Null || got.Holder != sessionID(0) {
			t.Fatalf("flock %d: %+v, lock %+v", i, res, got)
		}
		if now < n.LastTime() {
			t.Fatalf("read time %d before the last applied entry's %d", now, n.LastTime())
		}
		var sess []string
		if err := n.Read(ctx, func(st *lockstate.State, _ int64) { sess = st.Sessions() }); err != nil {
			t.Fatal(err)
		}
		if len(sess) != i+1 {
			t.Fatalf("read sees %d sessions after %d opens", len(sess), i+1)
		}
	}
}

func notApplied(err error) bool {
	return errors.Is(err, ErrNotReady) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNotLeader)
}

func TestProposeNotReadyOrClosed(t *testing.T) {
	cfg := testNodeConfig(t.TempDir())
	cfg.Bootstrap = false // no cluster: never a leader
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.Propose(context.Background(), lockstate.Entry{Op: lockstate.OpTick})
	if !notApplied(err) {
		t.Fatalf("propose on a node without a cluster: %v, want a not-applied error", err)
	}
	if err := n.Read(context.Background(), func(*lockstate.State, int64) {}); !notApplied(err) {
		t.Fatalf("read on a node without a cluster: %v, want a not-applied error", err)
	}
	if err := n.Tick(context.Background()); !notApplied(err) {
		t.Fatalf("tick: %v", err)
	}
	n.Close()

	n = openNode(t, t.TempDir())
	propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(0), TTL: 1000})
	closeNode(t, n)
	_, err = n.Propose(context.Background(), lockstate.Entry{Op: lockstate.OpTick})
	if !notApplied(err) {
		t.Fatalf("propose on a closed node: %v, want a not-applied error", err)
	}
	if err := n.Read(context.Background(), func(*lockstate.State, int64) {}); !notApplied(err) {
		t.Fatalf("read on a closed node: %v, want a not-applied error", err)
	}
}

// --- snapshot stream and restore, in package ---

// bufSink is a raft.SnapshotSink writing into a buffer.
type bufSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *bufSink) ID() string    { return "test" }
func (s *bufSink) Cancel() error { s.cancelled = true; return nil }
func (s *bufSink) Close() error  { s.closed = true; return nil }

var _ raft.SnapshotSink = (*bufSink)(nil)

func memFSM(t testing.TB) *fsm {
	t.Helper()
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fsmHash(f *fsm) (h [32]byte) {
	f.read(func(st *lockstate.State) { h = st.Hash() })
	return h
}

// applyEntries applies entries at indexes from..., one batch each.
func applyEntries(t testing.TB, f *fsm, from uint64, es ...lockstate.Entry) uint64 {
	t.Helper()
	for _, e := range es {
		f.ApplyBatch([]*raft.Log{{Index: from, Term: 1, Type: raft.LogCommand, Data: e.Encode(nil)}})
		from++
	}
	return from
}

// populated returns an fsm with sessions, held locks and waiters.
func populated(t testing.TB, seed int) *fsm {
	t.Helper()
	f := populatedNoCleanup(t, seed)
	t.Cleanup(func() { f.db.Close() })
	return f
}

// populatedNoCleanup is populated whose DB the caller closes.
func populatedNoCleanup(t testing.TB, seed int) *fsm {
	t.Helper()
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFSM(db, lockstate.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var es []lockstate.Entry
	tm := int64(1000 + seed)
	for i := 0; i < 4; i++ {
		es = append(es, lockstate.Entry{Op: lockstate.OpSessionOpen, Time: tm, Session: sessionID(i + seed), TTL: 10_000, Name: "n"})
	}
	for l := 0; l < 6; l++ {
		for i := 0; i < 4; i++ {
			es = append(es, lockstate.Entry{Op: lockstate.OpFlock, Time: tm + int64(l), Lock: fmt.Sprint("L", l), Session: sessionID(i + seed), Wait: 5000, WaitID: uint64(100*l + i + 1), Req: fmt.Sprint("r", l)})
		}
	}
	applyEntries(t, f, 1, es...)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

func snapshotBytes(t testing.TB, f *fsm) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	var sink bufSink
	if err := s.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v cancelled %v", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// checkUnchanged checks that f's state, in memory and in Pebble, is still
// the one hashed as want at applied index applied.
func checkUnchanged(t testing.TB, f *fsm, want [32]byte, applied uint64) {
	t.Helper()
	if got := fsmHash(f); got != want {
		t.Fatalf("in-memory state changed: %x, want %x", got, want)
	}
	if err := f.load(); err != nil {
		t.Fatalf("stored state no longer loads: %v", err)
	}
	if got := fsmHash(f); got != want {
		t.Fatalf("stored state changed: %x, want %x", got, want)
	}
	if got := f.appliedIndex(); got != applied {
		t.Fatalf("applied %d, want %d", got, applied)
	}
}

func TestSnapshotRestore(t *testing.T) {
	src := populated(t, 0)
	want := fsmHash(src)
	snap := snapshotBytes(t, src)
	snapApplied := src.appliedIndex()

	dst := populated(t, 50) // different state, to be replaced
	if fsmHash(dst) == want {
		t.Fatal("source and target states are equal before restore")
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if got := fsmHash(dst); got != want {
		t.Fatalf("hash after restore %x, want %x", got, want)
	}
	if got := dst.appliedIndex(); got != snapApplied {
		t.Fatalf("applied %d after restore, want %d", got, snapApplied)
	}
	// The restored state is the stored one, and works on.
	checkUnchanged(t, dst, want, snapApplied)
	next := src.appliedIndex() + 1
	e := lockstate.Entry{Op: lockstate.OpFunlock, Time: 5000, Lock: "L0", Session: sessionID(0)}
	applyEntries(t, src, next, e)
	applyEntries(t, dst, next, e)
	if fsmHash(src) != fsmHash(dst) {
		t.Fatal("source and restored target diverge on the next entry")
	}

	// Into a brand-new store as well.
	fresh := memFSM(t)
	if err := fresh.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, fresh, want, snapApplied)

	// Restoring an empty state's snapshot empties the target.
	empty := memFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, empty)))); err != nil {
		t.Fatal(err)
	}
	if got, want := fsmHash(dst), fsmHash(empty); got != want {
		t.Fatalf("hash after restoring an empty snapshot %x, want %x", got, want)
	}
}

func TestSnapshotRestoreCorrupt(t *testing.T) {
	src := populated(t, 0)
	snap := snapshotBytes(t, src)
	dst := populated(t, 50)
	want, applied := fsmHash(dst), dst.appliedIndex()

	for i := range snap {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(snap)
			bad[i] ^= flip
			err := dst.Restore(io.NopCloser(bytes.NewReader(bad)))
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("byte %d of %d ^%#x: %v, want ErrBadSnapshot", i, len(snap), flip, err)
			}
		}
	}
	for _, n := range []int{0, 1, 19, 20, 21, len(snap) / 2, len(snap) - 5, len(snap) - 1} {
		if err := dst.Restore(io.NopCloser(bytes.NewReader(snap[:n]))); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("truncated to %d bytes: %v, want ErrBadSnapshot", n, err)
		}
	}
	checkUnchanged(t, dst, want, applied)
}

// frameSnapshot wraps records (the body after the header) in a version-1
// header and a correct checksum, so that the record parsing and loading
// behind the checksum can be exercised.
func frameSnapshot(applied uint64, body []byte) []byte {
	var b bytes.Buffer
	var hdr [20]byte
	copy(hdr[:], snapMagic)
	hdr[11] = snapVersion
	for i := 0; i < 8; i++ {
		hdr[19-i] = byte(applied >> (8 * i))
	}
	b.Write(hdr[:])
	b.Write(body)
	sum := crc32Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func crc32Sum(p []byte) [4]byte {
	c := crc32.Checksum(p, crcTable)
	return [4]byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)}
}

// TestSnapshotRestoreBadRecords: a snapshot whose checksum matches but
// whose records are not a valid state is rejected and changes nothing,
// neither in memory nor in Pebble.
func TestSnapshotRestoreBadRecords(t *testing.T) {
	dst := populated(t, 50)
	want, applied := fsmHash(dst), dst.appliedIndex()
	for name, body := range map[string][]byte{
		"unknown key":   {3, 'z', 'z', 'z', 1, 1, 0},
		"bad version":   {1, 't', 2, 99, 2, 0},
		"empty value":   {1, 't', 0, 0},
		"trailing junk": {0, 'x'},
	} {
		err := dst.Restore(io.NopCloser(bytes.NewReader(frameSnapshot(7, body))))
		if err == nil {
			t.Fatalf("%s: restore succeeded", name)
		}
		checkUnchanged(t, dst, want, applied)
	}
}

// TestSnapshotPersistCancelsOnError: Persist cancels the sink when the
// stream cannot be written.
func TestSnapshotPersistCancelsOnError(t *testing.T) {
	f := populated(t, 0)
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	sink := &failSink{}
	if err := s.Persist(sink); err == nil {
		t.Fatal("persist into a failing sink succeeded")
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("cancelled %v closed %v, want cancelled only", sink.cancelled, sink.closed)
	}
}

type failSink struct{ bufSink }

func (s *failSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func FuzzSnapshotRestore(f *testing.F) {
	src := populated(f, 0)
	snap := snapshotBytes(f, src)
	f.Add(snap, false)
	f.Add(snap[:len(snap)/2], false)
	f.Add(snap[20:len(snap)-4], true)
	f.Add([]byte{}, false)
	f.Add([]byte{0}, true)
	f.Add([]byte{1, 't', 2, 1, 2, 0}, true)
	f.Add([]byte{3, 'z', 'z', 'z', 1, 1, 0}, true)
	f.Add([]byte("FNCDSNAP\x00\x00\x00\x01"), false)

	// One target for all inputs; a successful restore replaces it with a
	// fresh one, so that range deletions do not pile up in its memtable.
	var dst *fsm
	fresh := func(tb testing.TB) {
		if dst != nil {
			dst.db.Close()
		}
		dst = populatedNoCleanup(tb, 50)
	}
	fresh(f)
	f.Cleanup(func() { dst.db.Close() })
	want, applied := fsmHash(dst), dst.appliedIndex()
	f.Fuzz(func(t *testing.T, data []byte, frame bool) {
		if frame {
			data = frameSnapshot(applied, data)
		}
		err := dst.Restore(io.NopCloser(bytes.NewReader(data)))
		if err == nil {
			// A valid snapshot replaced the state with one that loads back
			// the same.
			checkUnchanged(t, dst, fsmHash(dst), dst.appliedIndex())
			fresh(t)
			return
		}
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("restore error %v is not ErrBadSnapshot", err)
		}
		checkUnchanged(t, dst, want, applied)
	})
}
