package raftstore

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The state machine's records live under one generation at a time. A
// restore writes the snapshot's records under the next generation in
// bounded batches, none of them visible, and one small synced batch then
// makes it live (genKey), with its applied index, and range-deletes the
// old one (fsm.Restore). A crash at any point before that batch leaves the
// old generation live and intact; load drops whatever a crash left of any
// other. See DESIGN.md, Snapshots.
//
// Generation 0 is under prefixFSM, as every data directory written before
// restores were streamed: such a directory has no genKey and loads as it
// did. Generation n > 0 is under prefixGen + big-endian n.

// prefixGen holds the records of generations after the first; its own byte
// so that generation 0's bounded iterators over prefixFSM never see them.
const prefixGen byte = 0x05

// genKey holds the live generation; absent means 0.
var genKey = []byte{prefixMeta, 'g'}

// oldBinaryGuard sits under prefixFSM, where a fenced from before
// generations reads its records, once a later generation is live: such a
// binary would otherwise find no records there, take the state for empty
// at the stored applied index and diverge in silence. Its state machine
// refuses this record (no record has an empty key), so it refuses to start.
var (
	oldBinaryGuard      = []byte{prefixFSM}
	oldBinaryGuardValue = []byte("fenced: a newer fenced wrote this data directory (records under generation >= 1); run that version or newer")
)

// genBounds is the key range [lo, hi) of generation gen's records; lo is
// also the prefix of each of them.
func genBounds(gen uint64) (lo, hi []byte) {
	if gen == 0 {
		return []byte{prefixFSM}, []byte{prefixFSM + 1}
	}
	lo = binary.BigEndian.AppendUint64([]byte{prefixGen}, gen)
	hi = binary.BigEndian.AppendUint64([]byte{prefixGen}, gen+1)
	return lo, hi
}

// staleRanges are the key ranges that hold no live record when gen is
// live: every other generation.
func staleRanges(gen uint64) [][2][]byte {
	all := [2][]byte{{prefixGen}, {prefixGen + 1}}
	if gen == 0 {
		return [][2][]byte{all}
	}
	lo, hi := genBounds(gen)
	// Generation 0's range, except oldBinaryGuard, its first key.
	return [][2][]byte{{{prefixFSM, 0}, {prefixFSM + 1}}, {all[0], lo}, {hi, all[1]}}
}

// dropStale range-deletes the records of every generation but gen: what a
// restore interrupted by a crash or an error wrote before its generation
// became live, or the old generation whose deletion a crash cut short.
// Only non-empty ranges are deleted, so that a clean open writes nothing.
func dropStale(db *pebble.DB, gen uint64) error {
	b := db.NewBatch()
	defer b.Close()
	for _, r := range staleRanges(gen) {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: r[0], UpperBound: r[1]})
		if err != nil {
			return fmt.Errorf("raftstore: look for stale records: %w", err)
		}
		found := it.First()
		if err := it.Close(); err != nil {
			return fmt.Errorf("raftstore: look for stale records: %w", err)
		}
		if found {
			if err := b.DeleteRange(r[0], r[1], nil); err != nil {
				return fmt.Errorf("raftstore: drop stale records: %w", err)
			}
		}
	}
	if b.Empty() {
		return nil
	}
	// NoSync: records of a generation that is not live are never read, and
	// if this deletion is lost the next open makes it again.
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("raftstore: drop stale records: %w", err)
	}
	return nil
}
