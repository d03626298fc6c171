package raftstore

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// ErrCorruptLog is a Raft log entry that cannot be read at start-up.
var ErrCorruptLog = errors.New("raftstore: corrupt Raft log")

// checkLog reads every entry that hashicorp/raft reads as it starts: those
// after the newest snapshot, up to the last. Raft panics on the first it
// cannot read (NewRaft's scan for configurations), with a stack trace that
// tells an operator nothing; this says which entry and what to do.
//
// A bad entry is not cut off: this node may have acknowledged it, and a
// leader counted that towards a commit, so dropping it could lose a write
// the cluster confirmed. The node's data is given up instead, and the node
// rejoins under a new id (the cluster still holds every committed entry), or
// another survivor is recovered when the quorum is lost.
func checkLog(logs *LogStore, snaps raft.SnapshotStore, dir, id string) error {
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	if last == 0 {
		return nil
	}
	from := first
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("raftstore: list snapshots: %w", err)
	}
	if len(list) > 0 && list[0].Index+1 > from {
		from = list[0].Index + 1
	}
	var l raft.Log
	for i := from; i <= last; i++ {
		err := logs.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			err = errors.New("the entry is missing")
		}
		if err != nil {
			return corruptLog(i, first, last, dir, id, err)
		}
	}
	return nil
}

func corruptLog(index, first, last uint64, dir, id string, cause error) error {
	if id == "" {
		id = "ID"
	}
	return fmt.Errorf("%w: entry %d of the log in %s (entries %d..%d) cannot be read: %v. "+
		"This node cannot start on this data directory. "+
		"To bring it back, on the leader run RAFT.REMOVE %s, then start this node with a new --id, "+
		"an empty --data directory and --join pointing at a member: it copies the cluster's state again. "+
		"If the cluster has lost its quorum and no other survivor has the data, run `fenced recover` "+
		"on the most up-to-date survivor that starts (README, Running a cluster)",
		ErrCorruptLog, index, dir, first, last, cause, id)
}
