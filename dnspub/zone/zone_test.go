package zone

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/config"
)

func exampleZone(t *testing.T, text []byte, serial uint32) *Zone {
	t.Helper()
	cfg, ds := config.Parse(text)
	if cfg == nil {
		t.Fatalf("config: %v", ds)
	}
	return New(cfg.Zones[0], serial)
}

// TestMasterFileRoundTrip checks that the master file, read back by an
// independent parser, holds exactly the zone's records.
func TestMasterFileRoundTrip(t *testing.T) {
	z := exampleZone(t, config.Example, 42)
	var buf bytes.Buffer
	if err := z.WriteMasterFile(&buf, "generated\nby a test"); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	zp := dns.NewZoneParser(&buf, "", "test")
	var got []string
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		got = append(got, rr.String())
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, rr := range z.AXFR()[:z.Len()+1] {
		want = append(want, rr.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("round trip differs:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDigestAndDiff(t *testing.T) {
	a := exampleZone(t, config.Example, 1)
	b := exampleZone(t, config.Example, 2)
	if a.Digest() != b.Digest() {
		t.Error("the serial changed the digest")
	}
	if a.WithSerial(7).Digest() != a.Digest() || a.WithSerial(7).Serial() != 7 || a.Serial() != 1 {
		t.Error("WithSerial")
	}
	changed := bytes.Replace(config.Example, []byte("name: www\n        addresses: [127.0.0.1]"), []byte("name: www\n        addresses: [127.0.0.2]"), 1)
	c := exampleZone(t, changed, 3)
	if c.Digest() == a.Digest() {
		t.Fatal("a changed address kept the digest")
	}
	del, add := Diff(a, c)
	if len(del) != 1 || len(add) != 1 || del[0].(*dns.A).A.String() != "127.0.0.1" || add[0].(*dns.A).A.String() != "127.0.0.2" {
		t.Errorf("diff = -%v +%v", del, add)
	}
	if del, add := Diff(a, b); len(del)+len(add) != 0 {
		t.Errorf("diff of equal zones = -%v +%v", del, add)
	}
}

func TestCompareNames(t *testing.T) {
	names := []string{"example.test.", "a.example.test.", "z.example.test.", "_grpc_config.echo.example.test.", "echo.example.test."}
	for i, a := range names {
		for j, b := range names {
			if (CompareNames(a, b) == 0) != (i == j) {
				t.Errorf("CompareNames(%s, %s)", a, b)
			}
		}
	}
	if CompareNames("example.test.", "a.example.test.") >= 0 || CompareNames("echo.example.test.", "_grpc_config.echo.example.test.") >= 0 {
		t.Error("the apex and parents must sort before their children")
	}
}

// TestTXTEscaping checks that JSON backslashes and quotes reach the wire
// unchanged (miekg/dns reads escapes in TXT strings).
func TestTXTEscaping(t *testing.T) {
	text := bytes.Replace(config.Example, []byte("service: helloworld.Greeter"), []byte(`service: "hello\\\"world\u00e9.Greeter"`), 1)
	z := exampleZone(t, text, 1)
	var txt *dns.TXT
	for _, rr := range z.Records() {
		if rr.Header().Name == "_grpc_config.greeter.example.test." {
			txt = rr.(*dns.TXT)
		}
	}
	buf := make([]byte, 4096)
	n, err := dns.PackRR(txt, buf, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{"service":"hello\\\"world\u00e9.Greeter"}],"timeout":"1.500000000s"}]}}]`
	rdata := buf[n-len(want)-1 : n]
	if int(rdata[0]) != len(want) || string(rdata[1:]) != want {
		t.Errorf("wire TXT = %q, want %q", rdata, want)
	}
	if got := strings.Join(RawTXT(txt), ""); got != want {
		t.Errorf("RawTXT = %q", got)
	}
}

// TestSameServiceComparesEveryField: a field added to config.Service must
// be compared by sameService, or Update could share a service that
// differs in it.
func TestSameServiceComparesEveryField(t *testing.T) {
	if n := reflect.TypeOf(config.Service{}).NumField(); n != 9 {
		t.Errorf("config.Service has %d fields: compare the new ones in sameService, then update this count", n)
	}
}
