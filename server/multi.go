package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH with Redis 7.0's
// semantics. The connection queues its commands here, on the
// node that holds it; EXEC proposes the keyspace commands of the queue,
// with the keys WATCHed, as one OpMulti entry, which every replica applies
// atomically (lockstate/tx.go), and the connection's own commands (PING,
// ECHO, SUBSCRIBE, ...) run here around it, in queue order. WATCH records,
// through a linearizable read on the leader, the log index up to which it
// saw each key; the state machine fails the EXEC if a key changed after it
// (lockstate/mods.go; DESIGN.md, Transactions).
//
// A transaction goes through the log even when it only reads: its watches
// are checked where the keys' changes are known, inside the entry, and it
// sees one instant of the state as Redis's EXEC does.

// Replies of the transaction commands, in Redis's words.
var (
	errNestedMulti   = resp.Error("ERR MULTI calls can not be nested")
	errExecNoMulti   = resp.Error("ERR EXEC without MULTI")
	errDiscardNo     = resp.Error("ERR DISCARD without MULTI")
	errWatchInMulti  = resp.Error("ERR WATCH inside MULTI is not allowed")
	errExecAbort     = resp.Error("EXECABORT Transaction discarded because of previous errors.")
	execAbortBecause = "EXECABORT Transaction discarded because of: "
	// ErrNotInMulti refuses, when queued, a command that does not run
	// inside a transaction's entry: the native lock and session commands
	// (a FLOCK that waits would hold the state machine), the membership
	// commands. Redis's words for its no-multi commands.
	ErrNotInMulti = reply.NewErr("ERR", "Command not allowed inside a transaction")
	// ErrTxTooLarge refuses a command (or WATCH) that would take the
	// transaction's entry past what one forwarded entry may carry.
	ErrTxTooLarge = reply.NewErr("ERR", "transaction too large")
)

// Each queued argument and watched key counts its bytes and this much for
// its framing in the entry.
const (
	txArgOverhead   = 8
	txWatchOverhead = 16
	txSlack         = 1 << 10 // the entry's fixed fields
)

// txState is a connection's MULTI in progress.
type txState struct {
	queued [][]string
	bytes  int
	// failed: a command was refused while queueing; EXEC answers
	// EXECABORT, and nothing more is kept meanwhile (as Redis).
	failed bool
}

// watchState is what a connection has WATCHed since its last EXEC,
// DISCARD, UNWATCH or RESET.
type watchState struct {
	list  []lockstate.Watch
	keys  map[string]struct{}
	bytes int
}

// txBudget is the most bytes a transaction's commands and watched keys may
// take together: its entry is forwarded to the leader as one argument of
// RAFT.PROPOSE, which the leader reads with the same per-argument limit
// as a client's (proto-max-bulk-len, 512 KiB by default). So a transaction
// that runs on one node runs on every node, and none grows a connection's
// memory without bound.
func (s *Server) txBudget() int {
	n := s.cfg.Limits.MaxBulk
	if n <= 0 {
		n = resp.DefaultLimits().MaxBulk
	}
	return max(n-txSlack, 0)
}

func txArgsBytes(args [][]byte) int {
	n := txArgOverhead
	for _, a := range args {
		n += len(a) + txArgOverhead
	}
	return n
}

// inMulti returns c's transaction in progress, or nil.
func inMulti(c *resp.Conn) *connState {
	if st, ok := c.State().(*connState); ok && st.tx != nil {
		return st
	}
	return nil
}

// txControl reports whether the command named by name runs at once even
// inside MULTI, as in Redis: the transaction's own commands, QUIT and
// RESET.
func (s *Server) txControl(name []byte) (string, bool) {
	spec, ok := s.table.Lookup(name)
	if !ok {
		return "", false
	}
	switch spec.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return spec.Name, true
	}
	return spec.Name, false
}

