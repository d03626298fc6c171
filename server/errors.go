package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Errors of the server itself.
var (
	// ErrShuttingDown answers a waiting FLOCK whose wait was cancelled
	// because the server is shutting down.
	ErrShuttingDown = reply.NewErr("CANCELLED", "wait cancelled: the server is shutting down")
	// ErrShutdownUncertain answers a waiting FLOCK at shutdown when its
	// wait could not be taken out of the queue: the lock may still be
	// granted to it, so CANCELLED would be a lie.
	ErrShutdownUncertain = reply.NewErr("UNCERTAIN", "the server is shutting down and could not cancel the wait; it may still be granted (retry with the same REQ to learn its outcome)")
	// ErrDBIndex is returned by SELECT of a database other than 0.
	ErrDBIndex = reply.NewErr("ERR", "DB index is out of range")
	// ErrNoProto is returned by HELLO with a protocol other than 2 or 3.
	ErrNoProto = reply.NewErr("NOPROTO", "unsupported protocol version")
)

// errorReply turns an error into a RESP error reply. Every error a client
// may see is a reply.Err that carries its own code (see DESIGN.md, Error
// replies); reply.ErrorOf is the one conversion, shared with the state
// machine's keyspace commands and scripts.
func errorReply(err error) resp.Value {
	var remote remoteError
	if errors.As(err, &remote) {
		return resp.Error(string(remote)) // the leader's reply, as it was
	}
	v := reply.ErrorOf(err)
	if rest, ok := strings.CutPrefix(v.Str, "UNCERTAIN "); ok && plant.On(plant.LostIsFailure) {
		return resp.Error("TRYAGAIN " + rest) // the planted bug: an unknown outcome reported as a failure
	}
	return resp.FromReply(v)
}

// wrapArity is the arity error of a subcommand, which the table can't check.
func wrapArity(name string) error {
	return fmt.Errorf("%w for '%s' command", commands.ErrArity, name)
}
