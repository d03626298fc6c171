package server

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/fenced/fenced/lockstate"
)

// waits routes the answers of queued FLOCKs (lockstate.Wake) to the
// connections waiting for them on this node. A wait id is chosen here before
// proposing and travels in the entry, so the answer can arrive in any later
// entry, even one applied before Propose returns.
type waits struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[uint64]chan lockstate.Result
	// done is closed when the server shuts down: waiting FLOCKs cancel
	// their waits instead of holding the shutdown up.
	done     chan struct{}
	doneOnce sync.Once
}

func newWaits() *waits {
	w := &waits{m: make(map[uint64]chan lockstate.Result), done: make(chan struct{})}
	var seed [8]byte
	rand.Read(seed[:])
	// A random start keeps ids of different nodes (and restarts) apart.
	w.next.Store(binary.LittleEndian.Uint64(seed[:]))
	return w
}

// register returns a fresh id and the channel its answer will arrive on.
func (w *waits) register() (uint64, <-chan lockstate.Result) {
	id := w.next.Add(1)
	if id == 0 {
		id = w.next.Add(1)
	}
	ch := make(chan lockstate.Result, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return id, ch
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
		if ch, ok := w.m[k.WaitID]; ok {
			delete(w.m, k.WaitID)
			ch <- k.Result
		}
	}
}

func (w *waits) shutdown() { w.doneOnce.Do(func() { close(w.done) }) }

// registered reports whether id waits on this node.
func (w *waits) registered(id uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[id]
	return ok
}
