package server

import (
	"slices"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// Tracking and read-only scripts. Redis tracks a script's declared keys
// for its caller only when the script calls a read command (server.c,
// call(): the keys of the caller's command, remembered at each read it
// makes), so EVAL_RO "redis.call('ping')" 1 k tracks nothing. A script
// in the log (EVAL, FCALL, an EVAL_RO not cached yet) is tracked at its
// entry's reads (tracker.applied). EVAL_RO and EVALSHA_RO served as
// reads are tracked before they run, as every read is, so that no entry
// applied after the state they read is missed; once the script has run
// without a read, the keys that command alone tracked are forgotten
// again. A follower forwards the read whole and never learns whether it
// read: there the keys stay tracked (an invalidation too many at worst),
// and so they do for FCALL_RO.

// scriptTrack is what before tracked for a read-only script: its keys,
// and those of them the connection did not track already.
type scriptTrack struct {
	keys  [][]byte
	fresh []string
}

// roScript reports whether spec is a read-only script command.
func roScript(spec *commands.Spec) bool {
	switch spec.Name {
	case "eval_ro", "evalsha_ro":
		return true
	}
	return false
}

// fresh returns the keys id does not track yet.
func (t *tracker) fresh(id int64, keys [][]byte) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, k := range keys {
		if _, ok := t.keys[string(k)][id]; !ok && !slices.Contains(out, string(k)) {
			out = append(out, string(k))
		}
	}
	return out
}

// takeScript returns and clears what before tracked for c's read-only
// script, nil if nothing.
func takeScript(c *resp.Conn) *scriptTrack {
	tr := trackedOf(c)
	if tr == nil {
		return nil
	}
	st := tr.script
	tr.script = nil
	return st
}

// scriptRan is told whether the read-only script st was tracked for
// read: if not, the keys only it tracked are forgotten. Called while the
// state the script read is still held, so that no invalidation of those
// keys is yet to come from an entry applied after it.
func (t *tracker) scriptRan(id int64, st *scriptTrack, read bool) {
	if st == nil || read {
		return
	}
	t.forget(id, st.fresh)
}

// forget stops tracking keys for id.
func (t *tracker) forget(id int64, keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		ids, ok := t.keys[k]
		if !ok {
			continue
		}
		if _, ok := ids[id]; !ok {
			continue
		}
		delete(ids, id)
		t.items--
		if len(ids) == 0 {
			t.deleteKeyLocked(k)
		}
	}
}

// scriptInLog is the tracking of an EVAL_RO that goes through the log (its
// script is not cached yet): as an EVAL's, at the entry's reads, so the
// keys before tracked for it are forgotten and a proposal takes their
// place. It returns the proposal, nil if c does not track the keys.
func (t *tracker) scriptInLog(c *resp.Conn, st *scriptTrack, args [][]byte) *proposal {
	if st == nil {
		return nil
	}
	t.forget(c.ID(), st.fresh)
	p := &proposal{id: c.ID(), args: make([]string, len(args)), at: time.Now(), track: true}
	for i, a := range args {
		p.args[i] = string(a)
	}
	for _, k := range st.keys {
		p.keys = append(p.keys, string(k))
	}
	if tr := trackedOf(c); tr != nil {
		p.noloop = tr.mode.NoLoop
	}
	t.mu.Lock()
	t.proposals = append(t.proposals, p)
	t.mu.Unlock()
	return p
}
