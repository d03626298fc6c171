package commands

import (
	"github.com/fenced/fenced/reply"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Errors of EVAL, EVALSHA and BLPOP, in Redis's words.
var (
	ErrNumKeysTooLarge = reply.NewErr("ERR", "Number of keys can't be greater than number of args")
	ErrNumKeysNegative = reply.NewErr("ERR", "Number of keys can't be negative")
	ErrTimeoutNotFloat = reply.NewErr("ERR", "timeout is not a float or out of range")
	ErrTimeoutNegative = reply.NewErr("ERR", "timeout is negative")
)

// Eval is EVAL script numkeys key... arg... or EVALSHA sha1 numkeys ....
// Body is the script (EVAL) or the SHA-1 as sent (EVALSHA).
type Eval struct {
	Body       string
	Keys, Argv []string
}

// ParseEval parses EVAL and EVALSHA (arity checked: at least 3 arguments).
func ParseEval(args [][]byte) (Eval, error) {
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		return Eval{}, ErrNotInteger
	case n > int64(len(args)-3):
		return Eval{}, ErrNumKeysTooLarge
	case n < 0:
		return Eval{}, ErrNumKeysNegative
	}
	e := Eval{Body: string(args[1]), Keys: strs(args[3 : 3+n]), Argv: strs(args[3+n:])}
	return e, nil
}

func strs(a [][]byte) []string {
	out := make([]string, len(a))
	for i, b := range a {
		out[i] = string(b)
	}
	return out
}

// ParseBlockTimeout parses the last argument of BLPOP, a timeout in seconds
// (0 = forever), into milliseconds, exactly as Redis 7.0 does: the text is
// read as a C long double (strtold: decimal or hex, inf; a 64-bit
// mantissa), times 1000, truncated to a long long, where a value out of
// its range becomes LLONG_MIN on x86-64. Not a number is
// ErrTimeoutNotFloat, below zero after that ErrTimeoutNegative. Redis adds
// no range check of its own; the server's timer saturates (ms.Nanos).
func ParseBlockTimeout(arg []byte) (int64, error) {
	x, ok := parseLongDouble(string(arg))
	if !ok {
		return 0, ErrTimeoutNotFloat
	}
	x.Mul(x, new(big.Float).SetPrec(64).SetInt64(1000))
	d, acc := x.Int64() // truncates toward zero
	if (acc == big.Above && d == math.MinInt64) || (acc == big.Below && d == math.MaxInt64) || x.IsInf() {
		d = math.MinInt64 // out of range: the x86-64 conversion gives LLONG_MIN
	}
	if d < 0 {
		return 0, ErrTimeoutNegative
	}
	return d, nil
}

// parseLongDouble reads s as Redis's string2ld does with strtold on x86-64:
// no leading space, the whole string, not NaN, nothing that overflows the
// 80-bit long double or underflows it to zero, at most 5119 bytes.
func parseLongDouble(s string) (*big.Float, bool) {
	if s == "" || len(s) >= 5*1024 || strings.ContainsAny(s, "_ \t\n\v\f\r") {
		return nil, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	neg := s[0] == '-'
	if strings.EqualFold(body, "inf") || strings.EqualFold(body, "infinity") {
		return new(big.Float).SetInf(neg), true
	}
	// big.Float also reads 0b and 0o prefixes, which strtold stops at.
	if len(body) > 1 && body[0] == '0' && strings.ContainsRune("bBoO", rune(body[1])) {
		return nil, false
	}
	x, _, err := new(big.Float).SetPrec(64).SetMode(big.ToNearestEven).Parse(s, 0)
	if err != nil {
		return nil, false
	}
	// The long double range: about 3.6e-4951 (denormal) to 1.19e4932.
	if exp := x.MantExp(nil); x.Sign() != 0 && (exp > 16384 || exp < -16444) {
		return nil, false
	}
	return x, true
}

// redisBlocking are Redis 7's blocking commands that fenced does not have,
// with their arities. Redis refuses them in a script by their noscript
// flag (after their arity), so a script is told they are not allowed
// rather than unknown, as it would be by Redis.
var redisBlocking = map[string]int{"brpop": -3, "bzpopmin": -3, "bzpopmax": -3}

// RedisBlocking reports whether args name one of Redis's blocking commands
// that fenced lacks, and whether their count fits its arity.
func RedisBlocking(args [][]byte) (blocking, arityOK bool) {
	arity, ok := redisBlocking[strings.ToLower(string(args[0]))]
	if !ok {
		return false, false
	}
	s := Spec{Arity: arity}
	return true, s.CheckArity(len(args))
}
