package main

import (
	"bytes"
	"flag"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

// The client in docs/resolver.md is this file, word for word, and it runs:
// against a test DNS server publishing echo.example.test as the example
// zone of `grpc-config-dns serve` does, and the example health server.
func TestDocumentedClientRuns(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../docs/resolver.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, src) {
		t.Error("docs/resolver.md does not hold examples/resolver/client/main.go verbatim: copy it over")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(l)
	defer srv.Stop()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	dns := dnstest.Start(t)
	dns.SetAddrs("echo.example.test", 30, "127.0.0.1")
	dns.SetConfig("echo.example.test", 30, `[{"clientLanguage":["GO"],"percentage":100,"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},{"serviceConfig":{}}]`)
	if err := flag.Set("target", "dnsconfig://"+dns.Addr+"/echo.example.test:"+port); err != nil {
		t.Fatal(err)
	}

	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	for _, want := range []string{"addresses [127.0.0.1:" + port + "]", "choice 0", `{"loadBalancingConfig":[{"round_robin":{}}]}`, "health check: SERVING"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
