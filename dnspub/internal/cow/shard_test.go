package cow

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// TestShardCollisions drives one shard with tags from a few values, so
// that keys share tags, runs are long and reach past the last home slot:
// paths that hashed keys take rarely.
func TestShardCollisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, spread := range []uint32{1, 3, empty - 1} {
		s := sizeFor[int](0)
		want := map[string]int{}
		tagFor := func(k string) uint32 {
			h := maphash.String(seed, k)
			if spread == empty-1 {
				return empty - 1 - uint32(h%3) // all at the last home
			}
			return uint32(h%uint64(spread)) << 30
		}
		for i := range 3000 {
			k := fmt.Sprint(rng.IntN(400))
			if rng.IntN(3) == 0 {
				_, in := want[k]
				if s.remove(tagFor(k), k) != in {
					t.Fatalf("remove %q: want %v", k, in)
				}
				delete(want, k)
			} else {
				_, in := want[k]
				if s.put(tagFor(k), k, i) == in {
					t.Fatalf("put %q: new, want %v", k, !in)
				}
				want[k] = i
			}
			if i%10 == 0 && s.sparse() {
				s = s.resized(s.n)
			}
			if s.n != len(want) || s.tags[len(s.tags)-1] != empty {
				t.Fatalf("n %d, want %d; last slot %x", s.n, len(want), s.tags[len(s.tags)-1])
			}
			if i%7 != 0 {
				continue
			}
			for k, v := range want {
				if x, ok := get(&s, tagFor(k), k); !ok || x != v {
					t.Fatalf("spread %d: %q = %d %v, want %d", spread, k, x, ok, v)
				}
			}
		}
	}
}
