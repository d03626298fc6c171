package raftstore

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// guardedTransport closes every replication pipeline of the node when it
// stops. hashicorp/raft (v1.7.3) can otherwise wait forever to shut down:
// once a pipeline's response decoder has stopped (a stale term, a refused
// append), its last best-effort send blocks on the pipeline's full in-flight
// queue, which only Close frees, and Close runs after that send returns; the
// shutdown waits for the replication goroutine. The fault and integration
// tests saw nodes still heartbeating 10 to 20 s after SIGTERM, blocked there.
//
// It also records, from the answers to the leader's appends, how far each
// follower's log matches: the leader's own view of replication progress
// (hashicorp/raft keeps its match indexes to itself), which promotion
// trusts instead of what a newcomer says about itself.
type guardedTransport struct {
	raft.Transport
	stop     <-chan struct{} // closed when the node begins to close
	progress *progress
	inflight *atomic.Int64 // bytes of the pipelines' appends in flight, all together (nil: none counted)
}

func (g guardedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	trimAppend(args)
	sent := time.Now()
	err := g.Transport.AppendEntries(id, target, args, resp)
	if err == nil {
		g.progress.observe(id, args, resp)
		if resp.Success && resp.Term == args.Term {
			g.progress.observeAck(id, args.Term, sent)
		}
	}
	return err
}

func (g guardedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := g.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	gp := &guardedPipeline{AppendPipeline: p, closed: make(chan struct{}), done: make(chan raft.AppendFuture), inflight: newInflight(pipelineBytes, g.inflight)}
	go func() {
		select {
		case <-g.stop:
			gp.Close()
		case <-gp.closed:
		}
	}()
	// Raft reads the answers from Consumer; they pass through here first.
	// An answer gives back its append's bytes as it arrives, and waits in
	// a queue for raft, never blocking the answers behind it: raft stops
	// reading answers when a follower refuses an append, and if those
	// behind it kept their bytes, a send waiting for room would never see
	// that raft has given up on the pipeline and would wait forever.
	go func() {
		in := p.Consumer()
		var queue []raft.AppendFuture
		for {
			var out chan raft.AppendFuture
			var next raft.AppendFuture
			if len(queue) > 0 {
				out, next = gp.done, queue[0]
			}
			select {
			case f := <-in:
				gp.inflight.release(appendSize(f.Request()))
				if f.Error() == nil {
					g.progress.observe(id, f.Request(), f.Response())
					if req, resp := f.Request(), f.Response(); req != nil && resp != nil && resp.Success && resp.Term == req.Term {
						g.progress.observeAck(id, req.Term, f.Start())
					}
				}
				queue = append(queue, f)
			case out <- next:
				queue[0] = nil
				queue = queue[1:]
			case <-gp.closed:
				return
			}
		}
	}()
	return gp, nil
}

// RequestPreVote passes pre-votes on: raft only uses them when its
// transport has the method.
func (g guardedTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if pv, ok := g.Transport.(raft.WithPreVote); ok {
		return pv.RequestPreVote(id, target, args, resp)
	}
	return errPreVote
}

var errPreVote = errors.New("raftstore: the transport has no pre-vote")

// Close closes the transport it wraps, which raft does after shutting down.
func (g guardedTransport) Close() error {
	if c, ok := g.Transport.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// guardedPipeline is a pipeline that may be closed twice: by raft and by
// the node stopping.
type guardedPipeline struct {
	raft.AppendPipeline
	once   sync.Once
	closed chan struct{}
	done   chan raft.AppendFuture // the answers, once observed
	err    error
	// inflight bounds the bytes of the appends sent and not yet answered.
	inflight *inflight
}

// AppendEntries sends an append once the appends in flight leave room for
// it, its entries trimmed to appendBytes.
func (p *guardedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	trimAppend(args)
	size := appendSize(args)
	if !p.inflight.acquire(size, p.closed) {
		return nil, raft.ErrPipelineShutdown
	}
	f, err := p.AppendPipeline.AppendEntries(args, resp)
	if err != nil {
		p.inflight.release(size)
	}
	return f, err
}

func (p *guardedPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

func (p *guardedPipeline) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.err = p.AppendPipeline.Close()
		p.inflight.drain()
	})
	return p.err
}

// progress is the leader's view of each follower's log: the highest index
// a successful append of the current term showed to match, and when.
type progress struct {
	mu sync.Mutex
	m  map[raft.ServerID]Progress
	// acked and changed serve reads' leadership checks (freshquorum.go).
	acked   map[raft.ServerID]ack
	changed chan struct{} // closed and replaced whenever acked changes
}

// Progress is how far a follower's log matches the leader's, as the
// leader's appends found it.
type Progress struct {
	Term  uint64    // the leader's term of the appends
	Match uint64    // highest log index known to be in the follower's log
	At    time.Time // when an append last succeeded
}

func newProgress() *progress {
	return &progress{m: make(map[raft.ServerID]Progress), acked: make(map[raft.ServerID]ack), changed: make(chan struct{})}
}

func (p *progress) observe(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if p == nil || args == nil || resp == nil || !resp.Success {
		return
	}
	match := args.PrevLogEntry + uint64(len(args.Entries))
	p.mu.Lock()
	defer p.mu.Unlock()
	// A log that matched in an earlier term may since have been cut back
	// by another leader: each term learns it again.
	pr := p.m[id]
	if pr.Term != args.Term {
		pr = Progress{Term: args.Term}
	}
	pr.Match, pr.At = max(pr.Match, match), time.Now()
	p.m[id] = pr
}

func (p *progress) get(id raft.ServerID) (Progress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.m[id]
	return pr, ok
}
