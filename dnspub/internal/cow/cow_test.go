package cow

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestVersionsAreIndependent: random edits on random versions, checked
// against plain maps: every version keeps its content whatever is built
// from it later.
func TestVersionsAreIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type version struct {
		m    Map[int]
		want map[string]int
	}
	versions := []version{{want: map[string]int{}}}
	for range 300 {
		base := versions[rng.IntN(len(versions))]
		e := base.m.Edit()
		want := maps.Clone(base.want)
		for range rng.IntN(50) {
			k := fmt.Sprint("k", rng.IntN(2000))
			if rng.IntN(3) == 0 {
				e.Delete(k)
				delete(want, k)
			} else {
				v := rng.Int()
				e.Set(k, v)
				want[k] = v
			}
		}
		versions = append(versions, version{e.Map(), want})
	}
	for i, v := range versions {
		if v.m.Len() != len(v.want) {
			t.Fatalf("version %d: Len %d, want %d", i, v.m.Len(), len(v.want))
		}
		got := map[string]int{}
		for k, x := range v.m.All() {
			got[k] = x
		}
		if !maps.Equal(got, v.want) {
			t.Fatalf("version %d differs", i)
		}
		for k, x := range v.want {
			if y, ok := v.m.GetBytes([]byte(k)); !ok || y != x {
				t.Fatalf("version %d: %s = %d %v, want %d", i, k, y, ok, x)
			}
		}
	}
}

func TestGetBytesDoesNotAllocate(t *testing.T) {
	e := Map[int]{}.Edit()
	e.Set("abc", 1)
	m := e.Map()
	key := []byte("abc")
	if n := testing.AllocsPerRun(100, func() { m.GetBytes(key) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func BenchmarkGetBytes(b *testing.B) {
	e := Map[int]{}.Edit()
	for i := range 100000 {
		e.Set(fmt.Sprintf("\x06svc%d\x05fleet\x04test\x00", i), i)
	}
	m := e.Map()
	key := []byte("\x08svc54321\x05fleet\x04test\x00")
	for b.Loop() {
		m.GetBytes(key)
	}
}

// BenchmarkEditOne is the cost of a version that changes one key of
// 100 000: one shard copied.
func BenchmarkEditOne(b *testing.B) {
	e := Map[int]{}.Edit()
	for i := range 100000 {
		e.Set(fmt.Sprint("svc", i), i)
	}
	m := e.Map()
	for b.Loop() {
		e := m.Edit()
		e.Set("svc5", 1)
		e.Map()
	}
}

// A Map filled through NewEditor and Add holds what Set would have put,
// and Add says which keys were already there.
func TestNewEditorAdd(t *testing.T) {
	e := NewEditor[int](1000)
	for i := range 1000 {
		if !e.Add(fmt.Sprint(i), i) {
			t.Fatalf("key %d reported present", i)
		}
	}
	if e.Add("7", 70) {
		t.Fatal("a key added twice reported new")
	}
	m := e.Map()
	if m.Len() != 1000 {
		t.Fatalf("Len %d", m.Len())
	}
	if v, _ := m.Get("7"); v != 70 {
		t.Fatalf("7 = %d", v)
	}
	next := m.Edit()
	next.Set("new", 1)
	if _, ok := m.Get("new"); ok || next.Map().Len() != 1001 {
		t.Fatal("editing the next version changed the first")
	}
}
