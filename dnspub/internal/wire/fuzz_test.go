package wire

import (
	"testing"

	"github.com/miekg/dns"
)

// FuzzRespond feeds arbitrary packets to the handler. It must never panic,
// never answer a response (or a runt), and never send more than the client
// allowed: 512 bytes without EDNS, its EDNS buffer size clamped to
// [512, cap] with it, 65535 over TCP. Every answer must be a well-formed
// message with the query's ID. The seed corpus is in testdata/fuzz.
func FuzzRespond(f *testing.F) {
	tb, _ := testTable(f, 1232)
	for _, a := range []ask{
		{name: "echo.example.test.", qtype: dns.TypeA},
		{name: "_grpc_config.big.example.test.", qtype: dns.TypeTXT, edns: 4096, do: true},
		{name: "nope.example.test.", qtype: dns.TypeA, edns: 600},
		{name: "example.test.", qtype: dns.TypeAXFR, tcp: true},
	} {
		f.Add(query(a), a.tcp)
	}
	f.Fuzz(func(t *testing.T, msg []byte, tcp bool) {
		resp, r := tb.Respond(make([]byte, 0, 65535), msg, tcp)
		if r.Action != Reply {
			if len(resp) != 0 {
				t.Fatalf("action %d with a %d-byte response", r.Action, len(resp))
			}
			if r.Action == Drop && len(msg) >= 12 && msg[2]&0x80 == 0 {
				t.Fatalf("dropped a query")
			}
			return
		}
		if len(msg) < 12 || msg[2]&0x80 != 0 {
			t.Fatalf("answered a runt or a response")
		}
		// What the client allowed, as an independent parser reads it.
		allowed := MinUDPSize
		var in dns.Msg
		if err := in.Unpack(msg); err == nil {
			if opt := in.IsEdns0(); opt != nil {
				allowed = min(max(int(opt.UDPSize()), MinUDPSize), tb.MaxUDPSize())
			}
		} else if r.Query.EDNS {
			allowed = min(max(int(r.Query.UDPSize), MinUDPSize), tb.MaxUDPSize())
		}
		if tcp {
			allowed = MaxTCPSize
		}
		if len(resp) > allowed {
			t.Fatalf("%d-byte response, client allowed %d", len(resp), allowed)
		}
		var out dns.Msg
		if err := out.Unpack(resp); err != nil {
			t.Fatalf("response does not unpack: %v\n% x", err, resp)
		}
		if out.Id != uint16(msg[0])<<8|uint16(msg[1]) || !out.Response || out.RecursionAvailable {
			t.Fatalf("bad response header %v", out.MsgHdr)
		}
	})
}
