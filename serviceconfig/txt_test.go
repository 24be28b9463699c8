package serviceconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The example record of gRFC A2.
const a2Value = `[{"serviceConfig":{"loadBalancingPolicy":"round_robin","methodConfig":[{"name":[{"service":"MyService","method":"Foo"}],"waitForReady":true}]}}]`

func TestDecodeTXT(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records [][]string
		want    string
		code    string // expected error code; "none" for ErrNoConfig
	}{
		{"A2 example", [][]string{{"grpc_config=" + a2Value}}, a2Value, ""},
		{"strings joined with nothing between", [][]string{{"grpc_config=[{\"service", "Config\":{}}]"}}, `[{"serviceConfig":{}}]`, ""},
		{"SPF beside is ignored", [][]string{{"v=spf1 -all"}, {"grpc_config=[]"}}, `[]`, ""},
		{"attribute is case-insensitive", [][]string{{"GRPC_Config=[]"}}, `[]`, ""},
		{"back-quoted attribute", [][]string{{"grpc`_config=[]"}}, `[]`, ""},
		{"blanks around the attribute", [][]string{{"  grpc_config \t=[]"}}, `[]`, ""},
		{"value keeps its blanks", [][]string{{"grpc_config= []"}}, ` []`, ""},
		{"quoted = is part of the name", [][]string{{"grpc_config`==[]"}}, "", "none"},
		{"other attribute", [][]string{{"grpc_configx=[]"}}, "", "none"},
		{"no records", nil, "", "none"},
		{"empty record", [][]string{{}}, "", "none"},
		// gRFC A2: the strings of a record are joined before the
		// attribute is looked for (RFC 4408 §3.1.3), as grpc-go does.
		{"prefix split across strings", [][]string{{"grpc_", "config=[]"}}, `[]`, ""},
		{"prefix split before =", [][]string{{"grpc_config", "=[", "]"}}, `[]`, ""},
		{"empty first string", [][]string{{"", "grpc_config=[]"}}, `[]`, ""},
		{"back-quote at the end of a string", [][]string{{"grpc`", "_config=[]"}}, `[]`, ""},
		{"split beside SPF", [][]string{{"v=spf1 -all"}, {"grpc", "_config=", "[]"}}, `[]`, ""},
		{"split spelling other than grpc_config", [][]string{{"grpc_", "configx=[]"}}, "", "none"},
		{"split and whole config records", [][]string{{"grpc_", "config=[]"}, {"grpc_config=[1]"}}, "", "txt-multiple-config"},
		{"two config records", [][]string{{"grpc_config=[]"}, {"grpc_config=[1]"}}, "", "txt-multiple-config"},
		{"non-ASCII", [][]string{{"grpc_config=[\"caf\xc3\xa9\"]"}}, "", "non-ascii"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeTXT(tc.records)
			switch {
			case tc.code == "none":
				if !errors.Is(err, ErrNoConfig) {
					t.Fatalf("got %q, %v; want ErrNoConfig", got, err)
				}
			case tc.code != "":
				var ie *InvalidError
				if !errors.As(err, &ie) || ie.Diagnostics[0].Code != tc.code {
					t.Fatalf("got %q, %v; want %s", got, err, tc.code)
				}
			default:
				if err != nil || string(got) != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
			}
		})
	}
}

func TestEncodeTXTSplitsAt255(t *testing.T) {
	value := []byte(`[{"serviceConfig":{"methodConfig":[{"name":[{"service":"` + strings.Repeat("s", 600) + `"}]}]}}]`)
	strs := EncodeTXT(value)
	if len(strs) != 3 {
		t.Fatalf("got %d strings", len(strs))
	}
	for i, s := range strs[:len(strs)-1] {
		if len(s) != maxStringLen {
			t.Errorf("string %d is %d bytes", i, len(s))
		}
	}
	if !strings.HasPrefix(strs[0], "grpc_config=[") {
		t.Errorf("first string %q", strs[0][:20])
	}
	got, err := DecodeTXT([][]string{strs})
	if err != nil || string(got) != string(value) {
		t.Fatalf("round trip: %v", err)
	}
	if n := RDataLen(strs); n != len("grpc_config=")+len(value)+3 {
		t.Errorf("RDataLen = %d", n)
	}
}

