package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

// Errors of the server itself.
var (
	// ErrTTLRange is returned by SESSION.OPEN for a TTL outside the
	// configured bounds.
	ErrTTLRange = errors.New("server: TTL out of range")
	// ErrShuttingDown answers a waiting FLOCK whose wait was cancelled
	// because the server is shutting down.
	ErrShuttingDown = errors.New("server: wait cancelled: the server is shutting down")
	// ErrDBIndex is returned by SELECT of a database other than 0.
	ErrDBIndex = errors.New("server: DB index is out of range")
	// ErrNoProto is returned by HELLO with a protocol other than 2 or 3.
	ErrNoProto = errors.New("server: unsupported protocol version")
)

// errorCodes is the one table from errors to RESP error codes (SPEC
// section 6). The order matters only for errors that wrap two sentinels;
// anything not listed is "ERR".
var errorCodes = []struct {
	err  error
	code string
}{
	{raftstore.ErrUncertain, "UNCERTAIN"},
	{ErrForwardLost, "UNCERTAIN"},
	{ErrLeaderUnreachable, "TRYAGAIN"},
	{ErrStarting, "TRYAGAIN"},
	{raftstore.ErrNoLeader, "CLUSTERDOWN"},
	{raftstore.ErrNotLeader, "TRYAGAIN"},
	{raftstore.ErrNotReady, "TRYAGAIN"},
	{lockstate.ErrNoSession, "NOSESSION"},
	{lockstate.ErrNotOwner, "NOTOWNER"},
	{lockstate.ErrLimit, "LIMIT"},
	{lockstate.ErrStaleFence, "STALEFENCE"},
	{lockstate.ErrCancelled, "CANCELLED"},
	{lockstate.ErrWrongType, "WRONGTYPE"},
	{ErrNoProto, "NOPROTO"},
	{ErrShuttingDown, "CANCELLED"},
}

// packagePrefixes are stripped from messages: clients see "ERR syntax
// error", not the Go package that produced it.
var packagePrefixes = []string{"commands: ", "lockstate: ", "raftstore: ", "server: "}

// errorReply turns an error into a RESP error reply.
func errorReply(err error) resp.Value {
	var remote remoteError
	if errors.As(err, &remote) {
		return resp.Error(string(remote)) // the leader's reply, as it was
	}
	code := "ERR"
	for _, ec := range errorCodes {
		if errors.Is(err, ec.err) {
			code = ec.code
			break
		}
	}
	if code == "UNCERTAIN" && plant.On(plant.LostIsFailure) {
		code = "TRYAGAIN" // the planted bug: an unknown outcome reported as a failure
	}
	msg := err.Error()
	// Strip prefixes at the start of each wrapped part only, so user text
	// quoted inside a message mostly stays as sent.
	for prev := ""; prev != msg; { // until no part starts with a prefix
		prev = msg
		for _, p := range packagePrefixes {
			msg = strings.ReplaceAll(strings.TrimPrefix(msg, p), ": "+p, ": ")
		}
	}
	if strings.HasPrefix(msg, code+" ") {
		return resp.Error(msg) // the message already starts with its code
	}
	return resp.Error(code + " " + msg)
}

// wrapArity is the arity error of a subcommand, which the table can't check.
func wrapArity(name string) error {
	return fmt.Errorf("%w for '%s' command", commands.ErrArity, name)
}
