package asciijson

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        `"plain"`,
		`q"b\`:         `"q\"b\\"`,
		"\n\t\r\a\x7f": `"\n\t\r\u0007\u007f"`,
		"café 😀":       `"caf\u00e9 \ud83d\ude00"`,
		"\xff":         `"\ufffd"`,
	} {
		got := string(AppendString(nil, in))
		if got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%q: %s is not JSON: %v", in, got, err)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("café\a\x7f😀")
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		for _, c := range out {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("byte 0x%02x in %s", c, out)
			}
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if want := string([]rune(s)); back != want {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}
