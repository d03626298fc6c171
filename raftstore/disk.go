package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fenced/fenced/reply"
)

// Disk trouble (see DESIGN.md, Disk trouble). Pebble treats a failed write
// of its WAL or MANIFEST as fatal: its commit pipeline stays locked after
// the failure ("the commit pipeline will be horked", pebble db.go), the WAL
// writer latches the error, and the MANIFEST paths call Logger.Fatalf. So
// the node keeps Pebble away from a full disk instead of recovering it: it
// refuses its own writes while the free space is below a reserve left for
// Pebble's flushes, compactions and MANIFEST, and a Pebble write that fails
// anyway marks the storage failed for the rest of the process.
var (
	// ErrCannotPersist is what a node that cannot persist answers a write:
	// Redis's code for a server that cannot save.
	ErrCannotPersist = reply.NewErr("MISCONF", "Errors writing to the data directory; commands that may modify the data set are disabled on this node until it can persist again")
	// ErrNoSpace is the free space of the data directory below the reserve.
	ErrNoSpace = errors.New("raftstore: not enough free space in the data directory")
	// ErrStorageFailed is a write Pebble failed: its database cannot take
	// another write in this process.
	ErrStorageFailed = errors.New("raftstore: a write to the data directory failed; restart the node once the disk is fixed")
)

// DefaultDiskReserve is the free space a node keeps in its data directory.
// Its own writes stop at half of it, 64 MiB, which must hold what Pebble
// writes by itself after the last write it was given: the next WAL (110 %
// of the 16 MiB memtable, preallocated), the flush of the full memtable (up
// to 16 MiB) and the compaction that follows, whose output exists before
// its inputs are deleted.
const DefaultDiskReserve = 128 << 20

// pebbleFatal is the panic value of a Pebble commit that failed: the logger
// raises it on the committing goroutine, where disk.write recovers it.
type pebbleFatal string

// disk is the node's persistence condition. Below the reserve the node is
// "low": it takes no client writes (the server answers ErrCannotPersist)
// and, leading, hands leadership on, but the log still takes Raft's entries
// so the node stays current. Below half the reserve its own writes (log
// appends, the state's write-back, a snapshot) are refused before they reach
// Pebble. Stable-store writes (term and vote, a few bytes) are never
// refused: they may use the reserve.
type disk struct {
	dir     string
	reserve uint64
	free    func() (uint64, error) // free bytes for an unprivileged writer
	logger  *slog.Logger

	now func() time.Time

	mu      sync.Mutex
	low     error // free space below the reserve; nil when not
	failed  error // a Pebble write failed; set once, never cleared
	lastLog time.Time

	// The last reading of the free space, when it was taken, and the
	// bytes admitted since: admit reuses it while it is fresh and far from
	// the reserve (see admit).
	readFreeAt time.Time
	lastFree   uint64
	since      uint64
}

// freeMaxAge is how long admit may reuse a reading of the free space: the
// leadership watcher refreshes it as often, so a drop in the free space
// that this node's writes did not cause (another process's, Pebble's
// flushes) is noticed as soon as before.
const freeMaxAge = 50 * time.Millisecond

func newDisk(dir string, reserve uint64, logger *slog.Logger) *disk {
	if reserve == 0 {
		reserve = DefaultDiskReserve
	}
	return &disk{dir: dir, reserve: reserve, free: func() (uint64, error) { return freeBytes(dir) }, logger: logger, now: time.Now}
}

// freeBytes is the space an unprivileged process may still write in dir.
func freeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("raftstore: statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Err is the node's condition: nil when it can persist.
func (d *disk) Err() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return d.failed
	}
	return d.low
}

// Failed reports whether a Pebble write failed in this process.
func (d *disk) Failed() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed != nil
}

// admit is asked before the node writes about n bytes to Pebble: it
// refreshes the condition and refuses the write, before Pebble sees it,
// when the storage failed or the write would leave less than half the
// reserve. A statfs that fails admits the write: Pebble will tell.
//
// A statfs per log append was 1-2 % of a node's CPU under load, so a
// reading younger than freeMaxAge is reused, less the bytes admitted since,
// while that leaves the write well clear of the reserve (at least the level
// at which writes resume): near the reserve every write reads the space
// afresh, as before.
func (d *disk) admit(n int, what string) error {
	if d == nil {
		return nil
	}
	if d.admitCached(n) {
		return nil
	}
	free, err := d.readFree()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return fmt.Errorf("%w: %w", ErrCannotPersist, d.failed)
	}
	if err != nil {
		d.logEvery(slog.LevelWarn, "cannot read the free space of the data directory", "err", err)
		return nil
	}
	d.remember(free)
	d.setLow(free)
	if left := free - min(free, uint64(n)); left < d.reserve/2 {
		err := fmt.Errorf("%w: %s of %d bytes refused: %s free in %s, the last %s are kept for the storage engine (--disk-reserve %s)",
			ErrNoSpace, what, n, size(free), d.dir, size(d.reserve/2), size(d.reserve))
		d.logEvery(slog.LevelWarn, "write refused: data directory nearly full", "err", err)
		return fmt.Errorf("%w: %w", ErrCannotPersist, err)
	}
	d.since += uint64(n)
	return nil
}

