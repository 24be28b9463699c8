package pubtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
)

const config = `zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    services:
      - name: echo
        addresses: [127.0.0.1, "::1"]
        port: 50051
        serviceConfig:
          methodConfig: [{name: [{service: echo.Echo}], timeout: 1.5s}]
      - name: big
        addresses: [127.0.0.2]
        serviceConfig:
          methodConfig: [{name: [{service: ` + "a2345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890" + `}]}]
`

// ask sends one question to addr over net ("udp" or "tcp").
func ask(t *testing.T, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return r
}

// txt is the joined strings of the TXT answer to name, "" for none.
func txt(t *testing.T, addr, name string) string {
	t.Helper()
	r := ask(t, "udp", addr, name, dns.TypeTXT)
	for _, rr := range r.Answer {
		if x, ok := rr.(*dns.TXT); ok {
			// miekg/dns keeps TXT strings in presentation format.
			return strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(strings.Join(x.Txt, ""))
		}
	}
	return ""
}

func serial(t *testing.T, addr string) uint32 {
	t.Helper()
	r := ask(t, "udp", addr, "example.test.", dns.TypeSOA)
	if len(r.Answer) != 1 {
		t.Fatalf("SOA: %v", r)
	}
	return r.Answer[0].(*dns.SOA).Serial
}

