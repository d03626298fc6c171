package raftstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

// newMemStore returns a store on an in-memory Pebble DB closed at cleanup.
func newMemStore(t testing.TB) (*LogStore, *pebble.DB) {
	t.Helper()
	db, err := OpenDBFS("db", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := NewLogStore(db)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// openDiskStore opens dir; the caller closes the returned DB.
func openDiskStore(t testing.TB, dir string) (*LogStore, *pebble.DB) {
	t.Helper()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewLogStore(db)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return s, db
}

func testLog(idx uint64) *raft.Log {
	return &raft.Log{
		Index:      idx,
		Term:       idx/10 + 1,
		Type:       raft.LogCommand,
		Data:       []byte(fmt.Sprintf("entry-%d", idx)),
		AppendedAt: time.Unix(1_700_000_000+int64(idx), int64(idx)),
	}
}

func testLogs(lo, hi uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, testLog(i))
	}
	return out
}

func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt) && a.AppendedAt.IsZero() == b.AppendedAt.IsZero()
}

func checkBounds(t *testing.T, s *LogStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("bounds = %d..%d, want %d..%d", f, l, first, last)
	}
	// The cache must agree with what is actually on disk.
	sf, sl, err := s.scanBounds()
	if err != nil {
		t.Fatal(err)
	}
	if sf != first || sl != last {
		t.Fatalf("scanned bounds = %d..%d, want %d..%d", sf, sl, first, last)
	}
}

func checkGet(t *testing.T, s *LogStore, want *raft.Log) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(want.Index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", want.Index, err)
	}
	if !logsEqual(&got, want) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", want.Index, got, *want)
	}
}

func checkMissing(t *testing.T, s *LogStore, idx uint64) {
	t.Helper()
	var got raft.Log
	// == rather than errors.Is: raft's replication compares with ==.
	if err := s.GetLog(idx, &got); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(%d) err = %v, want raft.ErrLogNotFound", idx, err)
	}
}

func TestLogStoreEmpty(t *testing.T) {
	s, _ := newMemStore(t)
	checkBounds(t, s, 0, 0)
	checkMissing(t, s, 0)
	checkMissing(t, s, 1)
	if err := s.StoreLogs(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
}

func TestLogStoreStoreAndGet(t *testing.T) {
	s, _ := newMemStore(t)
	first := &raft.Log{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("cfg"), Extensions: []byte("ext")}
	if err := s.StoreLog(first); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 1)
	checkGet(t, s, first)

	if err := s.StoreLogs(testLogs(2, 10)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 10)
	for _, l := range testLogs(2, 10) {
		checkGet(t, s, l)
	}
	checkMissing(t, s, 11)
	checkMissing(t, s, 0)

	// The caller owns the returned slices: mutating them must not leak into
	// a later read.
	var got raft.Log
	if err := s.GetLog(1, &got); err != nil {
		t.Fatal(err)
	}
	got.Data = append(got.Data, "xx"...)
	got.Extensions[0] = 'X'
	checkGet(t, s, first)
}

func TestLogStoreOutOfOrderBatch(t *testing.T) {
	s, _ := newMemStore(t)
	logs := testLogs(5, 9)
	logs[0], logs[4] = logs[4], logs[0]
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 5, 9)
	// A write below the current first index (allowed: gaps are allowed).
	if err := s.StoreLog(testLog(2)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 2, 9)
	checkMissing(t, s, 3)
}

