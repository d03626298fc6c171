package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fenced/fenced/internal/flagargs"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

// ErrBackup is returned by `fenced snapshot save` when the node does not
// deliver a valid snapshot.
var ErrBackup = errors.New("server: backup failed")

const snapshotUsage = `usage:
  fenced snapshot save FILE --addr HOST:PORT [--user U] [--pass P] [--tls --cacert F [--cert F --key F]]
  fenced snapshot restore FILE --data DIR --id ID [--raft-addr HOST:PORT] [--raft-advertise HOST:PORT] [--bump-index N]
  fenced snapshot status FILE`

// Snapshot is `fenced snapshot save|restore|status`, as etcdctl snapshot
// save and etcdutl snapshot restore|status: save streams a consistent
// snapshot of a running cluster's state into a file, restore seeds a new
// data directory from one (offline), status checks one and describes it.
// Results go to stdout, flag errors and logs to stderr.
func Snapshot(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", ErrConfig, snapshotUsage)
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:], stdout, stderr)
	case "restore":
		return snapshotRestore(args[1:], stdout, stderr)
	case "status":
		return snapshotStatus(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, snapshotUsage)
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", ErrConfig, args[0], snapshotUsage)
}

// oneFile is the single FILE argument of a subcommand.
func oneFile(fs *flag.FlagSet, args []string, usage string) (string, error) {
	pos, err := flagargs.Parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", fmt.Errorf("%w: usage: %s", ErrConfig, usage)
	}
	return pos[0], nil
}

func printSnapshotInfo(w io.Writer, info raftstore.SnapshotInfo) {
	fmt.Fprintf(w, "applied_index: %d\nhash: %s\nrecords: %d\nsize: %d\n", info.Applied, hex.EncodeToString(info.Hash[:]), info.Records, info.Size)
}

func snapshotStatus(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fenced snapshot status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file, err := oneFile(fs, args, "fenced snapshot status FILE")
	if err != nil {
		return err
	}
	info, err := raftstore.InspectSnapshotFile(file, lockstate.DefaultConfig())
	if err != nil {
		return err
	}
	printSnapshotInfo(stdout, info)
	return nil
}

func snapshotRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fenced snapshot restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := DefaultConfig()
	data := fs.String("data", "", "the new node's data `directory` (absent or empty)")
	id := fs.String("id", "", "the new node's `id`: the only member of the restored cluster")
	raftAddr := fs.String("raft-addr", def.RaftAddr, "the Raft `address` the node will start with")
	advertise := fs.String("raft-advertise", "", "the Raft `address` other nodes dial, if not --raft-addr")
	bump := fs.Uint64("bump-index", 0, "start the new log this many `entries` above the snapshot's index, so fencing tokens stay above any the old cluster granted after the backup")
	file, err := oneFile(fs, args, "fenced snapshot restore FILE --data DIR --id ID [--raft-addr HOST:PORT]")
	if err != nil {
		return err
	}
	if *data == "" || *id == "" {
		return fmt.Errorf("%w: usage: fenced snapshot restore FILE --data DIR --id ID [--raft-addr HOST:PORT]", ErrConfig)
	}
	addr := *raftAddr
	if *advertise != "" {
		addr = *advertise
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%w: --raft-addr %q: %v", ErrConfig, addr, err)
	}
	info, err := raftstore.Seed(file, raftstore.SeedConfig{
		Dir: *data, ID: *id, RaftAddr: addr, Bump: *bump,
		State: lockstate.DefaultConfig(), Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s\n", file, *data)
	printSnapshotInfo(stdout, info)
	fmt.Fprintf(stdout, "start it: fenced --id %s --data %s --raft-addr %s ...; then start the other nodes with empty data and --join %s\n", *id, *data, *raftAddr, addr)
	return nil
}

// saveOpts are the flags of `fenced snapshot save`.
type saveOpts struct {
	addr, user, pass  string
	tls               bool
	caFile, cert, key string
	timeout           time.Duration
}

func snapshotSave(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fenced snapshot save", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o saveOpts
	fs.StringVar(&o.addr, "addr", "127.0.0.1:6379", "client `address` of a node (a follower forwards to the leader)")
	fs.StringVar(&o.user, "user", "", "ACL `user` (an admin) to authenticate as")
	// Not the flag's default: -h would print the password.
	fs.StringVar(&o.pass, "pass", "", "`password` (default: $"+envRequirePass+")")
	fs.BoolVar(&o.tls, "tls", false, "connect with TLS (the node's --tls-listen port)")
	fs.StringVar(&o.caFile, "cacert", "", "CA bundle (PEM) the node's certificate must chain to")
	fs.StringVar(&o.cert, "cert", "", "client certificate (PEM), if the node asks for one")
	fs.StringVar(&o.key, "key", "", "the key (PEM) of --cert")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this `duration`")
	file, err := oneFile(fs, args, "fenced snapshot save FILE --addr HOST:PORT")
	if err != nil {
		return err
	}
	if o.pass == "" {
		o.pass = os.Getenv(envRequirePass)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	data, info, err := fetchBackup(ctx, &o)
	if err != nil {
		return err
	}
	if err := writeFileSynced(file, data); err != nil {
		return fmt.Errorf("%w: %v", ErrBackup, err)
	}
	fmt.Fprintf(stdout, "snapshot saved to %s\n", file)
	printSnapshotInfo(stdout, info)
	return nil
}

// fetchBackup asks the node for RAFT.BACKUP until it answers, following
// a redirect-mode follower's -MOVED once and waiting out an election, and
// checks what it got: the stream's checksum, and that the stream's index
// and hash are the ones the node reported.
func fetchBackup(ctx context.Context, o *saveOpts) ([]byte, raftstore.SnapshotInfo, error) {
	addr, moved := o.addr, false
	for {
		v, err := backupOnce(ctx, o, addr)
		if err != nil {
			return nil, raftstore.SnapshotInfo{}, fmt.Errorf("%w: %s: %v", ErrBackup, addr, err)
		}
		if v.IsError() {
			msg := v.Text()
			if to, ok := strings.CutPrefix(msg, "MOVED 0 "); ok && !moved {
				addr, moved = to, true
				continue
			}
			if retryable(msg) && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			return nil, raftstore.SnapshotInfo{}, fmt.Errorf("%w: %s: %s", ErrBackup, addr, msg)
		}
		el := v.Elems()
		if len(el) != 3 || el[0].Kind() != resp.KindInt || el[2].Kind() != resp.KindBulk {
			return nil, raftstore.SnapshotInfo{}, fmt.Errorf("%w: %s: unexpected reply to RAFT.BACKUP", ErrBackup, addr)
		}
		data := []byte(el[2].Text())
		info, err := raftstore.InspectSnapshot(bytes.NewReader(data), lockstate.DefaultConfig())
		if err != nil {
			return nil, info, fmt.Errorf("%w: %s: %v", ErrBackup, addr, err)
		}
		if info.Size != int64(len(data)) {
			return nil, info, fmt.Errorf("%w: %s: %d bytes after the snapshot's checksum", ErrBackup, addr, int64(len(data))-info.Size)
		}
		if got := hex.EncodeToString(info.Hash[:]); uint64(el[0].Integer()) != info.Applied || got != el[1].Text() {
			return nil, info, fmt.Errorf("%w: %s: the snapshot holds index %d hash %s, the node reported %d %s",
				ErrBackup, addr, info.Applied, got, el[0].Integer(), el[1].Text())
		}
		return data, info, nil
	}
}

// backupOnce sends RAFT.BACKUP on a connection of its own.
func backupOnce(ctx context.Context, o *saveOpts, addr string) (resp.Value, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	var nc net.Conn
	var err error
	if o.tls {
		var cfg *tls.Config
		if cfg, err = o.tlsConfig(addr); err != nil {
			return resp.Value{}, err
		}
		nc, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return resp.Value{}, err
	}
	// The snapshot is one bulk string: no bound but the address space.
	c := resp.NewClient(nc, resp.ReplyLimits{MaxBulk: 1 << 62, MaxTotal: 1 << 62})
	defer c.Close()
	if o.pass != "" {
		auth := [][]byte{[]byte("AUTH"), []byte(o.pass)}
		if o.user != "" {
			auth = [][]byte{[]byte("AUTH"), []byte(o.user), []byte(o.pass)}
		}
		v, err := c.Do(ctx, auth...)
		if err != nil || v.IsError() {
			return v, err
		}
	}
	return c.Do(ctx, []byte("RAFT.BACKUP"))
}

func (o *saveOpts) tlsConfig(addr string) (*tls.Config, error) {
	host, _, _ := net.SplitHostPort(addr)
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --cacert: %v", ErrConfig, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --cacert %s: no certificate", ErrConfig, o.caFile)
		}
	}
	if o.cert != "" || o.key != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, fmt.Errorf("%w: --cert/--key: %v", ErrConfig, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// writeFileSynced writes data to path through path.part, synced and
// renamed, so that path is never a torn snapshot.
func writeFileSynced(path string, data []byte) error {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, path)
	}
	if err != nil {
		os.Remove(part)
		return err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync() // the rename itself; best effort where directories cannot be synced
		dir.Close()
	}
	return nil
}
