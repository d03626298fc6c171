package commands

import (
	"strings"

	"github.com/fenced/fenced/reply"
)

// ErrInvalidCursor is SCAN's answer to a cursor that is not a number.
var ErrInvalidCursor = reply.NewErr("ERR", "invalid cursor")

// Scan is a parsed SCAN cursor [MATCH pattern] [COUNT n] [TYPE type].
type Scan struct {
	Cursor  uint64
	Match   bool // MATCH was given (the last one counts, as in Redis)
	Pattern string
	Count   int64 // the hint, default 10, >= 1
	Type    string
}

// ParseScan parses SCAN's arguments (args[0] is the name) as Redis 7.0
// does: the cursor first, then the options left to right, each error as
// soon as it is met.
func ParseScan(args [][]byte) (Scan, error) {
	if len(args) < 2 {
		return Scan{}, arityOf("scan")
	}
	c, ok := ParseCursor(args[1])
	if !ok {
		return Scan{}, ErrInvalidCursor
	}
	r := Scan{Cursor: c, Count: 10}
	for i := 2; i < len(args); i += 2 {
		if len(args)-i < 2 {
			return Scan{}, ErrSyntax
		}
		v := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "count":
			n, err := ParseInt(v)
			if err != nil {
				return Scan{}, err
			}
			if n < 1 {
				return Scan{}, ErrSyntax
			}
			r.Count = n
		case "match":
			r.Match, r.Pattern = true, string(v)
		case "type":
			r.Type = string(v)
		default:
			return Scan{}, ErrSyntax
		}
	}
	return r, nil
}

// ParseCursor reads a SCAN cursor as Redis 7.0 does, with C's strtoul in
// base 10: the text up to a NUL byte, no leading space, an optional sign
// (a '-' negates modulo 2^64, so "-1" is 2^64-1), at least one digit
// unless the text is empty (which is 0), nothing after the digits, and no
// overflow of 64 bits.
func ParseCursor(b []byte) (uint64, bool) {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	switch b[0] {
	case '+':
		b = b[1:]
	case '-':
		neg, b = true, b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		if n > (1<<64-1)/10 || n*10 > 1<<64-1-uint64(d-'0') {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