func TestLogStoreDeleteRange(t *testing.T) {
	s, _ := newMemStore(t)
	if err := s.StoreLogs(testLogs(1, 20)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		lo, hi      uint64
		first, last uint64
		gone        []uint64
		kept        []uint64
	}{
		{lo: 1, hi: 5, first: 6, last: 20, gone: []uint64{1, 5}, kept: []uint64{6}},      // head compaction
		{lo: 16, hi: 20, first: 6, last: 15, gone: []uint64{16, 20}, kept: []uint64{15}}, // suffix truncation
		{lo: 10, hi: 11, first: 6, last: 15, gone: []uint64{10, 11}, kept: []uint64{9, 12}},
		{lo: 3, hi: 2, first: 6, last: 15, kept: []uint64{6, 15}},   // empty range
		{lo: 30, hi: 40, first: 6, last: 15, kept: []uint64{6, 15}}, // beyond the end
		{lo: 1, hi: 9, first: 12, last: 15, gone: []uint64{6, 9}},   // clip across a hole
		{lo: 0, hi: math.MaxUint64, first: 0, last: 0, gone: []uint64{12, 15}},
	}
	for _, st := range steps {
		if err := s.DeleteRange(st.lo, st.hi); err != nil {
			t.Fatal(err)
		}
		checkBounds(t, s, st.first, st.last)
		for _, i := range st.gone {
			checkMissing(t, s, i)
		}
		for _, i := range st.kept {
			checkGet(t, s, testLog(i))
		}
	}

	// Raft's conflict path: drop a suffix, then rewrite it with a new term.
	if err := s.StoreLogs(testLogs(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	rewritten := testLogs(6, 8)
	for _, l := range rewritten {
		l.Term = 99
	}
	if err := s.StoreLogs(rewritten); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 8)
	for _, l := range rewritten {
		checkGet(t, s, l)
	}
}

func TestLogStoreMaxIndex(t *testing.T) {
	s, _ := newMemStore(t)
	if err := s.StoreLogs([]*raft.Log{testLog(math.MaxUint64 - 1), testLog(math.MaxUint64)}); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, math.MaxUint64-1, math.MaxUint64)
	checkGet(t, s, testLog(math.MaxUint64))
	if err := s.DeleteRange(math.MaxUint64, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, math.MaxUint64-1, math.MaxUint64-1)
}

