package raftstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// Backup and restore of the replicated state, as `etcdctl snapshot save`
// and `etcdutl snapshot restore`: a backup is a snapshot stream
// (snapshot.go) of the state at a linearizable point, and a restore seeds a
// new data directory from which the node starts as a new one-member
// cluster. See DESIGN.md, Backup and restore.

// ErrDataNotEmpty is returned by Seed for a data directory that holds
// anything: a restore never mixes with, or overwrites, a node's data.
var ErrDataNotEmpty = errors.New("raftstore: data directory not empty")

// SnapshotInfo describes the state a snapshot holds.
type SnapshotInfo struct {
	Applied uint64   // the index of the last entry applied to the state
	Records int      // state-machine records
	Size    int64    // bytes of the stream
	Hash    [32]byte // lockstate.State.Hash of the state: RAFT.HASH at Applied
}

// capture writes the state back and takes a Pebble snapshot of it, which
// reads the state at the returned applied index while entries go on being
// applied. Nothing is synced: the snapshot is read, never relied on after
// a crash.
func (f *fsm) capture() (snap *pebble.Snapshot, applied, gen uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.store(); err != nil {
		return nil, 0, 0, fmt.Errorf("raftstore: backup: %w", err)
	}
	return f.db.NewSnapshot(), f.applied, f.gen, nil
}

