package lockstate

import "fmt"

// entryVersion is the first byte of every encoded Entry. A replica that
// meets a version it does not know must stop rather than guess.
const entryVersion = 1

func (op Op) valid() bool { return op >= OpTick && op <= OpNodeRemove }

// Encode appends the binary form of e to dst: the version, the op, then
// every field in declaration order (signed integers as zigzag varints,
// strings length-prefixed). Every op carries every field so that the format
// has one shape and no op-specific branches to get wrong.
func (e Entry) Encode(dst []byte) []byte {
	dst = append(dst, entryVersion, byte(e.Op))
	dst = appendVarint(dst, e.Time)
	dst = appendString(dst, e.Session)
	dst = appendString(dst, e.Name)
	dst = appendVarint(dst, e.TTL)
	dst = appendVarint(dst, e.Created)
	dst = appendString(dst, e.Lock)
	dst = appendString(dst, e.Owner)
	dst = appendVarint(dst, e.Wait)
	dst = appendVarint(dst, e.Limit)
	dst = appendString(dst, e.Req)
	dst = appendVarint(dst, e.Fence)
	dst = appendUvarint(dst, e.WaitID)
	dst = appendString(dst, e.Node)
	dst = appendString(dst, e.RaftAddr)
	dst = appendString(dst, e.Addr)
	return dst
}

// DecodeEntry decodes the output of Encode. It accepts exactly the bytes
// Encode produces (minimal varints, no trailing bytes), so a decoded entry
// re-encodes to its input. Errors wrap ErrBadEntry.
func DecodeEntry(b []byte) (Entry, error) {
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != entryVersion {
		return Entry{}, fmt.Errorf("%w: unknown version %d", ErrBadEntry, v)
	}
	var e Entry
	e.Op = Op(r.byte())
	if r.err == nil && !e.Op.valid() {
		return Entry{}, fmt.Errorf("%w: unknown op %d", ErrBadEntry, e.Op)
	}
	e.Time = r.varint()
	e.Session = r.str()
	e.Name = r.str()
	e.TTL = r.varint()
	e.Created = r.varint()
	e.Lock = r.str()
	e.Owner = r.str()
	e.Wait = r.varint()
	e.Limit = r.varint()
	e.Req = r.str()
	e.Fence = r.varint()
	e.WaitID = r.uvarint()
	e.Node = r.str()
	e.RaftAddr = r.str()
	e.Addr = r.str()
	if err := r.done(); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrBadEntry, err)
	}
	return e, nil
}

// String names the op for logs and test output.
func (op Op) String() string {
	switch op {
	case OpTick:
		return "tick"
	case OpSessionOpen:
		return "session.open"
	case OpSessionHeartbeat:
		return "session.heartbeat"
	case OpSessionKill:
		return "session.kill"
	case OpFlock:
		return "flock"
	case OpFunlock:
		return "funlock"
	case OpCancelWait:
		return "cancelwait"
	case OpForceUnlock:
		return "forceunlock"
	case OpCancelWaits:
		return "cancelwaits"
	case OpNodeJoin:
		return "node.join"
	case OpNodeRemove:
		return "node.remove"
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}
