package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// ErrKeyNotFound is returned by the stable-store getters for a missing key.
// Its text is exactly "not found" and carries no package prefix because
// hashicorp/raft recognises a missing CurrentTerm/LastVoteTerm/LastVoteCand
// by comparing err.Error() with "not found" (api.go, raft.go).
var ErrKeyNotFound = errors.New("not found")

// ErrCorrupt is wrapped by every error reporting undecodable stored bytes.
var ErrCorrupt = errors.New("raftstore: corrupt record")

var (
	_ raft.LogStore          = (*LogStore)(nil)
	_ raft.StableStore       = (*LogStore)(nil)
	_ raft.MonotonicLogStore = (*LogStore)(nil)
)

// LogStore is a raft.LogStore and raft.StableStore in the node's shared
// Pebble database. It does not own the database and has no Close: whoever
// opened the DB closes it after Raft has shut down.
type LogStore struct {
	db *pebble.DB
	// disk guards the writes (nil: unguarded, for tools and tests): see
	// DESIGN.md, Disk trouble.
	disk *disk
	// meter, if set, hears how long each synced append took.
	meter Meter

	// mu serialises writers (StoreLogs runs on Raft's main goroutine,
	// DeleteRange also on the snapshot goroutine) so the cached bounds are
	// updated in the same order the writes committed.
	mu sync.Mutex
	// first and last cache the lowest and highest stored index (0 = empty)
	// so FirstIndex/LastIndex, which Raft calls constantly, never seek.
	first atomic.Uint64
	last  atomic.Uint64
}

// NewLogStore returns a store on db, reading the current log bounds once.
func NewLogStore(db *pebble.DB) (*LogStore, error) {
	s := &LogStore{db: db}
	first, last, err := s.scanBounds()
	if err != nil {
		return nil, err
	}
	s.first.Store(first)
	s.last.Store(last)
	return s, nil
}

// IsMonotonic reports false: Pebble tolerates index gaps, so Raft may keep
// its default of signalling a restored snapshot with a gap instead of
// wiping the whole log (the path raft-boltdb users have exercised for years).
func (s *LogStore) IsMonotonic() bool { return false }

// FirstIndex implements raft.LogStore.
func (s *LogStore) FirstIndex() (uint64, error) { return s.first.Load(), nil }

// LastIndex implements raft.LogStore.
func (s *LogStore) LastIndex() (uint64, error) { return s.last.Load(), nil }

// GetLog implements raft.LogStore. A missing index yields raft.ErrLogNotFound
// unwrapped, because Raft's replication compares it with ==.
func (s *LogStore) GetLog(index uint64, l *raft.Log) error {
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("raftstore: get log %d: %w", index, err)
	}
	defer closer.Close()
	if err := decodeLog(v, l); err != nil {
		return fmt.Errorf("raftstore: log %d: %w", index, err)
	}
	if l.Index != index {
		return fmt.Errorf("raftstore: log key %d holds index %d: %w", index, l.Index, ErrCorrupt)
	}
	return nil
}