func TestResponseSize(t *testing.T) {
	// A message with header, question and one TXT answer whose owner is
	// compressed: counted by hand for owner "_grpc_config.a." (16 bytes on the
	// wire) and one 13-byte string.
	strs := []string{"grpc_config=x"}
	if got := ResponseSize("_grpc_config.a.", strs, false); got != 12+16+4+2+10+14 {
		t.Errorf("ResponseSize = %d", got)
	}
	if got := ResponseSize("_grpc_config.a", strs, true); got != 12+16+4+2+10+14+11 {
		t.Errorf("ResponseSize with EDNS = %d", got)
	}
}

func TestFormatAndParseTXT(t *testing.T) {
	strs := []string{`grpc_config=[{"a":"b\c"}]`, "\x01tab\there"}
	text := FormatTXT(strs)
	if text != `"grpc_config=[{\"a\":\"b\\c\"}]" "\001tab\009here"` {
		t.Errorf("FormatTXT = %s", text)
	}
	got, err := ParseTXT([]byte("_grpc_config.x. 300 IN TXT " + text + "\n"))
	if err != nil || len(got) != 1 || !slices.Equal(got[0], strs) {
		t.Fatalf("ParseTXT = %q, %v", got, err)
	}
	if _, err := ParseTXT([]byte(`"unterminated`)); err == nil {
		t.Error("unterminated string accepted")
	}
	if _, err := ParseTXT([]byte(`"\256"`)); err == nil {
		t.Error(`\256 accepted`)
	}
}

func FuzzDecodeTXT(f *testing.F) {
	f.Add("grpc_config="+a2Value, "", "v=spf1 -all")
	f.Add("grpc_", "config=[]", "")
	f.Add("GRPC`_CONFIG = [", "{}]", "grpc_config=[]")
	f.Add("grpc`", "_config=[]", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		records := [][]string{{a, b}, {c}}
		value, err := DecodeTXT(records)
		// A record's strings are read as one (gRFC A2): where they are cut
		// changes nothing.
		whole, werr := DecodeTXT([][]string{{a + b}, {c}})
		if string(whole) != string(value) || fmt.Sprint(werr) != fmt.Sprint(err) {
			t.Fatalf("%q %q: cut %q (%v), whole %q (%v)", a, b, value, err, whole, werr)
		}
		if err != nil {
			return
		}
		// Whatever decodes, encodes back to strings that decode the same.
		again, err := DecodeTXT([][]string{EncodeTXT(value)})
		if err != nil || string(again) != string(value) {
			t.Fatalf("encode/decode changed %q to %q (%v)", value, again, err)
		}
		for _, s := range EncodeTXT(value) {
			if len(s) > maxStringLen {
				t.Fatalf("EncodeTXT made a %d-byte string", len(s))
			}
		}
	})
}

func FuzzParsePresentation(f *testing.F) {
	f.Add(`_grpc_config.x 60 IN TXT ( "grpc_config=[" "]" ) ; c`)
	f.Add(`"a\"b" c\032d "\255"`)
	f.Fuzz(func(t *testing.T, text string) {
		recs, err := ParseTXT([]byte(text))
		if err != nil {
			return
		}
		// Formatting and reading back gives the same strings.
		for _, r := range recs {
			if len(r) == 0 {
				continue
			}
			back, err := ParseTXT([]byte(FormatTXT(r)))
			if err != nil || len(back) != 1 || !slices.Equal(back[0], r) {
				t.Fatalf("%q -> %s -> %q (%v)", r, FormatTXT(r), back, err)
			}
		}
	})
}

