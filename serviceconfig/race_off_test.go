//go:build !race

package serviceconfig

const raceEnabled = false
