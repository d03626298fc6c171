package ctl

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
)

// output prints a result as --write-out asks: v as one JSON document, or
// the rows under header as an aligned table.
func (r *runner) output(v any, header []string, rows [][]string) error {
	if r.g.output == "json" {
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	r.table(header, rows)
	return nil
}

func (r *runner) table(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(r.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range rows {
		for i, cell := range row {
			if cell == "" {
				row[i] = "-" // an empty cell would shift the columns to a reader's eye
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// done prints the outcome of a change: the sentence for table output, v
// for json.
func (r *runner) done(v any, sentence string) error {
	if r.g.output == "json" {
		return r.output(v, nil, nil)
	}
	_, err := fmt.Fprintln(r.stdout, sentence)
	return err
}
