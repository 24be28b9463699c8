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
				if x, ok := s.get(tagFor(k), k); !ok || x != v {
					t.Fatalf("spread %d: %q = %d %v, want %d", spread, k, x, ok, v)
				}
			}
		}
	}
}

// EntryHashed and PutHashed from several goroutines at once, each putting the keys of
// its share of the shards, builds the map Set builds from one: the same
// keys, values and count, on a new editor and on an edit of a map (whose
// shards are copied as they are first written), under -race.
func TestPutHashedByShards(t *testing.T) {
	base := NewEditor[int](100)
	for i := range 100 {
		base.Set(fmt.Sprint("old", i), i)
	}
	old := base.Map()
	for _, start := range []func() *Editor[int]{func() *Editor[int] { return NewEditor[int](5000) }, old.Edit} {
		const workers = 3
		par, seq := start(), start()
		keys := make([]string, 5000)
		for i := range keys {
			keys[i] = fmt.Sprint("key", i%4000) // some put twice
			if i%50 == 0 {
				keys[i] = fmt.Sprint("old", i%100) // replaced
			}
		}
		added := make([]int, workers)
		done := make(chan struct{})
		for w := range workers {
			go func() {
				defer func() { done <- struct{}{} }()
				for i, k := range keys {
					h := Hash(k)
					if int(uint8(h))%workers != w {
						continue
					}
					v, isNew := par.EntryHashed(h, k, func() int { return -1 })
					if isNew != (v == -1) {
						t.Errorf("%s: EntryHashed gives %d, new %v", k, v, isNew)
					}
					if par.PutHashed(h, k, i) {
						t.Errorf("%s: EntryHashed put it, and PutHashed says it is new", k)
					}
					if isNew {
						added[w]++
					}
				}
			}()
		}
		for range workers {
			<-done
		}
		for _, n := range added {
			par.AddLen(n)
		}
		for i, k := range keys {
			seq.Set(k, i)
		}
		p, s := par.Map(), seq.Map()
		if p.Len() != s.Len() {
			t.Fatalf("%d keys, want %d", p.Len(), s.Len())
		}
		for k, v := range s.All() {
			if got, ok := p.Get(k); !ok || got != v {
				t.Fatalf("%s: %d %v, want %d", k, got, ok, v)
			}
		}
		if v, _ := old.Get("old0"); v != 0 || old.Len() != 100 {
			t.Fatal("the map edited changed")
		}
	}
}
