package commands

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fenced/fenced/reply"
)

// NoWait is Flock.Wait when no WAIT option was given.
const NoWait = -1

// Caps on the names a client gives the native commands. Each becomes part
// of a replicated record (a lock, a waiter, a remembered request, a
// session), so each is bounded well below the argument limit; a request
// over a cap is refused before it is proposed, and changes nothing.
const (
	MaxLockName = 4096 // FLOCK's lock name
	MaxOwner    = 256  // OWNER tags
	MaxReq      = 128  // REQ ids
	MaxLabel    = 1024 // SESSION.OPEN NAME labels
)

// The errors of the caps above.
var (
	ErrLockNameTooLong = reply.NewErr("ERR", "lock name longer than 4096 bytes")
	ErrOwnerTooLong    = reply.NewErr("ERR", "OWNER tag longer than 256 bytes")
	ErrReqTooLong      = reply.NewErr("ERR", "REQ id longer than 128 bytes")
	ErrLabelTooLong    = reply.NewErr("ERR", "session NAME longer than 1024 bytes")
)

// CheckCaps refuses a lock name, owner tag, REQ id or session label over
// its cap ("" passes: not given). The server also runs it on entries
// another node forwards, which it did not parse itself.
func CheckCaps(lock, owner, req, label string) error {
	switch {
	case len(lock) > MaxLockName:
		return ErrLockNameTooLong
	case len(owner) > MaxOwner:
		return ErrOwnerTooLong
	case len(req) > MaxReq:
		return ErrReqTooLong
	case len(label) > MaxLabel:
		return ErrLabelTooLong
	}
	return nil
}

// Flock is a parsed FLOCK.
type Flock struct {
	Lock, Session, Owner string
	Wait                 int64 // NoWait, 0 (forever) or ms
	Limit                int64
	Req                  string
}

// Funlock is a parsed FUNLOCK.
type Funlock struct {
	Lock, Session, Owner string
	Fence                int64 // 0 when not given
	Req                  string
}

// Fence is a parsed FENCE.
type Fence struct {
	Lock, Session, Owner string
	WithOwner            bool
	// IfEq is FENCE key IFEQ value: the key's token only while it holds
	// exactly Value (the holder's own token read, immune to a successor).
	IfEq  bool
	Value string
}

// SessionOpen is a parsed SESSION.OPEN. TTL is 0 when not given.
type SessionOpen struct {
	TTL  int64
	Name string
}

// ForceUnlock is a parsed LOCK.FORCEUNLOCK.
type ForceUnlock struct {
	Lock  string
	Token int64
}

// options walks "NAME value" pairs in any order, case-insensitively.
func options(args [][]byte, set func(name string, value []byte) error) error {
	for i := 0; i < len(args); i += 2 {
		name := strings.ToUpper(string(args[i]))
		if i+1 >= len(args) {
			return fmt.Errorf("%w: %s needs a value", ErrSyntax, Clip(args[i]))
		}
		if err := set(name, args[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func unknownOption(name string) error {
	return fmt.Errorf("%w: unknown option %s", ErrSyntax, Clip([]byte(name)))
}

// ParseInt parses a base-10 int64 the way Redis does.
func ParseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	digits := strings.TrimPrefix(string(b), "-")
	// Redis's string2ll: no '+', no leading zeros, no "-0".
	if err != nil || len(digits) == 0 || b[0] == '+' || (digits[0] == '0' && len(b) > 1) {
		return 0, ErrNotInteger
	}
	return n, nil
}

func nonNegative(b []byte, what string) (int64, error) {
	n, err := ParseInt(b)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %s must not be negative", ErrSyntax, what)
	}
	return n, nil
}

func positive(b []byte, what string) (int64, error) {
	n, err := ParseInt(b)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("%w: %s must be positive", ErrSyntax, what)
	}
	return n, nil
}

// ParseFlock parses FLOCK lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id].
func ParseFlock(args [][]byte) (Flock, error) {
	r := Flock{Lock: string(args[1]), Session: string(args[2]), Wait: NoWait}
	err := options(args[3:], func(name string, v []byte) (err error) {
		switch name {
		case "OWNER":
			r.Owner = string(v)
		case "WAIT":
			r.Wait, err = nonNegative(v, "WAIT")
		case "LIMIT":
			r.Limit, err = nonNegative(v, "LIMIT")
		case "REQ":
			r.Req = string(v)
		default:
			err = unknownOption(name)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	return r, CheckCaps(r.Lock, r.Owner, r.Req, "")
}

// ParseFunlock parses FUNLOCK lock session [OWNER tag] [FENCE token] [REQ id].
func ParseFunlock(args [][]byte) (Funlock, error) {
	r := Funlock{Lock: string(args[1]), Session: string(args[2])}
	err := options(args[3:], func(name string, v []byte) (err error) {
		switch name {
		case "OWNER":
			r.Owner = string(v)
		case "FENCE":
			r.Fence, err = positive(v, "FENCE")
		case "REQ":
			r.Req = string(v)
		default:
			err = unknownOption(name)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	// Only the REQ id is kept (remembered with the answer).
	return r, CheckCaps("", "", r.Req, "")
}

// ParseFence parses FENCE lock [session [OWNER tag]].
func ParseFence(args [][]byte) (Fence, error) {
	r := Fence{Lock: string(args[1])}
	if len(args) == 2 {
		return r, nil
	}
	// FENCE key IFEQ value: four arguments, which the session form never
	// has (session alone is three, with OWNER tag five).
	if len(args) == 4 && strings.EqualFold(string(args[2]), "IFEQ") {
		r.IfEq, r.Value = true, string(args[3])
		return r, nil
	}
	r.Session, r.WithOwner = string(args[2]), true
	err := options(args[3:], func(name string, v []byte) error {
		if name != "OWNER" {
			return unknownOption(name)
		}
		r.Owner = string(v)
		return nil
	})
	return r, err
}

// ParseSessionOpen parses SESSION.OPEN [TTL ms] [NAME label]. The TTL's
// configured bounds are checked by the server.
func ParseSessionOpen(args [][]byte) (SessionOpen, error) {
	var r SessionOpen
	err := options(args[1:], func(name string, v []byte) (err error) {
		switch name {
		case "TTL":
			r.TTL, err = positive(v, "TTL")
		case "NAME":
			r.Name = string(v)
		default:
			err = unknownOption(name)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	return r, CheckCaps("", "", "", r.Name)
}

// ParseForceUnlock parses LOCK.FORCEUNLOCK lock token.
func ParseForceUnlock(args [][]byte) (ForceUnlock, error) {
	tok, err := positive(args[2], "token")
	return ForceUnlock{Lock: string(args[1]), Token: tok}, err
}

// ParseProto parses the protocol version of HELLO.
func ParseProto(b []byte) (int, error) {
	n, err := ParseInt(b)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, ErrNotInteger
	}
	return int(n), nil
}
