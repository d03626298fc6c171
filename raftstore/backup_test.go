package raftstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced/lockstate"
)

// seedAndOpen seeds a data directory from the backup in file and opens a
// node on it as "r1", checking the state it holds before it leads.
func seedAndOpen(t *testing.T, file string, bump uint64, want SnapshotInfo) *Node {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restored")
	info, err := Seed(file, SeedConfig{Dir: dir, ID: "r1", RaftAddr: "127.0.0.1:0", Bump: bump, State: lockstate.DefaultConfig()})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if info.Applied != want.Applied+bump || info.Hash != want.Hash || info.Records != want.Records {
		t.Fatalf("seeded %+v, want %+v bumped by %d", info, want, bump)
	}
	cfg := testNodeConfig(dir)
	cfg.ID = "r1"
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if !n.Existing() {
		t.Error("a seeded directory does not count as existing state: the node would bootstrap")
	}
	// The new leader's no-op is not applied to the state machine, so the
	// state read now is the snapshot's whatever the election does.
	if idx, h := n.StateHash(); idx != want.Applied+bump || h != want.Hash {
		t.Errorf("seeded node's state: index %d hash %x, want %d %x", idx, h, want.Applied+bump, want.Hash)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !n.CanPropose() {
		if time.Now().After(deadline) {
			t.Fatalf("seeded node did not lead: %+v", n.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	servers, err := n.Servers()
	if err != nil || len(servers) != 1 || servers[0].ID != "r1" {
		t.Errorf("seeded node's configuration %+v %v, want r1 alone", servers, err)
	}
	return n
}

// TestBackupSeed: a backup describes the node's state (RAFT.HASH's index
// and digest), a seeded directory starts a one-member cluster holding that
// state, and its tokens continue above the backup's index, or above it
// plus the bump.
func TestBackupSeed(t *testing.T) {
	n := openNode(t, t.TempDir())
	maxTok := workload(t, n)
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := n.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if idx, h := n.StateHash(); idx != info.Applied || h != info.Hash {
		t.Fatalf("backup at %d %x, node's state at %d %x", info.Applied, info.Hash, idx, h)
	}
	if info.Size != int64(buf.Len()) || info.Records == 0 || uint64(maxTok) > info.Applied {
		t.Fatalf("backup %+v of %d bytes, max token %d", info, buf.Len(), maxTok)
	}
	if got, err := InspectSnapshot(bytes.NewReader(buf.Bytes()), lockstate.DefaultConfig()); err != nil || got != info {
		t.Fatalf("inspect: %+v %v, want %+v", got, err, info)
	}
	closeNode(t, n)
	file := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, bump := range []uint64{0, 1_000_000} {
		r := seedAndOpen(t, file, bump, info)
		if c := holdCount(r, "lock1"); c < 2 {
			t.Errorf("lock1 hold count %d after restore, want the reentrant hold", c)
		}
		res := propose(t, r, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(99), TTL: 60_000})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		res = propose(t, r, lockstate.Entry{Op: lockstate.OpFlock, Lock: "new", Session: sessionID(99), Wait: lockstate.NoWait})
		if res.Err != nil || uint64(res.Int) <= info.Applied+bump {
			t.Errorf("bump %d: token %+v after restore, want above %d", bump, res, info.Applied+bump)
		}
	}
}

// TestSeedRefuses: a non-empty directory, a corrupt, truncated or
// lengthened file are refused, and a refused restore leaves no directory
// behind.
func TestSeedRefuses(t *testing.T) {
	f := populated(t, 1)
	good := snapshotBytes(t, f)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	cfg := func(d string) SeedConfig {
		return SeedConfig{Dir: d, ID: "r1", RaftAddr: "127.0.0.1:7379", State: lockstate.DefaultConfig()}
	}
	for name, b := range map[string][]byte{
		"flipped": flipped, "truncated": good[:len(good)-3], "trailing": append(bytes.Clone(good), 0), "empty": nil,
	} {
		target := filepath.Join(t.TempDir(), "new")
		if _, err := Seed(write(name, b), cfg(target)); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: seed = %v, want ErrBadSnapshot", name, err)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused restore left %s behind (%v)", name, target, err)
		}
	}
	full := t.TempDir()
	write2 := filepath.Join(full, "keep")
	if err := os.WriteFile(write2, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Seed(write("good", good), cfg(full)); !errors.Is(err, ErrDataNotEmpty) {
		t.Errorf("seed into a non-empty directory = %v, want ErrDataNotEmpty", err)
	}
	if b, err := os.ReadFile(write2); err != nil || string(b) != "x" {
		t.Errorf("the non-empty directory was touched: %q %v", b, err)
	}
	if _, err := Seed(write("good", good), cfg(t.TempDir())); err != nil {
		t.Errorf("seed into an empty directory: %v", err)
	}
}
