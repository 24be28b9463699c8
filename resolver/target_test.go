package resolver

import (
	"strings"
	"testing"
	"time"

	grpcresolver "google.golang.org/grpc/resolver"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		authority, endpoint string
		host, port, ns      string
		ip                  bool
		err                 string
	}{
		{"", "svc.test", "svc.test", "443", "", false, ""},
		{"", "svc.test:50051", "svc.test", "50051", "", false, ""},
		{"", "svc.test.:50051", "svc.test", "50051", "", false, ""},
		{"", "_svc._tcp.Example.COM", "_svc._tcp.Example.COM", "443", "", false, ""},
		{"127.0.0.1:5353", "echo.example.test:443", "echo.example.test", "443", "127.0.0.1:5353", false, ""},
		{"127.0.0.1", "svc.test", "svc.test", "443", "127.0.0.1:53", false, ""},
		{"[::1]:5353", "svc.test", "svc.test", "443", "[::1]:5353", false, ""},
		{"::1", "svc.test", "svc.test", "443", "[::1]:53", false, ""},
		{"", "192.0.2.1", "192.0.2.1", "443", "", true, ""},
		{"", "192.0.2.1:80", "192.0.2.1", "80", "", true, ""},
		{"", "[2001:db8::1]:80", "2001:db8::1", "80", "", true, ""},
		{"", "2001:db8::1", "2001:db8::1", "443", "", true, ""},
		{"", "[2001:db8::1]", "2001:db8::1", "443", "", true, ""},
		{"", "::ffff:192.0.2.1", "192.0.2.1", "443", "", true, ""},
		{"", "", "", "", "", false, "has no host"},
		{"", ":80", "", "", "", false, "no host before the port"},
		{"", "svc.test:", "", "", "", false, "port"},
		{"", "svc.test:http", "", "", "", false, "port \"http\""},
		{"", "svc.test:70000", "", "", "", false, "port"},
		{"", "a..b", "", "", "", false, "label 2 is empty"},
		{"", "a b.test", "", "", "", false, "byte ' '"},
		{"", strings.Repeat("a", 64) + ".test", "", "", "", false, "longer than 63"},
		{"", strings.Repeat("abcdefgh.", 28) + "test", "", "", "", false, "too long"},
		{"", "fe80::1%eth0", "", "", "", false, "zoned"},
		{"", "[fe80::1%eth0]:80", "", "", "", false, "zoned"},
		{"", "[::1", "", "", "", false, "HOST:PORT"},
		{"", "]1.2.3.4[", "", "", "", false, "byte ']'"},
		{"", "1.2.3.4]", "", "", "", false, "byte ']'"},
		{"", "[1.2.3.4]", "", "", "", false, "brackets are for IPv6"},
		{"", "[1.2.3.4]:80", "", "", "", false, "brackets are for IPv6"},
		{"", "svc.test:040147", "svc.test", "40147", "", false, ""},
		{"[127.0.0.1]:53", "svc.test", "", "", "", false, "brackets are for IPv6"},
		{"127.0.0.1:0053", "svc.test", "svc.test", "443", "127.0.0.1:53", false, ""},
		{"ns.example", "svc.test", "", "", "", false, "not an IP address"},
		{"127.0.0.1:0", "svc.test", "", "", "", false, "port"},
	} {
		tg, err := parseTarget(tc.authority, tc.endpoint)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("(%q, %q): err %v, want one about %q", tc.authority, tc.endpoint, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("(%q, %q): %v", tc.authority, tc.endpoint, err)
			continue
		}
		if tg.host != tc.host || tg.port != tc.port || tg.nameserver != tc.ns || tg.ip.IsValid() != tc.ip {
			t.Errorf("(%q, %q): host %q port %q ns %q ip %v; want %q %q %q %v", tc.authority, tc.endpoint, tg.host, tg.port, tg.nameserver, tg.ip.IsValid(), tc.host, tc.port, tc.ns, tc.ip)
		}
	}
}

func TestStateLooksUpTargetAsGRPCParsesIt(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		b := m.builder(fastOptions())
		cc, _ := buildFake(t, b, m.target)
		cc.waitN(t, 1, 5*time.Second)
		if _, ok := b.State(m.target); !ok {
			t.Error("State does not find the target")
		}
		if _, ok := b.State("dnsconfig:///other.test"); ok {
			t.Error("State finds a target nobody resolves")
		}
	})
}

func TestTargetWithUserInfoIsRefused(t *testing.T) {
	u, err := urlParse("dnsconfig://u@127.0.0.1/svc.test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewBuilder(fastOptions()).Build(grpcresolver.Target{URL: *u}, newFakeCC(), grpcresolver.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "user information") {
		t.Errorf("Build: %v, want an error about the user information", err)
	}
}
