package commands

import (
	"strings"

	"github.com/fenced/fenced/reply"
)

// The bit commands (SETBIT, GETBIT, BITCOUNT, BITPOS) and LCS, parsed as
// Redis 7.0's bitops.c and t_string.c parse them. Where Redis checks the
// key between two arguments, the later argument's error is kept in the
// request (Invalid) for the state machine to answer in Redis's order.

// Errors of the bit commands and LCS, in Redis's words.
var (
	// ErrBitOffset is a bit offset that is not an integer, negative, or
	// past Redis's 512 MiB string (its proto-max-bulk-len default).
	ErrBitOffset = reply.NewErr("ERR", "bit offset is not an integer or out of range")
	// ErrBitValue is SETBIT's value other than 0 or 1.
	ErrBitValue = reply.NewErr("ERR", "bit is not an integer or out of range")
	// ErrBitArg is BITPOS's bit other than 0 or 1.
	ErrBitArg = reply.NewErr("ERR", "The bit argument must be 1 or 0.")
	// ErrLCSLenIdx is LCS with both LEN and IDX.
	ErrLCSLenIdx = reply.NewErr("ERR", "If you want both the length and indexes, please just use IDX.")
)

// MaxBitString is the largest string a bit offset may address, in bytes:
// Redis 7.0 refuses an offset whose byte is at or past its
// proto-max-bulk-len (512 MiB by default). fenced applies the default on
// every replica, whatever a node's own setting (which bounds arguments, not
// the state), so that every replica answers alike; a SETBIT that would grow
// a string past MaxRecord is refused by the state machine afterwards.
const MaxBitString = 512 << 20

// ParseBitOffset parses a bit offset of SETBIT or GETBIT.
func ParseBitOffset(b []byte) (int64, error) {
	n, err := ParseInt(b)
	if err != nil || n < 0 || n>>3 >= MaxBitString {
		return 0, ErrBitOffset
	}
	return n, nil
}

// SetBit is a parsed SETBIT key offset value.
type SetBit struct {
	Key    string
	Offset int64
	On     bool
}

// ParseSetBit parses SETBIT key offset value: the offset first, then the
// value, 0 or 1.
func ParseSetBit(args [][]byte) (SetBit, error) {
	off, err := ParseBitOffset(args[2])
	if err != nil {
		return SetBit{}, err
	}
	v, err := ParseInt(args[3])
	if err != nil || v&^1 != 0 {
		return SetBit{}, ErrBitValue
	}
	return SetBit{Key: string(args[1]), Offset: off, On: v == 1}, nil
}

// BitRange is the range of BITCOUNT and BITPOS: Start and End are
// indexes as given (negative from the end), in bytes or, with Bit, bits.
type BitRange struct {
	Ranged     bool // a start was given (else the whole string)
	Start, End int64
	EndGiven   bool // BITPOS: an end was given
	Bit        bool // BIT rather than BYTE
	// Empty is BITCOUNT's shortcut: start and end both negative with
	// start after end count nothing, whatever follows them.
	Empty bool
}

// ParseBitCount parses BITCOUNT key [start end [BYTE|BIT]]. Redis reads
// the range only once it has found a string at key, so the state machine
// calls this after the key's lookup.
func ParseBitCount(args [][]byte) (BitRange, error) {
	switch len(args) {
	case 2:
		return BitRange{}, nil
	case 4, 5:
	default:
		return BitRange{}, ErrSyntax
	}
	r := BitRange{Ranged: true, EndGiven: true}
	var err error
	if r.Start, err = ParseInt(args[2]); err != nil {
		return BitRange{}, err
	}
	if r.End, err = ParseInt(args[3]); err != nil {
		return BitRange{}, err
	}
	if r.Start < 0 && r.End < 0 && r.Start > r.End {
		return BitRange{Empty: true}, nil
	}
	if len(args) == 5 {
		if r.Bit, err = parseUnit(args[4]); err != nil {
			return BitRange{}, err
		}
	}
	return r, nil
}

// parseUnit reads BYTE or BIT.
func parseUnit(b []byte) (bit bool, err error) {
	switch {
	case strings.EqualFold(string(b), "bit"):
		return true, nil
	case strings.EqualFold(string(b), "byte"):
		return false, nil
	}
	return false, ErrSyntax
}

// BitPos is a parsed BITPOS key bit [start [end [BYTE|BIT]]].
type BitPos struct {
	Key   string
	Bit   bool // looking for a 1
	Range BitRange
	// Invalid is the range's error, which Redis answers only once it has
	// found a string at key (a missing key answers by the bit alone).
	Invalid error
}

// ParseBitPos parses BITPOS: an error is the bit's, which comes first.
func ParseBitPos(args [][]byte) (BitPos, error) {
	bit, err := ParseInt(args[2])
	if err != nil {
		return BitPos{}, err
	}
	if bit != 0 && bit != 1 {
		return BitPos{}, ErrBitArg
	}
	p := BitPos{Key: string(args[1]), Bit: bit == 1}
	switch len(args) {
	case 3:
		return p, nil
	case 4, 5, 6:
	default:
		p.Invalid = ErrSyntax
		return p, nil
	}
	r := BitRange{Ranged: true}
	if r.Start, err = ParseInt(args[3]); err != nil {
		p.Invalid = err
		return p, nil
	}
	if len(args) == 6 {
		if r.Bit, err = parseUnit(args[5]); err != nil {
			p.Invalid = err
			return p, nil
		}
	}
	if len(args) >= 5 {
		if r.End, err = ParseInt(args[4]); err != nil {
			p.Invalid = err
			return p, nil
		}
		r.EndGiven = true
	}
	p.Range = r
	return p, nil
}

// LCS is a parsed LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN].
type LCS struct {
	Key1, Key2   string
	Len, Idx     bool
	WithMatchLen bool
	MinMatchLen  int64 // 0: every match; a negative one is 0, as in Redis
}

// ParseLCS parses LCS's options, left to right as Redis does (the keys'
// types are checked before: the state machine calls this after).
func ParseLCS(args [][]byte) (LCS, error) {
	p := LCS{Key1: string(args[1]), Key2: string(args[2])}
	for i := 3; i < len(args); i++ {
		switch opt := strings.ToUpper(string(args[i])); {
		case opt == "IDX":
			p.Idx = true
		case opt == "LEN":
			p.Len = true
		case opt == "WITHMATCHLEN":
			p.WithMatchLen = true
		case opt == "MINMATCHLEN" && i+1 < len(args):
			n, err := ParseInt(args[i+1])
			if err != nil {
				return LCS{}, err
			}
			p.MinMatchLen = max(n, 0)
			i++
		default:
			return LCS{}, ErrSyntax
		}
	}
	if p.Len && p.Idx {
		return LCS{}, ErrLCSLenIdx
	}
	return p, nil
}
