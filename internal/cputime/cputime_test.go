package cputime

import (
	"testing"
	"time"
)

// Spinning counts: the process reaches 30 ms of CPU within 2 s of wall
// time however busy the machine is; sleeping 50 ms counts next to none.
func TestProcess(t *testing.T) {
	start := Process()
	deadline := time.Now().Add(2 * time.Second)
	for Process()-start < 30*time.Millisecond && time.Now().Before(deadline) {
	}
	if spun := Process() - start; spun < 30*time.Millisecond {
		t.Fatalf("spinning 2 s counted %v of CPU", spun)
	}
	start = Process()
	time.Sleep(50 * time.Millisecond)
	if slept := Process() - start; slept > 20*time.Millisecond {
		t.Fatalf("sleeping 50 ms counted %v of CPU", slept)
	}
}
