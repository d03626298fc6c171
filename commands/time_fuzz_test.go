package commands

import (
	"errors"
	"math/big"
	"strconv"
	"testing"
)

// FuzzTimeArgs checks the time arguments of SET, EXPIRE and its kin and
// BLPOP against a reference in big numbers: a value is accepted
// exactly when Redis 7 accepts it, and then it is the exact number of ms.
func FuzzTimeArgs(f *testing.F) {
	for _, s := range []string{"0", "1", "-1", "1000", "9223372036854775", "9223372036854776",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"10000000000", "9223370399119966", "9223372036854770000", "-9223372036854770000",
		"1e400", "inf", "-inf", "nan", "0.001", "-0.001", "-0.0015", "72100000000001", "-0", " 1", "1 ", "0x10", "1e3", "", "+1", "01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		n, intErr := strconv.ParseInt(arg, 10, 64)
		// Redis's integers: no sign other than '-', no leading zeros, no
		// spaces (ParseInt of the commands package follows string2ll).
		_, ours := ParseInt([]byte(arg))
		exact := new(big.Int).Mul(big.NewInt(n), big.NewInt(1000))

		for _, opt := range []string{"EX", "PX", "EXAT", "PXAT"} {
			r, err := ParseSet([][]byte{[]byte("SET"), []byte("k"), []byte("v"), []byte(opt), []byte(arg)})
			switch {
			case ours != nil:
				if !errors.Is(err, ErrNotInteger) {
					t.Fatalf("SET %s %q: %v, want not an integer", opt, arg, err)
				}
			case intErr != nil:
				t.Fatalf("%q: ParseInt accepts what strconv refuses", arg)
			case n <= 0 || ((opt == "EX" || opt == "EXAT") && !exact.IsInt64()):
				if !errors.Is(err, ErrInvalidExpire) {
					t.Fatalf("SET %s %q: %v, want invalid expire time", opt, arg, err)
				}
			case err != nil:
				t.Fatalf("SET %s %q: %v", opt, arg, err)
			case opt == "EX" || opt == "EXAT":
				if r.Millis != exact.Int64() {
					t.Fatalf("SET %s %q: %d ms", opt, arg, r.Millis)
				}
			case r.Millis != n:
				t.Fatalf("SET %s %q: %d ms", opt, arg, r.Millis)
			}
		}
		for _, cmd := range []string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"} {
			r, err := ParseExpire([][]byte{[]byte(cmd), []byte("k"), []byte(arg)})
			seconds := cmd == "EXPIRE" || cmd == "EXPIREAT"
			switch {
			case ours != nil:
				if !errors.Is(err, ErrNotInteger) {
					t.Fatalf("%s %q: %v, want not an integer", cmd, arg, err)
				}
			case seconds && !exact.IsInt64():
				if !errors.Is(err, ErrInvalidExpire) {
					t.Fatalf("%s %q: %v, want invalid expire time", cmd, arg, err)
				}
			case err != nil:
				t.Fatalf("%s %q: %v", cmd, arg, err)
			case seconds && r.Millis != exact.Int64(), !seconds && r.Millis != n:
				t.Fatalf("%s %q: %d ms", cmd, arg, r.Millis)
			}
		}

		d, err := ParseBlockTimeout([]byte(arg))
		if err != nil {
			if !errors.Is(err, ErrTimeoutNotFloat) && !errors.Is(err, ErrTimeoutNegative) {
				t.Fatalf("BLPOP %q: %v", arg, err)
			}
			// Whole seconds are refused exactly when Redis 7.0's
			// conversion leaves a negative number of ms: below zero, or
			// past the range (LLONG_MIN).
			if intErr == nil && n >= 0 && exact.IsInt64() {
				t.Fatalf("BLPOP %q refused: %v", arg, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("BLPOP %q: %d ms", arg, d)
		}
		if intErr == nil && d != exact.Int64() {
			t.Fatalf("BLPOP %q: %d ms, want %v", arg, d, exact)
		}
	})
}
