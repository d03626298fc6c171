package server

import (
	"sync"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// BLPOP (and BLMOVE and BRPOPLPUSH, on their source) tries to pop through
// the log; when every list is empty it waits on this node for an applied
// entry that pushes to one of its lists (a push by a client or by a
// script, an LMOVE's destination, applied here like everywhere) and tries
// again. The wait is registered before each try, and this node applies
// every entry after the try, so no push is missed. The timeout runs on this
// node's clock: it bounds how long a client waits, and decides nothing in
// the replicated state.

// listWaits wakes the BLPOPs of this node when their lists are pushed to.
type listWaits struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

func newListWaits() *listWaits {
	return &listWaits{m: make(map[string]map[chan struct{}]struct{})}
}

// blocked counts the BLPOPs waiting on this node (one per channel, however
// many keys it watches).
func (l *listWaits) blocked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	chans := map[chan struct{}]struct{}{}
	for _, m := range l.m {
		for ch := range m {
			chans[ch] = struct{}{}
		}
	}
	return len(chans)
}

// watch returns a channel that receives once one of keys is pushed to, and
// the function that stops watching.
func (w *listWaits) watch(keys []string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	for _, k := range keys {
		if w.m[k] == nil {
			w.m[k] = make(map[chan struct{}]struct{})
		}
		w.m[k][ch] = struct{}{}
	}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, k := range keys {
			delete(w.m[k], ch)
			if len(w.m[k]) == 0 {
				delete(w.m, k)
			}
		}
	}
}

// notify wakes the watchers of keys, or every watcher if all (after a
// snapshot install, whose pushes were never reported one by one).
func (w *listWaits) notify(keys []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wake := func(chs map[chan struct{}]struct{}) {
		for ch := range chs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	if all {
		for _, chs := range w.m {
			wake(chs)
		}
		return
	}
	for _, k := range keys {
		wake(w.m[k])
	}
}

func (s *Server) blpop(c *resp.Conn, args [][]byte) resp.Value {
	timeout, err := commands.ParseBlockTimeout(args[len(args)-1])
	if err != nil {
		return errorReply(err)
	}
	keys := make([]string, len(args)-2)
	for i, a := range args[1 : len(args)-1] {
		keys[i] = string(a)
	}
	return s.blockOn(c, args, keys, timeout, reply.KindNullArray)
}

// blmove is BLMOVE and BRPOPLPUSH: BLPOP's wait, on the source alone. The
// state machine answers a null bulk for an empty source (what Redis
// answers inside MULTI, where nothing waits); a wait that times out is
// Redis's null array, as for every blocked list command.
func (s *Server) blmove(c *resp.Conn, args [][]byte) resp.Value {
	mv, err := commands.ParseListMove(args)
	if err != nil {
		return errorReply(err)
	}
	return s.blockOn(c, args, []string{mv.Src}, mv.Timeout, reply.KindNull)
}

// blockOn runs args, a blocking list command whose last argument is its
// timeout (ms here, 0 = forever), through the log until its reply is not
// of kind empty: each empty reply waits for a push to one of keys, the
// timeout, the connection's end or the server's.
func (s *Server) blockOn(c *resp.Conn, args [][]byte, keys []string, timeout int64, empty reply.Kind) resp.Value {
	entry := lockstate.Entry{Op: lockstate.OpExec, Args: make([]string, len(args))}
	entry.User, entry.AsAdmin = s.actor(c)
	for i, a := range args {
		entry.Args[i] = string(a)
	}
	entry.Args[len(args)-1] = "0"
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(time.Duration(ms.Nanos(timeout)))
		defer t.Stop()
		deadline = t.C
	}
	ctx := c.Context()
	for {
		pushed, stop := s.lists.watch(keys)
		res, err := s.submit(ctx, entry)
		switch {
		case err != nil:
			stop()
			return errorReply(err)
		case res.Err != nil:
			stop()
			return errorReply(res.Err)
		case res.Reply.Kind != empty:
			stop()
			return resp.FromReply(res.Reply)
		}
		select {
		case <-pushed:
			stop()
		case <-deadline:
			stop()
			return resp.NullArray()
		case <-ctx.Done():
			stop()
			return resp.NullArray()
		case <-s.waits.done:
			stop()
			return resp.NullArray()
		}
	}
}
