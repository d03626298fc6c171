//go:build !race

package script

// raceEnabled is true under go test -race; see skipUnderRace.
const raceEnabled = false
