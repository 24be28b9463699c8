//go:build race

package wire

// raceEnabled scales down the randomized tests, which the race detector
// slows tenfold; the plain run covers them in full.
const raceEnabled = true
