// Package cow is a map from strings that versions share: an edit copies
// only the part of the map it touches, so that a snapshot of 100 000
// names changed in one place costs that place, not the whole map, and
// every older snapshot stays valid for the readers that hold it.
//
// A Map is split into 256 shards by a hash of the key; Edit starts a new
// version, which copies a shard the first time it changes one.
//
// A lookup hashes the key once. A shard is not a Go map (which would hash
// the key a second time) but a table of its own, indexed by the same
// hash: its low 8 bits pick the shard, its high 32 bits are the key's tag.
// Within a shard the entries are kept in the order of their tags, each at
// or after its home slot, tag × slots / 2³² (an ordered hash table:
// linear probing with the entries of a run sorted): a lookup starts at
// the key's home slot, steps over the smaller tags and compares the key
// only where the tag is equal; a key that is absent stops at the first
// greater tag or empty slot. The tags are an array of their own, 16 to a
// cache line, so the probe touches little memory, and the entries (key
// and value) are read only on a tag match. A tag of 32 bits and not the
// whole hash keeps a slot at 4 bytes beside the key and value: since
// every version copies the shards it changes, a copy is sized to the keys
// it holds, a shard stays 80 to 94% full, and a key takes less memory
// than in a Go map (33 bytes against 35 at 200 000 keys of pointers).
package cow

import (
	"hash/maphash"
	"iter"
	"math"
	"slices"
)

const nShards = 256

var seed = maphash.MakeSeed()

// empty marks a free slot; it is greater than every tag, so a probe stops
// on it as on a greater tag.
const empty = math.MaxUint32

// tagOf is the tag of a key hashed to h: its high 32 bits, but never empty.
func tagOf(h uint64) uint32 { return min(uint32(h>>32), empty-1) }

// noTags is the tag array of a shard with no slots: one empty slot, on
// which every probe stops.
var noTags = []uint32{empty}

type entry[V any] struct {
	key string
	val V
}

// shard is a table of keys ordered by tag. tags and ents have the same
// length; home slots are in [0, homes), and the slots after homes take the
// runs that go past the last home. The last slot is always empty, so that
// every probe ends.
type shard[V any] struct {
	tags  []uint32
	ents  []entry[V]
	homes uint64
	n     int
}

func (s *shard[V]) home(tag uint32) int { return int(uint64(tag) * s.homes >> 32) }

// find returns the slot of key, or where it would go, and whether it is
// there.
func (s *shard[V]) find(tag uint32, key string) (int, bool) {
	tags := s.tags
	p := s.home(tag)
	for tags[p] < tag {
		p++
	}
	for tags[p] == tag {
		if s.ents[p].key == key {
			return p, true
		}
		p++
	}
	return p, false
}

func (s *shard[V]) get(tag uint32, key string) (V, bool) {
	if p, ok := s.find(tag, key); ok {
		return s.ents[p].val, true
	}
	var zero V
	return zero, false
}

// sizeFor is a shard of no keys with room for about n: an eighth more
// slots than keys, and whatever the allocation of the entries rounds up
// to.
func sizeFor[V any](n int) shard[V] {
	ents := slices.Grow([]entry[V](nil), n+n/8+8)
	ents = ents[:cap(ents)]
	tags := make([]uint32, len(ents))
	for i := range tags {
		tags[i] = empty
	}
	return shard[V]{tags: tags, ents: ents, homes: uint64(len(ents) - len(ents)/64 - 8)}
}

// resized is s in a new table with room for about n keys. The entries are
// taken in order, so each goes at its home or just after the one before.
func (s *shard[V]) resized(n int) shard[V] {
	for {
		c := sizeFor[V](n)
		last, ok := -1, true
		for i, t := range s.tags {
			if t == empty {
				continue
			}
			p := max(c.home(t), last+1)
			if p >= len(c.tags)-1 {
				ok = false
				break
			}
			c.tags[p], c.ents[p] = t, s.ents[i]
			last = p
		}
		if ok {
			c.n = s.n
			return c
		}
		n += n/8 + 8 // the runs went past the end: rare, more room
	}
}

