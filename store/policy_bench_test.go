package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkPutService measures a service write into a zone without
// policies and into one with 50 (10 zone-wide, 30 by label, 10 by name),
// which every service write reads (cached per version of the zone's
// policies) and validates the service under.
func BenchmarkPutService(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Location: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			zone := &Object{Spec: json.RawMessage(`{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`)}
			if _, _, err := s.PutZone(ctx, "example.test", zone); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				target := `{"kind":"Zone"}`
				switch {
				case i >= 40:
					target = fmt.Sprintf(`{"kind":"Service","name":"svc-%d"}`, i)
				case i >= 10:
					target = fmt.Sprintf(`{"kind":"Service","labels":{"team":"t%d"}}`, i%5)
				}
				spec := fmt.Sprintf(`{"targetRef":%s,"default":{"methodConfig":[{"name":[{"service":"s%d"}],"timeout":"%ds"}]}}`, target, i, i+1)
				if _, _, err := s.PutPolicy(ctx, "example.test", fmt.Sprintf("p-%d", i), &Object{Spec: json.RawMessage(spec)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				o := &Object{Metadata: Metadata{Labels: map[string]string{"team": "t1"}},
					Spec: json.RawMessage(fmt.Sprintf(`{"addresses":["192.0.2.1"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"%ds"}]}}`, i%1000+1))}
				if _, _, err := s.PutService(ctx, "example.test", "svc-1", o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
