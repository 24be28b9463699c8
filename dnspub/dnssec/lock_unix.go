//go:build unix

package dnssec

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockKeys takes the lock of zone origin's keys in dir: publishers of
// one store share a key directory, and exactly one of them makes a key
// that is missing or due (the others then read it).
func lockKeys(dir, origin string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dnssec: key directory: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".K"+origin+"lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dnssec: locking the keys of %s: %v", origin, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("dnssec: locking the keys of %s: %v", origin, err)
	}
	return func() { f.Close() }, nil
}
