// Package raftmetrics bridges the metrics hashicorp/raft reports through
// go-metrics into Prometheus: a go-metrics sink that is also a Prometheus
// collector, named as Prometheus names things (fenced_raft_commit_time_seconds
// for raft's raft.commitTime).
package raftmetrics

import (
	"slices"
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// namespace prefixes every name, so that raft's metrics sit beside the
// node's own (fenced_...) and never collide with the Go collectors'.
const namespace = "fenced"

// Raft's samples are durations measured with MeasureSince, which go-metrics
// divides by the timer granularity (Install sets one second), except the
// ones below, found in hashicorp/raft v1.7.3 (fsm.go, log.go, raft.go,
// saturation.go): samples and gauges of other quantities, and milliseconds
// it computes itself.
var (
	plainSamples = map[string]bool{
		"raft.fsm.applyBatchNum":      true, // entries per batch
		"raft.thread.main.saturation": true, // a share of time, 0 to 1
		"raft.thread.fsm.saturation":  true,
	}
	msSamples = map[string]bool{"raft.leader.lastContact": true}
	msGauges  = map[string]bool{"raft.fsm.lastRestoreDuration": true, "raft.leader.oldestLogAge": true}
)

// durationBuckets spans raft's timings, from an enqueue (microseconds) to
// an election or a snapshot (seconds).
var durationBuckets = prometheus.ExponentialBuckets(0.0001, 4, 10)

type kind int

const (
	gauge kind = iota
	counter
	histogram // a duration sample, in seconds
	summary   // any other sample: its count and sum only
)

// family is one Prometheus metric name: a kind, and the label names every
// one of its series has.
type family struct {
	dotted    string // the go-metrics key, joined with '.'
	kind      kind
	scale     float64  // what a value is multiplied by (ms to seconds)
	rawLabels []string // the label names as reported, sorted
	labels    []string // the same in snake case
	desc      *prometheus.Desc
	series    map[string]*series // by label values
}

type series struct {
	values  []string
	value   float64  // gauge, counter
	count   uint64   // histogram, summary
	sum     float64  // histogram, summary
	buckets []uint64 // histogram: per bucket, not cumulative
}

// Sink keeps what raft reports, for Prometheus to collect. It is a
// go-metrics MetricSink and a prometheus.Collector. Its series never
// expire: raft's labels are peers and RPC types, few.
type Sink struct {
	mu       sync.Mutex
	families map[string]*family // by go-metrics key, joined with '.'
}

var (
	_ metrics.MetricSink   = (*Sink)(nil)
	_ prometheus.Collector = (*Sink)(nil)
)

// NewSink returns an empty Sink.
func NewSink() *Sink { return &Sink{families: make(map[string]*family)} }

func (s *Sink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }
func (s *Sink) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	s.record(key, gauge, labels, func(f *family, sr *series) { sr.value = float64(val) * f.scale })
}

// EmitKey is go-metrics' key/value event, which Prometheus has no type
// for; raft does not use it.
func (s *Sink) EmitKey([]string, float32) {}

func (s *Sink) IncrCounter(key []string, val float32) { s.IncrCounterWithLabels(key, val, nil) }
func (s *Sink) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	s.record(key, counter, labels, func(_ *family, sr *series) { sr.value += float64(val) })
}

func (s *Sink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }
func (s *Sink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	s.record(key, histogram, labels, func(f *family, sr *series) {
		v := float64(val) * f.scale
		sr.count++
		sr.sum += v
		if f.kind == histogram {
			// The first bucket whose bound is at least v; above the last,
			// only the count (+Inf) has it.
			if i, _ := slices.BinarySearch(durationBuckets, v); i < len(durationBuckets) {
				sr.buckets[i]++
			}
		}
	})
}

