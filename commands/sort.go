package commands

import (
	"bytes"
	"strings"

	"github.com/fenced/fenced/reply"
)

// Sort is a parsed SORT or SORT_RO key [BY pattern] [LIMIT offset count]
// [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination].
type Sort struct {
	Key          string
	By           string
	HasBy        bool
	Start, Count int64 // LIMIT; Count -1: to the end
	Gets         []string
	Desc, Alpha  bool
	Store        string
	HasStore     bool
}

// Redis's refusals of SORT's patterns to a user without access to every
// key: the keys they reach are not named by the command.
var (
	ErrSortByACL  = reply.NewErr("ERR", "BY option of SORT denied due to insufficient ACL permissions.")
	ErrSortGetACL = reply.NewErr("ERR", "GET option of SORT denied due to insufficient ACL permissions.")
)

// ParseSort parses SORT (ro false) or SORT_RO, in Redis's order: the
// options left to right, each error as it meets it.
func ParseSort(args [][]byte, ro bool) (Sort, error) {
	p := Sort{Key: string(args[1]), Count: -1}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "asc":
			p.Desc = false
		case opt == "desc":
			p.Desc = true
		case opt == "alpha":
			p.Alpha = true
		case opt == "limit" && left >= 2:
			var err error
			if p.Start, err = ParseInt(args[j+1]); err != nil {
				return Sort{}, ErrNotInteger
			}
			if p.Count, err = ParseInt(args[j+2]); err != nil {
				return Sort{}, ErrNotInteger
			}
			j += 2
		case opt == "store" && !ro && left >= 1:
			p.Store, p.HasStore = string(args[j+1]), true
			j++
		case opt == "by" && left >= 1:
			p.By, p.HasBy = string(args[j+1]), true
			j++
		case opt == "get" && left >= 1:
			p.Gets = append(p.Gets, string(args[j+1]))
			j++
		default:
			return Sort{}, ErrSyntax
		}
	}
	return p, nil
}

// SortReachesKeys reports whether a SORT or SORT_RO reads keys it does not
// name: a BY pattern with a '*' (a constant one only means "do not sort")
// or a GET. Redis allows those to a user with access to every key only;
// the error says which option. A SORT that does not parse is the
// command's own to refuse.
func SortReachesKeys(args [][]byte) error {
	ro := !bytes.EqualFold(args[0], []byte("sort"))
	if _, err := ParseSort(args, ro); err != nil {
		return nil
	}
	// Parsed: each option's values are where ParseSort found them. The
	// first option that reaches keys decides, as in Redis's loop.
	for j := 2; j < len(args); j++ {
		switch opt := strings.ToLower(string(args[j])); opt {
		case "limit":
			j += 2
		case "store":
			j++
		case "by":
			if bytes.IndexByte(args[j+1], '*') >= 0 {
				return ErrSortByACL
			}
			j++
		case "get":
			return ErrSortGetACL
		}
	}
	return nil
}
