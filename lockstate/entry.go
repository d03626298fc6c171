package lockstate

import (
	"errors"
	"fmt"
)

// entryVersion is the first byte of every encoded Entry. A replica that
// meets a version it does not know must stop rather than guess. Version 2
// adds Wall after Addr; an entry with Wall 0 is written as version 1, so
// one entry has one encoding.
//
// Version 3 adds User and AsAdmin after Wall (which may then be 0); it is
// written only for an entry that carries either, so entries of the default
// user keep the bytes they had.
//
// Version 4 adds MaxMemory after AsAdmin (User may then be empty and
// AsAdmin false); it is written only for an entry with a MaxMemory, which
// must be positive.
//
// Version 5 adds Version after MaxMemory (which may then be 0); it is
// written only for an entry with a Version, which must be positive.
//
// Version 6 adds a transaction's Watches and Cmds after Version (which may
// then be 0): the count of watches, each its key, index and stale flag,
// then the count of commands, each its argument count and arguments. It is
// written only for an entry with either, which a leader proposes only at
// cluster version 3 (OpMulti).
const (
	entryVersion1 = 1
	entryVersion2 = 2
	entryVersion3 = 3
	entryVersion4 = 4
	entryVersion5 = 5
	entryVersion  = 6
)

func (op Op) valid() bool { return op >= OpTick && op <= OpMulti }

// Encode appends the binary form of e to dst: the version, the op, then
// every field in declaration order (signed integers as zigzag varints,
// strings length-prefixed). Every op carries every field so that the format
// has one shape and no op-specific branches to get wrong; the one exception
// is Args, last, whose count and strings are written only when it is not
// empty, so that entries written before it existed decode unchanged.
func (e Entry) Encode(dst []byte) []byte {
	v := byte(entryVersion1)
	switch {
	case len(e.Watches) > 0 || len(e.Cmds) > 0:
		v = entryVersion
	case e.Version != 0:
		v = entryVersion5
	case e.MaxMemory != 0:
		v = entryVersion4
	case e.User != "" || e.AsAdmin:
		v = entryVersion3
	case e.Wall != 0:
		v = entryVersion2
	}
	dst = append(dst, v, byte(e.Op))
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
	if v >= entryVersion2 {
		dst = appendVarint(dst, e.Wall)
	}
	if v >= entryVersion3 {
		dst = appendString(dst, e.User)
		if e.AsAdmin {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	if v >= entryVersion4 {
		dst = appendVarint(dst, e.MaxMemory)
	}
	if v >= entryVersion5 {
		dst = appendVarint(dst, e.Version)
	}
	if v >= entryVersion {
		dst = appendUvarint(dst, uint64(len(e.Watches)))
		for _, w := range e.Watches {
			dst = appendString(dst, w.Key)
			dst = appendUvarint(dst, w.Index)
			dst = appendBool(dst, w.Stale)
		}
		dst = appendUvarint(dst, uint64(len(e.Cmds)))
		for _, c := range e.Cmds {
			dst = appendUvarint(dst, uint64(len(c)))
			for _, a := range c {
				dst = appendString(dst, a)
			}
		}
	}
	// Args, the last field, is written only when there are some, so an
	// entry without them has the bytes it had before Args existed.
	if len(e.Args) > 0 {
		dst = appendUvarint(dst, uint64(len(e.Args)))
		for _, a := range e.Args {
			dst = appendString(dst, a)
		}
	}
	return dst
}

// DecodeEntry decodes the output of Encode. It accepts exactly the bytes
// Encode produces (minimal varints, no trailing bytes), so a decoded entry
// re-encodes to its input. Errors wrap ErrBadEntry.
func DecodeEntry(b []byte) (Entry, error) {
	r := reader{b: b}
	v := r.byte()
	if r.err == nil && (v < entryVersion1 || v > entryVersion) {
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
	switch v {
	case entryVersion2:
		if e.Wall = r.varint(); r.err == nil && e.Wall == 0 {
			r.fail(errors.New("version 2 with no wall time"))
		}
	case entryVersion3, entryVersion4, entryVersion5, entryVersion:
		e.Wall = r.varint()
		e.User = r.str()
		switch r.byte() {
		case 0:
		case 1:
			e.AsAdmin = true
		default:
			r.fail(errors.New("bad admin flag"))
		}
		if v == entryVersion3 && r.err == nil && e.User == "" && !e.AsAdmin {
			r.fail(errors.New("version 3 with neither user nor admin"))
		}
		if v >= entryVersion4 {
			if e.MaxMemory = r.varint(); r.err == nil && v == entryVersion4 && e.MaxMemory <= 0 {
				r.fail(errors.New("version 4 without a positive MaxMemory"))
			}
		}
		if v >= entryVersion5 {
			if e.Version = r.varint(); r.err == nil && v == entryVersion5 && e.Version <= 0 {
				r.fail(errors.New("version 5 without a positive Version"))
			}
		}
		if v == entryVersion {
			e.Watches, e.Cmds = r.watches(), r.cmds()
			if r.err == nil && len(e.Watches) == 0 && len(e.Cmds) == 0 {
				r.fail(errors.New("version 6 with neither watches nor commands"))
			}
		}
	}
	// Args: absent, or a count of at least 1 and the strings. Each takes at
	// least its length byte: a count beyond the remaining bytes is
	// rejected before allocating.
	if r.err == nil && len(r.b) > 0 {
		switch n := r.uvarint(); {
		case r.err != nil:
		case n == 0:
			r.fail(errors.New("empty Args are not written"))
		case n > uint64(len(r.b)):
			r.fail(errLength)
		default:
			e.Args = make([]string, n)
			for i := range e.Args {
				e.Args[i] = r.str()
			}
		}
	}
	if err := r.done(); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrBadEntry, err)
	}
	return e, nil
}

// count reads a count of items that take at least a byte each: one past
// the remaining bytes is rejected before allocating.
func (r *reader) count() int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail(errLength)
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *reader) watches() []Watch {
	n := r.count()
	if n == 0 {
		return nil
	}
	ws := make([]Watch, n)
	for i := range ws {
		ws[i] = Watch{Key: r.str(), Index: r.uvarint(), Stale: r.bool()}
	}
	return ws
}

func (r *reader) cmds() [][]string {
	n := r.count()
	if n == 0 {
		return nil
	}
	cs := make([][]string, n)
	for i := range cs {
		m := r.count()
		if m == 0 && r.err == nil {
			r.fail(errors.New("an empty command"))
		}
		cs[i] = make([]string, m)
		for j := range cs[i] {
			cs[i][j] = r.str()
		}
	}
	return cs
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
	case OpExec:
		return "exec"
	case OpACLSetUser:
		return "acl.setuser"
	case OpACLDelUser:
		return "acl.deluser"
	case OpSetVersion:
		return "setversion"
	case OpMulti:
		return "multi"
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}
