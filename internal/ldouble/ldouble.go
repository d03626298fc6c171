// Package ldouble is the arithmetic of Redis's INCRBYFLOAT, which works in
// C's long double: on x86-64, the x87 80-bit format, a 64-bit significand
// and exponents up to 16383. Go has no such type, so the numbers are
// math/big Floats of 64-bit precision, rounded to nearest even as the FPU
// rounds, with the exponent range checked by hand. The result is the same
// on every machine, which the state machine needs, and the same as what
// Redis replies for the numbers it can hold ("0.2" plus "0.1" is "0.3",
// where float64 would say 0.30000000000000004).
package ldouble

import (
	"math/big"
	"strings"
)

// prec is the long double's significand, in bits.
const prec = 64

// maxExp bounds a finite long double: |x| < 2^16384 (big.Float's MantExp
// puts the mantissa in [0.5, 1), so the bound is an exponent of 16384).
// minExp is the exponent of the smallest subnormal, 2^-16445: strtold
// answers a nonzero number below it with zero and ERANGE, which Redis
// refuses.
const (
	maxExp = 16384
	minExp = -16444
)

// maxChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer text is not a number.
const maxChars = 5 * 1024

// Parse reads s as Redis's string2ld does with strtold: decimal or
// hexadecimal, with an optional sign and exponent, or inf/infinity; no
// spaces, no NaN, nothing after the number, and no value that overflows or
// underflows to zero. inf reports an infinity (whose sign does not matter
// to INCRBYFLOAT: any sum with it is refused).
func Parse(s string) (x *big.Float, inf, ok bool) {
	if len(s) == 0 || len(s) >= maxChars {
		return nil, false, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return nil, true, true
	}
	x = newFloat()
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		// A hexadecimal significand is exact in binary: big.Float rounds
		// it once. The text is checked first, as big.Float would take
		// underscores and other prefixes that strtold does not.
		mant, exp, nonzero, ok := scan(body[2:], 16, 'p')
		if !ok {
			return nil, false, false
		}
		if !sane(exp/4, len(mant)) {
			return nil, false, false
		}
		if _, _, err := x.Parse(s, 0); err != nil || !finite(x, nonzero) {
			return nil, false, false
		}
	} else {
		// A decimal is made exact (a rational) and then rounded once,
		// as strtold rounds, rather than rounded at every step.
		mant, exp, nonzero, ok := scan(body, 10, 'e')
		if !ok {
			return nil, false, false
		}
		if nonzero {
			if !sane(exp, len(mant)) {
				return nil, false, false // far beyond the range either way
			}
			n, _ := new(big.Int).SetString(mant, 10)
			r := new(big.Rat).SetInt(n)
			p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(exp)), nil))
			if exp < 0 {
				r.Quo(r, p)
			} else {
				r.Mul(r, p)
			}
			x.SetRat(r)
		}
		if s[0] == '-' {
			x.Neg(x)
		}
		if !finite(x, nonzero) {
			return nil, false, false
		}
	}
	return x, false, true
}

func newFloat() *big.Float { return new(big.Float).SetPrec(prec).SetMode(big.ToNearestEven) }

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// sane reports whether a number of digits significant digits scaled by
// exp may be in a long double's range: a larger exponent is an overflow or
// an underflow whatever the digits (there are fewer than maxChars), and is
// refused before it costs a power of that size.
func sane(exp int64, digits int) bool {
	const bound = 20000 // > 16445 binary or 4951 decimal places, plus maxChars
	return exp+int64(digits) < bound && exp+int64(digits) > -bound
}

// scan reads a significand of base 10 or 16 digits with an optional point,
// then an optional exponent introduced by expChar: it returns the digits
// without the point, the exponent (in the base's digit places for
// decimal, in bits for hex, as written less the fraction's places), and
// whether any digit is not zero.
func scan(s string, base int, expChar byte) (mant string, exp int64, nonzero, ok bool) {
	isDig := isDigit
	if base == 16 {
		isDig = isHex
	}
	var b strings.Builder
	i, frac := 0, int64(0)
	for ; i < len(s) && isDig(s[i]); i++ {
		b.WriteByte(s[i])
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDig(s[i]); i++ {
			b.WriteByte(s[i])
			frac++
		}
	}
	mant = b.String()
	if mant == "" {
		return "", 0, false, false
	}
	nonzero = strings.Trim(mant, "0") != ""
	if i < len(s) && s[i]|0x20 == expChar {
		e, ok := exponent(s[i+1:])
		if !ok {
			return "", 0, false, false
		}
		exp = e
	} else if i != len(s) {
		return "", 0, false, false
	}
	if base == 16 {
		return mant, exp - 4*frac, nonzero, true
	}
	return mant, exp - frac, nonzero, true
}

// exponent reads a signed decimal exponent, saturating far beyond any
// that matters.
func exponent(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for i := range len(s) {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = min(n*10+int64(s[i]-'0'), 1<<40)
	}
	if neg {
		n = -n
	}
	return n, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// finite reports whether x is a number a long double holds: zero written
// as zero, or a magnitude in the long double's range.
func finite(x *big.Float, nonzero bool) bool {
	if x.IsInf() {
		return false
	}
	if x.Sign() == 0 {
		return !nonzero
	}
	e := x.MantExp(nil)
	return e <= maxExp && e > minExp
}

// Add returns a + b rounded to a long double, and false when the sum is
// not finite (it overflowed).
func Add(a, b *big.Float) (*big.Float, bool) {
	z := newFloat().Add(a, b)
	if z.Sign() != 0 && z.MantExp(nil) > maxExp {
		return nil, false
	}
	return z, true
}

// Format renders x as Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf",
// exactly rounded, with the zeros that end the fraction removed, then the
// point if nothing follows it, and "-0" made "0".
func Format(x *big.Float) string {
	s := x.Text('f', 17)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
