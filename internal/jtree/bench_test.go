package jtree

import (
	"os"
	"testing"
)

// BenchmarkParse measures the parser alone on the 4 KB record of 10
// choices that serviceconfig's benchmarks use, and on a record made of
// the values the parser's scanners handle one byte at a time: numbers and
// strings with escapes and non-ASCII text.
func BenchmarkParse(b *testing.B) {
	choices, err := os.ReadFile("../../testdata/bench/choices-4k.json")
	if err != nil {
		b.Fatal(err)
	}
	scalars := []byte(`{"n":[0,-1,12.5,-0.25e-3,1E+9,123456789,3.14159],` +
		`"s":["plain","tab\tquote\"slash\\","\u00e9\ud83d\ude00","caf\u00e9 déjà vu","日本語"],` +
		`"o":{"a":true,"b":false,"c":null,"d":{"e":[],"f":{}}}}`)
	for _, in := range []struct {
		name string
		src  []byte
	}{{"choices-4k", choices}, {"scalars", scalars}} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.src)))
			var t Tree
			for b.Loop() {
				if err := t.Reset(in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
