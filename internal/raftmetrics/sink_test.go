package raftmetrics

import (
	"math"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"commitTime":        "commit_time",
		"appendEntries":     "append_entries",
		"getRPCType":        "get_rpc_type",
		"peer_id":           "peer_id",
		"heartbeat_timeout": "heartbeat_timeout",
		"lastContact":       "last_contact",
		"RPC":               "rpc",
		"node-1.a b":        "node_1_a_b",
		"1st":               "_st",
		"électron":          "_lectron",
		"":                  "",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// gather reports through go-metrics into a Sink, as raft does (but not
// through the process's global, which other tests would share), and
// returns what a registry gathers from it, by name.
func gather(t *testing.T, report func(m *metrics.Metrics)) map[string]*dto.MetricFamily {
	t.Helper()
	s := NewSink()
	m, err := metrics.New(Config(), s)
	if err != nil {
		t.Fatal(err)
	}
	report(m)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func TestSinkNamesUnitsAndValues(t *testing.T) {
	peer := []metrics.Label{{Name: "peer_id", Value: "n2"}}
	got := gather(t, func(m *metrics.Metrics) {
		m.IncrCounter([]string{"raft", "apply"}, 1)
		m.IncrCounter([]string{"raft", "apply"}, 2)
		m.IncrCounterWithLabels([]string{"raft", "replication", "appendEntries", "logs"}, 5, peer)
		m.SetGauge([]string{"raft", "peers"}, 3)
		m.SetGauge([]string{"raft", "peers"}, 2)
		m.SetGauge([]string{"raft", "leader", "oldestLogAge"}, 1500) // ms
		// A duration: 2 s ago, measured in seconds by Config's granularity.
		m.MeasureSinceWithLabels([]string{"raft", "replication", "heartbeat"}, time.Now().Add(-2*time.Second), peer)
		m.AddSample([]string{"raft", "leader", "lastContact"}, 250) // ms
		m.AddSample([]string{"raft", "fsm", "applyBatchNum"}, 4)
		m.AddSample([]string{"raft", "fsm", "applyBatchNum"}, 6)
		m.EmitKey([]string{"raft", "ignored"}, 1)
	})
	value := func(name string) *dto.Metric {
		t.Helper()
		mf := got[name]
		if mf == nil || len(mf.Metric) != 1 {
			t.Fatalf("%s: %v (have %v)", name, mf, keys(got))
		}
		return mf.Metric[0]
	}
	if v := value("fenced_raft_apply_total").GetCounter().GetValue(); v != 3 {
		t.Errorf("fenced_raft_apply_total %v, want 3", v)
	}
	logs := value("fenced_raft_replication_append_entries_logs_total")
	if v := logs.GetCounter().GetValue(); v != 5 || len(logs.Label) != 1 || logs.Label[0].GetName() != "peer_id" || logs.Label[0].GetValue() != "n2" {
		t.Errorf("append entries logs: %v", logs)
	}
	if v := value("fenced_raft_peers").GetGauge().GetValue(); v != 2 {
		t.Errorf("fenced_raft_peers %v, want the last value set, 2", v)
	}
	if v := value("fenced_raft_leader_oldest_log_age_seconds").GetGauge().GetValue(); v != 1.5 {
		t.Errorf("oldest log age %v s, want 1.5", v)
	}
	hb := value("fenced_raft_replication_heartbeat_seconds").GetHistogram()
	if hb.GetSampleCount() != 1 || math.Abs(hb.GetSampleSum()-2) > 0.5 {
		t.Errorf("heartbeat histogram: %v, want one sample near 2 s", hb)
	}
	for _, b := range hb.Bucket {
		le, n := b.GetUpperBound(), b.GetCumulativeCount()
		if le >= 2.5 && n != 1 || le < 1.5 && n != 0 {
			t.Errorf("heartbeat bucket le=%v holds %d", le, n)
		}
	}
	if lc := value("fenced_raft_leader_last_contact_seconds").GetHistogram(); lc.GetSampleSum() != 0.25 {
		t.Errorf("last contact %v s, want 0.25", lc.GetSampleSum())
	}
	if bn := value("fenced_raft_fsm_apply_batch_num").GetSummary(); bn.GetSampleCount() != 2 || bn.GetSampleSum() != 10 {
		t.Errorf("apply batch num summary: %v, want 2 samples summing to 10", bn)
	}
	for name := range got {
		if strings.Contains(name, "ignored") {
			t.Errorf("EmitKey became %s", name)
		}
	}
}

// One Prometheus name has one type and one set of label names: a key seen
// again with other labels, or as another kind, is dropped, and the gather
// (which would otherwise fail, and with it the whole /metrics) succeeds.
func TestSinkKeepsOneShapePerName(t *testing.T) {
	got := gather(t, func(m *metrics.Metrics) {
		m.IncrCounterWithLabels([]string{"raft", "x"}, 1, []metrics.Label{{Name: "a", Value: "1"}})
		m.IncrCounterWithLabels([]string{"raft", "x"}, 1, []metrics.Label{{Name: "b", Value: "1"}})
		m.IncrCounter([]string{"raft", "x"}, 1)
		m.SetGauge([]string{"raft", "x"}, 7)
		m.IncrCounterWithLabels([]string{"raft", "x"}, 2, []metrics.Label{{Name: "a", Value: "2"}})
	})
	mf := got["fenced_raft_x_total"]
	if mf == nil || len(mf.Metric) != 2 || len(got) != 1 {
		t.Fatalf("got %v", got)
	}
}

func keys(m map[string]*dto.MetricFamily) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkSinkRecord is what raft's reports cost the Sink on the commit
// path: a duration sample, a counter and a labelled sample, as raft makes
// them for every batch it stores, sends and applies.
func BenchmarkSinkRecord(b *testing.B) {
	s := NewSink()
	peer := []metrics.Label{{Name: "peer_id", Value: "n2"}}
	b.ReportAllocs()
	for b.Loop() {
		s.AddSample([]string{"raft", "commitTime"}, 0.0004)
		s.IncrCounter([]string{"raft", "apply"}, 1)
		s.AddSampleWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, 0.0002, peer)
	}
}
