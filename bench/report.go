package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// stepResult is one row of the report; the JSON names match the table
// columns so a script can compare runs without parsing markdown.
type stepResult struct {
	Workload   string  `json:"workload"`
	Clients    int     `json:"clients"`
	Seconds    float64 `json:"seconds"`
	Cycles     int64   `json:"cycles"`         // successful FLOCK+FUNLOCK cycles whose FLOCK completed in the window (grants, when contended)
	PerSec     float64 `json:"cycles_per_sec"` // grants/s when contended
	Samples    int     `json:"acquire_samples"`
	P50Ms      float64 `json:"acquire_p50_ms"` // FLOCK round trip; the wait when contended
	P99Ms      float64 `json:"acquire_p99_ms"`
	P999Ms     float64 `json:"acquire_p999_ms"`
	MaxMs      float64 `json:"acquire_max_ms"`
	Errors     int64   `json:"errors"` // includes warm-up and session setup/teardown
	FirstError string  `json:"first_error,omitempty"`
	// Contended only. Pointers: an undefined figure (p50 of 0, or a client
	// with no grant) is null rather than a misleading number or +Inf.
	P99OverP50      *float64 `json:"wait_p99_over_p50,omitempty"`
	Fairness        *float64 `json:"fairness_max_over_min,omitempty"`
	GrantsPerClient []int64  `json:"grants_per_client,omitempty"`
}

type machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	Go     string `json:"go"`
}

type report struct {
	Machine  machine      `json:"machine"`
	Target   string       `json:"target"`
	Duration string       `json:"duration_per_step"`
	Warmup   string       `json:"warmup"`
	Results  []stepResult `json:"results"`
}

func machineInfo() machine {
	return machine{CPU: cpuModel(), Cores: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()}
}

// cpuModel reads the first "model name" from /proc/cpuinfo; numbers from
// different machines must not be compared by accident.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (r *report) markdown(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "machine: %s, %d cores, %s/%s, %s\n", m.CPU, m.Cores, m.GOOS, m.GOARCH, m.Go)
	fmt.Fprintf(w, "target: %s; %s per step after %s warm-up\n\n", r.Target, r.Duration, r.Warmup)
	fmt.Fprintln(w, "| workload | clients | cycles/s | acquire p50 ms | p99 ms | p999 ms | errors |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, s := range r.Results {
		fmt.Fprintf(w, "| %s | %d | %.0f | %.3f | %.3f | %.3f | %d |\n",
			s.Workload, s.Clients, s.PerSec, s.P50Ms, s.P99Ms, s.P999Ms, s.Errors)
	}
	var contended []stepResult
	for _, s := range r.Results {
		if s.GrantsPerClient != nil {
			contended = append(contended, s)
		}
	}
	if len(contended) > 0 {
		fmt.Fprintln(w, "\n| contended, one lock | clients | grants/s | wait p50 ms | wait p99 ms | p99/p50 | fairness max/min grants |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, s := range contended {
			fmt.Fprintf(w, "| %s | %d | %.0f | %.3f | %.3f | %s | %s |\n",
				s.Workload, s.Clients, s.PerSec, s.P50Ms, s.P99Ms, ratio(s.P99OverP50), ratio(s.Fairness))
		}
	}
	for _, s := range r.Results {
		if s.Errors > 0 {
			fmt.Fprintf(w, "\n%s, %d clients: %d errors; first: %s", s.Workload, s.Clients, s.Errors, s.FirstError)
		}
	}
	fmt.Fprintln(w)
}

func ratio(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// succeeded reports whether any step finished at least one cycle.
func (r *report) succeeded() bool {
	for _, s := range r.Results {
		if s.Cycles > 0 {
			return true
		}
	}
	return false
}