// StoreLog implements raft.LogStore.
func (s *LogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore. All entries go into one batch committed
// with pebble.Sync: that fsync is what makes an acknowledged append durable,
// and because the DB has a single WAL it also persists every earlier NoSync
// write (e.g. state-machine batches).
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	// Batch.Set copies key and value, so both buffers are reused.
	key := make([]byte, 9)
	var buf []byte
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, l := range logs {
		putLogKey(key, l.Index)
		buf = appendLog(buf[:0], l)
		if err := b.Set(key, buf, nil); err != nil {
			return fmt.Errorf("raftstore: batch log %d: %w", l.Index, err)
		}
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}

	// A refused or failed append is an error Raft handles: a leader
	// answers the proposals with it and steps down, a follower answers the
	// append unsuccessful and the leader sends it again later.
	if err := s.disk.admit(b.Len(), "log append"); err != nil {
		return fmt.Errorf("raftstore: store logs %d..%d: %w", lo, hi, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	commit := func() error { return timed(s.meter, Meter.LogSynced, func() error { return b.Commit(pebble.Sync) }) }
	if err := s.disk.write("log append", commit); err != nil {
		return fmt.Errorf("raftstore: store logs %d..%d: %w", lo, hi, err)
	}
	if f := s.first.Load(); f == 0 || lo < f {
		s.first.Store(lo)
	}
	if hi > s.last.Load() {
		s.last.Store(hi)
	}
	return nil
}

// DeleteRange implements raft.LogStore; lo and hi are inclusive. A single
// range tombstone replaces what would otherwise be one point delete per entry.
func (s *LogStore) DeleteRange(lo, hi uint64) error {
	if lo > hi {
		return nil
	}
	end := []byte{prefixLog + 1} // hi == MaxUint64: up to the end of the prefix
	if hi < math.MaxUint64 {
		end = logKey(hi + 1)
	}

	// Never refused for space: a range tombstone is a few bytes, and
	// deleting is how the log gives space back.
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.disk.write("log delete", func() error { return s.db.DeleteRange(logKey(lo), end, pebble.Sync) }); err != nil {
		return fmt.Errorf("raftstore: delete logs %d..%d: %w", lo, hi, err)
	}
	first, last := s.first.Load(), s.last.Load()
	switch {
	case first == 0 || hi < first || lo > last || (lo > first && hi < last):
		// Nothing stored was in range, or a hole left both ends in place.
	case lo <= first && hi >= last:
		s.first.Store(0)
		s.last.Store(0)
	default:
		// The range clipped an end; index gaps are allowed, so only a scan
		// knows the new bound.
		first, last, err := s.scanBounds()
		if err != nil {
			return err
		}
		s.first.Store(first)
		s.last.Store(last)
	}
	return nil
}

// scanBounds finds the lowest and highest log index with a bounded iterator,
// so stable-store and FSM keys can never be mistaken for log keys.
func (s *LogStore) scanBounds() (first, last uint64, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixLog},
		UpperBound: []byte{prefixLog + 1},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("raftstore: log iterator: %w", err)
	}
	if it.First() {
		first, err = parseLogKey(it.Key())
	}
	if err == nil && it.Last() {
		last, err = parseLogKey(it.Key())
	}
	if err == nil {
		if err = it.Error(); err != nil {
			err = fmt.Errorf("raftstore: scan log bounds: %w", err)
		}
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("raftstore: close log iterator: %w", cerr)
	}
	if err != nil {
		return 0, 0, err
	}
	return first, last, nil
}

