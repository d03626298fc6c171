package server

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fenced/fenced/lockstate"
)

// waits routes the answers of queued FLOCKs (lockstate.Wake) to the
// connections waiting for them on this node. A wait id is chosen here before
// proposing and travels in the entry, so the answer can arrive in any later
// entry, even one applied before Propose returns, and on whichever node
// holds the client's connection: every node applies every entry.
//
// An id is epoch<<32 | counter, where the epoch is drawn at random by each
// process and kept in the data directory. When the process ends, its
// waits' connections are gone; the next process of this node cancels every
// wait of its earlier epochs through Raft (OpCancelWaits), so no lock is
// handed to a connection that no longer exists.
type waits struct {
	epoch uint64
	next  atomic.Uint32
	file  string
	old   []uint64 // epochs of earlier processes that may have waits left

	mu sync.Mutex
	m  map[uint64]*pendingWait
	// done is closed when the server shuts down: waiting FLOCKs cancel
	// their waits instead of holding the shutdown up.
	done     chan struct{}
	doneOnce sync.Once
}

// epochFile is where a node keeps the epochs whose waits may still be
// queued.
const epochFile = "wait-epochs"

func newWaits(dir string) (*waits, error) {
	w := &waits{m: make(map[uint64]*pendingWait), done: make(chan struct{}), file: filepath.Join(dir, epochFile)}
	b, err := os.ReadFile(w.file)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("server: %w", err)
	}
	for _, f := range strings.Fields(string(b)) {
		e, err := strconv.ParseUint(f, 16, 32)
		if err != nil || e == 0 {
			return nil, fmt.Errorf("server: %s: bad epoch %q", w.file, f)
		}
		w.old = append(w.old, e)
	}
	for w.epoch == 0 || containsEpoch(w.old, w.epoch) {
		var seed [4]byte
		rand.Read(seed[:])
		w.epoch = uint64(binary.LittleEndian.Uint32(seed[:]))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	// The new epoch is on disk before any id of it is used.
	if err := w.writeEpochs(w.old); err != nil {
		return nil, err
	}
	return w, nil
}

func containsEpoch(l []uint64, e uint64) bool {
	for _, x := range l {
		if x == e {
			return true
		}
	}
	return false
}

// writeEpochs records the epochs that may have waits: the given old ones
// and this process's own.
func (w *waits) writeEpochs(old []uint64) error {
	var b strings.Builder
	for _, e := range append(old[:len(old):len(old)], w.epoch) {
		fmt.Fprintf(&b, "%08x\n", e)
	}
	tmp := w.file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(b.String())
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, w.file)
	}
	if err != nil {
		return fmt.Errorf("server: wait epochs: %w", err)
	}
	return nil
}

// oldEpochs returns the epochs of earlier processes.
func (w *waits) oldEpochs() []uint64 { return append([]uint64(nil), w.old...) }

// forgetEpochs keeps only the given old epochs on disk: the others' waits
// have been cancelled.
func (w *waits) forgetEpochs(left []uint64) {
	w.old = append([]uint64(nil), left...)
	w.writeEpochs(w.old) // best effort: a leftover epoch costs one no-op cancel next time
}

// pendingWait is a FLOCK waiting on this node.
type pendingWait struct {
	ch                  chan lockstate.Result
	lock, session, user string // what it asked for, to answer it after a restore
	queued              bool   // the leader answered that it joined the queue
	pos                 int64  // at which log index it joined (Result.Int)
}

// register returns a fresh id for a FLOCK of (lock, session, owner) and the
// channel its answer will arrive on.
func (w *waits) register(lock, session, owner string) (uint64, <-chan lockstate.Result) {
	id := w.epoch<<32 | uint64(w.next.Add(1))
	p := &pendingWait{ch: make(chan lockstate.Result, 1), lock: lock, session: session, user: owner}
	w.mu.Lock()
	w.m[id] = p
	w.mu.Unlock()
	return id, p.ch
}

// blocked counts the FLOCKs waiting on this node.
func (w *waits) blocked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// queued records that the FLOCK under id joined its lock's queue at log
// index pos.
func (w *waits) queued(id uint64, pos int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.m[id]; p != nil {
		p.queued, p.pos = true, pos
	}
}

// resolveMissing answers the queued waits that st, restored from a snapshot
// up to index applied, shows decided: the owner holds the lock under a
// token above the wait's place (it was granted, in entries this node only
// received as a snapshot) or the session is gone. A wait that joined after
// the snapshot is left alone: its entry, and its answer, still come. So is
// one the state shows undecided, or held since before it joined: the owner
// held the lock, let it go, then queued again, and a snapshot taken in
// between shows the old hold (answering it handed a released token to the
// new FLOCK: TestChaos/reentrant, seed 1795626843439970801). A wait that
// timed out inside the snapshot ends when its client gives up.
func (w *waits) resolveMissing(st *lockstate.State, applied uint64) {
	live := map[uint64]bool{}
	for _, id := range st.WaitIDs() {
		live[id] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, p := range w.m {
		if !p.queued || live[id] || applied < uint64(p.pos) {
			continue
		}
		r := st.Fence(p.lock, p.session, p.user, true)
		if r.Err == lockstate.ErrNotOwner || r.Err == nil && r.Int <= p.pos {
			continue
		}
		delete(w.m, id)
		p.ch <- r
	}
}

func (w *waits) unregister(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// deliver hands each wake to its waiter, if it waits on this node.
func (w *waits) deliver(wakes []lockstate.Wake) {
	if len(wakes) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range wakes {
		if p, ok := w.m[k.WaitID]; ok {
			delete(w.m, k.WaitID)
			p.ch <- k.Result
		}
	}
}

func (w *waits) shutdown() { w.doneOnce.Do(func() { close(w.done) }) }
