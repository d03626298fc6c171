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
	gen     uint64 // the generation live in snap
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
	applied, gen := f.applied, f.gen
	f.mu.Unlock()
	if err := f.disk.write("sync before snapshot", func() error { return f.db.LogData(nil, pebble.Sync) }); err != nil {
		snap.Close()
		return nil, fmt.Errorf("raftstore: sync before snapshot: %w", err)
	}
	return &fsmSnapshot{snap: snap, applied: applied, gen: gen}, nil
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := writeSnapshot(sink, s.snap, s.applied, s.gen, nil); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { s.snap.Close() }

// writeSnapshot streams generation gen of r as a snapshot at applied and
// returns how many records it wrote. If digest is set, every record also
// goes into it as lockstate.State.Hash frames records, so a backup reports
// RAFT.HASH's digest of its state without a second pass (raft's own
// snapshots skip that cost).
func writeSnapshot(dst io.Writer, r pebble.Reader, applied, gen uint64, digest hash.Hash) (int, error) {
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(dst, crc), 64<<10)
	var hdr [20]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapVersion)
	binary.BigEndian.PutUint64(hdr[12:], applied)
	bw.Write(hdr[:])
	lo, hi := genBounds(gen)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("raftstore: snapshot iterator: %w", err)
	}
	var rec io.Writer = bw
	if digest != nil {
		rec = io.MultiWriter(bw, digest)
	}
	var lenBuf [binary.MaxVarintLen64]byte
	records := 0
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key()[len(lo):], it.Value()
		rec.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(k)))])
		rec.Write(k)
		rec.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(v)))])
		rec.Write(v)
		records++
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("raftstore: snapshot iterator: %w", err)
	}
	bw.WriteByte(0)
	if err := bw.Flush(); err != nil { // also reports any earlier write error
		return 0, fmt.Errorf("raftstore: write snapshot: %w", err)
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := dst.Write(sum[:]); err != nil {
		return 0, fmt.Errorf("raftstore: write snapshot: %w", err)
	}
	return records, nil
}

// restoreBatchBytes bounds a batch of a restore: the snapshot's records
// are committed in batches of about this size (or one record, if larger),
// so installing a large state never holds a copy of it in one batch.
const restoreBatchBytes = 4 << 20

// Restore replaces the state with the snapshot's. The records go under the
// next generation in batches of restoreBatch bytes, committed NoSync and
// not yet visible (generation.go); they are loaded into a fresh State as
// they are read, so a stream with a bad checksum or records that are not a
// valid state is rejected before anything is made live. Then one synced
// batch makes the new generation live with its applied index and
// range-deletes the old one. Pebble writes batches to its log in commit
// order, so syncing that batch makes the records before it durable too: a
// crash leaves the old generation live and whole, or the new one.
//
// The new State is built beside the running one, which keeps serving
// reads until the swap: at the peak a restore holds both.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.mu.RLock()
	old := f.gen
	f.mu.RUnlock()
	gen := old + 1
	lo, hi := genBounds(gen)
	// The batch's buffer is kept from one batch to the next, unless a
	// record larger than the bound grew it.
	b := f.db.NewBatch(pebble.WithInitialSizeBytes(f.restoreBatch+f.restoreBatch/4), pebble.WithMaxRetainedSizeBytes(2*f.restoreBatch))
	w := &restoreWriter{b: b, prefix: lo, limit: f.restoreBatch, committed: f.restored, disk: f.disk}
	defer func() { w.b.Close() }()
	st := lockstate.New(f.cfg)
	// Whatever an earlier failed restore left under gen goes first.
	err := w.b.DeleteRange(lo, hi, nil)
	var applied uint64
	if err == nil {
		applied, err = readSnapshot(rc, w, st)
	}
	if err == nil {
		err = w.commit()
	}
	if err != nil {
		// Best effort: the records are not live, and load drops them.
		_ = f.disk.write("drop a failed restore", func() error { return f.db.DeleteRange(lo, hi, pebble.NoSync) })
		return err
	}
	flip := f.db.NewBatch()
	defer flip.Close()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], gen)
	if err := flip.Set(genKey, v[:], nil); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	binary.BigEndian.PutUint64(v[:], applied)
	if err := flip.Set(appliedKey, v[:], nil); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	oldLo, oldHi := genBounds(old)
	if err := flip.DeleteRange(oldLo, oldHi, nil); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	// After the range deletion in the batch, so that it survives it.
	if err := flip.Set(oldBinaryGuard, oldBinaryGuardValue, nil); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	// Under the lock, so that no write-back (sync on shutdown) writes the
	// old state into the old generation, or its applied index, after the
	// flip.
	if err := f.disk.admit(flip.Len(), "snapshot restore"); err != nil {
		_ = f.disk.write("drop a failed restore", func() error { return f.db.DeleteRange(lo, hi, pebble.NoSync) })
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	f.mu.Lock()
	err = f.disk.write("snapshot restore", func() error { return flip.Commit(pebble.Sync) })
	if err != nil {
		// A failed commit marks the storage failed (disk.write); the
		// batch may have been applied before its sync failed. The state in memory
		// follows what Pebble shows, so that write-backs go where load will
		// read; nothing is deleted, and the next open drops whichever
		// generation is not live.
		if live, gerr := getUint64(f.db, genKey); gerr != nil || live != gen {
			f.mu.Unlock()
			return fmt.Errorf("raftstore: commit restore: %w", err)
		}
		err = fmt.Errorf("raftstore: sync restore: %w", err)
	}
	f.state, f.applied, f.stored, f.gen = st, applied, applied, gen
	f.mu.Unlock()
	if f.obs != nil {
		f.obs.Restored(applied, f.read)
	}
	return err
}