// TestSameAnswersAsPublisher: the answers with records are dnspub's, byte
// for byte (the SOA serials differ, and the SOA is in negative answers
// only), over UDP, truncated over UDP, and over TCP.
func TestSameAnswersAsPublisher(t *testing.T) {
	s := Start(t, config)
	file := filepath.Join(t.TempDir(), "publisher.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	pub, err := dnspub.New(dnspub.Options{ConfigFile: file, Listen: "127.0.0.1:0", StateFile: "-", WatchInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer pub.Shutdown(context.Background())
	questions := []struct {
		name  string
		qtype uint16
	}{
		{"_grpc_config.echo.example.test.", dns.TypeTXT},
		{"ECHO.example.test.", dns.TypeA},
		{"echo.example.test.", dns.TypeAAAA},
		{"_grpc._tcp.echo.example.test.", dns.TypeSRV},
		{"example.test.", dns.TypeNS},
		{"_grpc_config.big.example.test.", dns.TypeTXT},
	}
	checked := 0
	for _, network := range []string{"udp", "tcp"} {
		for _, q := range questions {
			ours, theirs := ask(t, network, s.Addr(), q.name, q.qtype), ask(t, network, pub.Addr().String(), q.name, q.qtype)
			if len(ours.Answer) == 0 && !ours.Truncated {
				t.Fatalf("%s %s: no answer: %v", network, q.name, ours)
			}
			ours.Id, theirs.Id = 0, 0
			a, _ := ours.Pack()
			b, _ := theirs.Pack()
			if string(a) != string(b) {
				t.Errorf("%s %s %s:\npubtest:\n%v\ndnspub:\n%v", network, q.name, dns.TypeToString[q.qtype], ours, theirs)
			}
			checked++
		}
	}
	if r := ask(t, "udp", s.Addr(), "_grpc_config.big.example.test.", dns.TypeTXT); !r.Truncated {
		t.Error("a TXT answer larger than 512 bytes, without EDNS, was not truncated over UDP")
	}
	t.Logf("%d answers compared", checked)
}

// TestChanges: a service set, replaced and removed is answered so at
// once, each change a version with a higher serial; a change that is not
// valid is refused with the reason, and the answers stay.
func TestChanges(t *testing.T) {
	s := Start(t, config)
	addr := s.Addr()
	if got := txt(t, addr, "_grpc_config.echo.example.test."); !strings.Contains(got, `"timeout":"1.500000000s"`) {
		t.Fatalf("echo's record: %q", got)
	}
	first := serial(t, addr)

	if err := s.SetService("example.test", "new", `{addresses: [192.0.2.7], serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}}`); err != nil {
		t.Fatal(err)
	}
	if got := txt(t, addr, "_grpc_config.new.example.test."); got != `grpc_config=[{"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}}]` {
		t.Fatalf("the service set: %q", got)
	}
	if serial(t, addr) <= first {
		t.Fatal("the serial did not go up")
	}
	if err := s.SetService("example.test.", "echo", `{"addresses":["127.0.0.1"],"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"2s"}]}}`); err != nil {
		t.Fatal(err)
	}
	if got := txt(t, addr, "_grpc_config.echo.example.test."); !strings.Contains(got, `"timeout":"2s"`) {
		t.Fatalf("echo replaced: %q", got)
	}
	if r := ask(t, "udp", addr, "echo.example.test.", dns.TypeAAAA); len(r.Answer) != 0 {
		t.Fatalf("echo's old address is still served: %v", r.Answer)
	}

	before := serial(t, addr)
	err := s.SetService("example.test", "bad", `{addresses: [192.0.2.8], serviceConfig: {methodConfig: [{name: [{}], timeout: 2}]}}`)
	if err == nil || !strings.Contains(err.Error(), "service bad of zone example.test.") || !strings.Contains(err.Error(), "spec:1:") {
		t.Fatalf("an invalid service: %v", err)
	}
	if serial(t, addr) != before || ask(t, "udp", addr, "bad.example.test.", dns.TypeA).Rcode != dns.RcodeNameError {
		t.Fatal("an invalid service changed the answers")
	}

	if err := s.Remove("example.test", "new"); err != nil {
		t.Fatal(err)
	}
	if r := ask(t, "udp", addr, "_grpc_config.new.example.test.", dns.TypeTXT); r.Rcode != dns.RcodeNameError {
		t.Fatalf("a removed service: %v", r)
	}
	for _, e := range []struct {
		err  error
		want string
	}{
		{s.Remove("example.test", "new"), "has no service new"},
		{s.Remove("other.test", "echo"), "no zone other.test"},
		{s.SetService("other.test", "echo", `{addresses: [192.0.2.1]}`), "no zone other.test"},
		{s.SetConfig("zones:\n  - origin: example.test.\n    ttl: -1\n"), "config:3:"},
	} {
		if e.err == nil || !strings.Contains(e.err.Error(), e.want) {
			t.Errorf("got %v, want an error saying %q", e.err, e.want)
		}
	}

	if err := s.SetConfig(strings.Replace(config, "1.5s", "3s", 1)); err != nil {
		t.Fatal(err)
	}
	if got := txt(t, addr, "_grpc_config.echo.example.test."); !strings.Contains(got, `"timeout":"3s"`) {
		t.Fatalf("after SetConfig: %q", got)
	}
}

// TestNotServed: zone transfers are refused (this server does not do
// them), and a runt is not answered.
func TestNotServed(t *testing.T) {
	s := Start(t, config)
	if r := ask(t, "tcp", s.Addr(), "example.test.", dns.TypeAXFR); r.Rcode != dns.RcodeRefused {
		t.Fatalf("AXFR: %v", r)
	}
	c, err := dnsConn(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{1, 2, 3})
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 512)); err == nil {
		t.Fatalf("a 3-byte query got %d bytes back", n)
	}
}

// TestStartRefusesInvalid: New says where a config is wrong.
func TestStartRefusesInvalid(t *testing.T) {
	_, err := New("zones:\n  - origin: example.test.\n    services: 7\n")
	if err == nil || !strings.Contains(err.Error(), "config:3:") {
		t.Fatalf("New of an invalid config: %v", err)
	}
}

// TestClose: Close stops answering and can be called again.
func TestClose(t *testing.T) {
	s, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	s.Close()
	s.Close()
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeSOA)
	if _, _, err := c.Exchange(m, addr); err == nil {
		t.Fatal("a closed server answered")
	}
}

func dnsConn(addr string) (net.Conn, error) { return net.Dial("udp", addr) }
