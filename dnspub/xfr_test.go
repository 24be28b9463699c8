package dnspub

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// transferIn runs a zone transfer as a secondary would, with miekg's
// client (which checks the SOA framing and, with a key, every TSIG).
func transferIn(t *testing.T, addr string, q *dns.Msg, key string) ([]dns.RR, error) {
	t.Helper()
	tr := &dns.Transfer{DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
	if key != "" {
		tr.TsigSecret = map[string]string{"xfr-key.": key}
		q.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
	}
	env, err := tr.In(q, addr)
	if err != nil {
		return nil, err
	}
	var rrs []dns.RR
	for e := range env {
		if e.Error != nil {
			return rrs, e.Error
		}
		rrs = append(rrs, e.RR...)
	}
	return rrs, nil
}

func axfrQuery() *dns.Msg {
	q := new(dns.Msg)
	q.SetAxfr("example.test.")
	return q
}

func ixfrQuery(serial uint32) *dns.Msg {
	q := new(dns.Msg)
	q.SetIxfr("example.test.", serial, "ns1.example.test.", "hostmaster.example.test.")
	return q
}

func TestAXFR(t *testing.T) {
	ts := startServer(t, baseConfig("allow: [127.0.0.1]"), nil)
	rrs, err := transferIn(t, ts.addr, axfrQuery(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := ts.snap.Load().zones["example.test."].cur.AXFR()
	if len(rrs) != len(want) {
		t.Fatalf("AXFR gave %d records, want %d", len(rrs), len(want))
	}
	for i := range rrs {
		if rrs[i].String() != want[i].String() {
			t.Errorf("record %d: %v, want %v", i, rrs[i], want[i])
		}
	}
	// AXFR over UDP is not defined (RFC 5936 §4.2).
	if r, err := ts.exchange("udp", axfrQuery()); err != nil || r.Rcode != dns.RcodeNotImplemented {
		t.Errorf("AXFR over UDP: %v %v", r, err)
	}
	// Every message of a transfer asked with EDNS carries an OPT (RFC 6891
	// §6.1.1), and so does a refusal.
	q := axfrQuery()
	q.SetEdns0(1232, false)
	tr := &dns.Transfer{}
	env, err := tr.In(q, ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	for e := range env {
		if e.Error != nil {
			t.Fatalf("AXFR with EDNS: %v", e.Error)
		}
	}
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	writeTCP(t, c, pack(t, q))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	// The transfer ends with its second SOA.
	for soas := 0; soas < 2; {
		r, err := readTCP(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.IsEdns0() == nil {
			t.Fatalf("transfer message without OPT: %v", r)
		}
		for _, rr := range r.Answer {
			if rr.Header().Rrtype == dns.TypeSOA {
				soas++
			}
		}
	}
	bad := axfrQuery()
	bad.SetQuestion("other.test.", dns.TypeAXFR)
	bad.SetEdns0(1232, false)
	writeTCP(t, c, pack(t, bad))
	if r, err := readTCP(t, c); err != nil || r.Rcode != dns.RcodeRefused || r.IsEdns0() == nil {
		t.Errorf("refused transfer: %v %v; want REFUSED with an OPT", r, err)
	}
}

func TestTransferAccessControl(t *testing.T) {
	for _, tc := range []struct {
		transfer string
		key      string
		rcode    int // 0: the transfer succeeds
	}{
		{"", "", dns.RcodeRefused},                                   // nobody by default
		{"allow: [192.0.2.0/24]", "", dns.RcodeRefused},              // not our address
		{"allow: [127.0.0.0/8], key: xfr-key", "", dns.RcodeRefused}, // key required
		{"allow: [127.0.0.0/8], key: xfr-key", testSecret, 0},
		{"key: xfr-key", testSecret, 0},                                                // any address with the key
		{"key: xfr-key", "d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5d3Jvbmdr", dns.RcodeNotAuth}, // wrong secret: BADSIG
		{"allow: [127.0.0.1]", testSecret, 0},                                          // a valid key is fine where none is needed
	} {
		t.Run(tc.transfer+" "+tc.key, func(t *testing.T) {
			ts := startServer(t, baseConfig(tc.transfer), nil)
			rrs, err := transferIn(t, ts.addr, axfrQuery(), tc.key)
			if tc.rcode == 0 {
				if err != nil || len(rrs) < 3 {
					t.Fatalf("transfer failed: %v (%d records)", err, len(rrs))
				}
				return
			}
			if err == nil {
				t.Fatalf("transfer allowed, want %s", dns.RcodeToString[tc.rcode])
			}
			// miekg reports the rcode in its error text, or, for our
			// unsigned NOTAUTH/BADSIG answer, that it could not verify it.
			if !strings.Contains(err.Error(), fmt.Sprint(tc.rcode)) && !strings.Contains(err.Error(), "bad authentication") {
				t.Errorf("error %v, want rcode %s", err, dns.RcodeToString[tc.rcode])
			}
			if tc.rcode == dns.RcodeNotAuth && !strings.Contains(ts.logs.String(), "error=BADSIG") {
				t.Errorf("BADSIG not logged")
			}
		})
	}
	ts := startServer(t, baseConfig("allow: [127.0.0.1]"), nil)
	q := new(dns.Msg)
	q.SetAxfr("echo.example.test.")
	if _, err := transferIn(t, ts.addr, q, ""); err == nil || !strings.Contains(err.Error(), fmt.Sprint(dns.RcodeNotAuth)) {
		t.Errorf("AXFR of a name that is not a zone: %v", err)
	}
	q.SetAxfr("example.org.")
	if _, err := transferIn(t, ts.addr, q, ""); err == nil || !strings.Contains(err.Error(), fmt.Sprint(dns.RcodeRefused)) {
		t.Errorf("AXFR of a foreign zone: %v", err)
	}
}

// TestIXFR: incremental transfers from each version in the history, a
// full transfer from an unknown serial, the SOA alone when up to date, and
// the SOA alone over UDP.
func TestIXFR(t *testing.T) {
	ts := startServer(t, baseConfig("allow: [127.0.0.1], key: xfr-key"), nil)
	v1 := ts.serial()
	ts.write(strings.Replace(baseConfig("allow: [127.0.0.1], key: xfr-key"), "192.0.2.1,", "192.0.2.7,", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	v2 := ts.serial()
	ts.write(strings.Replace(baseConfig("allow: [127.0.0.1], key: xfr-key"), "192.0.2.1,", "192.0.2.8,", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	v3 := ts.serial()
	if !(serialGreater(v2, v1) && serialGreater(v3, v2)) {
		t.Fatalf("serials %d %d %d", v1, v2, v3)
	}

	rrs, err := transferIn(t, ts.addr, ixfrQuery(v1), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	// SOA v3, [SOA v1, -A .1, SOA v2, +A .7], [SOA v2, -A .7, SOA v3, +A .8], SOA v3.
	var got []string
	for _, rr := range rrs {
		switch r := rr.(type) {
		case *dns.SOA:
			got = append(got, fmt.Sprint(r.Serial-v1))
		case *dns.A:
			got = append(got, r.A.String())
		default:
			got = append(got, rr.String())
		}
	}
	want := []string{fmt.Sprint(v3 - v1), "0", "192.0.2.1", fmt.Sprint(v2 - v1), "192.0.2.7", fmt.Sprint(v2 - v1), "192.0.2.7", fmt.Sprint(v3 - v1), "192.0.2.8", fmt.Sprint(v3 - v1)}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("IXFR from v1 (serials relative to v1):\n got %v\nwant %v", got, want)
	}

	rrs, err = transferIn(t, ts.addr, ixfrQuery(v1-1000), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if full := ts.snap.Load().zones["example.test."].cur.AXFR(); len(rrs) != len(full) {
		t.Errorf("IXFR from an unknown serial: %d records, want the whole zone (%d)", len(rrs), len(full))
	}
	rrs, err = transferIn(t, ts.addr, ixfrQuery(v3), testSecret)
	if err != nil || len(rrs) != 1 || rrs[0].(*dns.SOA).Serial != v3 {
		t.Errorf("IXFR when up to date: %v %v", rrs, err)
	}
	q := ixfrQuery(v1)
	q.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second, TsigSecret: map[string]string{"xfr-key.": testSecret}}
	r, _, err := c.Exchange(q, ts.addr)
	if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Serial != v3 || r.IsTsig() == nil {
		t.Errorf("IXFR over UDP: %v %v", r, err)
	}
}

// TestSignedQuery: an ordinary query signed with a known key gets a
// signed answer, truncated when the signature makes it too large for the
// client; an unknown key gets NOTAUTH/BADKEY.
func TestSignedQuery(t *testing.T) {
	// A TXT answer of about 480 bytes: under 512 unsigned, over it signed.
	edge := "      - name: edge\n        serviceConfig: {methodConfig: [{name: [{service: " + strings.Repeat("e", 340) + "}]}]}\n"
	ts := startServer(t, baseConfig("")+edge, nil)
	rawUDP := func(q []byte) []byte {
		c, err := net.Dial("udp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Write(q)
		buf := make([]byte, 65535)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	q := new(dns.Msg)
	q.SetQuestion("_grpc_config.edge.example.test.", dns.TypeTXT)
	if n := len(rawUDP(pack(t, q))); n > 512 || n < 470 {
		t.Fatalf("unsigned answer is %d bytes, want 470..512 for this test", n)
	}
	q.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
	signedQ, mac, err := dns.TsigGenerate(q, testSecret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	resp := rawUDP(signedQ)
	r := new(dns.Msg)
	if err := r.Unpack(resp); err != nil {
		t.Fatal(err)
	}
	if len(resp) > 512 || !r.Truncated || len(r.Answer) != 0 || r.IsTsig() == nil {
		t.Errorf("signed answer: %d bytes, %v", len(resp), r)
	}
	if err := dns.TsigVerify(resp, testSecret, mac, false); err != nil {
		t.Errorf("the truncated answer's TSIG does not verify: %v", err)
	}
	for _, proto := range []string{"udp", "tcp"} {
		q := new(dns.Msg)
		q.SetQuestion("echo.example.test.", dns.TypeA)
		q.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
		c := &dns.Client{Net: proto, Timeout: 2 * time.Second, TsigSecret: map[string]string{"xfr-key.": testSecret}}
		r, _, err := c.Exchange(q, ts.addr)
		if err != nil || len(r.Answer) != 1 || r.IsTsig() == nil {
			t.Errorf("%s signed query: %v %v", proto, r, err)
		}
		q = new(dns.Msg)
		q.SetQuestion("echo.example.test.", dns.TypeA)
		q.SetTsig("other-key.", dns.HmacSHA256, 300, time.Now().Unix())
		c.TsigSecret = map[string]string{"other-key.": testSecret}
		r, _, err = c.Exchange(q, ts.addr)
		if r == nil || r.Rcode != dns.RcodeNotAuth || r.IsTsig() == nil || r.IsTsig().Error != dns.RcodeBadKey {
			t.Errorf("%s unknown key: %v %v", proto, r, err)
		}
	}
}

// fakeSecondary answers NOTIFY like a secondary, ignoring the first
// `drop` of them so that retries are exercised.
type fakeSecondary struct {
	mu      sync.Mutex
	serials []uint32
	drop    int
	signed  int
	addr    string
}

func startSecondary(t *testing.T, drop int) *fakeSecondary {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSecondary{drop: drop, addr: pc.LocalAddr().String()}
	srv := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{"xfr-key.": testSecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if r.Opcode != dns.OpcodeNotify || len(r.Answer) != 1 {
				return
			}
			f.serials = append(f.serials, r.Answer[0].(*dns.SOA).Serial)
			if f.drop > 0 {
				f.drop--
				return
			}
			m := new(dns.Msg)
			m.SetReply(r)
			if r.IsTsig() != nil && w.TsigStatus() == nil {
				f.signed++
				m.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
			}
			w.WriteMsg(m)
		})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return f
}

func (f *fakeSecondary) seen() []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint32(nil), f.serials...)
}

// TestNotify: NOTIFY goes to every secondary at start and on every
// change, carries the new serial, is signed with the zone's key, and is
// retried until acknowledged.
func TestNotify(t *testing.T) {
	sec := startSecondary(t, 2)
	cfg := func(addr string) string {
		return baseConfig("allow: [127.0.0.1], key: xfr-key, notify: [\"" + sec.addr + "\"]")
	}
	ts := startServerWith(t, cfg(""), nil, func(s *Server) {
		s.notifier.timeout = 100 * time.Millisecond
		s.notifier.minBackoff = 10 * time.Millisecond
	})
	v1 := ts.serial()
	// Two NOTIFYs dropped, the third acknowledged.
	waitFor(t, "three NOTIFYs", func() bool { return len(sec.seen()) >= 3 })
	for _, s := range sec.seen() {
		if s != v1 {
			t.Errorf("NOTIFY for serial %d, want %d", s, v1)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(sec.seen()); n != 3 {
		t.Errorf("%d NOTIFYs after the acknowledgement, want 3", n)
	}
	ts.write(strings.Replace(cfg(""), "192.0.2.1,", "192.0.2.7,", 1))
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	v2 := ts.serial()
	waitFor(t, "a NOTIFY for the change", func() bool { s := sec.seen(); return s[len(s)-1] == v2 })
	sec.mu.Lock()
	signed := sec.signed
	sec.mu.Unlock()
	if signed < 2 {
		t.Errorf("%d signed NOTIFYs acknowledged, want 2", signed)
	}
	if !strings.Contains(ts.logs.String(), "NOTIFY acknowledged") {
		t.Errorf("no acknowledgement logged")
	}
}
