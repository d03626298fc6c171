package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
)

// appliedKey holds the index of the last applied log entry. It is written in
// the same batch as the state that entry produced, so after a crash the two
// agree and replayed entries at or below it are skipped.
var appliedKey = []byte{prefixMeta, 'a'}

// writeBackEntries is how many applied entries the state in Pebble may lag
// behind the state in memory. The in-memory State is what every read and
// every reply uses; the Pebble copy exists for restarts, which replay the
// Raft log from the applied index stored with it. Writing it every batch
// cost a skiplist insert per record per entry (a quarter of a follower's
// CPU at 64 clients); writing it every writeBackEntries entries writes each
// busy record (the clock, a hot lock, a session) once per interval, and a
// restart replays at most this many entries more. The log keeps them:
// raft truncates it only up to a snapshot, and snapshot() writes back
// first. writeBackRecords and writeBackBytes bound the write itself:
// entries that change many records each (an MSET of a thousand keys), or
// large ones (pushes onto many lists of megabytes, each written whole), are
// written back sooner, so that no write-back builds a batch of millions of
// records or gigabytes.
const (
	writeBackEntries = 1024
	writeBackRecords = 4096
	writeBackBytes   = 16 << 20
)

// Observer hears about applied entries on this node. It is called after the
// batch is committed, outside the state lock, in log order.
type Observer interface {
	Applied(time int64, ev lockstate.Events)
	// Restored is called after a snapshot replaced the state: entries up to
	// its last index, applied, were never applied here one by one, so their
	// events were never reported. read runs fn on the restored state (or a
	// later one).
	Restored(applied uint64, read func(fn func(*lockstate.State)))
}

// fsm adapts lockstate.State to raft.BatchingFSM: it decodes entries,
// delegates, and writes the state back to Pebble every writeBackEntries
// entries or writeBackRecords changed records.
type fsm struct {
	db   *pebble.DB
	cfg  lockstate.Config
	obs  Observer
	disk *disk // guards the write-back (nil: unguarded); see DESIGN.md, Disk trouble
	// meter, if set, hears how long each write-back's commit took.
	meter Meter

	lastTerm atomic.Uint64 // Raft term of the last entry applied
	// replayUntil is the last log index when the process started: entries up
	// to it were proposed before, so their PUBLISHes are not delivered again
	// (see DESIGN.md, Write-back and crash replay).
	replayUntil uint64

	mu      sync.RWMutex // guards state, applied, stored, gen and writeBack
	state   *lockstate.State
	applied uint64
	// stored is the applied index of the state in Pebble: entries after it
	// changed records that only the in-memory state holds yet.
	stored uint64
	// gen is the live generation of the records in Pebble (generation.go).
	gen uint64
	// writeBack is writeBackEntries; tests lower it.
	writeBack uint64
	// restoreBatch is restoreBatchBytes; tests lower it.
	restoreBatch int
	// restored, if set, is called after each batch a restore commits, with
	// their count so far and its size: tests count batches and crash
	// between them.
	restored func(batches, size int)
}

var _ raft.BatchingFSM = (*fsm)(nil)

func newFSM(db *pebble.DB, cfg lockstate.Config, obs Observer) (*fsm, error) {
	f := &fsm{db: db, cfg: cfg, obs: obs, writeBack: writeBackEntries, restoreBatch: restoreBatchBytes}
	if plant.On(plant.NoAppliedIndex) || plant.On(plant.MemoryTokens) {
		// Both planted bugs show only when a restart replays less than the
		// whole log, which needs a stored state ahead of the last snapshot:
		// NoAppliedIndex re-applies what that state already holds, and
		// MemoryTokens' counter, rebuilt by a whole replay, comes out as it
		// was (under make test's load a 15 s run applied fewer than
		// writeBackEntries entries between its kill-alls, and the bug went
		// unseen in 3 runs). Writing back every entry makes them show in a
		// short run, as they did before the write-back was batched.
		f.writeBack = 1
	}
	if err := f.load(); err != nil {
		return nil, err
	}
	// Loading a large state leaves the garbage of decoding and map growth,
	// up to as much again as the state; left to the collector's pace, a
	// restarted node's RSS stays near twice a running node's (the
	// benchmark's P8 target bounds it).
	debug.FreeOSMemory()
	return f, nil
}

// load rebuilds the in-memory state from the live generation of the
// state-machine records in Pebble, and drops any other.
func (f *fsm) load() error {
	gen, err := getUint64(f.db, genKey)
	if err != nil {
		return err
	}
	if err := dropStale(f.db, gen); err != nil {
		return err
	}
	st := lockstate.New(f.cfg)
	lo, hi := genBounds(gen)
	it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("raftstore: load state: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := st.Load(it.Key()[len(lo):], it.Value()); err != nil {
			it.Close()
			return fmt.Errorf("raftstore: load state: %w", err)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("raftstore: load state: %w", err)
	}
	applied, err := getUint64(f.db, appliedKey)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.state, f.applied, f.stored, f.gen = st, applied, applied, gen
	f.mu.Unlock()
	return nil
}

func getUint64(r pebble.Reader, key []byte) (uint64, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("raftstore: read %q: %w", key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: corrupt %q", key)
	}
	return binary.BigEndian.Uint64(v), nil
}

