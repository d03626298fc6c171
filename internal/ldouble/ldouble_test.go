package ldouble

import (
	"strings"
	"testing"
)

// incr is INCRBYFLOAT on the stored text v by the text by: the reply, or
// "" when Redis refuses it.
func incr(v, by string) string {
	a, ainf, ok1 := Parse(v)
	b, binf, ok2 := Parse(by)
	if !ok1 || !ok2 || ainf || binf {
		return ""
	}
	z, ok := Add(a, b)
	if !ok {
		return ""
	}
	return Format(z)
}

// TestIncr: replies redis-server 7.0.15 gave (redis-cli INCRBYFLOAT on
// x86-64), which float64 arithmetic gets wrong in the first cases.
func TestIncr(t *testing.T) {
	for _, tc := range []struct{ v, by, want string }{
		{"10.5", "0.1", "10.6"},
		{"0.2", "0.1", "0.3"},
		{"0.1", "0.2", "0.3"},
		{"0", "5.0e3", "5000"},
		{"0", "1e300", "1000000000000000000008997324079559193870523944273290747938260082321265646596180935755849152083750497190350372508614274835903592556184672983913096260520748646287327135641843653294084255107606016789726652932370030551382947620994540294772781889620606179267611627097410650567187386105690089424915104006144"},
		{"0", "-0.0000000000000000001", "0"},
		{"0", "0x10", "16"},
		{"3.0", "-3", "0"},
		{"1", "-1.5", "-0.5"},
		{"0", "1e-5000", ""},
		{"0", "1e5000", ""},
		{"0", " 1", ""},
		{"0", "1 ", ""},
		{"0", "nan", ""},
		{"0", "inf", ""},
		{"0", "-infinity", ""},
		{"abc", "1", ""},
		{"0", "", ""},
		{"0", "1_0", ""},
		{"0", "0b1", ""},
		{"0", "--1", ""},
		{"0", "1e", ""},
		{"0", ".5", "0.5"},
		{"0", "5.", "5"},
		{"0", ".", ""},
		{"0", "0e999999999999999999999", "0"},
		{"0", "1e-999999999999999999999", ""},
		{"0", "0x1p99999999999999999999", ""},
		{"0", strings.Repeat("1", 5200), ""},
	} {
		if got := incr(tc.v, tc.by); got != tc.want {
			t.Errorf("%q + %q = %q, want %q", tc.v, tc.by, got, tc.want)
		}
	}
}