// full reports whether s must grow before it takes one key more: past
// 15/16, the runs get long.
func (s *shard[V]) full() bool { return s.n+1 > int(s.homes)*15/16 }

// sparse reports whether s takes more memory than a shard sized for its
// keys by more than a few keys' worth.
func (s *shard[V]) sparse() bool { return s.n < int(s.homes)*4/5 && s.homes > 32 }

// owned is a copy of s that an Editor may change: the same size, unless
// it is too full to take a key more or so empty that it wastes memory.
func (s *shard[V]) owned() shard[V] {
	if s.full() || s.sparse() {
		return s.resized(s.n + 1)
	}
	return shard[V]{
		tags:  append([]uint32(nil), s.tags...),
		ents:  append([]entry[V](nil), s.ents...),
		homes: s.homes,
		n:     s.n,
	}
}

// put sets key to v in s, which the caller owns, and reports whether key
// was new.
func (s *shard[V]) put(tag uint32, key string, v V) bool {
	p, ok := s.find(tag, key)
	if ok {
		s.ents[p].val = v
		return false
	}
	s.insert(p, tag, key, v)
	return true
}

// insert puts key, which s does not hold, at slot p, where find placed
// it, growing s when it must.
func (s *shard[V]) insert(p int, tag uint32, key string, v V) {
	room := s.n + s.n/4 + 1
	for {
		if !s.full() {
			q := p
			for s.tags[q] != empty {
				q++
			}
			if q < len(s.tags)-1 {
				copy(s.tags[p+1:q+1], s.tags[p:q])
				copy(s.ents[p+1:q+1], s.ents[p:q])
				s.tags[p], s.ents[p] = tag, entry[V]{key, v}
				s.n++
				return
			}
		}
		// Too full, or the run would take the last slot: grow by a
		// quarter (Map trims what is left unused).
		*s = s.resized(room)
		room += room/4 + 4
		p, _ = s.find(tag, key)
	}
}

// remove deletes key from s, which the caller owns, and reports whether it
// was there. The entries after it that are not at their home move back
// one slot.
func (s *shard[V]) remove(tag uint32, key string) bool {
	p, ok := s.find(tag, key)
	if !ok {
		return false
	}
	for t := s.tags[p+1]; t != empty && s.home(t) <= p; t = s.tags[p+1] {
		s.tags[p], s.ents[p] = t, s.ents[p+1]
		p++
	}
	s.tags[p], s.ents[p] = empty, entry[V]{}
	s.n--
	return true
}

// Map is an immutable map from string keys. The zero value is empty.
type Map[V any] struct {
	shards *[nShards]shard[V]
	n      int
}

// Get returns the value at key.
func (m Map[V]) Get(key string) (V, bool) {
	if m.shards == nil {
		var zero V
		return zero, false
	}
	h := maphash.String(seed, key)
	return m.shards[uint8(h)].get(tagOf(h), key)
}

// GetBytes is Get with the key as bytes, without allocating. It is the
// lookup of every DNS query: get written out, so that it is one call (the
// hash) and not two.
func (m Map[V]) GetBytes(key []byte) (V, bool) {
	if m.shards != nil {
		h := maphash.Bytes(seed, key)
		s, tag := &m.shards[uint8(h)], tagOf(h)
		tags := s.tags
		p := s.home(tag)
		for tags[p] < tag {
			p++
		}
		for tags[p] == tag {
			if e := &s.ents[p]; e.key == string(key) {
				return e.val, true
			}
			p++
		}
	}
	var zero V
	return zero, false
}

// Len is the number of keys.
func (m Map[V]) Len() int { return m.n }

// Same reports whether m and o are the same version of a map (not merely
// equal): one is a copy of the other.
func (m Map[V]) Same(o Map[V]) bool { return m.shards != nil && m.shards == o.shards }

// All yields every key and value, in no particular order.
func (m Map[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if m.shards == nil {
			return
		}
		for i := range m.shards {
			s := &m.shards[i]
			for j, t := range s.tags {
				if t != empty && !yield(s.ents[j].key, s.ents[j].val) {
					return
				}
			}
		}
	}
}

