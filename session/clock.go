// Package session owns the leader's side of time: the cluster clock that
// stamps every proposed entry (SPEC section 2), and the ticker that proposes
// a tick entry when the state machine's earliest deadline has passed, so that
// session expiry and wait timeouts take effect without polling.
//
// Nothing here decides an expiry: the state machine does, from the time in
// the entry it applies. This package only chooses when to propose.
package session

import (
	"sync"
	"time"
)

// Clock is the cluster clock as seen by one node: the cluster time of the
// last entry this node applied, plus this node's monotonic time since it
// applied it. It never runs ahead of the clock of the leader that stamped
// that entry, so a new leader continues from there without jumping, and a
// wall-clock step changes nothing because only monotonic readings are used.
type Clock struct {
	mu   sync.Mutex
	base int64     // cluster ms at mono
	mono time.Time // monotonic reading taken when base was observed
	now  func() time.Time
}

// NewClock starts the clock at cluster time start (the last applied entry's
// time, from the state machine).
func NewClock(start int64) *Clock {
	return newClock(start, time.Now)
}

func newClock(start int64, now func() time.Time) *Clock {
	return &Clock{base: start, mono: now(), now: now}
}

// Now returns the current cluster time in ms.
func (c *Clock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(c.now())
}

func (c *Clock) nowLocked(t time.Time) int64 {
	return c.base + t.Sub(c.mono).Milliseconds()
}

// Observe is called with the time of every applied entry. A follower's
// estimate catches up with the leader's stamps; on the node that stamped
// the entry the estimate is already at or past it and nothing changes.
func (c *Clock) Observe(entryTime int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now()
	if entryTime > c.nowLocked(t) {
		c.base, c.mono = entryTime, t
	}
}
