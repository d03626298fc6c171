package session

import (
	"testing"
	"time"
)

// Stamp's wall clock keeps a fixed gap to the cluster time while the
// system clock agrees with it: read separately and truncated to the ms,
// the two would wobble by a ms from one entry to the next, and an absolute
// deadline converted by one entry would compare a ms off with the next
// one's (TestDiffTime's PEXPIREAT ... LT on a key set with PXAT).
func TestStampKeepsTheWallGap(t *testing.T) {
	// Readings 0.7 ms apart from an instant 0.5 ms into a millisecond, so
	// the cluster time (counted from the first reading) and the Unix ms
	// cross their millisecond boundaries at different readings.
	at := time.UnixMilli(1_750_000_000_000).Add(500 * time.Microsecond)
	c := newClock(1000, func() time.Time { return at })
	gaps := map[int64]bool{} // of separate reads of Now and Wall
	var gap int64
	for i := range 1000 {
		at = at.Add(700 * time.Microsecond)
		gaps[c.Wall()-c.Now()] = true
		now, wall := c.Stamp()
		if i == 0 {
			gap = wall - now
		}
		if wall-now != gap {
			t.Fatalf("stamp %d: wall %d - cluster %d = %d, want the gap %d", i, wall, now, wall-now, gap)
		}
	}
	if len(gaps) < 2 {
		t.Fatal("separate Now and Wall never differed: the test does not test")
	}

	// The cluster time moves away from the wall clock (a follower adopts a
	// leader's stamps): past wallResync the gap is taken afresh, so the
	// wall clock stays the system's.
	c.Observe(c.Now() + 10*wallResync)
	now, wall := c.Stamp()
	if d := wall - c.Wall(); d > 1 || d < -1 {
		t.Fatalf("after the cluster time moved 10 s: stamped wall %d, system wall %d (cluster %d)", wall, c.Wall(), now)
	}
}
