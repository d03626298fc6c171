package commands

import (
	"errors"
	"testing"
)

// TestParseScan: Redis 7.0's answers (redis-server 7.0.15, checked by hand
// and by test/TestDiffScan): the cursor read by strtoul, then the options
// in order.
func TestParseScan(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Scan
		err  error
	}{
		{"SCAN 0", Scan{Count: 10}, nil},
		{"SCAN 42 MATCH k* COUNT 5 TYPE hash", Scan{Cursor: 42, Match: true, Pattern: "k*", Count: 5, Type: "hash"}, nil},
		{"scan 1 match a match b", Scan{Cursor: 1, Match: true, Pattern: "b", Count: 10}, nil},
		{"SCAN -1", Scan{Cursor: 1<<64 - 1, Count: 10}, nil},
		{"SCAN +1", Scan{Cursor: 1, Count: 10}, nil},
		{"SCAN 007", Scan{Cursor: 7, Count: 10}, nil},
		{"SCAN 18446744073709551615", Scan{Cursor: 1<<64 - 1, Count: 10}, nil},
		{"SCAN 18446744073709551616", Scan{}, ErrInvalidCursor},
		{"SCAN 99999999999999999999", Scan{}, ErrInvalidCursor},
		{"SCAN x", Scan{}, ErrInvalidCursor},
		{"SCAN 1.5", Scan{}, ErrInvalidCursor},
		{"SCAN -", Scan{}, ErrInvalidCursor},
		{"SCAN 0x10", Scan{}, ErrInvalidCursor},
		{"SCAN x COUNT 0", Scan{}, ErrInvalidCursor},
		{"SCAN 0 COUNT 0", Scan{}, ErrSyntax},
		{"SCAN 0 COUNT -1", Scan{}, ErrSyntax},
		{"SCAN 0 COUNT x", Scan{}, ErrNotInteger},
		{"SCAN 0 COUNT 99999999999999999999", Scan{}, ErrNotInteger},
		{"SCAN 0 COUNT", Scan{}, ErrSyntax},
		{"SCAN 0 FOO 1", Scan{}, ErrSyntax},
		{"SCAN 0 MATCH", Scan{}, ErrSyntax},
		{"SCAN 0 FOO 1 COUNT x", Scan{}, ErrSyntax},
		{"SCAN 0 COUNT x FOO 1", Scan{}, ErrNotInteger},
	} {
		got, err := ParseScan(args(tc.line))
		if !errors.Is(err, tc.err) || (err == nil && got != tc.want) {
			t.Errorf("ParseScan(%q) = %+v, %v; want %+v, %v", tc.line, got, err, tc.want, tc.err)
		}
	}
	// strtoul's edges: the empty cursor is 0, a NUL ends the text, a
	// leading space is refused.
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"", 0, true}, {"5\x00x", 5, true}, {" 1", 0, false}, {"1 ", 0, false}, {"-0", 0, true}, {"-18446744073709551615", 1, true}} {
		if got, ok := ParseCursor([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("ParseCursor(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
