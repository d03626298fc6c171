package lockstate

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// Set commands (cluster version 3). A set is held as a hash whose values
// are empty: its members in insertion order (SMEMBERS's order) and a map
// to find them. SPOP, and SRANDMEMBER inside a script, pick by the entry's
// own draws (randomDraw of its index), so every replica picks the same
// members; an emptied set is deleted, as Redis deletes it.

func cmdSadd(s *State, a [][]byte, now int64) reply.Value {
	name := string(a[1])
	k, ok := s.typed(name, kvSet, now)
	if !ok {
		return errWrongType
	}
	add := 0 // an upper bound: a member already there, or given twice, counts in full
	for _, m := range a[2:] {
		add += elemSize(string(m))
	}
	if !fits(k, add) {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	if k == nil {
		k = s.newKey(name, kvSet)
	}
	var added int64
	for _, m := range a[2:] {
		if _, had := k.hash[string(m)]; !had {
			k.hash[string(m)] = ""
			k.fields = append(k.fields, string(m))
			k.size += elemSize(string(m))
			added++
		}
	}
	if added > 0 {
		s.markDirty(kvRecKey(k.name), &k.cost)
		s.notify(notifySet, "sadd", name)
	}
	return reply.Int(added)
}

// sremove takes the members in gone out of k, and deletes k once empty.
func (s *State) sremove(k *kvKey, gone map[string]bool, event string) {
	kept := k.fields[:0]
	for _, m := range k.fields {
		if gone[m] {
			delete(k.hash, m)
			k.size -= elemSize(m)
		} else {
			kept = append(kept, m)
		}
	}
	clear(k.fields[len(kept):]) // let go of the removed strings
	k.fields = kept
	s.shrunk(k, notifySet, event)
}

func cmdSrem(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvSet, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil:
		return reply.Int(0)
	}
	gone := map[string]bool{}
	for _, m := range a[2:] {
		if _, ok := k.hash[string(m)]; ok {
			gone[string(m)] = true
		}
	}
	if len(gone) > 0 {
		s.sremove(k, gone, "srem")
	}
	return reply.Int(int64(len(gone)))
}

func cmdSmembers(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvSet, now)
	if !ok {
		return errWrongType
	}
	var out []reply.Value
	if k != nil {
		out = bulks(k.fields)
	}
	return reply.Set(out...)
}

func cmdSismember(s *State, a [][]byte, now int64) reply.Value { return hasElem(s, a, kvSet, now) }

func cmdSmismember(s *State, a [][]byte, now int64) reply.Value {
	k, ok := s.typed(string(a[1]), kvSet, now)
	if !ok {
		return errWrongType
	}
	out := make([]reply.Value, len(a)-2)
	for i, m := range a[2:] {
		out[i] = reply.Int(0)
		if k != nil {
			if _, ok := k.hash[string(m)]; ok {
				out[i] = reply.Int(1)
			}
		}
	}
	return reply.Array(out...)
}

func cmdScard(s *State, a [][]byte, now int64) reply.Value { return lengthOf(s, a[1], kvSet, now) }

// pick returns n distinct positions of k's members, in the order drawn:
// a partial Fisher-Yates shuffle driven by the draws of seed.
func pick(k *kvKey, n int, seed uint64) []int {
	idx := make([]int, len(k.fields))
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < n; i++ {
		j := i + int(randomDraw(seed, uint64(i))%uint64(len(idx)-i))
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:n]
}

// entrySeed is the seed of the entry's next draw of a set: the entry's
// index for its first, as every replica draws, and a new one for each
// draw after it, so that a script's or a transaction's second SPOP or
// SRANDMEMBER draws afresh instead of repeating the first. Outside Step
// (a read-only script on the read path, beside other reads) it writes
// nothing and gives the last applied index, as before.
func (s *State) entrySeed() uint64 {
	seed := s.index
	if !s.track.applying {
		return seed
	}
	if s.seeds > 0 {
		seed = randomDraw(s.index, 1<<32+s.seeds)
	}
	s.seeds++
	return seed
}

func cmdSpop(s *State, a [][]byte, now int64) reply.Value {
	count, err := commands.ParseSpop(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(string(a[1]), kvSet, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil && count < 0:
		return reply.Null()
	case k == nil || count == 0:
		return reply.Set()
	}
	n := 1
	if count > 0 {
		n = int(min(count, int64(len(k.fields))))
	}
	var popped []string
	if n == len(k.fields) {
		popped = append(popped, k.fields...) // the whole set, in its order
	} else {
		for _, i := range pick(k, n, s.entrySeed()) {
			popped = append(popped, k.fields[i])
		}
	}
	gone := make(map[string]bool, len(popped))
	for _, m := range popped {
		gone[m] = true
	}
	s.sremove(k, gone, "spop")
	if count < 0 {
		return reply.BulkString(popped[0])
	}
	return reply.Set(bulks(popped)...)
}

// MaxRandReply bounds the bytes of an SRANDMEMBER reply with a negative
// count, whose members may repeat: a million draws of a 400 KiB member
// would otherwise build a 400 GB reply. Every other set reply is at most
// the set's own record (MaxRecord).
const MaxRandReply = 32 << 20

// ErrRandReply refuses such a reply; nothing is sent but the error.
var ErrRandReply = reply.NewErr("ERR", "the reply would be larger than 32 MiB: SRANDMEMBER with a negative count repeats members, ask for fewer")

// cmdSrandmember is SRANDMEMBER through Exec: inside the log (a script),
// drawn from the entry's index, as every replica draws.
func cmdSrandmember(s *State, a [][]byte, now int64) reply.Value {
	return s.SrandMember(a, now, s.entrySeed())
}

// SrandMember answers SRANDMEMBER key [count] with the draws of seed. The
// server draws a seed of its own for a client's SRANDMEMBER, as for
// RANDOMKEY, so that two calls need not answer alike.
func (s *State) SrandMember(a [][]byte, now int64, seed uint64) reply.Value {
	count, given, err := commands.ParseSrandmember(a)
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(string(a[1]), kvSet, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil && !given:
		return reply.Null()
	case k == nil || given && count == 0:
		return reply.Array()
	}
	if !given {
		return reply.BulkString(k.fields[pick(k, 1, seed)[0]])
	}
	if count < 0 { // |count| draws, members may repeat
		out := make([]reply.Value, 0, min(-count, 1024)) // grown as drawn: a refused reply allocates little
		size := 0
		for i := range -count {
			m := k.fields[randomDraw(seed, uint64(i))%uint64(len(k.fields))]
			if size += len(m) + 16; size > MaxRandReply {
				return reply.ErrorOf(ErrRandReply)
			}
			out = append(out, reply.BulkString(m))
		}
		return reply.Array(out...)
	}
	if count >= int64(len(k.fields)) {
		return reply.Array(bulks(k.fields)...)
	}
	var out []reply.Value
	for _, i := range pick(k, int(count), seed) {
		out = append(out, reply.BulkString(k.fields[i]))
	}
	return reply.Array(out...)
}
