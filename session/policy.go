package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/fenced/fenced/reply"
)

// NewID draws the id of a new session: 128 random bits in hex. The
// proposing node draws it, since the state machine never draws randomness,
// and one client cannot guess another's session from its own.
func NewID() string {
	var id [16]byte
	rand.Read(id[:]) // never fails: it crashes the program instead
	return hex.EncodeToString(id[:])
}

// ErrTTLRange is returned for a requested TTL outside the bounds.
var ErrTTLRange = reply.NewErr("ERR", "TTL out of range")

// TTLBounds are the TTLs a new session may ask for, and the one it gets
// when it asks for none.
type TTLBounds struct {
	Min, Max, Default time.Duration
}

// Resolve returns the TTL in ms of a session that asked for requestedMs (0:
// none), or ErrTTLRange, wrapped with the bounds, if it is out of bounds.
// It compares in ms, so no request, however large, overflows.
func (b TTLBounds) Resolve(requestedMs int64) (int64, error) {
	ttl := requestedMs
	if ttl == 0 {
		ttl = b.Default.Milliseconds()
	}
	lo, hi := b.Min.Milliseconds(), b.Max.Milliseconds()
	if ttl < lo || ttl > hi {
		return 0, fmt.Errorf("%w: TTL must be between %d and %d ms", ErrTTLRange, lo, hi)
	}
	return ttl, nil
}
