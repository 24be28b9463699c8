package resolver

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/grpclog"
)

// syncBuffer is a bytes.Buffer safe for the resolver's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without Options.Logger the resolver logs to grpclog, component
// "dnsconfig", as grpc-go's own resolvers do.
func TestLogsToGrpclogByDefault(t *testing.T) {
	var info, warn syncBuffer
	grpclog.SetLoggerV2(grpclog.NewLoggerV2WithVerbosity(&info, &warn, io.Discard, 0))
	t.Cleanup(func() { grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr)) })
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("svc.test", 60, oneChoice(cfgA))
		o := fastOptions()
		cc, _ := buildFake(t, m.builder(o), m.target)
		cc.waitN(t, 1, 5*time.Second)
		m.dns.SetTXT("svc.test", 60) // withdrawn: no record
		cc2, _ := buildFake(t, m.builder(o), "dnsconfig://192.0.2.99/svc.test")
		cc2.waitN(t, 1, 5*time.Second)
	})
	got := info.String()
	if !strings.Contains(got, "[dnsconfig]") || !strings.Contains(got, "service config changed") || !strings.Contains(got, "target=dnsconfig://192.0.2.53:53/svc.test:8080") {
		t.Errorf("grpclog info output %q: want the config change of the component dnsconfig with its target", got)
	}
	if w := warn.String(); !strings.Contains(w, "[dnsconfig]") || !strings.Contains(w, "no addresses") {
		t.Errorf("grpclog warning output %q: want the failed resolution", w)
	}
}