// inTransaction handles a command that arrives while c is in MULTI, after
// the table's and the gate's checks (err): it is queued, or refused and
// the transaction flagged. ok is false for the commands that run as
// ever (txControl), whose own refusal (err) still flags the transaction,
// and aborts it for EXEC.
func (s *Server) inTransaction(c *resp.Conn, st *connState, spec *commands.Spec, args [][]byte, err error) (resp.Value, bool) {
	name, control := s.txControl(args[0])
	if control {
		if err == nil {
			return resp.Value{}, false
		}
		if name == "exec" {
			// Redis quotes the reason without its ERR, a code word kept.
			s.discardTx(st)
			return resp.Error(execAbortBecause + strings.TrimPrefix(errorReply(err).Text(), "ERR ")), true
		}
		st.tx.failed = true
		return resp.Value{}, false
	}
	if err == nil {
		err = s.queueable(c, st, spec, args)
	}
	if err != nil {
		st.tx.failed, st.tx.queued, st.tx.bytes = true, nil, 0
		return errorReply(err), true
	}
	if s.listening(c) {
		if v := s.inSubscribedMode(c, spec.Name, args); v.IsError() {
			st.tx.failed, st.tx.queued, st.tx.bytes = true, nil, 0
			return v, true
		}
	}
	if !st.tx.failed {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = string(a)
		}
		st.tx.queued = append(st.tx.queued, q)
		st.tx.bytes += txArgsBytes(args)
	}
	return resp.SimpleString("QUEUED"), true
}

// queueable says why a command may not be queued, if it may not: it does
// not run inside a transaction, the state is full (Redis refuses every
// command queued then, since the queue could grow without bound), or the
// transaction would outgrow one entry.
func (s *Server) queueable(c *resp.Conn, st *connState, spec *commands.Spec, args [][]byte) error {
	if !spec.Has(commands.Keyspace) && !spec.Has(commands.Conn) || spec.Has(commands.Peer) || spec.Has(commands.NoMulti) {
		return ErrNotInMulti
	}
	if s.overMemory() {
		return lockstate.ErrOOM
	}
	w := 0
	if st.watch != nil {
		w = st.watch.bytes
	}
	if budget := s.txBudget(); w+st.tx.bytes+txArgsBytes(args) > budget {
		return fmt.Errorf("%w: its commands and watched keys would take more than %d bytes, the most one entry carries (proto-max-bulk-len less 1 KiB)", ErrTxTooLarge, budget)
	}
	return nil
}

// overMemory reports whether this node's state is at its --maxmemory: what
// Redis checks before queueing. The entry itself is checked again, alike on
// every replica, when it applies.
func (s *Server) overMemory() bool {
	limit := s.node.MaxMemory()
	if limit <= 0 {
		return false
	}
	var used int64
	s.node.Local(func(st *lockstate.State) { used = st.Used() })
	return used >= limit
}

func (s *Server) multi(c *resp.Conn, _ [][]byte) resp.Value {
	st := stateOf(c)
	if st.tx != nil {
		return errNestedMulti
	}
	st.tx = &txState{}
	return resp.SimpleString("OK")
}

func (s *Server) discard(c *resp.Conn, _ [][]byte) resp.Value {
	st := stateOf(c)
	if st.tx == nil {
		return errDiscardNo
	}
	s.discardTx(st)
	return resp.SimpleString("OK")
}

// discardTx ends c's transaction and its watches (DISCARD, EXEC, RESET).
func (s *Server) discardTx(st *connState) { st.tx, st.watch = nil, nil }

func (s *Server) unwatch(c *resp.Conn, _ [][]byte) resp.Value {
	stateOf(c).watch = nil
	return resp.SimpleString("OK")
}

