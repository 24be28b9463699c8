package dnspub

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// longSecret is a 64-byte secret, as hmac-sha512 wants.
const longSecret = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"

// bigRecordConfig is a zone whose service "big" publishes a config with a
// service name of n bytes; with a key, transfers need it.
func bigRecordConfig(n int, key bool) string {
	keys, transfer := "", "{allow: [127.0.0.1]}"
	if key {
		keys = "tsigKeys:\n  - {name: xfr-key, algorithm: hmac-sha512, secret: \"" + longSecret + "\"}\n"
		transfer = "{allow: [127.0.0.1], key: xfr-key}"
	}
	return keys + `
zones:
  - origin: example.test.
    nameservers: [ns.example.net.]
    transfer: ` + transfer + `
    services:
      - name: big
        serviceConfig: {methodConfig: [{name: [{service: ` + strings.Repeat("x", n) + `}]}]}
`
}

// largestAccepted finds by bisection the longest padding model.Parse
// accepts, and the diagnostic code that refuses one byte more.
func largestAccepted(t *testing.T, key bool) (int, string) {
	t.Helper()
	lo, hi := 60000, 66000 // accepted, refused
	if cfg, _ := model.Parse([]byte(bigRecordConfig(lo, key))); cfg == nil {
		t.Fatalf("padding %d refused", lo)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if cfg, _ := model.Parse([]byte(bigRecordConfig(mid, key))); cfg != nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, ds := model.Parse([]byte(bigRecordConfig(hi, key)))
	for _, d := range ds {
		if d.Severity == sc.Error {
			return lo, d.Code
		}
	}
	t.Fatalf("padding %d refused without an error", hi)
	return 0, ""
}

// TestLargestRecordIsServedEverywhere: the largest record validation
// accepts is answered whole over TCP to an EDNS client, signed, and by
// signed AXFR and IXFR; one byte more is refused at load (issue 11, items
// 3 and 4: the OPT and TSIG records count).
func TestLargestRecordIsServedEverywhere(t *testing.T) {
	for _, key := range []bool{false, true} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			n, code := largestAccepted(t, key)
			if code != "txt-too-large" && code != "answer-too-large" {
				t.Errorf("one byte more is refused with %s", code)
			}
			ts := startServer(t, bigRecordConfig(n, key), nil)
			owner := sc.OwnerPrefix + "big.example.test."

			q := new(dns.Msg)
			q.SetQuestion(owner, dns.TypeTXT)
			q.SetEdns0(1232, false)
			raw := exchangeRaw(t, "tcp", ts.addr, pack(t, q))
			r := new(dns.Msg)
			if err := r.Unpack(raw); err != nil {
				t.Fatal(err)
			}
			if r.Truncated || len(r.Answer) != 1 {
				t.Fatalf("EDNS query over TCP: TC=%v, %d answers", r.Truncated, len(r.Answer))
			}
			if size := len(raw); size < 65535-200 {
				t.Errorf("answer of %d bytes: the largest accepted record should come close to 65535", size)
			}
			if !key {
				return
			}
			// Signed, as a secondary asks (hmac-sha512, the largest MAC).
			q = new(dns.Msg)
			q.SetQuestion(owner, dns.TypeTXT)
			q.SetEdns0(1232, false)
			q.SetTsig("xfr-key.", dns.HmacSHA512, 300, time.Now().Unix())
			c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second, TsigSecret: map[string]string{"xfr-key.": longSecret}}
			r, _, err := c.Exchange(q, ts.addr)
			if err != nil || r.Truncated || len(r.Answer) != 1 || r.IsTsig() == nil {
				t.Fatalf("signed TCP query: %v (answer %v)", err, r != nil && len(r.Answer) == 1)
			}
			for _, xq := range []*dns.Msg{axfrQuery(), ixfrQuery(1)} {
				xq.SetEdns0(1232, false)
				tr := &dns.Transfer{DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, TsigSecret: map[string]string{"xfr-key.": longSecret}}
				xq.SetTsig("xfr-key.", dns.HmacSHA512, 300, time.Now().Unix())
				env, err := tr.In(xq, ts.addr)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for e := range env {
					if e.Error != nil {
						t.Fatalf("%s: %v", dns.TypeToString[xq.Question[0].Qtype], e.Error)
					}
					for _, rr := range e.RR {
						found = found || rr.Header().Name == owner
					}
				}
				if !found {
					t.Errorf("%s did not carry the record", dns.TypeToString[xq.Question[0].Qtype])
				}
			}
		})
	}
}

// TestWriteFramedRefusesWhatItsPrefixCannotSay: a message over 65535
// bytes is never written with a wrapped length.
func TestWriteFramedRefusesWhatItsPrefixCannotSay(t *testing.T) {
	var sink strings.Builder
	w := newBufWriter(&sink)
	if err := writeFramed(w, make([]byte, 65536)); err == nil {
		t.Fatal("a 65536-byte message was framed")
	}
	w.Flush()
	if sink.Len() != 0 {
		t.Errorf("%d bytes written", sink.Len())
	}
	if err := writeFramed(w, make([]byte, 65535)); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if got := binary.BigEndian.Uint16([]byte(sink.String()[:2])); got != 65535 {
		t.Errorf("prefix %d", got)
	}
}

func newBufWriter(w interface{ Write([]byte) (int, error) }) *bufio.Writer {
	return bufio.NewWriterSize(w, 1<<17)
}