func TestEscapeTXTStringRoundTrip(t *testing.T) {
	for _, raw := range []string{"", `plain`, `{"a":"b\\c"}`, "\x00\x1f\x7f\xff", `\`, `"`} {
		esc := EscapeTXTString(raw)
		if got := UnescapeTXTString(esc); got != raw {
			t.Errorf("%q -> %q -> %q", raw, esc, got)
		}
	}
	if got := UnescapeTXTString(`a\`); got != `a\` {
		t.Errorf("trailing backslash: %q", got)
	}
}

// txt-other-records is about records that are no config (grpc-go joins them
// into the JSON); a second grpc_config= record is txt-multiple-config's, and
// its message says what the clients measured by the interop suite do.
func TestLintRecordsOtherAndMultiple(t *testing.T) {
	cfg := []string{`grpc_config=[{"serviceConfig":{}}]`}
	for _, tc := range []struct {
		name    string
		records [][]string
		want    map[string]string // code → a substring of its message
	}{
		{"SPF beside", [][]string{{"v=spf1 -all"}, cfg}, map[string]string{"txt-other-records": "1 other TXT record(s)"}},
		{"two configs", [][]string{cfg, cfg}, map[string]string{"txt-multiple-config": "grpc-java joins their choice lists"}},
		{"two configs and an empty record", [][]string{cfg, {}, cfg}, map[string]string{"txt-multiple-config": "records 0 and 2", "txt-other-records": "1 other TXT record(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, d := range LintRecords(tc.records, LintOptions{}) {
				got[d.Code] = d.Message
			}
			if len(got) != len(tc.want) {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
			for code, sub := range tc.want {
				if !strings.Contains(got[code], sub) {
					t.Errorf("%s: %q, want it to contain %q", code, got[code], sub)
				}
			}
		})
	}
}

// A record whose grpc_config= is cut across its strings holds the config
// (gRFC A2 joins them): lint reads its value and warns, naming the clients
// that look in the first string only. A misspelt attribute is the
// spelling warning's, whether cut or not.
func TestLintRecordsPrefixSplit(t *testing.T) {
	value := `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"soon"}]}}]`
	for _, tc := range []struct {
		name    string
		records [][]string
		want    map[string]string // code → a substring of its message
	}{
		{"cut", [][]string{{"grpc_", "config=" + value}}, map[string]string{
			"txt-prefix-split": "grpc-go and grpc-java read the config, but grpc-js and C-core's c-ares resolver look for the prefix in the first string only",
			"duration":         "soon"}},
		{"cut before =, beside SPF", [][]string{{"v=spf1 -all"}, {"grpc_config", "=", value}}, map[string]string{
			"txt-prefix-split": "record 1 cuts", "txt-other-records": "1 other", "duration": "soon"}},
		{"whole first string", [][]string{{"grpc_config=", value}}, map[string]string{"duration": "soon"}},
		{"cut and misspelt", [][]string{{"GRPC_", "CONFIG=" + value}}, map[string]string{"txt-attribute-spelling": "exactly", "duration": "soon"}},
		{"cut twice", [][]string{{"grpc_", "config=[]"}, {"grpc", "_config=[]"}}, map[string]string{
			"txt-prefix-split": "record 0", "txt-multiple-config": "records 0 and 1", "choices-empty": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, d := range LintRecords(tc.records, LintOptions{}) {
				got[d.Code] = d.Message
			}
			if len(got) != len(tc.want) {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
			for code, sub := range tc.want {
				if m, ok := got[code]; !ok || !strings.Contains(m, sub) {
					t.Errorf("%s: %q, want it to contain %q", code, m, sub)
				}
			}
		})
	}
}

// EscapeTXTString writes every byte as the byte-by-byte rule says.
func TestEscapeTXTStringEveryByte(t *testing.T) {
	rule := func(raw string) string {
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			switch c := raw[i]; {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c >= 0x7f:
				fmt.Fprintf(&b, "\\%03d", c)
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	for c := range 256 {
		for _, raw := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "b", string([]byte{byte(c), byte(c)}) + `{"x":1}`} {
			if got, want := EscapeTXTString(raw), rule(raw); got != want {
				t.Errorf("EscapeTXTString(%q) = %q, want %q", raw, got, want)
			}
		}
	}
	if got := EscapeTXTString(""); got != "" {
		t.Errorf("EscapeTXTString(\"\") = %q", got)
	}
}

// BenchmarkEscapeTXTString escapes a fleet service's record, as every
// build of its answers does.
func BenchmarkEscapeTXTString(b *testing.B) {
	raw := "grpc_config=" + `[{"serviceConfig":` + string(fleetServiceConfig) + "}]"
	b.ReportAllocs()
	for b.Loop() {
		EscapeTXTString(raw)
	}
}
