package test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape is one answer of a Prometheus endpoint: its text and its metric
// families, parsed as Prometheus parses them.
type scrape struct {
	url  string
	text string
	fams map[string]*dto.MetricFamily
}

// scrapeURL gets and parses url (a /metrics); it fails the test unless the
// answer is 200 in the text format.
func scrapeURL(t testing.TB, url string) scrape {
	t.Helper()
	s, err := tryScrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryScrape(url string) (scrape, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return scrape{}, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return scrape{}, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		return scrape{}, fmt.Errorf("GET %s: %d %s\n%s", url, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return scrape{}, fmt.Errorf("GET %s: parsing the answer: %w\n%s", url, err, body)
	}
	return scrape{url: url, text: string(body), fams: fams}, nil
}

// metricsOf scrapes a node's --metrics address.
func metricsOf(t testing.TB, addr string) scrape {
	t.Helper()
	return scrapeURL(t, "http://"+addr+"/metrics")
}

// series is the series of family name with these labels (name, value
// pairs; it may have others), nil if there is none.
func (s scrape) series(name string, labels ...string) *dto.Metric {
	mf := s.fams[name]
	if mf == nil {
		return nil
	}
outer:
	for _, m := range mf.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue outer
			}
		}
		return m
	}
	return nil
}

// value is the value of a counter or gauge series, or the count of a
// histogram or summary; the test fails if there is no such series.
func (s scrape) value(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	m := s.series(name, labels...)
	if m == nil {
		t.Fatalf("%s has no %s%v:\n%s", s.url, name, labels, grepLines(s.text, name))
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("%s: %s%v has no value", s.url, name, labels)
	return 0
}

// expect checks that a series has the value the workload gave it.
func (s scrape) expect(t testing.TB, want float64, name string, labels ...string) {
	t.Helper()
	if got := s.value(t, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// grepLines is the lines of text that mention name, for failure messages.
func grepLines(text, name string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, name) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

// promtoolCheck runs Prometheus's `promtool check metrics` on an answer of
// /metrics: the format, and its lint (help text, _total on counters, base
// units, snake case), must pass without a word.
func promtoolCheck(t testing.TB, s scrape) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		compatSkip(t, "promtool is not installed (apt-get install prometheus)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(s.text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s", s.url, err, out)
	}
}
