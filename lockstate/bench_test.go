package lockstate

import (
	"fmt"
	"testing"
)

// nopWriter discards writes, so the benchmarks measure the state machine.
type nopWriter struct{}

func (nopWriter) Set(k, v []byte) error { return nil }
func (nopWriter) Delete(k []byte) error { return nil }

// BenchmarkFlockFunlock is one uncontended acquire + release cycle with
// request ids, as the Go client sends them, over 1000 sessions.
func BenchmarkFlockFunlock(b *testing.B) {
	s := New(Config{})
	var index uint64
	apply := func(e Entry) Result {
		index++
		r, err := s.Apply(index, e, nopWriter{})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	const n = 1000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
		apply(Entry{Op: OpSessionOpen, Time: 1, Session: ids[i], TTL: 1 << 40})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := ids[i%n]
		lock := fmt.Sprintf("lock-%d", i%n)
		if r := apply(Entry{Op: OpFlock, Time: int64(i), Session: id, Lock: lock, Wait: NoWait, Req: fmt.Sprintf("a%d", i)}); r.Int == 0 {
			b.Fatal(r)
		}
		if r := apply(Entry{Op: OpFunlock, Time: int64(i), Session: id, Lock: lock, Req: fmt.Sprintf("r%d", i)}); r.Err != nil {
			b.Fatal(r)
		}
	}
}

// BenchmarkContended is a handoff through a queue of 16 waiters.
func BenchmarkContended(b *testing.B) {
	s := New(Config{})
	var index uint64
	apply := func(e Entry) Result {
		index++
		r, err := s.Apply(index, e, nopWriter{})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	const n = 17
	for i := range n {
		apply(Entry{Op: OpSessionOpen, Time: 1, Session: fmt.Sprint(i), TTL: 1 << 40})
		apply(Entry{Op: OpFlock, Time: 1, Session: fmt.Sprint(i), Lock: "l", Wait: 1000, WaitID: index + 1})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		holder := fmt.Sprint(i % n)
		if r := apply(Entry{Op: OpFunlock, Time: 2, Session: holder, Lock: "l"}); r.Err != nil || len(r.Wakes) != 1 {
			b.Fatal(r)
		}
		if r := apply(Entry{Op: OpFlock, Time: 2, Session: holder, Lock: "l", Wait: 1000, WaitID: index + 1}); !r.Queued {
			b.Fatal(r)
		}
	}
}

// BenchmarkHdelMany is one HDEL of 10,000 fields from a hash of 100,000:
// the cost of one such entry on the apply loop (O(n·m) if each field
// were taken out of the field order alone).
func BenchmarkHdelMany(b *testing.B) {
	const n, m = 100_000, 10_000
	hset := []string{"HSET", "h"}
	for i := range n {
		hset = append(hset, fmt.Sprintf("f%d", i), "v")
	}
	hdel := []string{"HDEL", "h"}
	for i := range m {
		hdel = append(hdel, fmt.Sprintf("f%d", i*(n/m)))
	}
	var index uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := New(Config{})
		index++
		if _, err := s.Apply(index, Entry{Op: OpExec, Time: 1, Args: hset}, nopWriter{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		index++
		r, err := s.Apply(index, Entry{Op: OpExec, Time: 1, Args: hdel}, nopWriter{})
		if err != nil || r.Reply.Int != m {
			b.Fatalf("HDEL = %+v %v, want %d", r.Reply, err, m)
		}
	}
}
