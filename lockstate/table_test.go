package lockstate

import (
	"strings"
	"testing"

	"github.com/fenced/fenced/commands"
)

// loggedReads are the read-only scripts: Read commands that the log also
// applies, inside a transaction's entry and (EVAL_RO) to cache a script.
var loggedReads = map[string]bool{"eval_ro": true, "evalsha_ro": true, "fcall_ro": true}

// TestKeyspaceFlag: the table's Keyspace flag names exactly the commands
// the state machine executes, reads among the Read commands and writes
// among the Write ones, so that the server's two generic handlers serve
// them all and nothing else.
//
// The read-only scripts (EVAL_RO, EVALSHA_RO, FCALL_RO) are the
// exception: Read commands with handlers of their own in the server, served
// on the read path (State.EvalRO, State.FcallRO), which the log also applies
// with a write handler inside a transaction's entry, and when an uncached
// EVAL_RO must cache its script.
func TestKeyspaceFlag(t *testing.T) {
	s := New(Config{})
	for _, spec := range commands.New().All() {
		r, w := readHandler(spec.Name) != nil, writeHandler(spec.Name) != nil
		if loggedReads[spec.Name] {
			if r || !w || !spec.Has(commands.Read) || !spec.Has(commands.Keyspace) {
				t.Errorf("%s: read handler %v, write handler %v, table flags %b; want a Read Keyspace command with a write handler only", spec.Name, r, w, spec.Flags)
			}
			continue
		}
		if spec.Has(commands.Keyspace) != (r || w) {
			t.Errorf("%s: Keyspace flag %v, but read handler %v, write handler %v", spec.Name, spec.Has(commands.Keyspace), r, w)
		}
		if r && !spec.Has(commands.Read) || w && !spec.Has(commands.Write) {
			t.Errorf("%s: read handler %v, write handler %v, table flags %b", spec.Name, r, w, spec.Flags)
		}

		// Exec, as the server reaches it: a read is run, a write refused
		// because it belongs in the log, anything else is not its own.
		n := spec.Arity
		if n < 0 {
			n = -n
		}
		args := []string{strings.ToUpper(spec.Name)}
		for len(args) < n {
			args = append(args, "k")
		}
		v := s.Exec(args, 0)
		isWrite := strings.Contains(v.Str, "is a write command")
		notOurs := strings.Contains(v.Str, "is not a keyspace command")
		switch {
		case spec.Has(commands.Keyspace | commands.Read):
			if isWrite || notOurs {
				t.Errorf("Exec(%q) = %v, want it run", args, v)
			}
		case spec.Has(commands.Keyspace | commands.Write):
			if !isWrite {
				t.Errorf("Exec(%q) = %v, want it refused as a write", args, v)
			}
		default:
			if !notOurs {
				t.Errorf("Exec(%q) = %v, want it refused as not a keyspace command", args, v)
			}
		}
	}
}
