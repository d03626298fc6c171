package commands

import (
	"fmt"
	"math"

	"github.com/fenced/fenced/reply"
)

// Set commands (cluster version 3): SADD, SREM, SMEMBERS, SISMEMBER,
// SMISMEMBER, SCARD, SPOP, SRANDMEMBER. Each checks its count before it
// looks at the key, as Redis does.

// MaxRandCount bounds SRANDMEMBER's negative count, the one form whose
// reply grows with the count alone (members may repeat): Redis answers a
// reply of |count| elements, fenced refuses past a million, so that one
// command cannot build a reply without bound.
const MaxRandCount = 1 << 20

// ErrRandCount answers an SRANDMEMBER count past -MaxRandCount, in
// Redis's words for its own bound (-LONG_MAX).
var ErrRandCount = reply.NewErr("ERR", fmt.Sprintf("value is out of range, value must between -%d and %d", MaxRandCount, int64(math.MaxInt64)))

// ParseSpop parses SPOP key [count]: -1 when not given, otherwise >= 0
// (Redis's "must be positive" for anything else).
func ParseSpop(args [][]byte) (int64, error) {
	switch {
	case len(args) == 2:
		return -1, nil
	case len(args) > 3:
		return 0, ErrSyntax
	}
	n, err := ParseInt(args[2])
	if err != nil || n < 0 {
		return 0, ErrOutOfRange
	}
	return n, nil
}

// ParseSrandmember parses SRANDMEMBER key [count]: given reports whether a
// count was; a negative count may repeat members.
func ParseSrandmember(args [][]byte) (count int64, given bool, err error) {
	switch {
	case len(args) == 2:
		return 0, false, nil
	case len(args) > 3:
		return 0, false, ErrSyntax
	}
	n, err := ParseInt(args[2])
	if err != nil {
		return 0, false, ErrNotInteger
	}
	if n < -MaxRandCount {
		return 0, false, ErrRandCount
	}
	return n, true, nil
}
