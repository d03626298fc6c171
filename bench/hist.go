package main

import (
	"slices"
	"time"
)

// Recorder keeps every latency sample. A run records at most a few million
// points, which fits in memory, so percentiles can be exact instead of carrying
// a bucket-width error that would have to be argued about in every report.
type Recorder struct {
	samples []time.Duration
}

// Record adds one sample.
func (r *Recorder) Record(d time.Duration) { r.samples = append(r.samples, d) }

// Merge appends another recorder's samples; each worker records into its own
// Recorder so the hot loop shares nothing, and the step merges them at the end.
func (r *Recorder) Merge(o *Recorder) { r.samples = append(r.samples, o.samples...) }

// Len is the number of samples recorded.
func (r *Recorder) Len() int { return len(r.samples) }

// Summary is the percentile view of a Recorder.
type Summary struct {
	Count int
	P50   time.Duration
	P99   time.Duration
	P999  time.Duration
	Max   time.Duration
}

// Summary sorts the samples in place and reads the percentiles off them.
func (r *Recorder) Summary() Summary {
	slices.Sort(r.samples)
	s := Summary{Count: len(r.samples)}
	if s.Count == 0 {
		return s
	}
	s.P50 = percentile(r.samples, 500)
	s.P99 = percentile(r.samples, 990)
	s.P999 = percentile(r.samples, 999)
	s.Max = r.samples[s.Count-1]
	return s
}

// percentile returns the nearest-rank percentile of sorted samples: the
// smallest sample such that at least perMille/1000 of all samples are <= it.
// Per-mille integers keep the rank arithmetic exact (99.9 % is not exact in
// binary floating point, and an off-by-one rank would shift p999).
func percentile(sorted []time.Duration, perMille int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (perMille*n + 999) / 1000 // ceil(perMille*n/1000)
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// ms converts a duration to fractional milliseconds for reports.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