// batchWriter puts the state machine's records under the prefix of the
// live generation.
type batchWriter struct {
	b      *pebble.Batch
	prefix []byte
	key    []byte
}

func (w *batchWriter) prefixed(k []byte) []byte {
	w.key = append(append(w.key[:0], w.prefix...), k...)
	return w.key
}

func (w *batchWriter) Set(k, v []byte) error       { return w.b.Set(w.prefixed(k), v, nil) }
func (w *batchWriter) Delete(k []byte) error       { return w.b.Delete(w.prefixed(k), nil) }
func (f *fsm) Apply(l *raft.Log) interface{}       { return f.ApplyBatch([]*raft.Log{l})[0] }
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return f.snapshot() }

// ApplyBatch applies committed entries to the in-memory state, and writes
// the state back to Pebble once enough have accumulated. An entry that
// does not decode panics: the log is corrupt, and a replica that skipped an
// entry would diverge silently (hashicorp/raft#307). A write-back that is
// refused or fails does not: the entries stay applied in memory and in the
// Raft log, which raft truncates only after a snapshot, and a snapshot
// writes back first (so it fails too). The write-back is tried again at the
// next batch; a restart meanwhile replays the log from the stored applied
// index (see DESIGN.md, Disk trouble).
func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	var ev lockstate.Events
	f.mu.Lock()
	applied := f.applied
	for i, l := range logs {
		if l.Index <= applied && !plant.On(plant.NoAppliedIndex) {
			continue // replayed after a restart: already in the state
		}
		applied = l.Index
		f.lastTerm.Store(l.Term)
		if l.Type != raft.LogCommand {
			continue
		}
		e, err := lockstate.DecodeEntry(l.Data)
		if err != nil {
			panic(fmt.Sprintf("raftstore: entry %d: %v", l.Index, err))
		}
		res := f.state.Step(l.Index, e)
		if errors.Is(res.Err, lockstate.ErrVersionUnknown) {
			// The other replicas apply what follows with semantics this
			// binary lacks: following them blind would diverge.
			panic(fmt.Sprintf("raftstore: entry %d moves the cluster to version %d, which this binary (versions up to %d) does not know: run a newer release", l.Index, e.Version, lockstate.MaxVersion))
		}
		if l.Index <= f.replayUntil {
			res.Messages = nil
		}
		ev.Add(&res)
		out[i] = &res
	}
	changed := applied != f.applied
	last := f.state.Time()
	if changed {
		f.applied = applied
		if f.applied-f.stored >= f.writeBack || f.state.Unflushed() >= writeBackRecords || f.state.UnflushedBytes() >= writeBackBytes {
			// store logs its own refusals and failures (disk.admit,
			// disk.fail); the state stays ahead of Pebble meanwhile.
			_ = f.store()
		}
	}
	f.mu.Unlock()
	// Every batch that moved the applied index is reported, including one
	// of configuration changes only or stamped at time 0: Node.Read waits
	// on it.
	if f.obs != nil && changed {
		f.obs.Applied(last, ev)
	}
	return out
}

// store writes the records changed since the last store, and the applied
// index they stand for, as one Pebble batch. NoSync: the Raft log was
// fsynced before these entries committed and shares this WAL, so a crash
// loses at most entries that will be replayed from the log. The caller
// holds mu.
func (f *fsm) store() error {
	if f.stored == f.applied {
		return nil
	}
	// Asked before Flush, which forgets which records changed: a batch
	// refused after it would leave those changes out of every later
	// write-back. The batch's size is not known yet; the free space is
	// kept at half the reserve at least, and a write-back is bounded by
	// writeBackRecords records.
	if err := f.disk.admit(0, "write-back of the state"); err != nil {
		return fmt.Errorf("raftstore: write entries up to %d: %w", f.applied, err)
	}
	b := f.db.NewBatch()
	defer b.Close()
	// One write per record changed since the last store, not one per entry.
	prefix, _ := genBounds(f.gen)
	if err := f.state.Flush(&batchWriter{b: b, prefix: prefix}); err != nil {
		return fmt.Errorf("raftstore: write entries up to %d: %w", f.applied, err)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], f.applied)
	if err := b.Set(appliedKey, v[:], nil); err != nil {
		return fmt.Errorf("raftstore: batch: %w", err)
	}
	// A commit that fails after Flush leaves the records it carried out of
	// the state's changed set; disk.write then marks the storage failed, so
	// nothing is written back again in this process, and a restart rebuilds
	// the state from the last stored applied index and the log.
	commit := func() error {
		return timed(f.meter, Meter.StateCommitted, func() error { return b.Commit(pebble.NoSync) })
	}
	if err := f.disk.write("write-back of the state", commit); err != nil {
		return fmt.Errorf("raftstore: commit entries up to %d: %w", f.applied, err)
	}
	f.stored = f.applied
	return nil
}

// sync writes the state back to Pebble now, for a snapshot or a clean
// shutdown.
func (f *fsm) sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.store()
}

// read runs fn with the state under the read lock.
func (f *fsm) read(fn func(*lockstate.State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.state)
}

func (f *fsm) appliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}
