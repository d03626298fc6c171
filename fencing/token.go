package fencing

import (
	"errors"
	"fmt"
)

var (
	// ErrStaleToken: the token is lower than the highest the resource has
	// seen, so its holder's lock has moved on. The error is a
	// *StaleTokenError, which carries the highest seen.
	ErrStaleToken = errors.New("fencing: stale token")
	// ErrInvalidToken: the token is not a number > 0, so it cannot have come
	// from a lock grant.
	ErrInvalidToken = errors.New("fencing: invalid token")
	// ErrInvalidTable: the table name is not a plain SQL identifier. The
	// name is written into the statements, so nothing else is accepted.
	ErrInvalidTable = errors.New("fencing: invalid table name")
	// ErrInvalidDialect: the Dialect is none of the package's constants.
	ErrInvalidDialect = errors.New("fencing: invalid dialect")
)

// StaleTokenError is the error of a refused token; errors.Is(err,
// ErrStaleToken) holds for it, and errors.As gives the highest token seen.
type StaleTokenError struct {
	Resource string
	Token    int64 // the refused token
	Highest  int64 // the highest token seen for Resource when it was refused
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v %d for %q (highest seen %d)", ErrStaleToken, e.Token, e.Resource, e.Highest)
}

func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }

// checkToken refuses a token no lock grant gives.
func checkToken(token int64) error {
	if token <= 0 {
		return fmt.Errorf("%w %d: a fencing token is > 0", ErrInvalidToken, token)
	}
	return nil
}

// ParseToken parses a token as it travels in text (the Fencing-Token
// header): decimal digits only, no sign, > 0, within int64. Its errors
// wrap ErrInvalidToken and do not quote the text, which may be anything.
func ParseToken(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: not a decimal number", ErrInvalidToken)
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, fmt.Errorf("%w: out of range", ErrInvalidToken)
		}
		n = n*10 + d
	}
	if err := checkToken(n); err != nil {
		return 0, err
	}
	return n, nil
}
