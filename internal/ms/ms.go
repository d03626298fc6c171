// Package ms is time arithmetic in whole milliseconds (int64 Unix or
// cluster times and durations) that saturates instead of overflowing. Every
// time value a client may send is checked against Redis's range rules
// where it is parsed; what is left, adding a duration to a time, or turning
// a far deadline into a timer, goes through here, so a huge value means
// "very late" and never wraps into the past.
package ms

import "math"

// Add returns t + d, clamped to the int64 range.
func Add(t, d int64) int64 {
	switch {
	case d > 0 && t > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && t < math.MinInt64-d:
		return math.MinInt64
	}
	return t + d
}

// Sub returns a - b, clamped to the int64 range.
func Sub(a, b int64) int64 {
	switch {
	case b < 0 && a > math.MaxInt64+b:
		return math.MaxInt64
	case b > 0 && a < math.MinInt64+b:
		return math.MinInt64
	}
	return a - b
}

// Nanos converts d milliseconds to nanoseconds, clamped to the int64 range
// (about 292 years either way): a time.Duration that cannot overflow. It
// returns an int64 rather than a time.Duration so that the state machine,
// which uses this package, imports nothing that reads a clock.
func Nanos(d int64) int64 {
	const perMs = 1_000_000
	switch {
	case d > math.MaxInt64/perMs:
		return math.MaxInt64
	case d < math.MinInt64/perMs:
		return math.MinInt64
	}
	return d * perMs
}

// FromSeconds converts s seconds to milliseconds; ok is false when that
// overflows, which Redis answers "invalid expire time".
func FromSeconds(s int64) (d int64, ok bool) {
	if s > math.MaxInt64/1000 || s < math.MinInt64/1000 {
		return 0, false
	}
	return s * 1000, true
}