// admitCached admits a write of n bytes on the last reading of the free
// space when it may (see admit), and counts its bytes.
func (d *disk) admitCached(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if age := d.now().Sub(d.readFreeAt); d.failed != nil || d.low != nil || d.readFreeAt.IsZero() || age < 0 || age >= freeMaxAge {
		return false
	}
	used := d.since + uint64(n)
	if used > d.lastFree || d.lastFree-used < d.reserve+d.reserve/2 {
		return false
	}
	d.since = used
	return true
}

// remember keeps a reading of the free space for admitCached; the caller
// holds mu.
func (d *disk) remember(free uint64) {
	d.readFreeAt, d.lastFree, d.since = d.now(), free, 0
}

// refresh re-reads the free space: the node's poller calls it, so that the
// condition clears once space is back even when nothing is written.
func (d *disk) refresh() {
	if d == nil {
		return
	}
	free, err := d.readFree()
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remember(free)
	d.setLow(free)
}

func (d *disk) readFree() (uint64, error) {
	d.mu.Lock()
	f := d.free
	d.mu.Unlock()
	return f()
}

// setFree replaces how the free space is read (tests), and forgets the
// last reading.
func (d *disk) setFree(f func() (uint64, error)) {
	d.mu.Lock()
	d.free = f
	d.readFreeAt = time.Time{}
	d.mu.Unlock()
}

// setLow enters or leaves the low condition; the caller holds mu. It is
// left only at one and a half times the reserve: Pebble takes and gives
// back space in steps of a WAL (preallocated, 110 % of a memtable) or a
// flushed memtable, and without the margin a node near the reserve would
// take and refuse writes by turns.
func (d *disk) setLow(free uint64) {
	resume := d.reserve + d.reserve/2
	switch {
	case free < d.reserve || d.low != nil && free < resume:
		if d.low == nil {
			d.logger.Warn("data directory nearly full: this node takes no writes until space is freed", "dir", d.dir, "free", size(free), "reserve", size(d.reserve))
		}
		d.low = fmt.Errorf("%w: %s free in %s, below --disk-reserve %s (writes resume at %s free)", ErrNoSpace, size(free), d.dir, size(d.reserve), size(resume))
	case d.low != nil:
		d.logger.Info("data directory has space again: writes resume", "dir", d.dir, "free", size(free))
		d.low = nil
	}
}

// write runs one Pebble write. A write that fails, by an error or by the
// panic Pebble raises for a WAL it could not write (commitWrite's
// panic(err), or the logger's pebbleFatal), marks the storage failed: Pebble
// leaves its commit pipeline locked behind such a failure, so no later write
// may reach it (each would hang). Reads from Pebble still work.
func (d *disk) write(what string, fn func() error) (err error) {
	if d == nil {
		return fn()
	}
	d.mu.Lock()
	failed := d.failed
	d.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%w: %w", ErrCannotPersist, failed)
	}
	defer func() {
		switch r := recover().(type) {
		case nil:
		case pebbleFatal:
			err = fmt.Errorf("%s: %s", what, r)
		default:
			err = fmt.Errorf("%s: pebble panicked: %v", what, r)
		}
		if err != nil {
			err = d.fail(err)
		}
	}()
	return fn()
}

// fail marks the storage failed with cause and returns the error a writer
// reports.
func (d *disk) fail(cause error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed == nil {
		d.failed = fmt.Errorf("%w: %v", ErrStorageFailed, cause)
		d.logger.Error("the data directory cannot be written: this node takes no writes until it is restarted", "err", cause)
	}
	return fmt.Errorf("%w: %w", ErrCannotPersist, d.failed)
}

// fatal is Pebble's Logger.Fatalf, which must not return into the code that
// called it (a commit would be reported durable). On a commit it panics
// with pebbleFatal, which write recovers on the committing goroutine. Every
// other caller is one of Pebble's background goroutines (a MANIFEST that
// could not be written after a flush or compaction), where a panic would
// end the process: that goroutine is parked for good instead, and the node
// reports the failure until it is restarted (Pebble's own recovery at the
// next open rebuilds from what reached the disk).
func (d *disk) fatal(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(format, "pebble: fatal commit error") {
		panic(pebbleFatal(msg))
	}
	d.fail(errors.New(msg))
	select {}
}

// logEvery logs at most once a second: a follower's failed append is
// retried by the leader continually. The caller holds mu.
func (d *disk) logEvery(level slog.Level, msg string, args ...any) {
	if time.Since(d.lastLog) < time.Second {
		return
	}
	d.lastLog = time.Now()
	d.logger.Log(context.Background(), level, msg, args...)
}

// size prints n bytes for people.
func size(n uint64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
