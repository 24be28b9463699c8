package dnspub

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
)

// fuzzConfig serves a zone whose transfers 127.0.0.1 may take unsigned
// and one whose transfers need the key; %s is echo's address, which a
// reload changes so that IXFR has a history to send.
const fuzzConfig = `
server: {tcpIdleTimeout: 10s}
tsigKeys:
  - {name: xfr-key, secret: "` + testSecret + `"}
zones:
  - origin: example.test.
    ttl: 300
    soa: {minimum: 60}
    nameservers: [{name: ns1, addresses: [192.0.2.53]}]
    transfer: {allow: [127.0.0.1]}
    services:
      - {name: echo, addresses: [%s], serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}}
      - name: big
        serviceConfig:
          methodConfig: [{name: [{service: BIG}]}]
  - origin: keyed.test.
    nameservers: [{name: ns1, addresses: [192.0.2.54]}]
    transfer: {allow: [127.0.0.0/8], key: xfr-key}
    services:
      - {name: svc, addresses: ["2001:db8::9"], serviceConfig: {}}
`

// remoteConn is a pipe end that says it comes from a TCP address, as the
// server's connections do.
type remoteConn struct {
	net.Conn
	from net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.from }

// FuzzServe feeds arbitrary packets to the server's own packet path:
// handleUDP, which both UDP read loops call, and serveConn over a pipe,
// with TSIG, transfers (AXFR, IXFR with a history) and the slow path
// included. Every reply must unpack with miekg/dns, be a response with the
// query's ID, and fit what the client allowed; a response is never
// answered. Over TCP the connection must stay in step: a query sent after
// the packet gets its answer after the packet's. The seed corpus is in
// testdata/fuzz.
func FuzzServe(f *testing.F) {
	file := filepath.Join(f.TempDir(), "publisher.yaml")
	config := func(echo string) []byte {
		text := strings.Replace(fuzzConfig, "%s", echo, 1)
		return []byte(strings.Replace(text, "BIG", strings.Repeat("x", 1250), 1))
	}
	if err := os.WriteFile(file, config("192.0.2.1"), 0o644); err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{ConfigFile: file, StateFile: "-", WatchInterval: -1, Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	oldSerial := s.Serials()["example.test."]
	if err := os.WriteFile(file, config("192.0.2.2"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		f.Fatal(err)
	}
	maxUDP := s.snap.Load().table.MaxUDPSize()

	signed := func(q *dns.Msg) []byte {
		q.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
		b, _, err := dns.TsigGenerate(q, testSecret, "", false)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	ask := func(name string, qtype uint16, edns int) *dns.Msg {
		q := new(dns.Msg)
		q.SetQuestion(name, qtype)
		if edns > 0 {
			q.SetEdns0(uint16(edns), true)
		}
		return q
	}
	ixfr := func(origin string, serial uint32) *dns.Msg {
		q := new(dns.Msg)
		q.SetIxfr(origin, serial, "ns1."+origin, "hostmaster."+origin)
		return q
	}
	axfr := new(dns.Msg)
	axfr.SetAxfr("example.test.")
	keyedAXFR := new(dns.Msg)
	keyedAXFR.SetAxfr("keyed.test.")
	for _, seed := range []struct {
		msg []byte
		tcp bool
	}{
		{pack(f, ask("echo.example.test.", dns.TypeA, 0)), false},
		{pack(f, ask("_grpc_config.big.example.test.", dns.TypeTXT, 4096)), false},
		{pack(f, ask("_grpc_config.big.example.test.", dns.TypeTXT, 0)), true},
		{pack(f, axfr), true},
		{pack(f, axfr), false},
		{pack(f, ixfr("example.test.", oldSerial)), true},
		{pack(f, ixfr("example.test.", oldSerial)), false},
		{signed(ask("echo.example.test.", dns.TypeA, 1232)), false},
		{signed(ask("_grpc_config.big.example.test.", dns.TypeTXT, 0)), false},
		{signed(keyedAXFR), true},
		{signed(ixfr("keyed.test.", 1)), true},
	} {
		f.Add(seed.msg, seed.tcp)
	}

	from := netip.MustParseAddr("127.0.0.1")
	f.Fuzz(func(t *testing.T, msg []byte, tcp bool) {
		id := -1 // no reply is expected to a packet without an ID
		if len(msg) >= 2 {
			id = int(binary.BigEndian.Uint16(msg))
		}
		if len(msg) > wire.MaxTCPSize {
			msg = msg[:wire.MaxTCPSize]
		}
		allowed := wire.MaxTCPSize
		if !tcp {
			allowed = wire.MinUDPSize
			var in dns.Msg
			if in.Unpack(msg) != nil {
				allowed = maxUDP // the table's own reading of it decides
			} else if opt := in.IsEdns0(); opt != nil {
				allowed = min(max(int(opt.UDPSize()), wire.MinUDPSize), maxUDP)
			}
		}
		check := func(resp []byte) {
			t.Helper()
			var out dns.Msg
			if err := out.Unpack(resp); err != nil {
				t.Fatalf("the reply does not unpack: %v\nquery % x\nreply % x", err, msg, resp)
			}
			if len(msg) < 12 || msg[2]&0x80 != 0 {
				t.Fatalf("a runt or a response was answered: % x", msg)
			}
			if int(out.Id) != id || !out.Response {
				t.Fatalf("reply header %v to query ID %#x\nquery % x", out.MsgHdr, id, msg)
			}
			if len(resp) > allowed {
				t.Fatalf("%d-byte reply, the client allowed %d\nquery % x", len(resp), allowed, msg)
			}
		}
		if !tcp {
			if resp, ok := s.handleUDP(make([]byte, 0, 65535), msg, from); ok {
				check(resp)
			}
			return
		}
		// Over TCP the packet is followed by a query with another ID:
		// every reply before the latter's answer is one to the packet.
		next := ask("echo.example.test.", dns.TypeA, 0)
		next.Id = uint16(^id)
		framed := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
		framed = append(framed, msg...)
		nb := pack(t, next)
		framed = binary.BigEndian.AppendUint16(framed, uint16(len(nb)))
		framed = append(framed, nb...)
		client, server := net.Pipe()
		defer client.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(&tcpConn{Conn: remoteConn{server, &net.TCPAddr{IP: from.AsSlice(), Port: 5353}}})
		}()
		defer func() { client.Close(); <-done }()
		client.SetDeadline(time.Now().Add(30 * time.Second))
		go client.Write(framed) // fails only once the test is over
		for {
			var l [2]byte
			if _, err := io.ReadFull(client, l[:]); err != nil {
				t.Fatalf("the connection ended before the next query was answered: %v\nquery % x", err, msg)
			}
			resp := make([]byte, binary.BigEndian.Uint16(l[:]))
			if _, err := io.ReadFull(client, resp); err != nil {
				t.Fatalf("a reply was cut short: %v\nquery % x", err, msg)
			}
			var out dns.Msg
			if err := out.Unpack(resp); err == nil && out.Id == next.Id && out.Response && len(out.Answer) == 1 {
				if _, ok := out.Answer[0].(*dns.A); ok && out.Answer[0].Header().Name == "echo.example.test." {
					return
				}
			}
			check(resp)
		}
	})
}
