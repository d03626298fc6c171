package reply

import (
	"errors"
	"strings"
)

// Err is a Go error that a client sees as an error reply: the RESP code
// ("ERR", "NOSESSION", "WRONGTYPE") and the message after it. The packages
// declare their sentinels as *Err, so each carries its own code, and callers
// add detail by wrapping: fmt.Errorf("%w: detail", ErrX), sentinel first, so
// the text still starts with the code. errors.Is finds the sentinel as with
// any error.
type Err struct {
	Code string
	Msg  string
}

// NewErr returns a sentinel error with a RESP code and a message.
func NewErr(code, msg string) *Err { return &Err{Code: code, Msg: msg} }

func (e *Err) Error() string { return e.Code + " " + e.Msg }

// ErrorOf is the error reply of err: the one path from a Go error to what a
// client reads, for native commands, keyspace commands and scripts alike.
// The code is that of the first *Err err wraps, or ERR. A message that
// does not start with its code (an *Err wrapped behind other text) gets the
// code moved to the front.
func ErrorOf(err error) Value {
	msg := err.Error()
	e, ok := errors.AsType[*Err](err)
	if !ok {
		return Error("ERR " + msg)
	}
	if strings.HasPrefix(msg, e.Code+" ") {
		return Error(msg)
	}
	return Error(e.Code + " " + strings.Replace(msg, e.Error(), e.Msg, 1))
}
