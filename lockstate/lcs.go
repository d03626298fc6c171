package lockstate

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// LCS (cluster version 3 inside scripts): the longest common subsequence
// of two strings, Redis 7.0's lcsCommand (t_string.c): the same dynamic
// programming table, walked back from its end with the same tie-break, so
// that the string and the IDX ranges are Redis's own.

// lcsMaxTable bounds LCS's table, in bytes (4 per cell, as Redis's
// uint32_t): Redis refuses a table larger than its proto-max-bulk-len,
// 512 MiB by default. A node's own proto-max-bulk-len would make replicas
// answer a script's LCS differently, so fenced applies one fixed bound,
// the largest proto-max-bulk-len it accepts (MaxRecord): two strings of
// 1,023 bytes each, or one of 4 KiB and one of 255 bytes, a million cells
// of work at most.
const lcsMaxTable = MaxRecord

var (
	errLCSType   = reply.Error("ERR The specified keys must contain string values")
	errLCSMemory = reply.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

// cmdLCS is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]:
// the keys' types first (a missing key is the empty string, a held lock
// is not a string), then the options, as in Redis.
func cmdLCS(s *State, a [][]byte, now int64) reply.Value {
	ka, oka := s.typed(string(a[1]), kvString, now)
	kb, okb := s.typed(string(a[2]), kvString, now)
	if !oka || !okb {
		return errLCSType
	}
	p, err := commands.ParseLCS(a)
	if err != nil {
		return parseErr(err)
	}
	var x, y string
	if ka != nil {
		x = ka.str
	}
	if kb != nil {
		y = kb.str
	}
	// Both strings are at most MaxRecord long: the product cannot overflow.
	cols := int64(len(y)) + 1
	if (int64(len(x))+1)*cols*4 > lcsMaxTable {
		return errLCSMemory
	}
	// t[i*cols+j] is the LCS length of x[:i] and y[:j].
	t := make([]uint32, (len(x)+1)*int(cols))
	at := func(i, j int) uint32 { return t[i*int(cols)+j] }
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			switch {
			case x[i-1] == y[j-1]:
				t[i*int(cols)+j] = at(i-1, j-1) + 1
			default:
				t[i*int(cols)+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	n := at(len(x), len(y))
	if p.Len {
		return reply.Int(int64(n))
	}
	// Walk back from the end: a match extends the current range backwards
	// while both sides stay contiguous; a range is emitted when it breaks
	// or reaches the start of either string.
	out := make([]byte, n)
	idx := int(n)
	var matches []reply.Value
	const unset = -1
	aStart, aEnd, bStart, bEnd := unset, 0, 0, 0
	for i, j := len(x), len(y); i > 0 && j > 0; {
		emit := false
		if x[i-1] == y[j-1] {
			out[idx-1] = x[i-1]
			switch {
			case aStart == unset:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart--
				bStart--
			default:
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			if aStart != unset {
				emit = true
			}
		}
		if emit {
			matchLen := int64(aEnd - aStart + 1)
			if p.MinMatchLen == 0 || matchLen >= p.MinMatchLen {
				m := []reply.Value{
					reply.Array(reply.Int(int64(aStart)), reply.Int(int64(aEnd))),
					reply.Array(reply.Int(int64(bStart)), reply.Int(int64(bEnd))),
				}
				if p.WithMatchLen {
					m = append(m, reply.Int(matchLen))
				}
				matches = append(matches, reply.Array(m...))
			}
			aStart = unset
		}
	}
	if p.Idx {
		return reply.Map(reply.BulkString("matches"), reply.Array(matches...), reply.BulkString("len"), reply.Int(int64(n)))
	}
	return reply.BulkString(string(out))
}