// Editor builds the next version of a Map. The Map it was started from is
// never modified.
type Editor[V any] struct {
	shards *[nShards]shard[V] // handed to the Map built
	copied [nShards]bool
	n      int
}

// Edit starts a new version of m.
func (m Map[V]) Edit() *Editor[V] {
	e := &Editor[V]{shards: new([nShards]shard[V]), n: m.n}
	if m.shards != nil {
		*e.shards = *m.shards
	} else {
		for i := range e.shards {
			e.shards[i].tags = noTags
		}
	}
	return e
}

// shard returns the shard of a key hashed to h, copied if this version has
// not copied it yet.
func (e *Editor[V]) shard(h uint64) *shard[V] {
	i := uint8(h)
	if !e.copied[i] {
		e.shards[i], e.copied[i] = e.shards[i].owned(), true
	}
	return &e.shards[i]
}

// NewEditor starts an empty Map sized for about n keys, so that a Map
// filled at once (a table read from disk) does not grow its shards key by
// key.
func NewEditor[V any](n int) *Editor[V] {
	e := &Editor[V]{shards: new([nShards]shard[V])}
	// The keys of a shard vary by about √(n/256) around n/256; the few
	// shards that get more than their room grow, and Map trims them.
	per := n/nShards + 1
	for i := range e.shards {
		e.shards[i], e.copied[i] = sizeFor[V](per), true
	}
	return e
}

// Add puts v at key and reports whether key was new; when it was not, v
// replaced the value there. One lookup where Get then Set take two.
func (e *Editor[V]) Add(key string, v V) bool {
	h := maphash.String(seed, key)
	if !e.shard(h).put(tagOf(h), key, v) {
		return false
	}
	e.n++
	return true
}

// Hash is the hash under which a map files key; its low 8 bits are the
// key's shard (see PutHashed).
func Hash(key string) uint64 { return maphash.String(seed, key) }

// PutHashed puts v at key, whose Hash is h, and reports whether key was
// new; unlike Add, it leaves the count of keys to the caller (AddLen).
// Calls of EntryHashed and PutHashed for keys of different shards (the low
// 8 bits of their hashes) may run at once: a map filled at once can be
// filled by several goroutines, a share of the shards each.
func (e *Editor[V]) PutHashed(h uint64, key string, v V) bool {
	return e.shard(h).put(tagOf(h), key, v)
}

// EntryHashed returns the value at key, whose Hash is h, putting mk()
// there first when there is none, and whether it did; like PutHashed, it
// leaves the count of keys to the caller, and may run at once with the
// calls for keys of other shards. One lookup where a get then a
// PutHashed take two.
func (e *Editor[V]) EntryHashed(h uint64, key string, mk func() V) (V, bool) {
	s := e.shard(h)
	tag := tagOf(h)
	p, ok := s.find(tag, key)
	if ok {
		return s.ents[p].val, false
	}
	v := mk()
	s.insert(p, tag, key, v)
	return v, true
}

// AddLen adds n to the count of keys: those PutHashed added.
func (e *Editor[V]) AddLen(n int) { e.n += n }

// Get returns the value at key in the version being built.
func (e *Editor[V]) Get(key string) (V, bool) {
	h := maphash.String(seed, key)
	return e.shards[uint8(h)].get(tagOf(h), key)
}

// Set puts v at key.
func (e *Editor[V]) Set(key string, v V) { e.Add(key, v) }

// Len is the number of keys in the version being built.
func (e *Editor[V]) Len() int { return e.n }

// Delete removes key.
func (e *Editor[V]) Delete(key string) {
	h := maphash.String(seed, key)
	tag := tagOf(h)
	if _, ok := e.shards[uint8(h)].find(tag, key); !ok {
		return
	}
	e.shard(h).remove(tag, key)
	e.n--
}

// Map returns the version built. The Editor must not be used afterwards.
// The shards that grew or lost keys in this version are trimmed to their
// keys.
func (e *Editor[V]) Map() Map[V] {
	for i := range e.shards {
		if s := &e.shards[i]; e.copied[i] && s.sparse() {
			*s = s.resized(s.n)
		}
	}
	return Map[V]{shards: e.shards, n: e.n}
}
