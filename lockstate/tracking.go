package lockstate

// What an entry did to keys, for client-side caching (CLIENT TRACKING):
// every node tells its own tracking clients about the keys each applied
// entry modified, in log order. It is output of the apply on each node,
// never encoded, and the same on every replica (the order in which the
// entry first changed each key).

// Changes is what one entry did to keys.
type Changes struct {
	// Op and Args are the entry's, so that the node that proposed it can
	// tell it apart from other entries (NOLOOP, a script's reads).
	Op   Op
	Args []string
	// Keys are the plain keys and held-lock names the entry modified, each
	// once, in the order of its first change: deleted, expired, written.
	Keys []string
	// ReadAt is -1, or, if a script of the entry ran a read command, the
	// number of Keys modified before its first read: Redis tracks a
	// script's declared keys for its caller at that read.
	ReadAt int
	// Flushed says the entry emptied the keyspace (FLUSHALL, FLUSHDB):
	// every key changed, and Keys lists none of those it deleted.
	Flushed bool
}

// trackKeys is the scratch of the entry in progress.
type trackKeys struct {
	keys    []string
	readAt  int // -1 until a script reads; set by scriptRead
	flushed bool
	reading bool // readAt is set
	// applying is set from the start of Step to its end: a read-only
	// script served on the read path (concurrently with other reads) must
	// not write the scratch.
	applying bool
}

// noteChange is called for each record key the entry changes, once per
// entry (markDirty): plain keys and lock names are what clients cache.
func (s *State) noteChange(key string) {
	switch {
	case len(key) > len(prefixKV) && key[:len(prefixKV)] == prefixKV:
		s.track.keys = append(s.track.keys, key[len(prefixKV):])
	case len(key) > len(prefixLock) && key[:len(prefixLock)] == prefixLock:
		s.track.keys = append(s.track.keys, key[len(prefixLock):])
	}
}

// scriptRead records that a script of the entry ran a read command.
func (s *State) scriptRead() {
	if s.track.applying && !s.track.reading {
		s.track.reading, s.track.readAt = true, len(s.track.keys)
	}
}

// keyspaceFlushed records that the entry emptied the keyspace; the keys it
// deleted are not listed one by one (a flush invalidates everything).
// FLUSHALL and FLUSHDB call it after deleting.
func (s *State) keyspaceFlushed() {
	s.track.flushed, s.track.keys = true, s.track.keys[:0]
	if s.track.reading {
		s.track.readAt = 0
	}
}

// takeChanges returns the entry's Changes (nil if it changed no key and no
// script read) and resets the scratch.
func (s *State) takeChanges(e *Entry) *Changes {
	t := &s.track
	if len(t.keys) == 0 && !t.reading && !t.flushed {
		return nil
	}
	c := &Changes{Op: e.Op, Args: e.Args, Keys: t.keys, ReadAt: -1, Flushed: t.flushed}
	if t.reading {
		c.ReadAt = t.readAt
	}
	*t = trackKeys{}
	return c
}
