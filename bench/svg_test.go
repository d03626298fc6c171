package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed parses the whole document and counts elements by name.
func wellFormed(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	counts := map[string]int{}
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v, want svg in the SVG namespace", e.Name)
				}
			}
			counts[e.Name.Local]++
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 || depth != 0 {
		t.Fatalf("%d root elements, depth %d at the end", roots, depth)
	}
	return counts
}

func TestSVGWellFormed(t *testing.T) {
	charts := []barChart{
		{
			title:  `throughput <cycles/s> & "more"`,
			groups: []string{"1 client", "16 clients", "one lock"},
			series: []string{"fenced-3", "redis", "etcd-3 <x>"},
			values: [][]float64{{1200, 8000, 430}, {9000, 38000, 0}, {5000, math.NaN(), 157}},
		},
		{title: "nothing measured", groups: []string{"a"}, series: []string{"fenced-3"}, values: [][]float64{{0}}},
	}
	var buf bytes.Buffer
	if err := writeSVG(&buf, "fenced & friends", charts); err != nil {
		t.Fatal(err)
	}
	counts := wellFormed(t, buf.Bytes())
	// Background + one legend swatch per series + one bar per positive value.
	if want := 1 + 3 + 7; counts["rect"] != want {
		t.Fatalf("%d rect elements, want %d", counts["rect"], want)
	}
	if !strings.Contains(buf.String(), "no data") {
		t.Fatal("an empty panel should say so")
	}
	if !strings.Contains(buf.String(), "&lt;cycles/s&gt; &amp;") {
		t.Fatal("title not escaped")
	}
}

func TestSVGFromReport(t *testing.T) {
	r := &report{Steps: []stepResult{
		{Workload: "uncontended", Series: "fenced-3", Clients: 1, PerSec: 1000, Cycles: 1, Samples: 1, P99Ms: 1.5},
		{Workload: "uncontended", Series: "etcd-3", Clients: 1, PerSec: 400, Cycles: 1, Samples: 1, P99Ms: 3.3},
		{Workload: "contended", Series: "fenced-3", Clients: 16, PerSec: 3000, Cycles: 1, Samples: 1, P99Ms: 9},
	}}
	charts := r.plotCharts()
	if len(charts) != 2 || len(charts[0].groups) != 2 || len(charts[0].series) != 2 {
		t.Fatalf("charts: %+v", charts)
	}
	var buf bytes.Buffer
	if err := writeSVG(&buf, "t", charts); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, buf.Bytes())
}

func TestDecades(t *testing.T) {
	lo, hi, ok := decades([][]float64{{0.05, 0}, {38000, math.NaN()}})
	if !ok || lo != -2 || hi != 6 {
		t.Fatalf("decades = %d, %d, %v; want -2, 6 (5 plus headroom), true", lo, hi, ok)
	}
	if _, _, ok := decades([][]float64{{0, -1}}); ok {
		t.Fatal("no positive value must give no scale")
	}
}
