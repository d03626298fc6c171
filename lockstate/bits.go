package lockstate

import (
	"math/bits"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// The bit commands (cluster version 3): SETBIT, GETBIT, BITCOUNT and
// BITPOS, Redis 7.0's bitops.c over a string key. Bit 0 is the most
// significant bit of the first byte. A string held as an integer in Redis
// is its decimal text here, which is what Redis's bit commands read too.

// errBitsLarge answers a SETBIT whose offset would grow the string past
// MaxRecord: Redis's limit (512 MiB, commands.MaxBitString) is checked
// first, when the offset is parsed; this is fenced's own, the largest
// string APPEND or SETRANGE may make too.
var errBitsLarge = reply.Error("ERR the string would grow past 4 MiB, the largest SETBIT may make")

// cmdSetBit is SETBIT key offset value: the bit's old value. The string
// grows, zero-padded, to hold the offset. As in Redis, a SETBIT that
// neither creates the key, nor grows it, nor flips the bit changes
// nothing: no write, no event, no WATCH or tracking change.
func cmdSetBit(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseSetBit(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvString, now)
	if !ok {
		return errWrongType
	}
	byteAt := p.Offset >> 3
	var old string
	if k != nil {
		old = k.str
	}
	if byteAt >= int64(len(old)) && byteAt >= MaxRecord {
		return errBitsLarge
	}
	mask := byte(1) << (7 - uint(p.Offset&7))
	was := byteAt < int64(len(old)) && old[byteAt]&mask != 0
	if k != nil && byteAt < int64(len(old)) && was == p.On {
		return bitReply(was)
	}
	b := make([]byte, max(int64(len(old)), byteAt+1))
	copy(b, old)
	if p.On {
		b[byteAt] |= mask
	} else {
		b[byteAt] &^= mask
	}
	if k == nil {
		k = s.newKey(p.Key, kvString)
	}
	s.setString(k, string(b)) // keeps the TTL, as Redis does
	s.notify(notifyString, "setbit", p.Key)
	return bitReply(was)
}

func bitReply(on bool) reply.Value {
	if on {
		return reply.Int(1)
	}
	return reply.Int(0)
}

// cmdGetBit is GETBIT key offset: 0 past the string's end or for a
// missing key.
func cmdGetBit(s *State, a [][]byte, now int64) reply.Value {
	off, err := commands.ParseBitOffset(a[2])
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(string(a[1]), kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil || off>>3 >= int64(len(k.str)):
		return reply.Int(0)
	}
	return bitReply(k.str[off>>3]&(1<<(7-uint(off&7))) != 0)
}

// span resolves a BITCOUNT or BITPOS range over a string of n bytes as
// Redis 7.0 does: negative indexes count from the end, the range is
// clipped to the string, and with the BIT unit first and last are the
// bytes of its first and last bit, firstOut and lastOut the masks of the
// bits of those bytes that lie outside it. end is r's end, or the end
// BITPOS takes when none is given. An empty range has first > last.
func span(r commands.BitRange, n, end int64) (first, last int64, firstOut, lastOut byte) {
	start, total := r.Start, n
	if r.Bit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if r.Bit && start <= end {
		firstOut = ^byte(1<<(8-uint(start&7)) - 1)
		lastOut = byte(1<<(7-uint(end&7)) - 1)
		start >>= 3
		end >>= 3
	}
	return start, end, firstOut, lastOut
}

// cmdBitCount is BITCOUNT key [start end [BYTE|BIT]]: the set bits of the
// string, or of the range. A missing key counts 0 before the range is
// read, as in Redis.
func cmdBitCount(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Int(0)
	}
	r, err := commands.ParseBitCount(a)
	switch {
	case err != nil:
		return parseErr(err)
	case r.Empty:
		return reply.Int(0)
	}
	str := k.str
	first, last := int64(0), int64(len(str))-1
	var firstOut, lastOut byte
	if r.Ranged {
		first, last, firstOut, lastOut = span(r, int64(len(str)), r.End)
	}
	if first > last {
		return reply.Int(0)
	}
	n := popcount(str[first : last+1])
	n -= bits.OnesCount8(str[first]&firstOut) + bits.OnesCount8(str[last]&lastOut)
	return reply.Int(int64(n))
}

func popcount(str string) int {
	n := 0
	for i := 0; i < len(str); i++ {
		n += bits.OnesCount8(str[i])
	}
	return n
}

// cmdBitPos is BITPOS key bit [start [end [BYTE|BIT]]]: the first bit
// equal to bit, Redis 7.0's bitposCommand step by step (the edge bytes of
// a BIT range masked, the string's right taken as zeros unless an end is
// given). A missing key is all zeros: 0 for a clear bit, -1 for a set one.
func cmdBitPos(s *State, a [][]byte, now int64) reply.Value {
	p, err := commands.ParseBitPos(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(p.Key, kvString, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil && p.Bit:
		return reply.Int(-1)
	case k == nil:
		return reply.Int(0)
	case p.Invalid != nil:
		return parseErr(p.Invalid)
	}
	str := k.str
	n := int64(len(str))
	start, end := int64(0), n-1
	var firstOut, lastOut byte
	if r := p.Range; r.Ranged {
		e := r.End
		if !r.EndGiven {
			e = n - 1
			if r.Bit {
				e = n<<3 + 7
			}
		}
		start, end, firstOut, lastOut = span(r, n, e)
	}
	if start > end {
		return reply.Int(-1)
	}
	// masked is the byte at i with the bits in out made to not match.
	masked := func(i int64, out byte) byte {
		if p.Bit {
			return str[i] &^ out
		}
		return str[i] | out
	}
	count := end - start + 1
	pos := int64(-1)
	done := false
	if firstOut != 0 {
		c := masked(start, firstOut)
		if lastOut != 0 && count == 1 {
			if p.Bit {
				c &^= lastOut
			} else {
				c |= lastOut
			}
		}
		pos = firstBit(string([]byte{c}), p.Bit)
		if count == 1 || pos != -1 && pos != 8 {
			done = true
		} else {
			start++
			count--
		}
	}
	if !done {
		inner := count
		if lastOut != 0 {
			inner--
		}
		if inner > 0 {
			pos = firstBit(str[start:start+inner], p.Bit)
			if count == inner || pos != -1 && pos != inner<<3 {
				done = true
			} else {
				start += inner
				count -= inner
			}
		}
	}
	if !done {
		pos = firstBit(string([]byte{masked(end, lastOut)}), p.Bit)
	}
	// With an end given, a clear bit just past the range is not in it.
	if p.Range.EndGiven && !p.Bit && pos == count<<3 {
		return reply.Int(-1)
	}
	if pos != -1 {
		pos += start << 3
	}
	return reply.Int(pos)
}

// firstBit is Redis's redisBitpos: the index of the first bit of b equal
// to one (set when one is true), or, when there is none, -1 looking for a
// set bit and the bit just past b looking for a clear one (the right of a
// string reads as zeros).
func firstBit(b string, one bool) int64 {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if one && c != 0 {
			return int64(i)<<3 + int64(bits.LeadingZeros8(c))
		}
		if !one && c != 0xff {
			return int64(i)<<3 + int64(bits.LeadingZeros8(^c))
		}
	}
	if one {
		return -1
	}
	return int64(len(b)) << 3
}
