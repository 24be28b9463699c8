package dnspub_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
)

// A publisher serves the config file's services: each one's service
// config is the TXT record at _grpc_config.<service>, where gRPC clients
// look for it (gRFC A2).
func Example() {
	dir, err := os.MkdirTemp("", "dnspub-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "publisher.yaml")
	config := `
zones:
  - origin: example.test.
    nameservers:
      - name: ns1
        addresses: [127.0.0.1]
    services:
      - name: echo
        addresses: [127.0.0.1]
        serviceConfig:
          loadBalancingConfig: [{round_robin: {}}]
`
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		log.Fatal(err)
	}

	s, err := dnspub.New(dnspub.Options{
		ConfigFile:    file,
		StateFile:     "-", // no SOA serials kept across restarts
		Listen:        "127.0.0.1:0",
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		WatchInterval: -1, // no file watching
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	q := new(dns.Msg)
	q.SetQuestion("_grpc_config.echo.example.test.", dns.TypeTXT)
	r, err := dns.Exchange(q, s.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	for _, rr := range r.Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			// miekg/dns keeps TXT strings in presentation form, quotes
			// escaped; this record has no other escapes.
			fmt.Println(strings.ReplaceAll(strings.Join(txt.Txt, ""), `\"`, `"`))
		}
	}
	// Output:
	// grpc_config=[{"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}}]
}
