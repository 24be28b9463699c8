package cow

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
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

// names is n keys shaped like the table's (wire-format service names).
func names(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("\x0c_grpc_config\x07svc%04d\x05fleet\x04test\x00", i)
	}
	return ks
}

// heapPerEntry is the heap the Map that build returns holds, per key: the
// keys themselves are allocated before and not counted.
func heapPerEntry(b *testing.B, ks []string, build func() Map[*int]) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if m.Len() != len(ks) {
		b.Fatalf("Len %d", m.Len())
	}
	runtime.KeepAlive(m)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(ks))
}

// BenchmarkBytesPerEntry reports the heap a Map of 200 000 keys takes per
// key (the size of the table at 100 000 services), built the ways the
// repository builds one: key by key through one Editor, through
// NewEditor and Add (a table read back), and after one more version that
// touched every shard (what a long-running publisher holds).
func BenchmarkBytesPerEntry(b *testing.B) {
	const n = 200000
	ks := names(n)
	v := new(int)
	set := func() Map[*int] {
		e := Map[*int]{}.Edit()
		for _, k := range ks {
			e.Set(k, v)
		}
		return e.Map()
	}
	for _, c := range []struct {
		name  string
		build func() Map[*int]
	}{
		{"Set", set},
		{"NewEditor", func() Map[*int] {
			e := NewEditor[*int](n)
			for _, k := range ks {
				e.Add(k, v)
			}
			return e.Map()
		}},
		{"Set+EditAll", func() Map[*int] {
			m := set()
			for range 4 {
				e := m.Edit()
				for i := 0; i < n; i += 97 {
					e.Set(ks[i], v)
				}
				m = e.Map()
			}
			return m
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = heapPerEntry(b, ks, c.build)
			}
			b.ReportMetric(per, "B/entry")
		})
	}
}

// BenchmarkEditSetOne200k is the cost of a version that changes one key of
// 200 000: one shard copied, one key set.
func BenchmarkEditSetOne200k(b *testing.B) {
	ks := names(200000)
	e := NewEditor[int](len(ks))
	for i, k := range ks {
		e.Add(k, i)
	}
	m := e.Map()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := m.Edit()
		e.Set(ks[i%len(ks)], 1)
		e.Map()
		i += 7919
	}
}

// TestAgainstMap drives many versions at once with random edits weighted
// towards growth, then towards deletion, then mixed, and checks every
// version, old and new, against a plain map through Get, GetBytes, All,
// Len and the Editor's own Get; some versions are edited twice, so that
// their Editors share shards with each other and with them.
func TestAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type version struct {
		m    Map[int]
		want map[string]int
	}
	check := func(i int, v version) {
		t.Helper()
		if v.m.Len() != len(v.want) {
			t.Fatalf("version %d: Len %d, want %d", i, v.m.Len(), len(v.want))
		}
		got := map[string]int{}
		for k, x := range v.m.All() {
			if _, dup := got[k]; dup {
				t.Fatalf("version %d: All yields %q twice", i, k)
			}
			got[k] = x
		}
		if !maps.Equal(got, v.want) {
			t.Fatalf("version %d: All differs", i)
		}
		for k, x := range v.want {
			if y, ok := v.m.Get(k); !ok || y != x {
				t.Fatalf("version %d: Get %q = %d %v, want %d", i, k, y, ok, x)
			}
			if y, ok := v.m.GetBytes([]byte(k)); !ok || y != x {
				t.Fatalf("version %d: GetBytes %q = %d %v, want %d", i, k, y, ok, x)
			}
		}
		for range 50 {
			k := fmt.Sprint("k", rng.IntN(20000))
			_, in := v.want[k]
			if _, ok := v.m.Get(k); ok != in {
				t.Fatalf("version %d: Get %q found %v, want %v", i, k, ok, in)
			}
			if _, ok := v.m.GetBytes([]byte(k)); ok != in {
				t.Fatalf("version %d: GetBytes %q found %v, want %v", i, k, ok, in)
			}
		}
	}
	versions := []version{{want: map[string]int{}}}
	phases := []struct {
		rounds, edits, keys int
		pDelete             float64
	}{
		{40, 2000, 20000, 0.05}, // growth: shards fill past their room
		{40, 1500, 20000, 0.9},  // deletion-heavy: runs shift back, shards trim
		{200, 100, 20000, 0.5},  // mixed, small edits on many versions
		{20, 3000, 300, 0.5},    // few keys, many changes each
	}
	for _, ph := range phases {
		for range ph.rounds {
			base := versions[rng.IntN(len(versions))]
			// Two Editors from the same version: neither sees the other.
			var built []version
			for range 1 + rng.IntN(2) {
				e := base.m.Edit()
				want := maps.Clone(base.want)
				for range rng.IntN(ph.edits) {
					k := fmt.Sprint("k", rng.IntN(ph.keys))
					switch r := rng.Float64(); {
					case r < ph.pDelete:
						e.Delete(k)
						delete(want, k)
					case r < ph.pDelete+(1-ph.pDelete)/2:
						v := rng.Int()
						_, had := want[k]
						if e.Add(k, v) == had {
							t.Fatalf("Add %q reported new = %v", k, !had)
						}
						want[k] = v
					default:
						v := rng.Int()
						e.Set(k, v)
						want[k] = v
					}
					if rng.IntN(8) == 0 {
						k := fmt.Sprint("k", rng.IntN(ph.keys))
						x, ok := e.Get(k)
						if y, in := want[k]; ok != in || x != y {
							t.Fatalf("Editor.Get %q = %d %v, want %d %v", k, x, ok, y, in)
						}
					}
				}
				built = append(built, version{e.Map(), want})
			}
			versions = append(versions, built...)
		}
		for i, v := range versions {
			check(i, v)
		}
	}
}

// A Map filled through NewEditor past the size it was given grows.
func TestNewEditorOverfilled(t *testing.T) {
	e := NewEditor[int](100)
	for i := range 5000 {
		e.Set(fmt.Sprint(i), i)
	}
	for i := range 5000 {
		if i%3 == 0 {
			e.Delete(fmt.Sprint(i))
		}
	}
	m := e.Map()
	for i := range 5000 {
		v, ok := m.Get(fmt.Sprint(i))
		if ok != (i%3 != 0) || ok && v != i {
			t.Fatalf("%d = %d %v", i, v, ok)
		}
	}
}

// BenchmarkGetBytesMiss is a lookup of a name that is not there, at the
// size of the table at 100 000 services, averaged over 1024 names.
func BenchmarkGetBytesMiss(b *testing.B) {
	ks := names(200000)
	e := NewEditor[int](len(ks))
	for i, k := range ks {
		e.Add(k, i)
	}
	m := e.Map()
	var miss [][]byte
	for _, k := range names(len(ks) + 1024)[len(ks):] {
		miss = append(miss, []byte(k))
	}
	i := 0
	for b.Loop() {
		m.GetBytes(miss[i%len(miss)])
		i++
	}
}

// BenchmarkGetBytesHit200k is a lookup of a name that is there, at the
// size of the table at 100 000 services, averaged over 1024 names.
func BenchmarkGetBytesHit200k(b *testing.B) {
	ks := names(200000)
	e := NewEditor[int](len(ks))
	for i, k := range ks {
		e.Add(k, i)
	}
	m := e.Map()
	var hit [][]byte
	for i := range 1024 {
		hit = append(hit, []byte(ks[i*193%len(ks)]))
	}
	i := 0
	for b.Loop() {
		m.GetBytes(hit[i%len(hit)])
		i++
	}
}
