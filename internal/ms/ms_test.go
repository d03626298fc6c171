package ms

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// edges are the values at which int64 arithmetic goes wrong.
var edges = []int64{math.MinInt64, math.MinInt64 + 1, -1 << 62, -1e15, -1000, -1, 0, 1, 1000,
	1e15, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
	int64(math.MaxInt64 / time.Millisecond), int64(math.MaxInt64/time.Millisecond) + 1,
	math.MaxInt64 / 1000, math.MaxInt64/1000 + 1, math.MinInt64 / 1000, math.MinInt64/1000 - 1}

// clamp is the exact answer, computed with big integers, clamped to lo..hi.
func clamp(x *big.Int, lo, hi int64) int64 {
	if x.Cmp(big.NewInt(hi)) > 0 {
		return hi
	}
	if x.Cmp(big.NewInt(lo)) < 0 {
		return lo
	}
	return x.Int64()
}

func TestAddSubExact(t *testing.T) {
	for _, a := range edges {
		for _, b := range edges {
			sum := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
			if got, want := Add(a, b), clamp(sum, math.MinInt64, math.MaxInt64); got != want {
				t.Errorf("Add(%d, %d) = %d, want %d", a, b, got, want)
			}
			diff := new(big.Int).Sub(big.NewInt(a), big.NewInt(b))
			if got, want := Sub(a, b), clamp(diff, math.MinInt64, math.MaxInt64); got != want {
				t.Errorf("Sub(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestDurationExact(t *testing.T) {
	for _, d := range edges {
		ns := new(big.Int).Mul(big.NewInt(d), big.NewInt(int64(time.Millisecond)))
		want := time.Duration(clamp(ns, math.MinInt64, math.MaxInt64))
		if got := time.Duration(Nanos(d)); got != want {
			t.Errorf("Nanos(%d) = %d, want %d", d, got, want)
		}
	}
}

func TestFromSeconds(t *testing.T) {
	for _, s := range edges {
		exact := new(big.Int).Mul(big.NewInt(s), big.NewInt(1000))
		got, ok := FromSeconds(s)
		if ok != exact.IsInt64() {
			t.Errorf("FromSeconds(%d) ok = %v, exact %v", s, ok, exact)
		}
		if ok && got != exact.Int64() {
			t.Errorf("FromSeconds(%d) = %d, want %v", s, got, exact)
		}
	}
}
