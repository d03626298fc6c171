package raftstoretest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/raftstore"
)

// FlipLogByte flips one byte in the middle of the stored record of the log
// entry back entries before the last (0: the last) in a stopped node's data
// directory, as a bad sector or a stray write would, and returns its index. The record is
// rewritten through Pebble, so Pebble's own checksums still hold and only
// the log record's CRC (raftstore/logstore.go) can tell. It fails unless
// the store then refuses to read the entry as corrupt.
func FlipLogByte(dataDir string, back uint64) (uint64, error) {
	db, err := raftstore.OpenDB(filepath.Join(dataDir, "pebble"))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	logs, err := raftstore.NewLogStore(db)
	if err != nil {
		return 0, err
	}
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	if last == 0 || last-first < back {
		return 0, fmt.Errorf("raftstoretest: %s has log entries %d..%d, not %d before the last", dataDir, first, last, back)
	}
	index := last - back
	// The log's key layout (logstore.go): prefix 0x01, big-endian index.
	key := binary.BigEndian.AppendUint64([]byte{0x01}, index)
	v, closer, err := db.Get(key)
	if err != nil {
		return 0, fmt.Errorf("raftstoretest: log entry %d: %w", index, err)
	}
	val := append([]byte(nil), v...)
	closer.Close()
	val[len(val)/2] ^= 0x20
	if err := db.Set(key, val, pebble.Sync); err != nil {
		return 0, err
	}
	var l raft.Log
	if err := logs.GetLog(index, &l); !errors.Is(err, raftstore.ErrCorrupt) {
		return 0, fmt.Errorf("raftstoretest: entry %d still reads (%v): the flip missed the record", index, err)
	}
	return index, nil
}
