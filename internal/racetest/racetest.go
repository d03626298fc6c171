// Package racetest lets a test that runs in one goroutine and is all CPU
// skip itself under -race: the detector finds nothing there and slows it
// several times, so make test runs such tests in a second pass without it.
package racetest

import (
	"os"
	"testing"
)

// SkipUnderRace skips t under go test -race, unless FENCED_RACE_ALL is set.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if enabled && os.Getenv("FENCED_RACE_ALL") == "" {
		t.Skip("one goroutine, all CPU: make test runs it without -race")
	}
}
