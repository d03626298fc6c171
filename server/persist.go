package server

import (
	"bytes"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// Redis's persistence and shutdown commands, for this node. fenced's state
// is on disk once an entry commits (the Raft log in Pebble), so there is no
// dataset to lose: SAVE and BGSAVE take a Raft snapshot, which compacts the
// log (RAFT.SNAPSHOT), and SHUTDOWN stops the node as SIGTERM does, handing
// leadership over first.

var (
	errBgsaveRunning   = resp.Error("ERR Background save already in progress")
	errShutdownNoAbort = resp.Error("ERR No shutdown in progress.")
	errShutdownSave    = resp.Error("ERR Errors trying to SHUTDOWN. Check logs.")
)

func (s *Server) save(_ *resp.Conn, _ [][]byte) resp.Value {
	if !s.bgsaving.CompareAndSwap(false, true) {
		return errBgsaveRunning // as Redis: SAVE refuses beside a BGSAVE
	}
	defer s.bgsaving.Store(false)
	return s.raftSnapshot(nil, nil)
}

// bgsave answers at once and snapshots in the background; SCHEDULE, which
// in Redis waits for an AOF rewrite, has nothing to wait for here.
func (s *Server) bgsave(_ *resp.Conn, args [][]byte) resp.Value {
	switch {
	case len(args) > 2:
		return errorReply(wrapArity("bgsave"))
	case len(args) == 2 && !bytes.EqualFold(args[1], []byte("schedule")):
		return errorReply(commands.ErrSyntax)
	}
	if !s.bgsaving.CompareAndSwap(false, true) {
		return errBgsaveRunning
	}
	go func() {
		defer s.bgsaving.Store(false)
		if err := s.node.Snapshot(); err != nil {
			s.log.Warn("BGSAVE", "err", err)
		}
	}()
	return resp.SimpleString("Background saving started")
}

// shutdownCmd is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. On success
// the connection closes with no reply, as Redis's does. SAVE snapshots
// first and, unless FORCE, gives up if that fails; NOW has nothing to skip
// (no replica lag is waited for: Serve hands leadership over instead).
func (s *Server) shutdownCmd(c *resp.Conn, args [][]byte) resp.Value {
	var save, nosave, abort, other bool
	force := false
	for _, a := range args[1:] {
		switch {
		case bytes.EqualFold(a, []byte("nosave")):
			nosave = true
		case bytes.EqualFold(a, []byte("save")):
			save = true
		case bytes.EqualFold(a, []byte("now")):
			other = true
		case bytes.EqualFold(a, []byte("force")):
			other, force = true, true
		case bytes.EqualFold(a, []byte("abort")):
			abort = true
		default:
			return errorReply(commands.ErrSyntax)
		}
	}
	if save && nosave || abort && (save || nosave || other) {
		return errorReply(commands.ErrSyntax)
	}
	if abort {
		return errShutdownNoAbort // a shutdown here never waits, so none is pending
	}
	if save {
		if err := s.node.Snapshot(); err != nil && !force {
			s.log.Warn("SHUTDOWN SAVE", "err", err)
			return errShutdownSave
		}
	}
	s.log.Info("SHUTDOWN requested", "client", c.RemoteAddr())
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
	c.Close()
	return resp.Value{}
}
