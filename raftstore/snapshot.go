package raftstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// Snapshot stream format, version 1:
//
//	magic "FNCDSNAP" | version uint32 | applied index uint64   (header)
//	{ uvarint len(key) > 0 | key | uvarint len(value) | value } (records)
//	uvarint 0                                                   (end)
//	crc32c of everything above, uint32                          (trailer)
//
// Keys are the state machine's relative keys. The checksum is verified
// before anything is committed, so a torn or corrupt snapshot changes
// nothing.
const (
	snapMagic   = "FNCDSNAP"
	snapVersion = 1
	maxSnapKey  = 1 << 20
	// Twice the largest record the state machine builds, so every record
	// it accepted is one a snapshot carries (lockstate.MaxRecord).
	maxSnapVal = 2 * lockstate.MaxRecord
)

// ErrBadSnapshot is returned by Restore for a stream that is not a valid
// snapshot of a supported version.
var ErrBadSnapshot = errors.New("raftstore: bad snapshot")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type fsmSnapshot struct {
	snap    *pebble.Snapshot
	applied uint64
}

// snapshot captures a point-in-time Pebble snapshot. It first writes the
// state back and makes it durable up to the captured index: raft may
// truncate the log up to it, and state writes not yet made or not yet
// synced could otherwise be lost with the log entries that produced them.
func (f *fsm) snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	if err := f.store(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	// The snapshot file goes to the data directory too, outside Pebble:
	// it is refused while it would take the reserve (the state's size in
	// Pebble is a fair estimate of it).
	est, _ := f.db.EstimateDiskUsage([]byte{prefixFSM}, []byte{prefixFSM + 1})
	if err := f.disk.admit(int(min(est, 1<<40)), "snapshot"); err != nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("raftstore: snapshot: %w", err)
	}
	snap := f.db.NewSnapshot()
	applied := f.applied
	f.mu.Unlock()
	if err := f.disk.write("sync before snapshot", func() error { return f.db.LogData(nil, pebble.Sync) }); err != nil {
		snap.Close()
		return nil, fmt.Errorf("raftstore: sync before snapshot: %w", err)
	}
	return &fsmSnapshot{snap: snap, applied: applied}, nil
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.snap, s.applied); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { s.snap.Close() }

func writeSnapshot(dst io.Writer, r pebble.Reader, applied uint64) error {
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(dst, crc), 64<<10)
	var hdr [20]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapVersion)
	binary.BigEndian.PutUint64(hdr[12:], applied)
	bw.Write(hdr[:])
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixFSM}, UpperBound: []byte{prefixFSM + 1}})
	if err != nil {
		return fmt.Errorf("raftstore: snapshot iterator: %w", err)
	}
	var lenBuf [binary.MaxVarintLen64]byte
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key()[1:], it.Value()
		bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(k)))])
		bw.Write(k)
		bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(v)))])
		bw.Write(v)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("raftstore: snapshot iterator: %w", err)
	}
	bw.WriteByte(0)
	if err := bw.Flush(); err != nil { // also reports any earlier write error
		return fmt.Errorf("raftstore: write snapshot: %w", err)
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := dst.Write(sum[:]); err != nil {
		return fmt.Errorf("raftstore: write snapshot: %w", err)
	}
	return nil
}

// Restore replaces the state with the snapshot's, atomically: one synced
// batch that range-deletes the old records, writes the new ones and the
// applied index, committed only after the checksum matched.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b := f.db.NewBatch()
	defer b.Close()
	// The records are loaded into a new State as they are read, so a
	// snapshot whose checksum matches but whose records are not a valid
	// state is rejected before anything is committed.
	st := lockstate.New(f.cfg)
	applied, err := readSnapshot(rc, b, st)
	if err != nil {
		return err
	}
	if err := f.disk.admit(b.Len(), "snapshot restore"); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	if err := f.disk.write("snapshot restore", func() error { return b.Commit(pebble.Sync) }); err != nil {
		return fmt.Errorf("raftstore: commit restore: %w", err)
	}
	f.mu.Lock()
	f.state, f.applied, f.stored = st, applied, applied
	f.mu.Unlock()
	if f.obs != nil {
		f.obs.Restored(applied, f.read)
	}
	return nil
}

type crcReader struct {
	r   *bufio.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.crc.Write([]byte{b})
	}
	return b, err
}

// readSnapshot reads a snapshot stream into b, and its records into st in
// key order, as fsm.load would read them back from Pebble.
func readSnapshot(src io.Reader, b *pebble.Batch, st *lockstate.State) (uint64, error) {
	cr := &crcReader{r: bufio.NewReaderSize(src, 64<<10), crc: crc32.New(crcTable)}
	bad := func(format string, args ...any) (uint64, error) {
		return 0, fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
	}
	var hdr [20]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return bad("header: %v", err)
	}
	if string(hdr[:8]) != snapMagic {
		return bad("not a fenced snapshot")
	}
	if v := binary.BigEndian.Uint32(hdr[8:]); v != snapVersion {
		return bad("version %d not supported", v)
	}
	applied := binary.BigEndian.Uint64(hdr[12:])
	if err := b.DeleteRange([]byte{prefixFSM}, []byte{prefixFSM + 1}, nil); err != nil {
		return 0, err
	}
	var key, prev []byte
	for {
		kl, err := binary.ReadUvarint(cr)
		if err != nil {
			return bad("record: %v", err)
		}
		if kl == 0 {
			break
		}
		if kl > maxSnapKey {
			return bad("key of %d bytes", kl)
		}
		key = append(append(key[:0], prefixFSM), make([]byte, kl)...)
		if _, err := io.ReadFull(cr, key[1:]); err != nil {
			return bad("key: %v", err)
		}
		vl, err := binary.ReadUvarint(cr)
		if err != nil || vl > maxSnapVal {
			return bad("value length")
		}
		val := make([]byte, vl)
		if _, err := io.ReadFull(cr, val); err != nil {
			return bad("value: %v", err)
		}
		if prev != nil && bytes.Compare(key, prev) <= 0 {
			return bad("record %q out of key order", key[1:])
		}
		prev = append(prev[:0], key...)
		if err := st.Load(key[1:], val); err != nil {
			return bad("%v", err)
		}
		if err := b.Set(key, val, nil); err != nil {
			return 0, err
		}
	}
	want := cr.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		return bad("trailer: %v", err)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return bad("checksum %08x, want %08x", got, want)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], applied)
	if err := b.Set(appliedKey, v[:], nil); err != nil {
		return 0, err
	}
	return applied, nil
}
