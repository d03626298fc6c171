package lockstate

import (
	"os"
	"testing"
)

// skipUnderRace skips a test that runs in one goroutine and is all CPU:
// the race detector has nothing to find in it and makes it several times
// slower, so make test runs it in a second pass without -race (the
// Makefile's NORACE list). FENCED_RACE_ALL=1 runs it under -race anyway.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled && os.Getenv("FENCED_RACE_ALL") == "" {
		t.Skip("one goroutine, all CPU: make test runs it without -race")
	}
}
