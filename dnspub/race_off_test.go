//go:build !race

package dnspub

const raceEnabled = false
