package lockstate

import (
	"errors"
	"slices"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// LPOP and RPOP (RPOP from cluster version 3): Redis 7.0's
// popGenericCommand. Without a count the reply is one element (null for a
// missing key); with one, an array of up to count elements in the order
// popped (a null array for a missing key, an empty one for a count of 0).
// An emptied list is deleted.

func cmdLpop(s *State, a [][]byte, now int64) reply.Value { return pop(s, a, now, false) }

func cmdRpop(s *State, a [][]byte, now int64) reply.Value { return pop(s, a, now, true) }

// pop is LPOP, or RPOP when tail is true.
func pop(s *State, a [][]byte, now int64, tail bool) reply.Value {
	count, err := commands.ParseCount(a)
	if errors.Is(err, commands.ErrArity) && s.Version() < 2 {
		// Before cluster version 2 a count with more after it was a
		// syntax error (LPOP; RPOP came later): a script may store the
		// text, so every replica answers it as the cluster's version does.
		err = commands.ErrSyntax
	}
	if err != nil {
		return parseErr(err)
	}
	k, ok := s.typed(string(a[1]), kvList, now)
	switch {
	case !ok:
		return errWrongType
	case k == nil && count < 0:
		return reply.Null()
	case k == nil:
		return reply.NullArray()
	}
	n := 1
	if count >= 0 {
		n = int(min(count, int64(len(k.list))))
	}
	popped := s.popElems(k, n, tail)
	if count < 0 {
		return reply.BulkString(popped[0])
	}
	return reply.Array(bulks(popped)...)
}

// popElems takes n elements from k's head, or its tail (the last first),
// and records the change: Redis's lpop or rpop event, and k deleted once
// empty. n may be 0, which changes nothing.
func (s *State) popElems(k *kvKey, n int, tail bool) []string {
	var popped []string
	event := "lpop"
	if tail {
		popped = slices.Clone(k.list[len(k.list)-n:])
		slices.Reverse(popped) // the last element first
		k.list = slices.Clone(k.list[:len(k.list)-n])
		event = "rpop"
	} else {
		popped = k.list[:n]
		k.list = slices.Clone(k.list[n:])
	}
	for _, e := range popped {
		k.size -= elemSize(e)
	}
	if n > 0 {
		s.shrunk(k, notifyList, event)
	}
	return popped
}