// watch records, for each key not watched yet, the index up to which the
// leader's state holds its changes, read linearizably.
func (s *Server) watch(c *resp.Conn, args [][]byte) resp.Value {
	st := stateOf(c)
	if st.tx != nil {
		return errWatchInMulti
	}
	w := st.watch
	if w == nil {
		w = &watchState{keys: make(map[string]struct{})}
	}
	var keys []string
	add := 0
	for _, a := range args[1:] {
		k := string(a)
		if _, ok := w.keys[k]; ok {
			continue
		}
		w.keys[k] = struct{}{} // also dedups args; undone below on failure
		keys = append(keys, k)
		add += len(k) + txWatchOverhead
	}
	undo := func() {
		for _, k := range keys {
			delete(w.keys, k)
		}
	}
	if budget := s.txBudget(); w.bytes+add > budget {
		undo()
		return errorReply(fmt.Errorf("%w: the watched keys would take more than %d bytes, the most one entry carries (proto-max-bulk-len less 1 KiB)", ErrTxTooLarge, budget))
	}
	if len(keys) > 0 {
		ws, err := s.watchRead(c.Context(), keys)
		if err != nil {
			undo()
			return errorReply(err)
		}
		w.list = append(w.list, ws...)
		w.bytes += add
	}
	st.watch = w
	return resp.SimpleString("OK")
}

// watchRead is the leader's Watches of keys: here when this node leads,
// else through RAFT.WATCH on a link.
func (s *Server) watchRead(ctx context.Context, keys []string) ([]lockstate.Watch, error) {
	addr, err := s.leaderPeer()
	if err != nil {
		return nil, err
	}
	if addr == "" {
		return s.watchLocal(ctx, keys)
	}
	args := make([][]byte, 0, len(keys)+1)
	args = append(args, []byte("RAFT.WATCH"))
	for _, k := range keys {
		args = append(args, []byte(k))
	}
	v, err := s.fwd.doAs(ctx, addr, readTimeout, defaultUser, args...)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrLeaderUnreachable, err)
	case v.IsError():
		return nil, remoteError(v.Text())
	}
	return decodeWatches(v, keys)
}

func (s *Server) watchLocal(ctx context.Context, keys []string) ([]lockstate.Watch, error) {
	var ws []lockstate.Watch
	v := s.read(ctx, func(st *lockstate.State, now int64) resp.Value {
		ws = st.Watches(keys, now)
		return resp.SimpleString("OK")
	})
	if v.IsError() {
		return nil, remoteError(v.Text())
	}
	return ws, nil
}

// raftWatch is RAFT.WATCH key..., from a follower whose client WATCHes:
// the index (as a decimal bulk string, an uint64) and a stale flag per key.
func (s *Server) raftWatch(c *resp.Conn, args [][]byte) resp.Value {
	keys := make([]string, len(args)-1)
	for i, a := range args[1:] {
		keys[i] = string(a)
	}
	ws, err := s.watchLocal(c.Context(), keys)
	if err != nil {
		return errorReply(err)
	}
	out := make([]resp.Value, 0, len(ws)+1)
	var idx uint64
	if len(ws) > 0 {
		idx = ws[0].Index
	}
	out = append(out, resp.BulkString(strconv.FormatUint(idx, 10)))
	for _, w := range ws {
		b := int64(0)
		if w.Stale {
			b = 1
		}
		out = append(out, resp.Int(b))
	}
	return resp.Array(out...)
}

