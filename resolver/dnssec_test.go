package resolver

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
	pubdnssec "github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/resolver/dnssec"
)

// signedPublisher serves the built-in example zone, signed, from the
// publisher, and returns its address and the zone's DS record.
func signedPublisher(t *testing.T) (addr, ds string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "pub.yaml")
	os.WriteFile(file, bytes.Replace(model.Example, []byte("    ttl: 30s\n"), []byte("    ttl: 30s\n    dnssec: {}\n"), 1), 0o644)
	srv, err := dnspub.New(dnspub.Options{ConfigFile: file, StateFile: "-", Listen: "127.0.0.1:0", WatchInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(t.Context()) })
	keys, err := pubdnssec.Find(file+".keys", "example.test.")
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys: %v", err)
	}
	return srv.Addr().String(), keys[0].DNSKEY.ToDS(dns.SHA256).String()
}

// hostile is a DNS server between the resolver and the publisher that
// changes the answers as its mode says.
type hostile struct {
	upstream string
	mode     atomic.Value // string
	addr     string
}

func startHostile(t *testing.T, upstream string) *hostile {
	t.Helper()
	h := &hostile{upstream: upstream}
	h.mode.Store("pass")
	// UDP and TCP on one port: another test may hold the TCP port of a
	// free UDP one, so try a few.
	var pc net.PacketConn
	var l net.Listener
	for try := 0; ; try++ {
		var err error
		if pc, err = netListenUDP(); err != nil {
			t.Fatal(err)
		}
		if l, err = netListenTCP(pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if try == 20 {
			t.Fatal(err)
		}
	}
	h.addr = pc.LocalAddr().String()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(req, upstream)
		if err != nil {
			return
		}
		h.change(r)
		w.WriteMsg(r)
	})
	udp, tcp := &dns.Server{PacketConn: pc, Handler: handler}, &dns.Server{Listener: l, Handler: handler}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return h
}

// change applies the mode to a TXT answer.
func (h *hostile) change(r *dns.Msg) {
	if len(r.Question) == 0 || r.Question[0].Qtype != dns.TypeTXT {
		return
	}
	switch h.mode.Load().(string) {
	case "flip": // one byte of the config, the signature kept
		for _, rr := range r.Answer {
			if txt, ok := rr.(*dns.TXT); ok {
				txt.Txt[0] = strings.Replace(txt.Txt[0], "round_robin", "pick_first", 1)
			}
		}
	case "flip-signature":
		for _, rr := range r.Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				b := []byte(sig.Signature) // base64: another letter of it
				if b[5] == 'A' {
					b[5] = 'B'
				} else {
					b[5] = 'A'
				}
				sig.Signature = string(b)
			}
		}
	case "strip": // the same answer, unsigned (a downgrade)
		var kept []dns.RR
		for _, rr := range r.Answer {
			if rr.Header().Rrtype != dns.TypeRRSIG {
				kept = append(kept, rr)
			}
		}
		r.Answer = kept
	case "nxdomain": // the record denied, without proof
		r.Answer, r.Ns = nil, nil
		r.Rcode = dns.RcodeNameError
	}
}

