package server

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
)

// peerEntry is one server of a peers file, in hashicorp/raft's peers.json
// format (the one Consul and Nomad use for the same recovery).
type peerEntry struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter"`
}

// Recover is `fenced recover --data DIR --peers FILE`: it rewrites the Raft
// configuration of a stopped node to the servers in FILE, for a cluster
// whose quorum is lost for good. See raftstore.Recover for what it keeps
// and what it may lose.
func Recover(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fenced recover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "the stopped node's data `directory`")
	peers := fs.String("peers", "", "JSON `file` of the new configuration: [{\"id\": \"n1\", \"address\": \"raft-host:port\", \"non_voter\": false}]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" || *peers == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: usage: fenced recover --data DIR --peers FILE", ErrConfig)
	}
	servers, err := readPeers(*peers)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := raftstore.Recover(*data, lockstate.DefaultConfig(), servers, log); err != nil {
		return err
	}
	log.Info("recovered: start the node as usual; it leads the configuration in the peers file", "data", *data, "servers", len(servers))
	return nil
}

func readPeers(path string) ([]raftstore.Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var entries []peerEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	var out []raftstore.Server
	voters := 0
	seen := map[string]bool{}
	for i, e := range entries {
		if _, _, err := net.SplitHostPort(e.Address); e.ID == "" || err != nil || seen[e.ID] {
			return nil, fmt.Errorf("%w: %s: server %d needs a unique id and a host:port address", ErrConfig, path, i+1)
		}
		seen[e.ID] = true
		if !e.NonVoter {
			voters++
		}
		out = append(out, raftstore.Server{ID: e.ID, RaftAddr: e.Address, Voter: !e.NonVoter})
	}
	if voters == 0 {
		return nil, fmt.Errorf("%w: %s: no voter", ErrConfig, path)
	}
	return out, nil
}
