package serviceconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// benchRecord is a 4 KB record with 10 choices, as TXT strings.
func benchRecord(b *testing.B) ([]byte, [][]string) {
	value, err := os.ReadFile("../testdata/bench/choices-4k.json")
	if err != nil {
		b.Fatal(err)
	}
	value = bytes.TrimSpace(value)
	return value, [][]string{{"v=spf1 -all"}, EncodeTXT(value)}
}

var sinkAny any

func floor(value []byte) {
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		panic(err)
	}
	sinkAny = v
}

var benchClient = Client{Language: "go", Hostname: "web-1.prod.example.com", Bucket: 42}

// selectPath is what a client does with an answer: decode the TXT, parse
// the choices, select, and validate the chosen config.
func selectPath(records [][]string) int {
	value, err := DecodeTXT(records)
	if err != nil {
		panic(err)
	}
	ch, err := ParseChoices(value)
	if err != nil {
		panic(err)
	}
	i := ch.Select(benchClient)
	if i < 0 {
		panic("no match")
	}
	return i
}

// BenchmarkRecord4K measures the client path and full lint of a 4 KB
// record with 10 choices against a floor measured in the same run:
// encoding/json unmarshalling the same bytes into any. Compare the
// sub-benchmarks of one run (go test -bench Record4K -count 10 | benchstat).
// Targets: select at most 2x the floor, lint at most 10x.
func BenchmarkRecord4K(b *testing.B) {
	value, records := benchRecord(b)
	b.Run("floor-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for i := 0; i < b.N; i++ {
			floor(value)
		}
	})
	b.Run("select", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for i := 0; i < b.N; i++ {
			selectPath(records)
		}
	})
	b.Run("select-and-validate-chosen", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for i := 0; i < b.N; i++ {
			value, _ := DecodeTXT(records)
			ch, _ := ParseChoices(value)
			if ch.Validate(ch.Select(benchClient)).HasErrors() {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("lint", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for i := 0; i < b.N; i++ {
			if LintRecords(records, LintOptions{}).HasErrors() {
				b.Fatal("invalid")
			}
		}
	})
}

// fleetServiceConfig is the service config bench/fleetgen gives each of a
// fleet's services: a method config with a timeout and a retry policy.
var fleetServiceConfig = []byte(`{"methodConfig":[{"name":[{"service":"fleet.v1.Service12345"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`)

// BenchmarkPublishService is what a publisher spends on each service of a
// fleet when it first reads it: every rule, the record rebuilt and checked
// as served, and grpc-go's verdict. A first start of 100 000 services pays
// it 100 000 times (bench/scale.sh).
func BenchmarkPublishService(b *testing.B) {
	opts := DefaultPublishOptions()
	opts.Owner = "_grpc_config.svc12345.fleet.test."
	b.ReportAllocs()
	for b.Loop() {
		if r, ds := Publish(Source{JSON: fleetServiceConfig, Kind: KindServiceConfig}, opts); r == nil {
			b.Fatal(ds)
		}
	}
}
