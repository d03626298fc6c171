package commands

import (
	"math"
	"strings"

	"github.com/fenced/fenced/reply"
)

// Parsers of Redis 7.0's whole-key commands (cluster version 3): COPY,
// FLUSHALL, FLUSHDB, MOVE, SWAPDB. fenced has one database, 0, and answers
// every other index as a Redis started with "databases 1" does.

// Errors of the whole-key commands, in Redis 7.0's words.
var (
	// ErrDBRange answers a database index other than 0.
	ErrDBRange = reply.NewErr("ERR", "DB index is out of range")
	// ErrSameObject answers COPY key key and MOVE key 0.
	ErrSameObject = reply.NewErr("ERR", "source and destination objects are the same")
	// ErrIntRange answers an index that is an integer but not a C int.
	ErrIntRange = reply.NewErr("ERR", "value is out of range, value must between -2147483648 and 2147483647")
	// ErrFirstDB and ErrSecondDB answer SWAPDB's indexes that are not
	// integers that fit a C int.
	ErrFirstDB  = reply.NewErr("ERR", "invalid first DB index")
	ErrSecondDB = reply.NewErr("ERR", "invalid second DB index")
)

// Copy is COPY source destination [DB destination-db] [REPLACE].
type Copy struct {
	Src, Dst string
	Replace  bool
}

// ParseCopy parses COPY in Redis 7.0's order: the options left to right
// (an index that is not 0 fails where it stands), then a copy onto
// itself.
func ParseCopy(args [][]byte) (Copy, error) {
	c := Copy{Src: string(args[1]), Dst: string(args[2])}
	for i := 3; i < len(args); i++ {
		switch opt := strings.ToUpper(string(args[i])); {
		case opt == "REPLACE":
			c.Replace = true
		case opt == "DB" && i+1 < len(args):
			n, err := parseDB(args[i+1], nil)
			switch {
			case err != nil:
				return c, err
			case n != 0:
				return c, ErrDBRange
			}
			i++
		default:
			return c, ErrSyntax
		}
	}
	if c.Src == c.Dst {
		return c, ErrSameObject
	}
	return c, nil
}

// ParseMove checks MOVE key db: the one database is its own source.
func ParseMove(args [][]byte) error {
	db, err := parseDB(args[2], nil)
	switch {
	case err != nil:
		return err
	case db != 0:
		return ErrDBRange
	}
	return ErrSameObject
}

// ParseSwapDB checks SWAPDB index1 index2: 0 with 0 is the one swap there
// is, and does nothing.
func ParseSwapDB(args [][]byte) error {
	a, err := parseDB(args[1], ErrFirstDB)
	if err != nil {
		return err
	}
	b, err := parseDB(args[2], ErrSecondDB)
	switch {
	case err != nil:
		return err
	case a != 0 || b != 0:
		return ErrDBRange
	}
	return nil
}

// ParseFlush checks FLUSHALL and FLUSHDB [ASYNC|SYNC]: fenced empties the
// keyspace within the entry either way.
func ParseFlush(args [][]byte) error {
	switch {
	case len(args) > 2:
		return ErrSyntax
	case len(args) == 2 && !strings.EqualFold(string(args[1]), "ASYNC") && !strings.EqualFold(string(args[1]), "SYNC"):
		return ErrSyntax
	}
	return nil
}

// parseDB reads a database index as Redis's getIntFromObjectOrReply: an
// integer that fits a C int. bad is its error for anything else; without
// one, Redis's two texts: not an integer, or out of a C int's range.
func parseDB(b []byte, bad error) (int64, error) {
	n, err := ParseInt(b)
	switch {
	case (err != nil || n < math.MinInt32 || n > math.MaxInt32) && bad != nil:
		return 0, bad
	case err != nil:
		return 0, err
	case n < math.MinInt32 || n > math.MaxInt32:
		return 0, ErrIntRange
	}
	return n, nil
}
