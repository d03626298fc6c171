package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The outcomes a caller may act on. Errors returned by the package wrap
// one of them (test with errors.Is) together with the server's message.
var (
	// ErrNotObtained: TryLock found the lock held by another owner, or
	// Lock's context ended before the lock was handed over.
	ErrNotObtained = errors.New("client: lock not obtained")
	// ErrSessionLost: the session expired, was killed or closed, or has
	// not been renewed for a whole TTL; its locks are, or will be, released.
	ErrSessionLost = errors.New("client: session lost")
	// ErrNotOwner: the lock is not held by this owner (released by an
	// administrator, lost with the session, or never taken).
	ErrNotOwner = errors.New("client: not the lock's owner")
	// ErrStaleFence: this owner holds the lock again under a newer
	// ownership than the one being released.
	ErrStaleFence = errors.New("client: stale fencing token")
	// ErrLimit: the lock's reentrancy limit (WithLimit) is reached.
	ErrLimit = errors.New("client: reentrancy limit reached")
	// ErrCancelled: a newer Lock of the same owner on the same lock
	// replaced this one's wait.
	ErrCancelled = errors.New("client: wait cancelled by a newer request of the same owner")
)

// codeErrors maps the server's decided error codes to the package's.
var codeErrors = map[string]error{
	"NOSESSION":  ErrSessionLost,
	"NOTOWNER":   ErrNotOwner,
	"STALEFENCE": ErrStaleFence,
	"LIMIT":      ErrLimit,
	"CANCELLED":  ErrCancelled,
}

// errCode is the first word of a server error reply ("" for any other
// error, a connection's or a context's).
func errCode(err error) string {
	var re redis.Error
	if err == nil || errors.Is(err, redis.Nil) || !errors.As(err, &re) {
		return ""
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	return code
}

// typed wraps a server error in the package's error for its code, keeping
// the server's words.
func typed(err error) error {
	if e, ok := codeErrors[errCode(err)]; ok {
		return fmt.Errorf("%w: %v", e, err)
	}
	return err
}

// retryable reports whether err says "send it again": the request was not
// applied (-TRYAGAIN, -CLUSTERDOWN) or may have been (-UNCERTAIN, a broken
// connection, an attempt that timed out), and the same REQ makes a resend
// safe either way.
func retryable(err error) bool {
	switch errCode(err) {
	case "TRYAGAIN", "CLUSTERDOWN", "UNCERTAIN", "LOADING":
		return true
	case "":
		return err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, redis.ErrClosed)
	}
	return false
}

// movedTo is the address of a -MOVED reply ("" for any other error).
func movedTo(err error) string {
	if errCode(err) != "MOVED" {
		return ""
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 {
		return ""
	}
	return f[2]
}
