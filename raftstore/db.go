package raftstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// One-byte key prefixes that partition the node's single Pebble database.
// Every reader uses bounded iterators on its own prefix, so a new prefix
// never leaks into another component's scans.
const (
	// prefixLog holds the Raft log: prefixLog + big-endian uint64 index, so
	// byte order is index order.
	prefixLog byte = 0x01
	// prefixStable holds the raft.StableStore keys (CurrentTerm, votes).
	prefixStable byte = 0x02
	// prefixFSM is reserved for the state machine's records of generation
	// 0; later generations are under prefixGen (generation.go).
	prefixFSM byte = 0x03
	// prefixMeta is reserved for bookkeeping such as the applied index.
	prefixMeta byte = 0x04
)

// formatVersion pins Pebble's on-disk format. A moving target such as
// pebble.FormatNewest would silently ratchet existing stores (no downgrade)
// whenever the dependency is bumped; changing this must be a decision.
const formatVersion = pebble.FormatValueSeparation

// OpenDB opens (creating if needed) the node's Pebble database in dir.
func OpenDB(dir string) (*pebble.DB, error) {
	return OpenDBFS(dir, vfs.Default)
}

// OpenDBFS is OpenDB on an explicit filesystem; tests pass vfs.NewMem().
// Pebble's fatal errors end the process, as Pebble's default logger does:
// for tools and tests, which have no node to report them.
func OpenDBFS(dir string, fs vfs.FS) (*pebble.DB, error) {
	return openDB(dir, fs, nil, pebble.DefaultLogger.Fatalf)
}

// openDB opens the database with fatal as Pebble's Logger.Fatalf: a node
// passes disk.fatal, which must never return. Pebble's other messages go
// to log (nil: Pebble's default logger, for tools and tests).
func openDB(dir string, fs vfs.FS, log *slog.Logger, fatal func(format string, args ...any)) (*pebble.DB, error) {
	opts := &pebble.Options{
		FS:                 fs,
		FormatMajorVersion: formatVersion,
		// The workload is small and dominated by synced Raft appends that are
		// deleted again after snapshots: a modest memtable keeps recovery
		// (WAL replay) short while still absorbing the log churn before it
		// reaches L0.
		MemTableSize: 16 << 20,
		// Durability comes from synced WAL commits; background sstable
		// syncing just smooths flush I/O so it does not stall those fsyncs.
		BytesPerSync: 512 << 10,
		Logger:       pebbleLogger{log: log, fatal: fatal},
	}
	// GetLog, stable-store reads and FSM lookups are point reads; bloom
	// filters let them skip sstables cheaply.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("raftstore: open pebble db %q: %w", dir, err)
	}
	return db, nil
}

// pebbleLogger passes Pebble's messages to the node's slog logger, so that
// they share its format: errors as errors, and the informational ones (WAL
// replay chatter on every open) at Debug. Fatal conditions go to fatal.
type pebbleLogger struct {
	log   *slog.Logger
	fatal func(format string, args ...any)
}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log == nil {
		return
	}
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	if l.log == nil {
		pebble.DefaultLogger.Errorf(format, args...)
		return
	}
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.fatal(format, args...)
}

// fsmKey returns prefixFSM+k in a fresh slice (never aliasing k).
func fsmKey(k []byte) []byte {
	return prefixed(prefixFSM, k)
}

// metaKey returns prefixMeta+k in a fresh slice.
func metaKey(k []byte) []byte {
	return prefixed(prefixMeta, k)
}

// prefixed allocates exactly once so callers can never append into a shared
// prefix slice (the aliasing bug seen in other Pebble Raft stores).
func prefixed(p byte, k []byte) []byte {
	out := make([]byte, 1+len(k))
	out[0] = p
	copy(out[1:], k)
	return out
}
