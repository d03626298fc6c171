package raftstore

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// Recover rewrites the Raft configuration of a stopped node's data
// directory to servers, for a cluster that lost its quorum for good
// (hashicorp/raft's RecoverCluster; Consul and Nomad call the same from
// peers.json). The node applies every entry of its log, committed or not,
// and snapshots the result with the new configuration: an entry that the
// lost majority never committed becomes committed here, and entries that
// only the lost nodes had are gone. Run it on the most up-to-date survivor
// only, with every other node stopped, and start the others afresh (empty
// data, new ids) to join it.
func Recover(dir string, state lockstate.Config, servers []Server, log *slog.Logger) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: recover needs at least one server", ErrMembership)
	}
	if _, err := os.Stat(filepath.Join(dir, "pebble")); err != nil {
		return fmt.Errorf("raftstore: recover: no node data in %s: %w", dir, err)
	}
	db, err := OpenDB(filepath.Join(dir, "pebble"))
	if err != nil {
		return err
	}
	defer db.Close()
	logs, err := NewLogStore(db)
	if err != nil {
		return err
	}
	f, err := newFSM(db, state, nil)
	if err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, newRaftLogger(log))
	if err != nil {
		return fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	if err := checkLog(logs, snaps, dir, ""); err != nil {
		return err
	}
	var conf raft.Configuration
	for _, s := range servers {
		suffrage := raft.Nonvoter
		if s.Voter {
			suffrage = raft.Voter
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: suffrage, ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.RaftAddr)})
	}
	rc := raft.DefaultConfig()
	rc.LocalID = conf.Servers[0].ID // checked for presence only
	rc.Logger = newRaftLogger(log)
	_, trans := raft.NewInmemTransport("")
	if err := raft.RecoverCluster(rc, f, logs, logs, snaps, trans, conf); err != nil {
		return fmt.Errorf("raftstore: recover: %w", err)
	}
	if err := f.sync(); err != nil {
		return err
	}
	return db.Flush()
}
