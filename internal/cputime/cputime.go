// Package cputime reads the CPU time the process has used, for tests that
// hold code to a time budget: on a shared machine (CI runs test packages
// side by side on two cores) wall time measures the neighbours as much as
// the code, the process's CPU time much less so.
package cputime

import "time"

// Process returns the user and system CPU time the process has used so
// far; where the system cannot tell, the wall time since an arbitrary
// start.
func Process() time.Duration { return process() }
