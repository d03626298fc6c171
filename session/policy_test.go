package session

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestTTLBoundsResolve(t *testing.T) {
	b := TTLBounds{Min: 500 * time.Millisecond, Max: 24 * time.Hour, Default: 10 * time.Second}
	const rangeErr = "ERR TTL out of range: TTL must be between 500 and 86400000 ms"
	for _, c := range []struct {
		req  int64
		want int64 // 0: ErrTTLRange
	}{
		{0, 10_000}, // none asked: the default
		{500, 500},  // the bounds themselves are allowed
		{86_400_000, 86_400_000},
		{10_000, 10_000},
		{499, 0}, // one past each bound
		{86_400_001, 0},
		{-1, 0},
		{math.MaxInt64, 0}, // would overflow as a time.Duration
		{math.MaxInt64 / 1000, 0},
		{math.MinInt64, 0},
	} {
		got, err := b.Resolve(c.req)
		if c.want != 0 {
			if err != nil || got != c.want {
				t.Errorf("Resolve(%d) = %d, %v; want %d", c.req, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, ErrTTLRange) || err.Error() != rangeErr || got != 0 {
			t.Errorf("Resolve(%d) = %d, %v; want %q", c.req, got, err, rangeErr)
		}
	}

	// A default outside the bounds is refused too, not handed out.
	if _, err := (TTLBounds{Min: time.Second, Max: 2 * time.Second, Default: time.Hour}).Resolve(0); !errors.Is(err, ErrTTLRange) {
		t.Errorf("out-of-bounds default: err = %v, want ErrTTLRange", err)
	}
	// Bounds at the end of the Duration range: ms, no overflow.
	wide := TTLBounds{Min: time.Millisecond, Max: math.MaxInt64, Default: time.Second}
	maxMs := int64(math.MaxInt64) / int64(time.Millisecond)
	if got, err := wide.Resolve(maxMs); err != nil || got != maxMs {
		t.Errorf("wide Resolve(max ms) = %d, %v", got, err)
	}
	if _, err := wide.Resolve(math.MaxInt64); !errors.Is(err, ErrTTLRange) {
		t.Errorf("wide Resolve(MaxInt64) err = %v, want ErrTTLRange", err)
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("NewID() = %q, want 32 lowercase hex characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}
