package zone

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
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

// BenchmarkUpdateOneService: the next version of a zone of 100 000
// services of which one changed, as a reload or a store write builds it:
// the others are the very objects of the config before.
func BenchmarkUpdateOneService(b *testing.B) {
	var text bytes.Buffer
	text.WriteString("zones:\n  - origin: fleet.test.\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range 100_000 {
		fmt.Fprintf(&text, "      - name: svc%d\n        addresses: [10.%d.%d.%d]\n", i, i>>16, i>>8&0xff, i&0xff)
	}
	var p model.Parser
	a, ds := p.Parse(text.Bytes())
	if a == nil {
		b.Fatal(ds)
	}
	changed, ds := p.Parse(bytes.Replace(text.Bytes(), []byte("[10.0.195.80]"), []byte("[10.9.9.9]"), 1))
	if changed == nil {
		b.Fatal(ds)
	}
	z := New(a.Zones[0], 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		next := []*model.Zone{changed.Zones[0], a.Zones[0]}[i%2]
		z, _ = Update(z, next)
		i++
	}
}

// BenchmarkSignFleetZone signs a zone of 10 000 services like
// bench/fleetgen's from nothing (ECDSA P-256, one CSK), as a first start
// of a signed zone does.
func BenchmarkSignFleetZone(b *testing.B) {
	var text bytes.Buffer
	text.WriteString("zones:\n  - origin: fleet.test.\n    dnssec: {}\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range 10000 {
		fmt.Fprintf(&text, "      - name: svc%d\n        addresses: [10.%d.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: fleet.v1.Service%d}], timeout: 1s}]}\n",
			i, i>>16, i>>8&0xff, i&0xff, i)
	}
	cfg, ds := model.Parse(text.Bytes())
	if cfg == nil {
		b.Fatal(ds)
	}
	zc := cfg.Zones[0]
	keys := testKeys(b, zc.Origin, false)
	z, ch := Update(nil, zc)
	z = z.WithSerial(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(nil, z, ch, keys, *zc.DNSSEC, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// fleetSigned is a zone of n services like bench/fleetgen's, signed
// (ECDSA P-256, one CSK, zonemd as given), and its config.
func fleetSigned(b *testing.B, n int, zonemd bool) (*Zone, *model.Zone, *dnssec.KeySet) {
	b.Helper()
	var text bytes.Buffer
	fmt.Fprintf(&text, "zones:\n  - origin: fleet.test.\n    dnssec: {zonemd: %v}\n    nameservers: [ns1.example.net.]\n    services:\n", zonemd)
	for i := range n {
		fmt.Fprintf(&text, "      - name: svc%d\n        addresses: [10.%d.%d.%d]\n        serviceConfig: {methodConfig: [{name: [{service: fleet.v1.Service%d}], timeout: 1s}]}\n",
			i, i>>16, i>>8&0xff, i&0xff, i)
	}
	cfg, ds := model.Parse(text.Bytes())
	if cfg == nil {
		b.Fatal(ds)
	}
	zc := cfg.Zones[0]
	keys := testKeys(b, zc.Origin, false)
	z, ch := Update(nil, zc)
	signed, err := Sign(nil, z.WithSerial(1), ch, keys, *zc.DNSSEC, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return signed, zc, keys
}

// BenchmarkZONEMD100k: the ZONEMD digest of a signed zone of 100 000
// services, made for every serial when zonemd is on.
func BenchmarkZONEMD100k(b *testing.B) {
	z, _, _ := fleetSigned(b, 100_000, true)
	b.SetBytes(int64(z.Bytes()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := z.zonemdDigest(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignOneChange100k: the next version of a signed zone of
// 100 000 services of which one changed, signed from the one before,
// ZONEMD off and on.
func BenchmarkSignOneChange100k(b *testing.B) {
	for _, zonemd := range []bool{false, true} {
		b.Run(fmt.Sprint("zonemd=", zonemd), func(b *testing.B) {
			z, zc, keys := fleetSigned(b, 100_000, zonemd)
			changed := *zc
			changed.Services = slices.Clone(zc.Services)
			s := *changed.Services[4242]
			s.TTL++
			changed.Services[4242] = &s
			serial := uint32(1)
			b.ReportAllocs()
			for b.Loop() {
				next := []*model.Zone{&changed, zc}[serial%2]
				u, ch := Update(z, next)
				serial++
				var err error
				if z, err = Sign(z, u.WithSerial(serial), ch, keys, *zc.DNSSEC, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
