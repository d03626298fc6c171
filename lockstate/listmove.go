package lockstate

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
)

// LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH (cluster version 3): Redis 7.0's
// lmoveGenericCommand. The source is looked at first: missing, a null
// reply; of another type, WRONGTYPE. Then the destination: of another
// type, WRONGTYPE with nothing popped. The element moves, and the reply
// is it. BLMOVE and BRPOPLPUSH here never wait: an empty source is the
// null reply, on which the server waits for a push and tries again
// (server/blpop.go); inside MULTI it is their answer, as Redis's
// CLIENT_DENY_BLOCKING gives it.
//
// The changes come in Redis's order: the destination's (tracking, the
// "new" event of a created list, lpush or rpush), then the source's (lpop
// or rpop, and del once empty). A source that is its destination rotates:
// one record change, the push event then the pop event.
func cmdLmove(s *State, a [][]byte, now int64) reply.Value {
	mv, err := commands.ParseListMove(a)
	if err != nil {
		return parseErr(err)
	}
	src, ok := s.typed(mv.Src, kvList, now)
	switch {
	case !ok:
		return errWrongType
	case src == nil:
		return reply.Null()
	}
	dst, ok := s.typed(mv.Dst, kvList, now)
	if !ok {
		return errWrongType
	}
	var e string
	if mv.FromTail {
		e = src.list[len(src.list)-1]
	} else {
		e = src.list[0]
	}
	popEvent, pushEvent := "lpop", "lpush"
	if mv.FromTail {
		popEvent = "rpop"
	}
	if mv.ToTail {
		pushEvent = "rpush"
	}
	if dst == src {
		// Rotation: the list keeps its elements and size.
		rest := src.list[1:]
		if mv.FromTail {
			rest = src.list[:len(src.list)-1]
		}
		if mv.ToTail {
			src.list = append(append(make([]string, 0, len(src.list)), rest...), e)
		} else {
			src.list = append(append(make([]string, 0, len(src.list)), e), rest...)
		}
		s.markDirty(kvRecKey(src.name), &src.cost)
		s.notify(notifyList, pushEvent, src.name)
		s.notify(notifyList, popEvent, src.name)
		s.pushed = append(s.pushed, src.name)
		return reply.BulkString(e)
	}
	if !fits(dst, elemSize(e)) {
		return reply.ErrorOf(ErrRecordTooLarge)
	}
	if dst == nil {
		dst = s.newKey(mv.Dst, kvList)
	}
	dst.size += elemSize(e)
	if mv.ToTail {
		dst.list = append(dst.list, e)
	} else {
		dst.list = append([]string{e}, dst.list...)
	}
	s.markDirty(kvRecKey(dst.name), &dst.cost)
	s.notify(notifyList, pushEvent, dst.name)
	s.pushed = append(s.pushed, dst.name)
	s.popElems(src, 1, mv.FromTail)
	return reply.BulkString(e)
}
