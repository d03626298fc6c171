package raftstore

import (
	"errors"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// guardedTransport closes every replication pipeline of the node when it
// stops. hashicorp/raft (v1.7.3) can otherwise wait forever to shut down:
// once a pipeline's response decoder has stopped (a stale term, a refused
// append), its last best-effort send blocks on the pipeline's full in-flight
// queue, which only Close frees, and Close runs after that send returns; the
// shutdown waits for the replication goroutine. The fault and integration
// tests saw nodes still heartbeating 10 to 20 s after SIGTERM, blocked there.
type guardedTransport struct {
	raft.Transport
	stop <-chan struct{} // closed when the node begins to close
}

func (g guardedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := g.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	gp := &guardedPipeline{AppendPipeline: p, closed: make(chan struct{})}
	go func() {
		select {
		case <-g.stop:
			gp.Close()
		case <-gp.closed:
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
	err    error
}

func (p *guardedPipeline) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.err = p.AppendPipeline.Close()
	})
	return p.err
}
