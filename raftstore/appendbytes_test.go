package raftstore

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func entriesOf(sizes ...int) []*raft.Log {
	var logs []*raft.Log
	for i, n := range sizes {
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Data: make([]byte, n)})
	}
	return logs
}

// An append keeps its first entries that fit in appendBytes, never fewer
// than one.
func TestTrimAppend(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  int
	}{
		{nil, 0},
		{[]int{100, 100, 100}, 3},
		{[]int{appendBytes * 2}, 1},
		{[]int{appendBytes * 2, 1, 1}, 1},
		{[]int{4 << 20, 3 << 20, 4 << 20, 1}, 2},
		{[]int{1, 1, appendBytes}, 2},
	} {
		req := &raft.AppendEntriesRequest{Entries: entriesOf(tc.sizes...)}
		full := req.Entries[:len(req.Entries):len(req.Entries)]
		trimAppend(req)
		if len(req.Entries) != tc.want {
			t.Errorf("%v: %d entries kept, want %d", tc.sizes, len(req.Entries), tc.want)
		}
		for i := tc.want; i < len(full); i++ {
			if full[i] != nil {
				t.Errorf("%v: dropped entry %d still referenced", tc.sizes, i)
			}
		}
		if tc.want > 1 && appendSize(req) > appendBytes {
			t.Errorf("%v: %d bytes kept, past %d", tc.sizes, appendSize(req), appendBytes)
		}
	}
}

// A pipeline's sends wait while its bytes in flight are spent, and go on
// when an answer gives them back or the pipeline closes.
func TestInflightBound(t *testing.T) {
	f := newInflight(10, nil)
	closed := make(chan struct{})
	if !f.acquire(8, closed) {
		t.Fatal("an empty budget refused 8 bytes")
	}
	got := make(chan bool, 1)
	go func() { got <- f.acquire(5, closed) }()
	select {
	case <-got:
		t.Fatal("5 more bytes went in beside 8 of 10")
	case <-time.After(50 * time.Millisecond):
	}
	f.release(8)
	if !<-got {
		t.Fatal("acquire failed after the room came back")
	}
	go func() { got <- f.acquire(6, closed) }()
	close(closed)
	if <-got {
		t.Fatal("acquire succeeded past the budget after the pipeline closed")
	}
	f.drain()
	if f.used != 0 {
		t.Fatalf("%d bytes in flight after drain", f.used)
	}
	if !f.acquire(100, nil) {
		t.Fatal("a send larger than the budget was refused with nothing in flight")
	}
}