// Backup writes a snapshot stream of a state that includes every entry
// committed before Backup was called to w: the leader first does what a
// linearizable read does (Read), then captures its state, applied at least
// that far. Followers cannot: their state may lag any acknowledged write.
// The state lock is held only to write back and take a Pebble snapshot;
// the stream is written from that snapshot while entries are applied.
func (n *Node) Backup(ctx context.Context, w io.Writer) (SnapshotInfo, error) {
	if err := n.Read(ctx, func(*lockstate.State, int64) {}); err != nil {
		return SnapshotInfo{}, err
	}
	snap, applied, gen, err := n.fsm.capture()
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer snap.Close()
	digest := sha256.New()
	cw := &countingWriter{w: w}
	records, err := writeSnapshot(cw, snap, applied, gen, digest)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := SnapshotInfo{Applied: applied, Records: records, Size: cw.n}
	digest.Sum(info.Hash[:0])
	return info, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// InspectSnapshot reads a whole snapshot stream, checks its format and
// checksum and that its records load into a State (as a restore would load
// them), and describes it. A stream with bytes after its checksum is
// refused too: a file that is more than one snapshot is not one.
func InspectSnapshot(r io.Reader, cfg lockstate.Config) (SnapshotInfo, error) {
	st := lockstate.New(cfg)
	digest := sha256.New()
	var info SnapshotInfo
	var err error
	info.Applied, info.Records, err = scanSnapshot(r, digest, &info.Size, func(k, v []byte) error {
		if err := st.Load(k, v); err != nil {
			return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		}
		return nil
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	digest.Sum(info.Hash[:0])
	return info, nil
}

// InspectSnapshotFile is InspectSnapshot of a file, which must end at the
// snapshot's checksum.
func InspectSnapshotFile(path string, cfg lockstate.Config) (SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("raftstore: snapshot file: %w", err)
	}
	defer f.Close()
	info, err := InspectSnapshot(f, cfg)
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() != info.Size {
		return SnapshotInfo{}, fmt.Errorf("%w: %s: %d bytes after the checksum", ErrBadSnapshot, path, fi.Size()-info.Size)
	}
	return info, nil
}

// SeedConfig says what Seed makes of a snapshot.
type SeedConfig struct {
	Dir string // the new node's data directory: absent or empty
	// ID and RaftAddr are the new node's id and the Raft address the other
	// nodes dial (its --raft-advertise, else its --raft-addr): the only
	// member of the configuration Seed writes.
	ID, RaftAddr string
	// Bump is added to the snapshot's applied index: the new cluster's log
	// starts above applied+Bump, and so do its fencing tokens (etcdutl's
	// --bump-revision). It covers entries the old cluster committed after
	// the backup, whose tokens the new one must not hand out again.
	Bump   uint64
	State  lockstate.Config
	Logger *slog.Logger
}

// Seed creates a data directory from a snapshot file, from which a node
// starts as a new cluster whose only member is cfg.ID, holding exactly the
// snapshot's state, with its applied index at the snapshot's plus cfg.Bump.
//
// The state goes into Pebble through fsm.Restore, as an install would put
// it, and a copy of it into raft's snapshot store at that index, with term
// 1 and the one-member configuration. hashicorp/raft then starts with the
// snapshot as its last entry (HasExistingState: no bootstrap), so its first
// entry, the new leader's no-op, gets the index after it, and every later
// grant, and so every fencing token, is above the snapshot's applied
// index; nodes that join catch up from that copy. The returned info
// describes the state the node will load: Pebble's copy read back, whose
// hash must equal the file's.
func Seed(snapshot string, cfg SeedConfig) (info SnapshotInfo, err error) {
	if cfg.ID == "" || cfg.RaftAddr == "" {
		return info, fmt.Errorf("%w: a restore needs the new node's id and Raft address", ErrMembership)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// The whole file is checked before the directory is touched.
	want, err := InspectSnapshotFile(snapshot, cfg.State)
	if err != nil {
		return info, err
	}
	created, err := claimDir(cfg.Dir)
	if err != nil {
		return info, err
	}
	defer func() {
		if err != nil {
			dropSeed(cfg.Dir, created)
		}
	}()
	if err := seed(snapshot, cfg); err != nil {
		return info, err
	}
	if info, err = loadedState(cfg.Dir, cfg.State); err != nil {
		return info, err
	}
	info.Size = want.Size
	if info.Hash != want.Hash || info.Records != want.Records || info.Applied != want.Applied+cfg.Bump {
		return info, fmt.Errorf("%w: the restored state (index %d, %d records, hash %x) is not the file's (index %d, %d records, hash %x)",
			ErrBadSnapshot, info.Applied, info.Records, info.Hash, want.Applied, want.Records, want.Hash)
	}
	return info, nil
}

// claimDir makes sure dir is absent or empty, and creates it; created says
// whether it did not exist before.
func claimDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		created = true
	case err != nil:
		return false, fmt.Errorf("raftstore: data directory: %w", err)
	case len(entries) > 0:
		return false, fmt.Errorf("%w: %s holds %s; restore into a new directory", ErrDataNotEmpty, dir, entries[0].Name())
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("raftstore: data directory: %w", err)
	}
	return created, nil
}

// dropSeed removes what a failed Seed wrote, so that it can be run again.
func dropSeed(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

func seed(snapshot string, cfg SeedConfig) error {
	db, err := OpenDB(filepath.Join(cfg.Dir, "pebble"))
	if err != nil {
		return err
	}
	defer db.Close()
	f, err := newFSM(db, cfg.State, nil)
	if err != nil {
		return err
	}
	src, err := os.Open(snapshot)
	if err != nil {
		return fmt.Errorf("raftstore: snapshot file: %w", err)
	}
	if err := f.Restore(src); err != nil { // closes src
		return err
	}
	if cfg.Bump > 0 {
		f.mu.Lock()
		f.applied += cfg.Bump
		err := f.store() // the applied index alone: no record changed
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, newRaftLogger(cfg.Logger))
	if err != nil {
		return fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.ID), Address: raft.ServerAddress(cfg.RaftAddr)}}}
	_, trans := raft.NewInmemTransport("")
	applied := f.appliedIndex()
	sink, err := snaps.Create(raft.SnapshotVersionMax, applied, 1, conf, applied, trans)
	if err != nil {
		return fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	// Written from Pebble, not copied from the file: its header carries
	// the bumped index, the one raft's metadata has.
	snap := db.NewSnapshot()
	defer snap.Close()
	if _, err := writeSnapshot(sink, snap, applied, f.gen, nil); err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	if err := db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: sync: %w", err)
	}
	return db.Flush()
}

// loadedState opens dir's Pebble as a starting node does and describes
// the state it loads.
func loadedState(dir string, cfg lockstate.Config) (SnapshotInfo, error) {
	db, err := OpenDB(filepath.Join(dir, "pebble"))
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer db.Close()
	f, err := newFSM(db, cfg, nil)
	if err != nil {
		return SnapshotInfo{}, err
	}
	var info SnapshotInfo
	f.read(func(st *lockstate.State) {
		info.Hash = st.Hash()
		_ = st.Records(func(_, _ []byte) error { info.Records++; return nil })
	})
	info.Applied = f.appliedIndex()
	return info, nil
}
