//go:build race

package test

// raceEnabled tells TestMain to build the server with -race as well.
const raceEnabled = true
