package lockstate

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// SORT and SORT_RO (cluster version 3), as Redis 7.0's sort.c: a list or
// set sorted by its elements or by the keys a BY pattern names, numerically
// (strtod) or ALPHA (byte order: Redis's strcoll in the C locale), with
// LIMIT, GET patterns and STORE into a list. Ties keep the elements' order
// (Redis's qsort leaves them to the library), so every replica answers
// alike; a set not to be sorted (BY a constant) is sorted ALPHA anyway, as
// Redis does inside scripts and for STORE, since its order is fenced's own.

var errSortScore = reply.Error("ERR One or more scores can't be converted into double")

// MaxSortReply bounds what SORT's GETs gather, in bytes: each GET of each
// element may fetch a value of up to 4 MiB, so a short command could
// otherwise build a reply (or a stored list) of terabytes.
const MaxSortReply = 32 << 20

// ErrSortReply refuses such a SORT; nothing changed.
var ErrSortReply = reply.NewErr("ERR", "the reply would be larger than 32 MiB: SORT's GET patterns fetched too much, ask for fewer elements (LIMIT)")

func cmdSort(s *State, a [][]byte, now int64) reply.Value {
	return s.sort(a, now, strings.EqualFold(string(a[0]), "sort_ro"))
}

func (s *State) sort(a [][]byte, now int64, ro bool) reply.Value {
	p, err := commands.ParseSort(a, ro)
	if err != nil {
		return parseErr(err)
	}
	dontSort := p.HasBy && !strings.Contains(p.By, "*")
	k, lock := s.find(p.Key, now)
	if lock || k != nil && k.typ != kvList && k.typ != kvSet {
		return errWrongType
	}
	var elems []string
	if k != nil {
		if k.typ == kvList {
			elems = slices.Clone(k.list)
		} else {
			elems = slices.Clone(k.fields)
			if dontSort {
				dontSort, p.Alpha, p.HasBy = false, true, false
			}
		}
	}
	n := int64(len(elems))
	start := min(max(p.Start, 0), n)
	count := min(max(p.Count, -1), n)
	end := n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)
	if dontSort {
		if p.Desc {
			slices.Reverse(elems)
		}
	} else if bad := s.sortElems(elems, p, now); bad {
		return errSortScore
	}
	var picked []string
	if end >= start {
		picked = elems[start : end+1]
	}
	var (
		out   []reply.Value
		list  []string
		bytes int
	)
	for _, e := range picked {
		if len(p.Gets) == 0 {
			out, list = append(out, reply.BulkString(e)), append(list, e)
		}
		for _, g := range p.Gets {
			v, ok := s.sortLookup(g, e, now)
			if bytes += len(v) + 16; bytes > MaxSortReply {
				return reply.ErrorOf(ErrSortReply)
			}
			list = append(list, v) // a missing one is stored empty
			if ok {
				out = append(out, reply.BulkString(v))
			} else {
				out = append(out, reply.Null())
			}
		}
	}
	if !p.HasStore {
		return reply.Array(out...)
	}
	size := 0
	for _, e := range list {
		size += elemSize(e)
	}
	if size > MaxRecord {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	// The stored list may be as large as the sorted key: admitted for its
	// size, as COPY is, beyond what the arguments were.
	if len(list) > 0 && !s.roomFor(int64(size+len(p.Store)+len(prefixKV)+kvHeader)) {
		return errOOM
	}
	old, oldLock := s.find(p.Store, now)
	if oldLock {
		return errWrongType // a held fenced lock is never overwritten
	}
	if len(list) == 0 {
		if old != nil {
			s.deleteKey(old)
			s.notify(notifyGeneric, "del", p.Store)
		}
		return reply.Int(0)
	}
	if old != nil {
		s.deleteKey(old)
	}
	d := s.newKey(p.Store, kvList)
	d.list, d.size = list, size
	s.notify(notifyList, "sortstore", p.Store)
	s.pushed = append(s.pushed, p.Store)
	return reply.Int(int64(len(list)))
}

// sortElems sorts elems in place as p says; bad reports a score that is not
// a number.
func (s *State) sortElems(elems []string, p commands.Sort, now int64) (bad bool) {
	type item struct {
		e      string
		score  float64
		cmp    string
		hasCmp bool
	}
	items := make([]item, len(elems))
	for i, e := range elems {
		items[i].e = e
		by, ok := e, true
		if p.HasBy {
			by, ok = s.sortLookup(p.By, e, now)
		}
		if !ok {
			continue
		}
		if p.Alpha {
			if p.HasBy {
				items[i].cmp, items[i].hasCmp = by, true
			}
			continue
		}
		f, ok := strtodWhole(by)
		if !ok {
			bad = true
		}
		items[i].score = f
	}
	if bad {
		return true
	}
	slices.SortStableFunc(items, func(x, y item) int {
		var c int
		switch {
		case !p.Alpha:
			switch {
			case x.score > y.score:
				c = 1
			case x.score < y.score:
				c = -1
			default:
				c = strings.Compare(x.e, y.e)
			}
		case p.HasBy:
			switch {
			case !x.hasCmp || !y.hasCmp:
				if x.hasCmp == y.hasCmp {
					c = 0
				} else if !x.hasCmp {
					c = -1
				} else {
					c = 1
				}
			default:
				c = strings.Compare(x.cmp, y.cmp)
			}
		default:
			c = strings.Compare(x.e, y.e)
		}
		if p.Desc {
			return -c
		}
		return c
	})
	for i := range items {
		elems[i] = items[i].e
	}
	return false
}

// sortLookup is Redis's lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' of pattern is replaced by it, and the key found
// must be a string, or with "->field" after the '*' a hash holding field.
// ok is false when there is no such value.
func (s *State) sortLookup(pattern, subst string, now int64) (string, bool) {
	if pattern == "#" {
		return subst, true
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return "", false
	}
	rest, field := pattern[star+1:], ""
	if f := strings.Index(rest, "->"); f >= 0 && f+2 < len(rest) {
		rest, field = rest[:f], rest[f+2:]
	}
	k, _ := s.find(pattern[:star]+subst+rest, now)
	switch {
	case k == nil:
		return "", false
	case field != "":
		if k.typ != kvHash {
			return "", false
		}
		v, ok := k.hash[field]
		return v, ok
	case k.typ != kvString:
		return "", false
	}
	return k.str, true
}

// strtodWhole reads s as Redis's SORT does with strtod: leading blanks
// skipped, the whole rest a number, not NaN and within a double's range;
// an empty string is 0.
func strtodWhole(s string) (float64, bool) {
	if s == "" {
		return 0, true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t == "" || strings.ContainsRune(t, '_') {
		return 0, false
	}
	low := strings.ToLower(t)
	if h := strings.TrimLeft(low, "+-"); strings.HasPrefix(h, "0x") && !strings.Contains(h, "p") {
		t += "p0" // strtod's hex needs no exponent, Go's does
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && strings.ContainsAny(strings.SplitN(strings.TrimPrefix(strings.TrimLeft(low, "+-"), "0x"), "e", 2)[0], "123456789abcdef") {
		return 0, false // underflow: strtod's ERANGE
	}
	return f, true
}
