package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// seq returns the durations lo..hi (inclusive), in units of time.Microsecond.
func seq(lo, hi int) []time.Duration {
	var out []time.Duration
	for i := lo; i <= hi; i++ {
		out = append(out, time.Duration(i)*time.Microsecond)
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	us := time.Microsecond
	cases := []struct {
		name            string
		in              []time.Duration
		p50, p99, p999  time.Duration
		wantMax         time.Duration
		wantCount       int
		shuffleAndSplit bool
	}{
		{name: "empty", in: nil},
		{name: "one", in: []time.Duration{7 * us}, p50: 7 * us, p99: 7 * us, p999: 7 * us, wantMax: 7 * us, wantCount: 1},
		{name: "two", in: []time.Duration{1 * us, 2 * us}, p50: 1 * us, p99: 2 * us, p999: 2 * us, wantMax: 2 * us, wantCount: 2},
		// 1..100: rank(p50)=50, rank(p99)=99, rank(p999)=ceil(99.9)=100.
		{name: "1..100", in: seq(1, 100), p50: 50 * us, p99: 99 * us, p999: 100 * us, wantMax: 100 * us, wantCount: 100},
		// 1..1000: ranks 500, 990, 999.
		{name: "1..1000", in: seq(1, 1000), p50: 500 * us, p99: 990 * us, p999: 999 * us, wantMax: 1000 * us, wantCount: 1000},
		// 1..10000 shuffled and recorded by 8 "workers": ranks 5000, 9900, 9990.
		{name: "1..10000 merged", in: seq(1, 10000), p50: 5000 * us, p99: 9900 * us, p999: 9990 * us, wantMax: 10000 * us, wantCount: 10000, shuffleAndSplit: true},
		// A tail: 990 fast ops and 10 slow ones; p99 is still fast (rank 990),
		// p999 lands in the tail (rank 999).
		{name: "tail", in: append(repeat(1*us, 990), repeat(50*us, 10)...), p50: 1 * us, p99: 1 * us, p999: 50 * us, wantMax: 50 * us, wantCount: 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Recorder
			if c.shuffleAndSplit {
				in := append([]time.Duration(nil), c.in...)
				rand.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
				parts := make([]Recorder, 8)
				for i, d := range in {
					parts[i%len(parts)].Record(d)
				}
				for i := range parts {
					r.Merge(&parts[i])
				}
			} else {
				for _, d := range c.in {
					r.Record(d)
				}
			}
			s := r.Summary()
			if s.Count != c.wantCount || s.P50 != c.p50 || s.P99 != c.p99 || s.P999 != c.p999 || s.Max != c.wantMax {
				t.Fatalf("got count=%d p50=%v p99=%v p999=%v max=%v; want count=%d p50=%v p99=%v p999=%v max=%v",
					s.Count, s.P50, s.P99, s.P999, s.Max, c.wantCount, c.p50, c.p99, c.p999, c.wantMax)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestMs(t *testing.T) {
	if got := ms(1500 * time.Microsecond); got != 1.5 {
		t.Fatalf("ms(1.5ms) = %v", got)
	}
}
