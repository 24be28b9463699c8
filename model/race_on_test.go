//go:build race

package model

// raceEnabled: the race detector slows code several times and adds
// allocations, so the tests that measure costs skip themselves.
const raceEnabled = true
