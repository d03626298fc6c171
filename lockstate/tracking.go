package lockstate

import (
	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/script"
)

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
	// Reads are the read commands the entry ran inside the state machine
	// (a script's), in order: Redis tracks keys for the caller at each.
	Reads []Read
	// Flushed says the entry emptied the keyspace (FLUSHALL, FLUSHDB):
	// every key changed, and Keys lists none of those it deleted.
	Flushed bool
}

// Read is a read command run inside an entry: At is how many of Keys were
// modified before it; Keys are the keys it read, nil for a script's read,
// which tracks the script's declared keys (Redis 7.0's rule).
type Read struct {
	At   int
	Keys []string
}

// trackKeys is the scratch of the entry in progress.
type trackKeys struct {
	keys    []string
	locks   int // how many of keys are lock names
	kvs     int // and how many plain keys
	reads   []Read
	flushed bool
	// applying is set from the start of Step to its end: a read-only
	// script served on the read path (concurrently with other reads) must
	// not write the scratch.
	applying bool
}

// noteChange is called for each record key the entry changes, once per
// entry (markDirty): plain keys and lock names are what clients cache.
// A name may change as a lock and as a plain key in one entry (a lock
// released, then the key created): it is listed once.
func (s *State) noteChange(key string) {
	t := &s.track
	switch {
	case len(key) > len(prefixKV) && key[:len(prefixKV)] == prefixKV:
		t.keys = append(t.keys, key[len(prefixKV):])
		t.kvs++
	case len(key) > len(prefixLock) && key[:len(prefixLock)] == prefixLock:
		t.keys = append(t.keys, key[len(prefixLock):])
		t.locks++
	}
}

// dedupe drops the second listing of a name changed both as a lock and
// as a plain key, keeping the order of first change (only then can a name
// repeat: markDirty notes each record once per entry).
func (t *trackKeys) dedupe() {
	if t.locks == 0 || t.kvs == 0 {
		return
	}
	seen := make(map[string]struct{}, len(t.keys))
	kept := make([]int, len(t.keys)+1) // kept[i]: keys kept among the first i
	out := t.keys[:0]
	for i, k := range t.keys {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
		kept[i+1] = len(out)
	}
	for i := range t.reads {
		t.reads[i].At = kept[t.reads[i].At]
	}
	t.keys = out
}

// readKeys records a read command of the entry in progress: keys, or nil
// for a script's read (its declared keys). Repeated script reads with no
// change between them are one.
func (s *State) readKeys(keys []string) {
	t := &s.track
	if !t.applying {
		return
	}
	at := len(t.keys)
	if keys == nil && len(t.reads) > 0 {
		if last := t.reads[len(t.reads)-1]; last.At == at && last.Keys == nil {
			return
		}
	}
	t.reads = append(t.reads, Read{At: at, Keys: keys})
}

// keyspaceFlushed records that the entry emptied the keyspace; the keys it
// deleted are not listed one by one (a flush invalidates everything).
// FLUSHALL and FLUSHDB call it after deleting.
func (s *State) keyspaceFlushed() {
	t := &s.track
	t.flushed, t.keys, t.locks, t.kvs = true, t.keys[:0], 0, 0
	for i := range t.reads {
		t.reads[i].At = 0
	}
}

// takeChanges returns the entry's Changes and resets the scratch. Every
// keyspace entry (OpExec) has them, so that its proposer always finds it;
// another entry only if it changed a key.
func (s *State) takeChanges(e *Entry) *Changes {
	t := &s.track
	t.dedupe()
	var c *Changes
	if e.Op == OpExec || len(t.keys) > 0 || len(t.reads) > 0 || t.flushed {
		c = &Changes{Op: e.Op, Args: e.Args, Keys: t.keys, Reads: t.reads, Flushed: t.flushed}
	}
	*t = trackKeys{}
	return c
}

// runReadOnly is runScript for EVAL_RO and EVALSHA_RO served as reads,
// outside the log (EvalROReads): read is set if the script calls a read
// command, which readKeys cannot record there (the scratch is the
// entry's, and such reads run concurrently).
func (s *State) runReadOnly(ev commands.Eval, sb script.Shebang, user string, unix, now int64, read *bool) reply.Value {
	if sb.Present && !sb.Has(script.FlagNoWrites) {
		return errROWriteFlag
	}
	env := newScriptEnv(s, now, unix, user, true)
	env.read = read
	v := s.engine.RunAt(ev.Body, ev.Keys, ev.Argv, env, int64(s.index), s.Version())
	return capDepth(v, 0)
}