// TestLogStoreIgnoresOtherPrefixes guards against the raft-pebbledb bug where
// unbounded iterators read stable-store keys as log indexes.
func TestLogStoreIgnoresOtherPrefixes(t *testing.T) {
	_, db := newMemStore(t)
	for _, k := range [][]byte{
		{0x00, 0xff}, {prefixLog - 1}, prefixed(prefixStable, []byte("CurrentTerm")),
		fsmKey([]byte("lock/a")), metaKey([]byte("applied")), {0xff, 0xff, 0xff},
	} {
		if err := db.Set(k, []byte("v"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewLogStore(db)
	if err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
	if err := s.StoreLogs(testLogs(3, 4)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(0, 3); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 4, 4)
	if err := s.DeleteRange(4, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("CurrentTerm")); err != nil || string(v) != "v" {
		t.Fatalf("stable key after log range delete = %q, %v", v, err)
	}
	if _, closer, err := db.Get(fsmKey([]byte("lock/a"))); err != nil {
		t.Fatalf("fsm key after log range delete: %v", err)
	} else {
		closer.Close()
	}
}

func TestStableStore(t *testing.T) {
	s, _ := newMemStore(t)

	// Raft recognises "missing" only by this exact error text.
	v, err := s.Get([]byte("CurrentTerm"))
	if err == nil || err.Error() != "not found" || !errors.Is(err, ErrKeyNotFound) || v != nil {
		t.Fatalf("Get(missing) = %q, %v", v, err)
	}
	n, err := s.GetUint64([]byte("CurrentTerm"))
	if err == nil || err.Error() != "not found" || n != 0 {
		t.Fatalf("GetUint64(missing) = %d, %v", n, err)
	}

	if err := s.Set([]byte("LastVoteCand"), []byte("node-1")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("Get after overwrite = %q, %v", v, err)
	}

	// An empty value is present, not missing, and must come back non-nil.
	if err := s.Set([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("empty")); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Get(empty) = %#v, %v", v, err)
	}

	for _, want := range []uint64{0, 1, 1 << 40, math.MaxUint64} {
		if err := s.SetUint64([]byte("CurrentTerm"), want); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetUint64([]byte("CurrentTerm")); err != nil || got != want {
			t.Fatalf("GetUint64 = %d, %v; want %d", got, err, want)
		}
	}

	// A value that is not 8 bytes is corruption, not "not found".
	if err := s.Set([]byte("short"), []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("short")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetUint64(short) err = %v, want ErrCorrupt", err)
	}

	// Stable keys never show up as log entries.
	checkBounds(t, s, 0, 0)
}

func TestLogStoreReopen(t *testing.T) {
	dir := t.TempDir()
	s, db := openDiskStore(t, dir)
	if err := s.StoreLogs(testLogs(1, 50)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("me")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, db = openDiskStore(t, dir)
	defer db.Close()
	checkBounds(t, s, 11, 50)
	checkMissing(t, s, 10)
	for _, l := range testLogs(11, 50) {
		checkGet(t, s, l)
	}
	if n, err := s.GetUint64([]byte("CurrentTerm")); err != nil || n != 7 {
		t.Fatalf("CurrentTerm = %d, %v", n, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "me" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
}

func TestLogStoreEncodingRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, 1<<20)
	cases := []*raft.Log{
		{},
		{Index: 1, Term: 1, Type: raft.LogNoop},
		{Index: math.MaxUint64, Term: math.MaxUint64, Type: raft.LogType(255), Data: big, Extensions: []byte{0}},
		{Index: 3, Term: 2, Type: raft.LogBarrier, AppendedAt: time.Unix(0, 0)},
		{Index: 4, Term: 2, Type: raft.LogConfiguration, AppendedAt: time.Date(1600, 1, 2, 3, 4, 5, 6, time.UTC)},
		{Index: 5, Term: 2, AppendedAt: time.Date(3000, 1, 2, 3, 4, 5, 999_999_999, time.FixedZone("x", 3600))},
		{Index: 6, Term: 2, Data: []byte("d"), AppendedAt: time.Now()},
	}
	for _, want := range cases {
		var got raft.Log
		if err := decodeLog(appendLog(nil, want), &got); err != nil {
			t.Fatalf("decode(%d): %v", want.Index, err)
		}
		if !logsEqual(&got, want) {
			t.Fatalf("round trip of %d: got %+v", want.Index, got)
		}
	}
	if got := (time.Time{}).Unix(); got != zeroUnix {
		t.Fatalf("zeroUnix = %d, time.Time{}.Unix() = %d", zeroUnix, got)
	}
}

func TestLogStoreDecodeCorrupt(t *testing.T) {
	l := &raft.Log{Index: 300, Term: 7, Type: raft.LogCommand, Data: []byte("payload"),
		Extensions: []byte("ext"), AppendedAt: time.Unix(1_700_000_000, 5)}
	enc := appendLog(nil, l)

	var got raft.Log
	// Every truncation and every single-bit flip must be rejected, not panic.
	for n := range len(enc) {
		if err := decodeLog(enc[:n], &got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: err = %v", n, err)
		}
	}
	for i := range len(enc) * 8 {
		bad := bytes.Clone(enc)
		bad[i/8] ^= 1 << (i % 8)
		if err := decodeLog(bad, &got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit %d flipped: err = %v", i, err)
		}
	}
	// Structurally bad bodies with a valid checksum reach the parser itself.
	for _, body := range [][]byte{
		{},
		{2},                            // unknown version
		{1, 0x80},                      // unterminated varint
		{1, 1, 1, 0, 10, 'a'},          // data length beyond the value
		{1, 1, 1, 0, 0, 0, 0, 0, 0xff}, // trailing byte
		binary.AppendUvarint([]byte{1, 1, 1, 0, 0, 0, 0}, 1e9), // nanoseconds out of range
		append([]byte{1}, bytes.Repeat([]byte{0xff}, 11)...),   // varint overflow
	} {
		if err := decodeLog(withCRC(body), &got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("body %x: err = %v", body, err)
		}
	}

	// Through the store: garbage under a log key, and an entry stored
	// under the wrong index.
	s, db := newMemStore(t)
	if err := db.Set(logKey(5), []byte("garbage"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set(logKey(6), appendLog(nil, testLog(7)), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []uint64{5, 6} {
		if err := s.GetLog(idx, &got); !errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "raftstore: ") {
			t.Fatalf("GetLog(%d) err = %v, want wrapped ErrCorrupt", idx, err)
		}
	}
	// A malformed key under the log prefix is reported on open.
	if err := db.Set([]byte{prefixLog, 1, 2}, nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLogStore(db); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewLogStore with bad key: err = %v", err)
	}
}

func withCRC(body []byte) []byte {
	return binary.BigEndian.AppendUint32(bytes.Clone(body), logChecksum(body))
}

// FuzzLogStoreDecode feeds arbitrary bodies with a valid checksum, so the
// fuzzer explores the parser rather than the CRC check.
func FuzzLogStoreDecode(f *testing.F) {
	f.Add(appendLog(nil, testLog(1))[:len(appendLog(nil, testLog(1)))-4])
	f.Add([]byte{1, 0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		var got raft.Log
		if err := decodeLog(withCRC(body), &got); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		var again raft.Log
		if err := decodeLog(appendLog(nil, &got), &again); err != nil || !logsEqual(&got, &again) {
			t.Fatalf("re-encode of %+v: %+v, %v", got, again, err)
		}
	})
}

// TestLogStoreConcurrent exercises the cached bounds under the race
// detector: one appender, one compactor, several readers.
func TestLogStoreConcurrent(t *testing.T) {
	s, _ := newMemStore(t)
	const n = 2000
	var wg sync.WaitGroup
	var done atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := uint64(1); i <= n; i += 4 {
			if err := s.StoreLogs(testLogs(i, i+3)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if last, _ := s.LastIndex(); last > 100 {
				if err := s.DeleteRange(0, last-100); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				last, _ := s.LastIndex()
				var l raft.Log
				if err := s.GetLog(last, &l); err == nil && l.Index != last {
					t.Errorf("GetLog(%d) returned index %d", last, l.Index)
				}
				s.FirstIndex()
			}
		}()
	}
	wg.Wait()
	if last, _ := s.LastIndex(); last != n {
		t.Fatalf("last = %d, want %d", last, n)
	}
	first, _ := s.FirstIndex()
	checkBounds(t, s, first, n)
}

// countingFSM counts applied commands.
type countingFSM struct{ n atomic.Uint64 }

func (f *countingFSM) Apply(l *raft.Log) any {
	if l.Type == raft.LogCommand {
		f.n.Add(1)
	}
	return nil
}

func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) {
	return countSnapshot(f.n.Load()), nil
}

func (f *countingFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.n.Store(binary.BigEndian.Uint64(b[:]))
	return nil
}

type countSnapshot uint64

func (c countSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(binary.BigEndian.AppendUint64(nil, uint64(c))); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnapshot) Release() {}

func startRaft(t *testing.T, s *LogStore, fsm raft.FSM) *raft.Raft {
	t.Helper()
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.LogOutput = io.Discard
	addr, trans := raft.NewInmemTransport("n1")
	snaps := raft.NewInmemSnapshotStore()

	existing, err := raft.HasExistingState(s, s, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if !existing {
		err := raft.BootstrapCluster(conf, s, s, snaps, trans, raft.Configuration{
			Servers: []raft.Server{{ID: conf.LocalID, Address: addr}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := raft.NewRaft(conf, fsm, s, s, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

// TestLogStoreRaftRestart runs a real single-voter Raft on the store, restarts
// it on the same directory and checks that log, term and configuration
// survived (the restarted node re-elects itself from the stored config and
// replays all 100 commands into a fresh FSM).
func TestLogStoreRaftRestart(t *testing.T) {
	dir := t.TempDir()
	s, db := openDiskStore(t, dir)
	fsm := &countingFSM{}
	r := startRaft(t, s, fsm)
	for i := range 100 {
		if err := r.Apply([]byte{byte(i)}, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	lastIndex := r.LastIndex()
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if fsm.n.Load() != 100 {
		t.Fatalf("fsm applied %d commands", fsm.n.Load())
	}
	var last raft.Log
	if err := s.GetLog(lastIndex, &last); err != nil {
		t.Fatal(err)
	}
	term, err := s.GetUint64([]byte("CurrentTerm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, db = openDiskStore(t, dir)
	defer db.Close()
	if got, _ := s.LastIndex(); got != lastIndex {
		t.Fatalf("reopened LastIndex = %d, want %d", got, lastIndex)
	}
	checkGet(t, s, &last)
	if got, err := s.GetUint64([]byte("CurrentTerm")); err != nil || got != term {
		t.Fatalf("reopened CurrentTerm = %d, %v; want %d", got, err, term)
	}

	fsm2 := &countingFSM{}
	r = startRaft(t, s, fsm2)
	defer r.Shutdown()
	if err := r.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if fsm2.n.Load() != 100 {
		t.Fatalf("restarted fsm replayed %d commands, want 100", fsm2.n.Load())
	}
	if r.LastIndex() <= lastIndex {
		t.Fatalf("restarted LastIndex = %d, want > %d (new leader no-op)", r.LastIndex(), lastIndex)
	}
}

const crashEnv = "FENCED_LOGSTORE_CRASH_DIR"

// crashLog is the deterministic entry the crash child writes at idx, so the
// parent can verify content without any side channel.
func crashLog(idx uint64) *raft.Log {
	data := make([]byte, 64+idx*7919%2048)
	for i := range data {
		data[i] = byte(idx + uint64(i))
	}
	l := &raft.Log{Index: idx, Term: idx/1000 + 1, Type: raft.LogCommand, Data: data,
		AppendedAt: time.Unix(int64(idx), int64(idx%1e9))}
	if idx%3 == 0 {
		l.Extensions = []byte(strconv.FormatUint(idx, 10))
	}
	return l
}

// TestLogStoreCrashChild is the child half of TestLogStoreCrash; it only runs
// when re-executed with crashEnv set. It appends forever and reports each
// index only after StoreLogs has returned, i.e. after the fsync.
func TestLogStoreCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process for TestLogStoreCrash")
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	db, err := OpenDB(dir)
	if err != nil {
		fail(err)
	}
	s, err := NewLogStore(db)
	if err != nil {
		fail(err)
	}
	next, _ := s.LastIndex()
	next++
	var out []byte
	for n := 0; ; n++ {
		logs := make([]*raft.Log, 1+n%8)
		for i := range logs {
			logs[i] = crashLog(next)
			next++
		}
		if err := s.StoreLogs(logs); err != nil {
			fail(err)
		}
		out = out[:0]
		for _, l := range logs {
			out = fmt.Appendf(out, "IDX %d\n", l.Index)
		}
		if n%4 == 0 {
			if err := s.SetUint64([]byte("CurrentTerm"), next-1); err != nil {
				fail(err)
			}
			out = fmt.Appendf(out, "TERM %d\n", next-1)
		}
		// One write per batch: pipe writes under PIPE_BUF are atomic, and
		// the parent ignores an unterminated last line anyway.
		if _, err := os.Stdout.Write(out); err != nil {
			fail(err)
		}
	}
}

// TestLogStoreCrash kills a writing child with SIGKILL and checks that every
// append it saw acknowledged survived, three times on the same directory.
func TestLogStoreCrash(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("already the child")
	}
	dir := t.TempDir()
	acked := map[uint64]bool{}
	var maxAcked, maxTerm uint64
	for round := range 3 {
		roundAcked := runCrashChild(t, dir, func(kind string, v uint64) {
			switch kind {
			case "IDX":
				acked[v] = true
				maxAcked = max(maxAcked, v)
			case "TERM":
				maxTerm = max(maxTerm, v)
			}
		})
		if roundAcked == 0 {
			t.Fatalf("round %d: child acknowledged nothing", round)
		}

		s, db := openDiskStore(t, dir)
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		if first != 1 || last < maxAcked {
			db.Close()
			t.Fatalf("round %d: bounds %d..%d, acknowledged up to %d", round, first, last, maxAcked)
		}
		// Every entry on disk must be intact and the log gap-free; that
		// covers every acknowledged index too.
		for i := first; i <= last; i++ {
			var got raft.Log
			if err := s.GetLog(i, &got); err != nil {
				db.Close()
				t.Fatalf("round %d: GetLog(%d) (acked=%v): %v", round, i, acked[i], err)
			}
			if !logsEqual(&got, crashLog(i)) {
				db.Close()
				t.Fatalf("round %d: entry %d differs", round, i)
			}
		}
		if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term < maxTerm {
			db.Close()
			t.Fatalf("round %d: CurrentTerm = %d, %v; acknowledged %d", round, term, err, maxTerm)
		}
		t.Logf("round %d: %d acknowledged this round, %d on disk after kill (last acked %d)",
			round, roundAcked, last-first+1, maxAcked)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// runCrashChild starts the child, SIGKILLs it ~300ms after its first
// acknowledgement and reports every complete line; it returns the number of
// acknowledged indexes.
func runCrashChild(t *testing.T, dir string, ack func(kind string, v uint64)) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogStoreCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { cmd.Process.Kill() }) } // SIGKILL on Unix
	safety := time.AfterFunc(30*time.Second, kill)
	defer safety.Stop()

	n := 0
	rd := bufio.NewReader(stdout)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break // EOF after the kill; a partial last line is ignored
		}
		kind, num, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok || (kind != "IDX" && kind != "TERM") {
			continue
		}
		v, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			t.Fatalf("bad child line %q", line)
		}
		if kind == "IDX" {
			if n == 0 {
				time.AfterFunc(300*time.Millisecond, kill)
			}
			n++
		}
		ack(kind, v)
	}
	werr := cmd.Wait()
	if ps := cmd.ProcessState; ps == nil || ps.Exited() {
		t.Fatalf("child was not killed: %v\n%s", werr, stderr.String())
	}
	return n
}