// record finds (or makes) the series of key and labels, and updates it.
// A key already seen under another kind, or with other label names, is
// dropped: one Prometheus name has one type and one set of labels.
//
// Raft reports several times for every batch it stores, sends and applies,
// so the path for a series already seen allocates nothing: the key and the
// label values are joined into a stack buffer that the map lookups read
// without copying, and the family keeps its labels' raw names to compare.
func (s *Sink) record(key []string, k kind, labels []metrics.Label, update func(*family, *series)) {
	var kb, vb [128]byte
	dotted := joinKey(kb[:0], key)
	if k == histogram && plainSamples[string(dotted)] {
		k = summary
	}
	var lb [4]metrics.Label
	labels = sortLabels(append(lb[:0], labels...))
	id := vb[:0]
	for i, l := range labels {
		if i > 0 {
			id = append(id, '\xff')
		}
		id = append(id, l.Value...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.families[string(dotted)]
	if f == nil {
		f = newFamily(string(dotted), key, k, labels)
		s.families[f.dotted] = f
	}
	if f.kind != k || !sameNames(f.rawLabels, labels) {
		return
	}
	sr := f.series[string(id)]
	if sr == nil {
		sr = &series{values: make([]string, len(labels))}
		for i, l := range labels {
			sr.values[i] = l.Value
		}
		if k == histogram {
			sr.buckets = make([]uint64, len(durationBuckets))
		}
		f.series[string(id)] = sr
	}
	update(f, sr)
}

// joinKey appends go-metrics' key parts joined by '.'.
func joinKey(dst []byte, key []string) []byte {
	for i, p := range key {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, p...)
	}
	return dst
}

// sortLabels sorts labels by name in place (an insertion sort: raft gives
// one or two).
func sortLabels(labels []metrics.Label) []metrics.Label {
	for i := 1; i < len(labels); i++ {
		for j := i; j > 0 && labels[j].Name < labels[j-1].Name; j-- {
			labels[j], labels[j-1] = labels[j-1], labels[j]
		}
	}
	return labels
}

func sameNames(names []string, labels []metrics.Label) bool {
	if len(names) != len(labels) {
		return false
	}
	for i, l := range labels {
		if names[i] != l.Name {
			return false
		}
	}
	return true
}

func newFamily(dotted string, key []string, k kind, labels []metrics.Label) *family {
	raw := make([]string, len(labels))
	names := make([]string, len(labels))
	for i, l := range labels {
		raw[i], names[i] = l.Name, snakeCase(l.Name)
	}
	parts := make([]string, 0, len(key)+2)
	parts = append(parts, namespace)
	for _, p := range key {
		parts = append(parts, snakeCase(p))
	}
	f := &family{dotted: dotted, kind: k, scale: 1, rawLabels: raw, labels: names, series: make(map[string]*series)}
	unit := ""
	switch {
	case k == counter:
		parts = append(parts, "total")
	case k == histogram:
		unit = " (seconds)"
		parts = append(parts, "seconds")
		if msSamples[dotted] {
			f.scale = 1.0 / 1000
		}
	case k == gauge && msGauges[dotted]:
		unit = " (seconds)"
		parts = append(parts, "seconds")
		f.scale = 1.0 / 1000
	}
	name := strings.Join(parts, "_")
	f.desc = prometheus.NewDesc(name, "hashicorp/raft's "+dotted+unit+", through go-metrics.", names, nil)
	return f
}

// Describe describes nothing: raft's keys are known only once reported, so
// the Sink is an unchecked collector (prometheus.Registry.Register).
func (s *Sink) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series as it stands.
func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	var out []prometheus.Metric
	for _, f := range s.families {
		for _, sr := range f.series {
			out = append(out, f.metric(sr))
		}
	}
	s.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

func (f *family) metric(sr *series) prometheus.Metric {
	switch f.kind {
	case counter:
		return prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, sr.value, sr.values...)
	case gauge:
		return prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, sr.value, sr.values...)
	case summary:
		return prometheus.MustNewConstSummary(f.desc, sr.count, sr.sum, nil, sr.values...)
	}
	cum := make(map[float64]uint64, len(durationBuckets))
	var n uint64
	for i, le := range durationBuckets {
		n += sr.buckets[i]
		cum[le] = n
	}
	return prometheus.MustNewConstHistogram(f.desc, sr.count, sr.sum, cum, sr.values...)
}

// snakeCase turns go-metrics' key parts and label names (commitTime,
// getRPCType, peer_id) into Prometheus's snake case (commit_time,
// get_rpc_type, peer_id), and any character a Prometheus name may not hold
// into '_'.
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch {
		case isUpper(r):
			// A word starts at an upper-case letter after a lower-case
			// one or a digit (commitTime), or before a lower-case one in
			// a run of upper case (RPCType).
			if i > 0 && rs[i-1] != '_' && (!isUpper(rs[i-1]) || i+1 < len(rs) && isLower(rs[i+1])) {
				b.WriteByte('_')
			}
			b.WriteRune(r - 'A' + 'a')
		case isLower(r), r == '_', i > 0 && r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isUpper(r rune) bool { return r >= 'A' && r <= 'Z' }
func isLower(r rune) bool { return r >= 'a' && r <= 'z' }

// Config is go-metrics' configuration for raft's metrics: timers in seconds,
// as Prometheus counts durations, and no host name, service name or runtime
// metrics (the Go collector has those).
func Config() *metrics.Config {
	return &metrics.Config{TimerGranularity: time.Second, FilterDefault: true}
}
