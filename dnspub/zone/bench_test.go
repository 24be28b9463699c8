package zone

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// BenchmarkNewFleetZone builds the zone of 10 000 services like
// bench/fleetgen's from nothing, as a first start does.
func BenchmarkNewFleetZone(b *testing.B) {
	var text bytes.Buffer
	text.WriteString("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range 10000 {
		fmt.Fprintf(&text, "      - name: svc%d\n        addresses: [10.%d.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: fleet.v1.Service%d}], timeout: 1s}]}\n",
			i, i>>16, i>>8&0xff, i&0xff, i)
	}
	cfg, ds := model.Parse(text.Bytes())
	if cfg == nil {
		b.Fatal(ds)
	}
	b.ReportAllocs()
	for b.Loop() {
		New(cfg.Zones[0], 1)
	}
}
