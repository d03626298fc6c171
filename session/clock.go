package session

import (
	"sync"
	"time"

	"github.com/fenced/fenced/internal/ms"
	"github.com/fenced/fenced/internal/plant"
)

// Clock is the cluster clock as seen by one node.
//
// While the node follows, the clock is the cluster time of the last entry
// it applied plus its monotonic time since it applied it, whatever it said
// before: it is then never ahead of the leader that stamped that entry. A
// node that led earlier and ran ahead of a later leader's stamps falls back
// to them, so when it leads again it cannot expire something early that the
// later leader renewed with a lower stamp.
//
// Once the node is the ready leader (Lead), it keeps its own time: it
// continues from that estimate with its monotonic clock, and its own
// entries, stamped by it, change nothing. Only monotonic readings are used,
// so a wall-clock step changes nothing.
type Clock struct {
	mu      sync.Mutex
	base    int64     // cluster ms at mono
	mono    time.Time // monotonic reading taken when base was set
	leading bool
	now     func() time.Time
	// wallOffset is this node's --clock-offset: it shifts Wall (and the
	// planted WallClockExpiry bug's stamps), never the cluster time.
	wallOffset time.Duration
	// wallGap is Stamp's wall clock minus cluster time, kept while it
	// stays within wallResync of the wall clock (gapSet says it is set).
	wallGap int64
	gapSet  bool
}

// wallResync is how far the wall clock may move from the cluster time
// plus wallGap (a step of the system clock, or slow drift) before Stamp
// takes the gap afresh.
const wallResync = 1000

// NewClock starts the clock at cluster time start (the last applied entry's
// time, from the state machine).
func NewClock(start int64) *Clock {
	return newClock(start, time.Now)
}

func newClock(start int64, now func() time.Time) *Clock {
	return &Clock{base: start, mono: now(), now: now}
}

// plantEpoch is where the planted wall clock starts counting (2023-11-14).
const plantEpoch = 1_700_000_000_000

// Now returns the current cluster time in ms.
func (c *Clock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if plant.On(plant.WallClockExpiry) {
		// The planted bug: this node's wall clock stamps the entries.
		return c.now().Add(c.wallOffset).UnixMilli() - plantEpoch
	}
	return ms.Add(c.base, c.now().Sub(c.mono).Milliseconds())
}

// Wall returns this node's wall clock in Unix ms, shifted by its offset: the
// leader stamps it into each entry for what reports Unix time (TIME in a
// script) and for EXAT-style arguments. It never decides an expiry.
func (c *Clock) Wall() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Add(c.wallOffset).UnixMilli()
}

// Stamp returns the cluster time and the wall clock (Unix ms) for a new
// entry. The wall clock is the cluster time plus a gap that stays fixed
// while the system clock keeps within wallResync of it: two clocks read
// and truncated to the ms separately would make the gap wobble by a ms
// from entry to entry, and an absolute deadline (PEXPIREAT) converted to
// cluster time by one entry would then compare with the next one's
// (PEXPIREAT ... GT or LT) a ms off from Redis's answer.
func (c *Clock) Stamp() (now, wall int64) {
	now = c.Now()
	w := c.Wall()
	c.mu.Lock()
	defer c.mu.Unlock()
	if gap := ms.Sub(w, now); !c.gapSet || ms.Sub(gap, c.wallGap) > wallResync || ms.Sub(c.wallGap, gap) > wallResync {
		c.wallGap, c.gapSet = gap, true
	}
	return now, ms.Add(now, c.wallGap)
}

// SetWallOffset records this node's wall-clock offset (--clock-offset). The
// cluster clock never reads the wall clock; only Wall and a planted bug do.
func (c *Clock) SetWallOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wallOffset = d
	c.gapSet = false
}

// Observe is called with the time of every applied entry. While following,
// the clock restarts from it.
func (c *Clock) Observe(entryTime int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.leading {
		c.base, c.mono = entryTime, c.now()
	}
}

// Lead is called when this node becomes the ready leader, after it applied
// every entry of earlier terms: from now on the clock runs on its own.
func (c *Clock) Lead() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leading = true
}

// Follow is called when this node stops leading: the clock follows the
// entries it applies again.
func (c *Clock) Follow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leading = false
}
