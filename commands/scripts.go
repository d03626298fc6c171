package commands

import (
	"errors"
	"math"
	"strconv"
)

// Errors of EVAL, EVALSHA and BLPOP, in Redis's words.
var (
	ErrNumKeysTooLarge = errors.New("commands: Number of keys can't be greater than number of args")
	ErrNumKeysNegative = errors.New("commands: Number of keys can't be negative")
	ErrTimeoutNotFloat = errors.New("commands: timeout is not a float or out of range")
	ErrTimeoutNegative = errors.New("commands: timeout is negative")
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
// (a decimal, 0 = forever), into milliseconds, saturating.
func ParseBlockTimeout(arg []byte) (int64, error) {
	f, err := strconv.ParseFloat(string(arg), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, ErrTimeoutNotFloat
	}
	if f < 0 {
		return 0, ErrTimeoutNegative
	}
	ms := f * 1000
	if ms >= math.MaxInt64/2 {
		return math.MaxInt64 / 2, nil
	}
	return int64(math.Ceil(ms)), nil
}
