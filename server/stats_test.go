package server

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/fenced/fenced/lockstate"
)

// CONFIG RESETSTAT (stats.reset) starts INFO's counts afresh while the
// totals, which /metrics shows as Prometheus counters, never go down.
func TestStatsResetKeepsTotals(t *testing.T) {
	st := &stats{calls: map[string]*cmdStats{"set": new(cmdStats), "get": new(cmdStats)}}
	count := func(n int) {
		for range n {
			st.commands.Add(1)
			st.calls["set"].ran(2 * time.Millisecond)
			st.countError("ERR x")
		}
		st.countExpired(lockstate.Expirations{Sessions: n, Keys: 2 * n})
	}
	count(3)
	st.reset()
	count(2)
	st.countError("WRONGTYPE y")

	tot, since := st.totals(), st.sinceReset()
	if tot.commands != 5 || since.commands != 2 {
		t.Errorf("commands: total %d, since the reset %d; want 5, 2", tot.commands, since.commands)
	}
	if tot.calls["set"].calls != 5 || since.calls["set"].calls != 2 || since.calls["set"].nsec != int64(4*time.Millisecond) {
		t.Errorf("set: total %+v, since the reset %+v", tot.calls["set"], since.calls["set"])
	}
	if tot.expiredKeys != 10 || since.expiredKeys != 4 || since.expiredSessions != 2 {
		t.Errorf("expirations: total %+v, since the reset %+v", tot, since)
	}
	if tot.errCode["ERR"] != 5 || since.errCode["ERR"] != 2 || since.errCode["WRONGTYPE"] != 1 {
		t.Errorf("error codes: total %v, since the reset %v", tot.errCode, since.errCode)
	}
	st.reset()
	if since := st.sinceReset(); since.commands != 0 || len(since.errCode) != 0 || since.calls["set"].calls != 0 {
		t.Errorf("right after a reset: %+v", since)
	}
	if tot := st.totals(); tot.commands != 5 || tot.errCode["ERR"] != 5 {
		t.Errorf("a second reset changed the totals: %+v", tot)
	}
}

// A command's latency histogram puts each call in the first bucket whose
// bound holds it, and counts the ones above every bound in its count only.
func TestCommandHistogram(t *testing.T) {
	cs := new(cmdStats)
	for _, d := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 3 * time.Millisecond, time.Minute} {
		cs.ran(d)
	}
	var m dto.Metric
	if err := cs.histogram("set").Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if sum := (time.Minute + 3150*time.Microsecond).Seconds(); h.GetSampleCount() != 4 || math.Abs(h.GetSampleSum()-sum) > 1e-9 {
		t.Errorf("count %d, sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{0.0001: 2, 0.0025: 2, 0.005: 3, 10: 3}
	for _, b := range h.Bucket {
		if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if len(h.Bucket) != len(cmdBuckets) {
		t.Errorf("%d buckets, want %d", len(h.Bucket), len(cmdBuckets))
	}
}
