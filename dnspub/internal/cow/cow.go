// Package cow is a map from strings that versions share: an edit copies
// only the part of the map it touches, so that a snapshot of 100 000
// names changed in one place costs that place, not the whole map, and
// every older snapshot stays valid for the readers that hold it.
//
// A Map is split into shards by a hash of the key; Edit starts a new
// version, which copies a shard the first time it changes one. Lookups
// cost a hash and one Go map lookup.
package cow

import (
	"hash/maphash"
	"iter"
)

const nShards = 256

var seed = maphash.MakeSeed()

// Map is an immutable map from string keys. The zero value is empty.
type Map[V any] struct {
	shards *[nShards]map[string]V
	n      int
}

func shardOf(key string) int { return int(maphash.String(seed, key) % nShards) }

func shardOfBytes(key []byte) int { return int(maphash.Bytes(seed, key) % nShards) }

// Get returns the value at key.
func (m Map[V]) Get(key string) (V, bool) {
	if m.shards == nil {
		var zero V
		return zero, false
	}
	v, ok := m.shards[shardOf(key)][key]
	return v, ok
}

// GetBytes is Get with the key as bytes, without allocating.
func (m Map[V]) GetBytes(key []byte) (V, bool) {
	if m.shards == nil {
		var zero V
		return zero, false
	}
	v, ok := m.shards[shardOfBytes(key)][string(key)]
	return v, ok
}

// Len is the number of keys.
func (m Map[V]) Len() int { return m.n }

// All yields every key and value, in no particular order.
func (m Map[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if m.shards == nil {
			return
		}
		for _, s := range m.shards {
			for k, v := range s {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Editor builds the next version of a Map. The Map it was started from is
// never modified.
type Editor[V any] struct {
	shards [nShards]map[string]V
	copied [nShards]bool
	n      int
}

// Edit starts a new version of m.
func (m Map[V]) Edit() *Editor[V] {
	e := &Editor[V]{n: m.n}
	if m.shards != nil {
		e.shards = *m.shards
	}
	return e
}

func (e *Editor[V]) shard(key string) map[string]V {
	i := shardOf(key)
	if !e.copied[i] {
		c := make(map[string]V, len(e.shards[i])+1)
		for k, v := range e.shards[i] {
			c[k] = v
		}
		e.shards[i], e.copied[i] = c, true
	}
	return e.shards[i]
}

// NewEditor starts an empty Map sized for about n keys, so that a Map
// filled at once (a table read from disk) does not grow its shards key by
// key.
func NewEditor[V any](n int) *Editor[V] {
	e := &Editor[V]{}
	per := n/nShards + n/nShards/4 + 1
	for i := range e.shards {
		e.shards[i], e.copied[i] = make(map[string]V, per), true
	}
	return e
}

// Add puts v at key and reports whether key was new; when it was not, v
// replaced the value there. One lookup where Get then Set take two.
func (e *Editor[V]) Add(key string, v V) bool {
	s := e.shard(key)
	before := len(s)
	s[key] = v
	if len(s) == before {
		return false
	}
	e.n++
	return true
}

// Get returns the value at key in the version being built.
func (e *Editor[V]) Get(key string) (V, bool) {
	v, ok := e.shards[shardOf(key)][key]
	return v, ok
}

// Set puts v at key.
func (e *Editor[V]) Set(key string, v V) {
	s := e.shard(key)
	if _, ok := s[key]; !ok {
		e.n++
	}
	s[key] = v
}

// Delete removes key.
func (e *Editor[V]) Delete(key string) {
	if _, ok := e.shards[shardOf(key)][key]; !ok {
		return
	}
	delete(e.shard(key), key)
	e.n--
}

// Map returns the version built. The Editor must not be used afterwards.
func (e *Editor[V]) Map() Map[V] {
	shards := e.shards
	return Map[V]{shards: &shards, n: e.n}
}
