package store

import (
	"slices"
	"strings"
)

// sortedKeys is a sorted set of keys cut into blocks of at most
// maxKeyBlock: adding or removing a key moves at most a block, where one
// sorted slice moved half the store (100 000 keys, 1.6 MB, for every key a
// new service added), and a range reads blocks in order.
type sortedKeys struct {
	blocks [][]string // each sorted and not empty; in order
	n      int
}

const maxKeyBlock = 512

// newSortedKeys returns the set of keys, which are sorted and distinct.
func newSortedKeys(keys []string) *sortedKeys {
	s := &sortedKeys{n: len(keys)}
	for len(keys) > 0 {
		n := min(len(keys), maxKeyBlock/2)
		s.blocks = append(s.blocks, keys[:n:n])
		keys = keys[n:]
	}
	return s
}

// len returns the number of keys.
func (s *sortedKeys) len() int { return s.n }

// block returns the index of the block key belongs in: the last one whose
// first key is not above it (0 when there is none).
func (s *sortedKeys) block(key string) int {
	i, _ := slices.BinarySearchFunc(s.blocks, key, func(b []string, k string) int { return strings.Compare(b[0], k) })
	// i is the first block starting at or after key.
	if i < len(s.blocks) && s.blocks[i][0] == key {
		return i
	}
	return max(i-1, 0)
}

// add adds key, if it is not there.
func (s *sortedKeys) add(key string) {
	if len(s.blocks) == 0 {
		s.blocks = [][]string{{key}}
		s.n = 1
		return
	}
	bi := s.block(key)
	b := s.blocks[bi]
	i, found := slices.BinarySearch(b, key)
	if found {
		return
	}
	s.n++
	if len(b) < maxKeyBlock {
		s.blocks[bi] = slices.Insert(b, i, key)
		return
	}
	// Split a full block in two halves, each with room to grow.
	lo := append(make([]string, 0, maxKeyBlock), b[:maxKeyBlock/2]...)
	hi := append(make([]string, 0, maxKeyBlock), b[maxKeyBlock/2:]...)
	if i <= len(lo) {
		lo = slices.Insert(lo, i, key)
	} else {
		hi = slices.Insert(hi, i-len(lo), key)
	}
	s.blocks = slices.Insert(s.blocks, bi+1, hi)
	s.blocks[bi] = lo
}

// remove removes key, if it is there.
func (s *sortedKeys) remove(key string) {
	if len(s.blocks) == 0 {
		return
	}
	bi := s.block(key)
	b := s.blocks[bi]
	i, found := slices.BinarySearch(b, key)
	if !found {
		return
	}
	s.n--
	if len(b) == 1 {
		s.blocks = slices.Delete(s.blocks, bi, bi+1)
		return
	}
	s.blocks[bi] = slices.Delete(b, i, i+1)
}

// from calls yield with the keys from key on, in order, until it returns
// false.
func (s *sortedKeys) from(key string, yield func(string) bool) {
	if len(s.blocks) == 0 {
		return
	}
	bi := s.block(key)
	i, _ := slices.BinarySearch(s.blocks[bi], key)
	for ; bi < len(s.blocks); bi, i = bi+1, 0 {
		for _, k := range s.blocks[bi][i:] {
			if !yield(k) {
				return
			}
		}
	}
}
