package resolver

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// A TXT answer can carry about 64 KB: the most a hostile or broken server
// can make the resolver read on each resolution. These records fill it
// with the shapes that used to cost most (22-47 MB of allocations per
// resolution before the caps and linear passes).

// hostileRecord is one shape of record, built to about size bytes.
type hostileRecord struct {
	name  string
	value func(size int) string
}

// repeatTo repeats unit, comma-separated, as often as fits in size bytes
// less the fixed parts around it.
func repeatTo(size int, unit, around string) string {
	n := max((size-len(around))/(len(unit)+1), 1)
	return strings.TrimSuffix(strings.Repeat(unit+",", n), ",")
}

var hostileRecords = []hostileRecord{
	// No choice matches: every choice is explained.
	{"no-match", func(n int) string {
		return "[" + repeatTo(n, `{"clientLanguage":["x"],"serviceConfig":{}}`, "[]") + "]"
	}},
	// The last choice matches, after thousands skipped.
	{"last-matches", func(n int) string {
		return "[" + repeatTo(n, `{"clientLanguage":["x"],"serviceConfig":{}}`, `[,{"serviceConfig":{}}]`) + `,{"serviceConfig":{}}]`
	}},
	// Every choice has an unknown key: an error with a suggestion each.
	{"unknown-keys", func(n int) string {
		return "[" + repeatTo(n, `{"clientHostnam":["x"],"serviceConfig":{}}`, "[]") + "]"
	}},
	// One hostname list of one-letter names: the most nodes per byte.
	{"hostnames", func(n int) string {
		return `[{"clientHostname":[` + repeatTo(n, `"a"`, `[{"clientHostname":[],"serviceConfig":{}},{"serviceConfig":{}}]`) + `],"serviceConfig":{}},{"serviceConfig":{}}]`
	}},
	// The chosen config holds thousands of unknown fields: a warning each,
	// and a map of member names for the duplicate check.
	{"unknown-fields", func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n-40; i++ {
			fmt.Fprintf(&b, `"k%d":1,`, i)
		}
		return `[{"serviceConfig":{` + strings.TrimSuffix(b.String(), ",") + `}}]`
	}},
	// The chosen config names thousands of misspelt status codes.
	{"status-codes", func(n int) string {
		const head = `[{"serviceConfig":{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":[`
		return head + repeatTo(n, `"UNAVAILABL"`, head+`]}}]}}]`) + `]}}]}}]`
	}},
	// A valid config of thousands of method configs, which grpc-go parses.
	{"method-configs", func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n-200; i++ {
			fmt.Fprintf(&b, `{"name":[{"service":"s%d"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}},`, i)
		}
		return `[{"serviceConfig":{"methodConfig":[` + strings.TrimSuffix(b.String(), ",") + `]}}]`
	}},
	// One OR of thousands of constraints.
	{"constraints", func(n int) string {
		const head = `[{"dynamicParameterConstraints":{"orConstraints":{"constraints":[`
		const tail = `]}},"serviceConfig":{}},{"serviceConfig":{}}]`
		return head + repeatTo(n, `{"constraint":{"key":"k","value":"v"}}`, head+tail) + tail
	}},
	// Escapes everywhere.
	{"escapes", func(n int) string {
		return `[{"serviceConfig":{"x":"` + strings.Repeat(`\u0041`, (n-30)/6) + `"}}]`
	}},
}

// hostilePacket is the wire form of the TXT answer publishing value.
func hostilePacket(tb testing.TB, value string) []byte {
	strs := sc.EncodeTXT([]byte(value))
	for i := range strs {
		strs[i] = sc.EscapeTXTString(strs[i])
	}
	m := new(dns.Msg)
	m.SetQuestion("_grpc_config.svc.test.", dns.TypeTXT)
	m.Response = true
	m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "_grpc_config.svc.test.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 30}, Txt: strs}}
	b, err := m.Pack()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// resolveAnswer is what one resolution does with a TXT answer: unpack it,
// read its records, and evaluate them (decode, parse, select, validate,
// grpc-go's parser).
func resolveAnswer(tb testing.TB, d *dnsResolver, pkt []byte) outcome {
	r, err := parseMessage(pkt)
	if err != nil {
		tb.Fatal(err)
	}
	hops := 0
	a, _, err := parseAnswer(r, "_grpc_config.svc.test.", typeTXT, &hops)
	if err != nil {
		tb.Fatal(err)
	}
	return d.evaluate(a, nil)
}

// The allocations of one resolution stay proportional to the answer:
// at most maxAllocPerByte bytes per byte of the packet, plus a constant
// for grpc-go's parser and the channel's bookkeeping; and doubling the
// record at most doubles them (with slack). Measured today: 10-20 bytes
// per byte for every shape.
const (
	maxAllocPerByte = 40
	allocOverhead   = 64 << 10
)

func TestHostileRecordCost(t *testing.T) {
	if raceEnabled {
		t.Skip("costs are measured without the race detector")
	}
	parser := realParser(t)
	d := &dnsResolver{cc: parser, t: target{host: "svc.test"}, sel: fastClient()}
	measure := func(pkt []byte) (bytes float64, took time.Duration) {
		const runs = 5
		resolveAnswer(t, d, pkt) // warm up grpc-go's parser
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for range runs {
			resolveAnswer(t, d, pkt)
		}
		took = time.Since(start) / runs
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / runs, took
	}
	for _, h := range hostileRecords {
		small := hostilePacket(t, h.value(29_000))
		large := hostilePacket(t, h.value(58_000))
		if len(large) > 65535-100 || len(large) < 55_000 {
			t.Fatalf("%s: packet of %d bytes", h.name, len(large))
		}
		bs, _ := measure(small)
		bl, took := measure(large)
		t.Logf("%-14s %5d-byte answer: %8.0f bytes allocated (%4.1f per byte), %v; half the record: %8.0f", h.name, len(large), bl, bl/float64(len(large)), took, bs)
		if bl > maxAllocPerByte*float64(len(large))+allocOverhead {
			t.Errorf("%s: a resolution of a %d-byte answer allocates %.0f bytes, more than %d per byte", h.name, len(large), bl, maxAllocPerByte)
		}
		if bl > 3*bs+allocOverhead {
			t.Errorf("%s: doubling the record took allocations from %.0f to %.0f bytes", h.name, bs, bl)
		}
		// Wall time on a shared machine is noisy: this only catches a
		// return of the quadratic passes (they took 50-60 ms).
		if took > 500*time.Millisecond {
			t.Errorf("%s: a resolution took %v", h.name, took)
		}
	}
}

// BenchmarkHostileRecord measures one resolution of each hostile shape at
// three sizes: bytes/op should double with the size (compare the sizes in
// one run), and alloc-per-byte stay flat.
func BenchmarkHostileRecord(b *testing.B) {
	parser := realParser(b)
	for _, h := range hostileRecords {
		for _, size := range []int{14_500, 29_000, 58_000} {
			pkt := hostilePacket(b, h.value(size))
			b.Run(fmt.Sprintf("shape=%s/size=%d", h.name, size), func(b *testing.B) {
				d := &dnsResolver{cc: parser, t: target{host: "svc.test"}, sel: fastClient()}
				b.ReportAllocs()
				b.SetBytes(int64(len(pkt)))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					resolveAnswer(b, d, pkt)
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(pkt)), "alloc-B/pkt-B")
			})
		}
	}
}