func decodeWatches(v resp.Value, keys []string) ([]lockstate.Watch, error) {
	el := v.Elems()
	if len(el) != len(keys)+1 {
		return nil, fmt.Errorf("%w: RAFT.WATCH answered %d values for %d keys", ErrLeaderUnreachable, len(el), len(keys))
	}
	idx, err := strconv.ParseUint(el[0].Text(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: RAFT.WATCH index: %v", ErrLeaderUnreachable, err)
	}
	ws := make([]lockstate.Watch, len(keys))
	for i, k := range keys {
		n := el[i+1].Integer()
		ws[i] = lockstate.Watch{Key: k, Index: idx, Stale: n == 1}
	}
	return ws, nil
}

// exec runs the transaction: the keyspace commands and the watches as one
// OpMulti entry, the connection's own commands here, in queue order.
func (s *Server) exec(c *resp.Conn, _ [][]byte) resp.Value {
	st := stateOf(c)
	tx, w := st.tx, st.watch
	if tx == nil {
		return errExecNoMulti
	}
	s.discardTx(st)
	if tx.failed {
		return errExecAbort
	}
	var e lockstate.Entry
	inEntry := make([]bool, len(tx.queued))
	writes := false
	for i, q := range tx.queued {
		spec, _ := s.table.Lookup([]byte(q[0]))
		if spec != nil && spec.Has(commands.Keyspace) {
			inEntry[i] = true
			e.Cmds = append(e.Cmds, q)
			writes = writes || spec.Has(commands.Write)
		}
	}
	if w != nil {
		e.Watches = w.list
	}
	var elems []reply.Value
	if len(e.Cmds) > 0 || len(e.Watches) > 0 {
		if writes {
			if err := s.node.DiskError(); err != nil {
				return resp.Error(execAbortBecause + errorReply(err).Text())
			}
		}
		if !s.start.settled.Load() && fromClient(c) && !s.start.wait(c.Context(), settleWait) {
			return errorReply(fmt.Errorf("%w: %s", ErrStarting, s.start.why()))
		}
		e.Op = lockstate.OpMulti
		e.User, e.AsAdmin = s.actor(c)
		res, err := s.submit(c.Context(), e)
		switch {
		case err != nil:
			return errorReply(err)
		case res.Err != nil:
			return errorReply(res.Err)
		case res.Reply.Kind != reply.KindArray || len(res.Reply.Elems) != len(e.Cmds):
			return resp.FromReply(res.Reply) // a watched key changed (null), or EXECABORT
		}
		elems = res.Reply.Elems
	}
	var out []resp.Value
	j := 0
	for i, q := range tx.queued {
		if inEntry[i] {
			v := resp.FromReply(elems[j])
			j++
			if len(q) == 3 && !v.IsError() && s.isCommand(q[0], "publish") {
				// As PUBLISH alone: this node's receivers, now that its own
				// apply has delivered the message.
				v = resp.Int(s.pubsub.receivers(q[1]))
			}
			out = append(out, v)
			continue
		}
		out = append(out, s.runQueued(c, q)...)
	}
	return resp.Array(out...)
}

func (s *Server) isCommand(name, want string) bool {
	spec, ok := s.table.Lookup([]byte(name))
	return ok && spec.Name == want
}

// runQueued runs one of the connection's own commands at EXEC. SUBSCRIBE
// and UNSUBSCRIBE answer one element per channel inside the array (Redis
// writes them after an array header that counts the command once: the
// same bytes for one channel).
func (s *Server) runQueued(c *resp.Conn, q []string) []resp.Value {
	args := make([][]byte, len(q))
	for i, a := range q {
		args[i] = []byte(a)
	}
	spec, ok := s.table.Lookup(args[0])
	if !ok {
		return []resp.Value{errorReply(commands.UnknownCommand(args))}
	}
	var out []resp.Value
	collect := func(v resp.Value) error { out = append(out, v); return nil }
	var with func(*resp.Conn, [][]byte, func(resp.Value) error) resp.Value
	switch spec.Name {
	case "subscribe":
		with = s.subscribeWith
	case "unsubscribe":
		with = s.unsubscribeWith
	case "psubscribe":
		with = s.psubscribeWith
	case "punsubscribe":
		with = s.punsubscribeWith
	}
	if with != nil {
		if v := with(c, args, collect); v.Kind() != resp.KindPushed {
			out = append(out, v)
		}
		return out
	}
	if v := s.cmds[spec.Name](c, args); v.Kind() != resp.KindPushed {
		return []resp.Value{v}
	}
	return nil // CLIENT REPLY OFF or SKIP: no reply of its own
}
