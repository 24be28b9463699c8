package main

import (
	"os"
	"runtime/debug"
)

// firstLoadGCPercent is the collector's target while serve reads its
// first version. The first load of a fleet makes several times the
// garbage of what it keeps (100 000 services: ≈ 85 MB kept), on a heap
// that only grows: at Go's default of 100 the collector ran a cycle at
// each doubling, marking everything read so far: a store's start took
// 0.94 s instead of 0.86 s (docs/performance.md, 2026-11-29). The
// served heap is not affected: the default comes back before the server
// answers, and the memory the load used is given back then.
const firstLoadGCPercent = 200

// firstLoadGC raises the collector's target for the first load and
// returns what restores it. A GOGC the user set is theirs, and left alone.
func firstLoadGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(firstLoadGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
