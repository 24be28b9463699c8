//go:build !linux

package store

// release does nothing where the mapped pages cannot be dropped.
func (b *boltBackend) release() {}
