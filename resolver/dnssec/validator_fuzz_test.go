package dnssec

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// signedAnswers are answers of the signed example zone, as the publisher
// gives them, and the validator that trusts its key (its DNSKEY RRset
// taken as validated): the seeds of FuzzValidate, and their checks.
func signedAnswers(tb testing.TB) (*Validator, map[string][]byte) {
	tb.Helper()
	cfg, ds := model.Parse(bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1))
	if cfg == nil {
		tb.Fatal(ds)
	}
	zc := cfg.Zones[0]
	ks, err := dnssec.Load(tb.TempDir(), zc.Origin, dnssec.Options{Algorithm: 13, Generate: true})
	if err != nil {
		tb.Fatal(err)
	}
	z0, ch := zone.Update(nil, zc)
	z, err := zone.Sign(nil, z0.WithSerial(1), ch, ks, *zc.DNSSEC, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	v, _ := New([]*Anchor{{zone: "example.test."}}, Options{})
	v.keys = map[string]*zoneKeys{"example.test.": {until: time.Now().Add(time.Hour)}}
	for _, rr := range ks.DNSKEYs(30) {
		buf := make([]byte, 512)
		n, _ := dns.PackRR(rr, buf, 0, nil, false)
		k, _ := parseDNSKEY(buf[n-int(rr.Header().Rdlength) : n])
		v.keys["example.test."].keys = append(v.keys["example.test."].keys, k)
	}
	at := func(name string, t uint16) []dns.RR {
		var out []dns.RR
		for _, rr := range z.RecordsAt(name) {
			if rr.Header().Rrtype == t || rr.Header().Rrtype == dns.TypeRRSIG && rr.(*dns.RRSIG).TypeCovered == t {
				out = append(out, rr)
			}
		}
		return out
	}
	msg := func(name string, qtype uint16, rcode int, answer, ns []dns.RR) []byte {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.Response, m.Authoritative, m.Rcode = true, true, rcode
		m.Answer, m.Ns = answer, ns
		b, err := m.Pack()
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	soa := at("example.test.", dns.TypeSOA)
	return v, map[string][]byte{
		"positive": msg("_grpc_config.echo.example.test.", dns.TypeTXT, 0, at("_grpc_config.echo.example.test.", dns.TypeTXT), nil),
		"address":  msg("echo.example.test.", dns.TypeA, 0, at("echo.example.test.", dns.TypeA), nil),
		"nodata":   msg("www.example.test.", dns.TypeTXT, 0, nil, append(append([]dns.RR{}, soa...), at("www.example.test.", dns.TypeNSEC)...)),
		"nxdomain": msg("nope.example.test.", dns.TypeA, dns.RcodeNameError, nil, append(append([]dns.RR{}, soa...), append(at("_grpc_config.greeter.example.test.", dns.TypeNSEC), at("example.test.", dns.TypeNSEC)...)...)),
	}
}

// TestValidatorOnSeeds: the seeds of FuzzValidate validate as they are,
// and fail with one bit of a signature flipped.
func TestValidatorOnSeeds(t *testing.T) {
	v, seeds := signedAnswers(t)
	for name, b := range seeds {
		q := question(b)
		if secure, _, err := v.Validate(context.Background(), b, q.Name, q.Qtype, nil); err != nil || !secure {
			t.Errorf("%s: %v", name, err)
		}
		// The signatures are the last 64 bytes of each RRSIG: flip a bit
		// of the last record's.
		bad := bytes.Clone(b)
		bad[len(bad)-3] ^= 0x10
		if _, _, err := v.Validate(context.Background(), bad, q.Name, q.Qtype, nil); err == nil {
			t.Errorf("%s with a flipped bit: validated", name)
		}
	}
}

// Answers come from the network: any message, however malformed, must
// be validated or refused without a panic, and never validated when it is
// not what the zone signed (here: not one of the seeds, byte for byte,
// with a validating signature).
func FuzzValidate(f *testing.F) {
	v, seeds := signedAnswers(f)
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(dns.Msg)
		if m.Unpack(b) != nil || len(m.Question) != 1 {
			return
		}
		q := m.Question[0]
		v.Validate(context.Background(), b, q.Name, q.Qtype, nil)
	})
}

func FuzzParseAnchors(f *testing.F) {
	for _, s := range []string{
		"example.test. 3600 IN DS 63080 13 2 2B41F1379B55C925D6D9D1DA9BE0B81478F00915271C0822EB6EACAC9231C21F",
		"example.test. IN DNSKEY 257 3 13 v4uv7Vqj4pMPbTBXXKVfaEmK8TX0Ee61Vwww6U8mk2fy4KPUVtj84+/h0UZuLTN4VKT3sS4ThYk2AQQzeZXAzw==",
		`trust-anchors { example.test. static-key 257 3 13 "v4uv7Vqj4pMPbTBXXKVfaEmK8TX0Ee61Vwww6U8mk2fy4KPUVtj84+/h0UZuLTN4VKT3sS4ThYk2AQQzeZXAzw=="; };`,
		`trusted-keys { "example.test." 257 3 13 "AAAA"; };`,
		"; a comment\n. IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		as, err := ParseAnchors(s, "fuzz")
		if err != nil {
			return
		}
		for _, a := range as {
			if len(a.ds)+len(a.keys) == 0 || a.zone == "" {
				t.Fatalf("an empty anchor from %q", s)
			}
		}
	})
}

// question is the question of a packed message.
func question(b []byte) dns.Question {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil || len(m.Question) != 1 {
		return dns.Question{}
	}
	return m.Question[0]
}