const (
	// What the example publishes for Go clients at echo.
	goConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`
	// The default config of the tests' channels.
	defaultConfig = `{"loadBalancingConfig":[{"pick_first":{}}]}`
)

// TestDNSSECRefusesForgedConfig: with the zone's DS as trust anchor, a
// config the publisher signed is applied; a forged one (a changed byte,
// a changed signature, the signatures stripped, a denial without proof),
// or a replay after the signatures expired, is a failed lookup: the
// running channel keeps its config and State says bogus and why; a new
// channel gets the default config.
func TestDNSSECRefusesForgedConfig(t *testing.T) {
	pub, ds := signedPublisher(t)
	h := startHostile(t, pub)
	var skew atomic.Int64 // the validator's clock, ahead of ours
	v := validator(t, ds, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	o := fastOptions()
	o.Validator = v
	o.DefaultServiceConfig = defaultConfig
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b := NewBuilder(o)
	target := "dnsconfig://" + h.addr + "/echo.example.test"
	cc, r := buildFake(t, b, target)
	cc.waitFor(t, 10*time.Second, "with the signed config", func(u update) bool { return u.config == goConfig })
	if st, _ := b.State(target); st.Config != "published" || st.LastError != nil {
		t.Fatalf("state: %+v", st)
	}
	published := func(t *testing.T) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r.ResolveNow(grpcresolver.ResolveNowOptions{})
			if st, _ := b.State(target); st.LastError == nil && st.Config == "published" {
				return
			}
			if time.Now().After(deadline) {
				st, _ := b.State(target)
				t.Fatalf("not published again: %+v", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, tc := range []struct{ mode, why string }{
		{"flip", "does not verify"},
		{"flip-signature", "does not verify"},
		{"strip", "not signed"},
		{"nxdomain", "NSEC"},
		{"expired", "not now"},
	} {
		mode := tc.mode
		t.Run(mode, func(t *testing.T) {
			h.mode.Store(mode)
			if mode == "expired" {
				h.mode.Store("pass")
				skew.Store(int64(30 * 24 * time.Hour))
			}
			before := len(cc.all())
			var st State
			deadline := time.Now().Add(10 * time.Second)
			for {
				r.ResolveNow(grpcresolver.ResolveNowOptions{})
				st, _ = b.State(target)
				var be *dnssec.BogusError
				if errors.As(st.LastError, &be) && strings.Contains(be.Reason, tc.why) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no bogus answer: %+v", st)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if st.Problems["bogus"] == 0 || !strings.Contains(st.LastError.Error(), "bogus DNSSEC answer") {
				t.Errorf("state: %+v", st)
			}
			t.Logf("%s: %v", mode, st.LastError)
			for _, u := range cc.all()[before:] {
				if u.config != goConfig && u.config != "<nil>" {
					t.Errorf("the channel was given %s", u.config)
				}
			}
			// A new channel on the same answers gets the default config
			// (its addresses validate), or, when the zone's keys no longer
			// validate (expired), no address and the error.
			b2 := NewBuilder(o)
			if mode == "expired" {
				cc2, _ := buildFake(t, b2, target)
				cc2.waitFor(t, 10*time.Second, "with the bogus error", func(u update) bool { return u.err != nil && strings.Contains(u.err.Error(), "bogus") })
				skew.Store(0)
			} else {
				cc2, _ := buildFake(t, b2, target)
				cc2.waitFor(t, 10*time.Second, "with the default config", func(u update) bool { return u.config == defaultConfig })
			}
			// Back to the signed answers: the published config again.
			h.mode.Store("pass")
			published(t)
		})
	}
}

// TestDNSSECNegativeAnswers: NXDOMAIN and NODATA answers of a signed zone
// validate (a service without a config is no failure), and names outside
// the anchors are not validated.
func TestDNSSECNegativeAnswers(t *testing.T) {
	pub, ds := signedPublisher(t)
	v := validator(t, ds, nil)
	client := func(v Validator) *dnsClient {
		return &dnsClient{servers: []string{pub}, timeout: time.Second, attempts: 1, val: v}
	}
	for _, host := range []string{"www.example.test", "nope.example.test", "_tcp.echo.example.test"} {
		a, err := client(v).lookup(t.Context(), "_grpc_config."+host, typeTXT)
		if err != nil || len(a.txt) != 0 || !a.secure {
			t.Errorf("%s: %v %v", host, a, err)
		}
		if _, err := client(v).lookup(t.Context(), host, typeA); err != nil {
			t.Errorf("%s A: %v", host, err)
		}
	}
	// An anchor for another zone: example.test is not validated.
	if a, err := client(validator(t, "other.test. IN DS 1 13 2 "+strings.Repeat("AB", 32), nil)).lookup(t.Context(), "_grpc_config.echo.example.test", typeTXT); err != nil || a.secure {
		t.Errorf("a name under no anchor: %v %v", a, err)
	}
	// A wrong anchor for the zone: its keys are refused.
	_, err := client(validator(t, "example.test. IN DS 1 13 2 "+strings.Repeat("AB", 32), nil)).lookup(t.Context(), "_grpc_config.echo.example.test", typeTXT)
	if !isBogus(err) || !strings.Contains(err.Error(), "matches its trust anchor") {
		t.Errorf("a wrong anchor: %v", err)
	}
}

// validator is a DNSSEC validator from the anchors in text, on clock now
// (nil: time.Now).
func validator(t *testing.T, text string, now func() time.Time) *dnssec.Validator {
	t.Helper()
	anchors, err := dnssec.ParseAnchors(text, "test")
	if err != nil {
		t.Fatal(err)
	}
	v, err := dnssec.New(anchors, dnssec.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func netListenUDP() (net.PacketConn, error) { return net.ListenPacket("udp", "127.0.0.1:0") }

func netListenTCP(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// TestRequireAuthenticatedData: trusting a local validating resolver,
// an answer without the AD bit is bogus and one with it is taken; a
// nameserver that is not on this machine is refused up front.
func TestRequireAuthenticatedData(t *testing.T) {
	var ad atomic.Bool
	pc, err := netListenUDP()
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.RecursionAvailable = true
		m.AuthenticatedData = ad.Load() && req.AuthenticatedData
		if req.Question[0].Qtype == dns.TypeTXT {
			m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 30}, Txt: []string{`grpc_config=[{"serviceConfig":{}}]`}}}
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	o := fastOptions()
	o.RequireAuthenticatedData = true
	o.Nameservers = []string{pc.LocalAddr().String()}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	lookup := func() error {
		_, err := (&dnsClient{servers: o.Nameservers, timeout: time.Second, attempts: 1, ad: true}).lookup(t.Context(), "_grpc_config.echo.example.test", typeTXT)
		return err
	}
	if err := lookup(); !isBogus(err) || !strings.Contains(err.Error(), "AD") {
		t.Errorf("without AD: %v", err)
	}
	ad.Store(true)
	if err := lookup(); err != nil {
		t.Errorf("with AD: %v", err)
	}
	o.Nameservers = []string{"192.0.2.53"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a remote nameserver: %v", err)
	}
}
