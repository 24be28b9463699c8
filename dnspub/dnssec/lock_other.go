//go:build !unix

package dnssec

// lockKeys is a no-op where flock(2) is missing: one publisher per key
// directory there.
func lockKeys(dir, origin string) (unlock func(), err error) { return func() {}, nil }
