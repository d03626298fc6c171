package raftstore

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckPipeline's AppendEntries blocks until the pipeline is closed, as
// raft's netPipeline does once its in-flight queue is full and nothing
// reads its responses.
type stuckPipeline struct {
	raft.AppendPipeline
	closed chan struct{}
}

func (p *stuckPipeline) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	<-p.closed
	return nil, raft.ErrPipelineShutdown
}

func (p *stuckPipeline) Close() error { close(p.closed); return nil }

// Consumer delivers nothing: no send ever completes.
func (p *stuckPipeline) Consumer() <-chan raft.AppendFuture { return nil }

type stuckTransport struct {
	raft.Transport
	pipe *stuckPipeline
}

func (s stuckTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return s.pipe, nil
}

// TestGuardedPipelineClosesOnStop: a send blocked in a pipeline returns once
// the node stops, and raft's own Close afterwards is harmless.
func TestGuardedPipelineClosesOnStop(t *testing.T) {
	stop := make(chan struct{})
	inner := &stuckPipeline{closed: make(chan struct{})}
	g := guardedTransport{Transport: stuckTransport{pipe: inner}, stop: stop}
	p, err := g.AppendEntriesPipeline("n2", "n2")
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error)
	go func() {
		_, err := p.AppendEntries(&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{})
		sent <- err
	}()
	select {
	case <-sent:
		t.Fatal("the stuck send returned before the node stopped")
	case <-time.After(50 * time.Millisecond):
	}
	close(stop)
	select {
	case err := <-sent:
		if err != raft.ErrPipelineShutdown {
			t.Errorf("send = %v, want %v", err, raft.ErrPipelineShutdown)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the send is still blocked after the node stopped")
	}
	if err := p.Close(); err != nil { // raft closes it too: once is enough
		t.Errorf("second Close: %v", err)
	}
}

// TestGuardedTransportPassesOn: the wrapper keeps what raft looks for on a
// transport (pre-vote, Close), so wrapping changes nothing else.
func TestGuardedTransportPassesOn(t *testing.T) {
	_, inner := raft.NewInmemTransport("a")
	var tr raft.Transport = guardedTransport{Transport: inner, stop: make(chan struct{})}
	if _, ok := tr.(raft.WithPreVote); !ok {
		t.Error("the guarded transport lost pre-vote")
	}
	if _, ok := tr.(raft.WithClose); !ok {
		t.Error("the guarded transport lost Close")
	}
	if tr.LocalAddr() != "a" {
		t.Errorf("LocalAddr = %q", tr.LocalAddr())
	}
}
