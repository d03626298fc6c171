package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// barChart is one panel of the plot: a group of bars per step (1, 16, 64
// clients, one lock), a bar per series, on a log scale because the peers
// differ by two orders of magnitude.
type barChart struct {
	title  string
	groups []string
	series []string
	values [][]float64 // [group][series]; <= 0 or NaN: not measured, no bar
}

// Panel geometry, in SVG user units (pixels).
const (
	svgWidth    = 960
	panelHeight = 330
	plotLeft    = 70
	plotRight   = 20
	plotTop     = 40
	plotBottom  = 50
	legendH     = 30
)

// seriesColor gives each series one colour in every panel: fenced in
// blues/greens, Redis in reds, etcd in purple.
func seriesColor(i int, name string) string {
	known := map[string]string{
		"fenced-1": "#1f77b4", "fenced-1 redsync": "#9ecae1",
		"fenced-3": "#2ca02c", "fenced-3 redsync": "#a1d99b",
		"redis": "#d62728", "redis-aof": "#ff9896", "etcd-3": "#9467bd",
	}
	if c, ok := known[name]; ok {
		return c
	}
	palette := []string{"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	return palette[i%len(palette)]
}

// writeSVG draws the panels one above the other under a shared legend. It
// uses only fmt and XML escaping so the tool needs no plotting dependency.
func writeSVG(w io.Writer, title string, charts []barChart) error {
	var series []string
	for _, c := range charts {
		for _, s := range c.series {
			if !slices.Contains(series, s) {
				series = append(series, s)
			}
		}
	}
	height := plotTop + legendH + len(charts)*panelHeight
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" text-anchor="middle">%s</text>`+"\n", svgWidth/2, esc(title))
	// Legend.
	x := plotLeft
	for i, s := range series {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, x, plotTop-4, seriesColor(i, s))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+16, plotTop+6, esc(s))
		x += 30 + 7*len(s)
	}
	for i, c := range charts {
		top := plotTop + legendH + i*panelHeight
		drawPanel(&b, c, series, top)
	}
	fmt.Fprintln(&b, `</svg>`)
	_, err := w.Write(b.Bytes())
	return err
}

func drawPanel(b *bytes.Buffer, c barChart, allSeries []string, top int) {
	plotH := panelHeight - plotTop - plotBottom
	plotW := svgWidth - plotLeft - plotRight
	y0 := top + plotTop // top of the plot area
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14">%s</text>`+"\n", plotLeft, top+20, esc(c.title))
	lo, hi, ok := decades(c.values)
	if !ok {
		fmt.Fprintf(b, `<text x="%d" y="%d">no data</text>`+"\n", plotLeft+10, y0+plotH/2)
		return
	}
	yOf := func(v float64) float64 {
		return float64(y0+plotH) - (math.Log10(v)-float64(lo))/float64(hi-lo)*float64(plotH)
	}
	// Grid lines at each decade.
	for d := lo; d <= hi; d++ {
		y := yOf(math.Pow(10, float64(d)))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, plotLeft, y, plotLeft+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y+4, esc(decadeLabel(d)))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", plotLeft, y0+plotH, plotLeft+plotW, y0+plotH)
	if len(c.groups) == 0 {
		return
	}
	groupW := float64(plotW) / float64(len(c.groups))
	barW := groupW * 0.8 / float64(max(1, len(c.series)))
	for g, name := range c.groups {
		gx := float64(plotLeft) + float64(g)*groupW + groupW*0.1
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+groupW*0.4, y0+plotH+18, esc(name))
		for s, sname := range c.series {
			v := c.values[g][s]
			if !(v > 0) || math.IsInf(v, 0) {
				continue
			}
			bx := gx + float64(s)*barW
			y := max(yOf(v), float64(y0))
			color := seriesColor(slices.Index(allSeries, sname), sname)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				bx, y, barW-1, float64(y0+plotH)-y, color, esc(sname+", "+name), esc(short(v)))
			if barW >= 10 {
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
					bx+barW/2+3, y-3, bx+barW/2+3, y-3, esc(short(v)))
			}
		}
	}
}

// decades is the range of powers of ten that holds every positive value,
// with a decade of headroom on top for the value labels.
func decades(values [][]float64) (lo, hi int, ok bool) {
	vmin, vmax := math.Inf(1), 0.0
	for _, row := range values {
		for _, v := range row {
			if v > 0 && !math.IsInf(v, 0) {
				vmin, vmax = min(vmin, v), max(vmax, v)
			}
		}
	}
	if vmax == 0 {
		return 0, 0, false
	}
	lo = int(math.Floor(math.Log10(vmin)))
	if math.Log10(vmin)-float64(lo) < 0.3 {
		lo-- // a bar just above the floor would be too short to see
	}
	hi = int(math.Ceil(math.Log10(vmax)))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi + 1, true
}

func decadeLabel(d int) string {
	v := math.Pow(10, float64(d))
	if d < 0 {
		return strings.TrimRight(fmt.Sprintf("%.*f", -d, v), "0")
	}
	return fmt.Sprintf("%.0f", v)
}

// short formats a value with 3 significant digits, "12.3k" style above 10^4.
func short(v float64) string {
	switch {
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// plotCharts builds the two panels of the report: throughput, and p99
// latency, for each uncontended client count and the contended step.
func (r *report) plotCharts() []barChart {
	var groups []string
	type key struct {
		workload string
		clients  int
	}
	var keys []key
	for _, n := range r.clientCounts() {
		groups = append(groups, "uncontended, "+clientsLabel(n))
		keys = append(keys, key{"uncontended", n})
	}
	if _, ok := r.findAny("contended"); ok {
		groups = append(groups, fmt.Sprintf("%d clients, one lock", contendedClients))
		keys = append(keys, key{"contended", 0})
	}
	var series []string
	for _, s := range seriesOrder() {
		for _, k := range keys {
			if _, ok := r.find(k.workload, s, k.clients); ok {
				series = append(series, s)
				break
			}
		}
	}
	tput := barChart{title: "throughput, higher is better: acquire+release cycles/s (grants/s on one lock), log scale", groups: groups, series: series}
	lat := barChart{title: "latency, lower is better: acquire p99 ms (wait p99 on one lock), log scale", groups: groups, series: series}
	for _, k := range keys {
		tr, lr := make([]float64, len(series)), make([]float64, len(series))
		for i, s := range series {
			if st, ok := r.find(k.workload, s, k.clients); ok {
				tr[i] = st.PerSec
				if st.Samples > 0 {
					lr[i] = st.P99Ms
				}
			}
		}
		tput.values = append(tput.values, tr)
		lat.values = append(lat.values, lr)
	}
	return []barChart{tput, lat}
}

func (r *report) findAny(workload string) (stepResult, bool) {
	for _, s := range r.Steps {
		if s.Workload == workload {
			return s, true
		}
	}
	return stepResult{}, false
}

// writeSVGFile writes the plot of the report to path.
func (r *report) writeSVGFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("fenced vs Redis vs etcd on %s, %d cores", r.Machine.CPU, r.Machine.Cores)
	if err := writeSVG(f, title, r.plotCharts()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
