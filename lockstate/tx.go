package lockstate

import (
	"errors"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/reply"
)

// Transactions (MULTI ... EXEC). The server queues a connection's commands
// and proposes them, with the keys it WATCHed, as one OpMulti entry at
// EXEC; the state machine runs them here, one after another, within the
// entry: atomic on every replica, whichever node took them. As in Redis,
// an error of one command is its element of the reply and the others run
// (no rollback), and a watched key changed since its WATCH makes the
// whole reply a null array with nothing run (mods.go decides "changed").
//
// Only the keyspace's commands (reads and writes, scripts, PUBLISH) run in
// the entry; the server refuses the native lock and session commands when
// they are queued, and answers the connection's own commands itself.

// Replies of a transaction, in Redis's words.
var (
	errTxOOM = reply.Error("EXECABORT Transaction discarded because of: " + ErrOOM.Error())
	// errTxNotAllowed answers a queued command that does not run inside an
	// entry: the server refuses such commands when they are queued.
	errTxNotAllowed = reply.Error("ERR Command not allowed inside a transaction")
	errTxNoPerm     = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: "
)

// multi is OpMulti.
func (s *State) multi(e Entry, now int64) Result {
	if s.Version() < txVersion {
		return Result{Reply: reply.ErrorOf(commands.UnknownCommand([][]byte{[]byte("exec")}))}
	}
	// What this entry's expiry deleted counts as changed at its index.
	s.stampMods()
	for _, w := range e.Watches {
		if s.watchBroken(w) && !plant.On(plant.WatchesDropped) {
			return Result{Reply: reply.NullArray()}
		}
	}
	// Redis refuses the whole EXEC, rather than its commands one by one,
	// when memory is full and a queued command may grow it.
	if s.maxMemory > 0 && s.used >= s.maxMemory {
		for _, c := range e.Cmds {
			if spec, ok := s.table.Lookup([]byte(c[0])); ok && spec.Has(commands.DenyOOM) {
				return Result{Reply: errTxOOM}
			}
		}
	}
	out := make([]reply.Value, len(e.Cmds))
	for i, c := range e.Cmds {
		// One level below the EXEC array: a script's reply is kept within
		// the depth a forwarded Result may carry.
		out[i] = capDepth(s.txCall(c, now), 1)
	}
	return Result{Reply: reply.Array(out...)}
}

// txCall runs one queued command at the entry's time, with the checks a
// command sent alone gets in the state machine (its name and arity at the
// cluster's version) and, as Redis does at EXEC, the entry's user's ACL
// again: the user may have changed since the command was queued.
func (s *State) txCall(args []string, now int64) reply.Value {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	spec, err := s.checkAt(a)
	if err != nil {
		return reply.ErrorOf(err)
	}
	if err := s.permittedAs(s.user, spec, a); err != nil {
		why := "no permission to execute the command or subcommand"
		if errors.Is(err, ErrScriptNoKeyPerm) {
			why = "no permission to touch the specified keys"
		}
		return reply.Error(errTxNoPerm + why)
	}
	if h := readHandler(spec.Name); h != nil {
		return h(s, a, now)
	}
	if h := writeHandler(spec.Name); h != nil {
		return s.write(spec, h, a, now)
	}
	return errTxNotAllowed
}
