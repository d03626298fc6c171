//go:build race

package lockstate

// raceEnabled is true under go test -race; see skipUnderRace.
const raceEnabled = true