// Set implements raft.StableStore; the write is synced because Raft relies on
// a persisted vote and term before answering RPCs.
//
// It is never refused for space: it is a few bytes, and the reserve is kept
// for such writes. If Pebble fails it, the node's storage is failed for the
// rest of the process, and Set does not return. Raft panics when the term
// cannot be saved (setCurrentTerm), and returning nil instead would let it
// act in a term it never recorded: after a restart it could vote twice in
// that term, which breaks Raft's safety. Blocking Raft's goroutine stops
// this node's part in the cluster, which carries on without it, while the
// node reports why (MISCONF, /readyz, INFO) until it is restarted.
func (s *LogStore) Set(key, val []byte) error {
	err := s.disk.write("stable store", func() error { return s.db.Set(prefixed(prefixStable, key), val, pebble.Sync) })
	if err != nil && s.disk != nil {
		select {} // see above; Node.Close does not wait for Raft on failed storage
	}
	if err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get implements raft.StableStore. A missing key returns ErrKeyNotFound
// unwrapped (see its comment). The result is a copy the caller owns.
func (s *LogStore) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(prefixed(prefixStable, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	defer closer.Close()
	// Non-nil even when empty: Raft treats a nil LastVoteCand as "no vote".
	return append(make([]byte, 0, len(v)), v...), nil
}

// SetUint64 implements raft.StableStore, storing val as 8 big-endian bytes.
func (s *LogStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 implements raft.StableStore; a missing key returns 0 and
// ErrKeyNotFound, as raft-boltdb does.
func (s *LogStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: uint64 %q has %d bytes: %w", key, len(v), ErrCorrupt)
	}
	return binary.BigEndian.Uint64(v), nil
}

// logKey returns the key of the log entry at index.
func logKey(index uint64) []byte {
	k := make([]byte, 9)
	putLogKey(k, index)
	return k
}

func putLogKey(k []byte, index uint64) {
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
}

func parseLogKey(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != prefixLog {
		return 0, fmt.Errorf("raftstore: log key %x: %w", k, ErrCorrupt)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// Log value encoding, version 1:
//
//	version  byte (1)
//	index    uvarint
//	term     uvarint
//	type     byte
//	data     uvarint length, bytes
//	ext      uvarint length, bytes
//	appended varint Unix seconds, uvarint nanoseconds (time.Time{} round-trips)
//	crc      4 bytes big-endian CRC-32C of everything before it
//
// Pebble checksums its own blocks; the CRC additionally catches encoder bugs
// and bytes written by anything that is not this code.
const logVersion = 1

// zeroUnix is time.Time{}.Unix(): the zero time is encoded as a real instant
// and mapped back to time.Time{} so IsZero survives a round trip.
const zeroUnix = -62135596800

// logChecksum is CRC-32C; MakeTable returns a cached table for Castagnoli and
// Checksum then uses the CPU's CRC instructions.
func logChecksum(b []byte) uint32 {
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

func appendLog(dst []byte, l *raft.Log) []byte {
	start := len(dst)
	dst = append(dst, logVersion)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
	dst = binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
	return binary.BigEndian.AppendUint32(dst, logChecksum(dst[start:]))
}

// decodeLog parses src into l. It never panics, checks every length against
// the remaining bytes, and copies Data and Extensions so l does not alias src
// (Pebble's value buffer is only valid until its closer is closed).
func decodeLog(src []byte, l *raft.Log) error {
	if len(src) < 5 {
		return fmt.Errorf("log value of %d bytes: %w", len(src), ErrCorrupt)
	}
	body, sum := src[:len(src)-4], binary.BigEndian.Uint32(src[len(src)-4:])
	if logChecksum(body) != sum {
		return fmt.Errorf("log value checksum mismatch: %w", ErrCorrupt)
	}
	if body[0] != logVersion {
		return fmt.Errorf("log value version %d: %w", body[0], ErrCorrupt)
	}
	d := logDecoder{b: body[1:]}
	index := d.uvarint()
	term := d.uvarint()
	typ := d.byte()
	data := d.bytes()
	ext := d.bytes()
	sec := d.varint()
	nsec := d.uvarint()
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes in log value: %w", len(d.b), ErrCorrupt)
	}
	if d.err == nil && nsec >= uint64(time.Second) {
		d.err = fmt.Errorf("log nanoseconds %d out of range: %w", nsec, ErrCorrupt)
	}
	if d.err != nil {
		return d.err
	}

	// One allocation for both payloads; the three-index slices keep an
	// append to Data from overwriting Extensions.
	buf := make([]byte, len(data)+len(ext))
	copy(buf, data)
	copy(buf[len(data):], ext)
	*l = raft.Log{Index: index, Term: term, Type: raft.LogType(typ)}
	if len(data) > 0 {
		l.Data = buf[:len(data):len(data)]
	}
	if len(ext) > 0 {
		l.Extensions = buf[len(data):]
	}
	if sec != zeroUnix || nsec != 0 {
		l.AppendedAt = time.Unix(sec, int64(nsec))
	}
	return nil
}

// logDecoder reads fields until the first error, after which every read
// returns zero values; callers check err once at the end.
type logDecoder struct {
	b   []byte
	err error
}

func (d *logDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or malformed %s in log value: %w", what, ErrCorrupt)
	}
	d.b = nil
}

func (d *logDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *logDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *logDecoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *logDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