// restoreWriter commits a restore's records under prefix in batches of
// about limit bytes.
type restoreWriter struct {
	disk      *disk // refuses batches on a full disk (nil: unguarded)
	b         *pebble.Batch
	prefix    []byte
	key       []byte
	limit     int
	batches   int
	committed func(batches, size int) // fsm.restored
}

func (w *restoreWriter) set(k, v []byte) error {
	w.key = append(append(w.key[:0], w.prefix...), k...)
	if err := w.b.Set(w.key, v, nil); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	if w.b.Len() >= w.limit {
		return w.commit()
	}
	return nil
}

// commit commits the batch so far, if it holds anything.
func (w *restoreWriter) commit() error {
	if w.b.Empty() {
		return nil
	}
	if err := w.disk.admit(w.b.Len(), "snapshot restore"); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	if err := w.disk.write("snapshot restore", func() error { return w.b.Commit(pebble.NoSync) }); err != nil {
		return fmt.Errorf("raftstore: commit restore batch: %w", err)
	}
	size := w.b.Len()
	w.b.Reset()
	w.batches++
	if w.committed != nil {
		w.committed(w.batches, size)
	}
	return nil
}

type crcReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	n   int64 // bytes read through it
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.crc.Write([]byte{b})
		c.n++
	}
	return b, err
}

// readSnapshot reads a snapshot stream's records into w and into st in key
// order, as fsm.load would read them back from Pebble, and returns its
// applied index once the checksum matched.
func readSnapshot(src io.Reader, w *restoreWriter, st *lockstate.State) (uint64, error) {
	applied, _, err := scanSnapshot(src, nil, nil, func(k, v []byte) error {
		if err := st.Load(k, v); err != nil {
			return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		}
		return w.set(k, v)
	})
	return applied, err
}

// scanSnapshot checks a snapshot stream's format and hands each record to
// fn in key order (k and v are valid only during the call); digest, if
// set, gets the records framed as lockstate.State.Hash frames them. It
// returns the applied index and the record count, but only once the
// checksum matched: a caller that committed records must drop them on
// error. size, if set, gets the stream's length up to its checksum.
func scanSnapshot(src io.Reader, digest hash.Hash, size *int64, fn func(k, v []byte) error) (applied uint64, records int, err error) {
	cr := &crcReader{r: bufio.NewReaderSize(src, 64<<10), crc: crc32.New(crcTable)}
	bad := func(format string, args ...any) (uint64, int, error) {
		return 0, 0, fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
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
	applied = binary.BigEndian.Uint64(hdr[12:])
	// key and val are reused: State.Load and Batch.Set copy what they keep
	// (fsm.load hands Load an iterator's value, valid only until Next).
	var key, val, prev, frame []byte
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
		if uint64(cap(key)) < kl {
			key = make([]byte, kl)
		}
		key = key[:kl]
		if _, err := io.ReadFull(cr, key); err != nil {
			return bad("key: %v", err)
		}
		vl, err := binary.ReadUvarint(cr)
		if err != nil || vl > maxSnapVal {
			return bad("value length")
		}
		if uint64(cap(val)) < vl {
			val = make([]byte, vl)
		}
		val = val[:vl]
		if _, err := io.ReadFull(cr, val); err != nil {
			return bad("value: %v", err)
		}
		if prev != nil && bytes.Compare(key, prev) <= 0 {
			return bad("record %q out of key order", key)
		}
		prev = append(prev[:0], key...)
		if digest != nil {
			frame = binary.AppendUvarint(frame[:0], kl)
			digest.Write(frame)
			digest.Write(key)
			frame = binary.AppendUvarint(frame[:0], vl)
			digest.Write(frame)
			digest.Write(val)
		}
		if err := fn(key, val); err != nil {
			return 0, 0, err
		}
		records++
	}
	want := cr.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		return bad("trailer: %v", err)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return bad("checksum %08x, want %08x", got, want)
	}
	if size != nil {
		*size = cr.n + int64(len(sum))
	}
	return applied, records, nil
}
