package serviceconfig

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// The schema sees long numbers through schemaNumber: it must judge the
// stand-in as it would the number, against every bound the schema can set.
func TestSchemaNumberKeepsWhatTheSchemaChecks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int, nonzero bool) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			d := byte('0' + r.IntN(10))
			if nonzero && (i == 0 || i == n-1) && d == '0' {
				d = '7'
			}
			b.WriteByte(d)
		}
		return b.String()
	}
	var cases []string
	for _, s := range []string{
		strings.Repeat("9", 100), "-" + strings.Repeat("9", 100),
		"0." + strings.Repeat("0", 100) + "1", "5." + strings.Repeat("0", 100),
		"5." + strings.Repeat("0", 100) + "1", "4." + strings.Repeat("9", 100),
		"100." + strings.Repeat("0", 80) + "1", "100" + strings.Repeat("0", 80) + "e-80",
		"1" + strings.Repeat("0", 80) + "e-81", "1" + strings.Repeat("0", 80) + "e-79",
		strings.Repeat("0", 100), "-0." + strings.Repeat("0", 100), "1" + strings.Repeat("0", 70) + "e99999",
		"1" + strings.Repeat("0", 70) + "e-99999", "0." + strings.Repeat("0", 70) + "1e70", "8388608." + strings.Repeat("0", 70),
		"8388607." + strings.Repeat("9", 70), "8388608" + strings.Repeat("0", 70) + "E-70",
	} {
		cases = append(cases, s)
	}
	for i := 0; i < 2000; i++ {
		s := digits(1+r.IntN(40), true)
		if r.IntN(2) == 0 {
			s += "." + digits(1+r.IntN(60), false)
		}
		if r.IntN(2) == 0 {
			s += "e" + []string{"", "+", "-"}[r.IntN(3)] + digits(1+r.IntN(2), false)
		}
		if r.IntN(3) == 0 {
			s = "-" + s
		}
		for len(s) <= maxSchemaNumber {
			s = strings.Replace(s, ".", "."+digits(8, false), 1)
			if !strings.Contains(s, ".") {
				s = strings.Replace(s, "e", ".0000000000000000e", 1)
				if !strings.Contains(s, ".") {
					s += "." + strings.Repeat("0", 30)
				}
			}
		}
		cases = append(cases, s)
	}
	// Exponents big.Rat itself cannot take.
	if got := schemaNumber([]byte("1e" + strings.Repeat("9", 80))); got != "1e31" {
		t.Errorf("1e999…: stand-in %q", got)
	}
	if got := schemaNumber([]byte("-1.5E-" + strings.Repeat("9", 80))); got != "-1e-31" {
		t.Errorf("-1.5e-999…: stand-in %q", got)
	}
	bounds := []int64{0, 1, 2, 5, 16, 100, 1000, 8388608, -1, -100}
	for _, s := range cases {
		got := schemaNumber([]byte(s))
		if len(got) > 2*maxSchemaNumber {
			t.Errorf("%.40s…: stand-in %q is long", s, got)
		}
		want, ok1 := new(big.Rat).SetString(s)
		stand, ok2 := new(big.Rat).SetString(got)
		if !ok1 || !ok2 {
			t.Fatalf("%.40s… or %q does not parse", s, got)
		}
		if want.Sign() != stand.Sign() || want.IsInt() != stand.IsInt() {
			t.Errorf("%.60s…: stand-in %q differs in sign or integer-ness", s, got)
		}
		for _, b := range bounds {
			bb := new(big.Rat).SetInt64(b)
			if want.Cmp(bb) != stand.Cmp(bb) {
				t.Errorf("%.60s…: stand-in %q compares differently with %d", s, got, b)
			}
		}
	}
}
