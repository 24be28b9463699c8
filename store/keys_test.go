package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortedKeys: over random adds and removes (many in one narrow range,
// to split blocks), the set holds exactly what a sorted slice holds, and
// a range from any key reads the same keys in the same order.
func TestSortedKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	key := func() string {
		if rng.IntN(3) == 0 {
			return fmt.Sprintf("s/z/svc-%05d", rng.IntN(3000))
		}
		return fmt.Sprintf("s/z/svc-%05d", 1000+rng.IntN(200)) // a hot range
	}
	var initial []string
	for i := 0; i < 3000; i += 3 {
		initial = append(initial, fmt.Sprintf("s/z/svc-%05d", i))
	}
	want := slices.Clone(initial)
	s := newSortedKeys(initial)
	for step := range 20000 {
		k := key()
		i, found := slices.BinarySearch(want, k)
		if rng.IntN(3) == 0 {
			s.remove(k)
			if found {
				want = slices.Delete(want, i, i+1)
			}
		} else {
			s.add(k)
			if !found {
				want = slices.Insert(want, i, k)
			}
		}
		if step%500 != 0 {
			continue
		}
		var got []string
		s.from("", func(k string) bool { got = append(got, k); return true })
		if !slices.Equal(got, want) || s.len() != len(want) {
			t.Fatalf("step %d: %d keys (len %d), want %d", step, len(got), s.len(), len(want))
		}
		for _, b := range s.blocks {
			if len(b) == 0 || len(b) > maxKeyBlock {
				t.Fatalf("step %d: a block of %d keys", step, len(b))
			}
		}
		from := key()
		got = got[:0]
		s.from(from, func(k string) bool { got = append(got, k); return len(got) < 50 })
		j, _ := slices.BinarySearch(want, from)
		if w := want[j:min(j+50, len(want))]; !slices.Equal(got, w) {
			t.Fatalf("step %d: from %s: %v, want %v", step, from, got, w)
		}
	}
	// Everything removed, then added again.
	for _, k := range slices.Clone(want) {
		s.remove(k)
	}
	if s.len() != 0 || len(s.blocks) != 0 {
		t.Fatalf("%d keys left in %d blocks", s.len(), len(s.blocks))
	}
	s.add("b")
	s.add("a")
	var got []string
	s.from("", func(k string) bool { got = append(got, k); return true })
	if strings.Join(got, ",") != "a,b" {
		t.Fatal(got)
	}
}

// BenchmarkSortedKeysAdd: adding keys in random order to a set of 100 000
// costs a block's move each ("blocks"), not the set's as in one sorted
// slice ("slice", what the cache had).
func BenchmarkSortedKeysAdd(b *testing.B) {
	var initial []string
	for i := range 100_000 {
		initial = append(initial, fmt.Sprintf("s/fleet.test/svc-%07d", 2*i))
	}
	b.Run("blocks", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		s := newSortedKeys(slices.Clone(initial))
		for b.Loop() {
			s.add(fmt.Sprintf("s/fleet.test/svc-%07d", 2*rng.IntN(100_000)+1))
		}
	})
	b.Run("slice", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		s := slices.Clone(initial)
		for b.Loop() {
			k := fmt.Sprintf("s/fleet.test/svc-%07d", 2*rng.IntN(100_000)+1)
			if i, found := slices.BinarySearch(s, k); !found {
				s = slices.Insert(s, i, k)
			}
		}
	})
}
