package resolver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

func TestParseResolvConf(t *testing.T) {
	rc := parseResolvConf([]byte(`# a pod's resolv.conf
nameserver 10.96.0.10
nameserver not-an-ip
nameserver fe80::1%eth0
nameserver 10.0.0.2
nameserver 10.0.0.3
nameserver 10.0.0.4 ; a fourth, ignored as glibc does
domain ignored.example
search prod.svc.cluster.local svc.cluster.local cluster.local.
options ndots:5 timeout:3 attempts:4 rotate
`), func() string {
		t.Error("asked for the hostname's domain although the file has a search line")
		return ""
	})
	if want := []string{"10.96.0.10:53", "10.0.0.2:53", "10.0.0.3:53"}; !slices.Equal(rc.servers, want) {
		t.Errorf("servers %v, want %v", rc.servers, want)
	}
	if len(rc.skipped) != 2 {
		t.Errorf("skipped %v, want the name and the zoned address", rc.skipped)
	}
	if want := []string{"prod.svc.cluster.local.", "svc.cluster.local.", "cluster.local."}; !slices.Equal(rc.search, want) {
		t.Errorf("search %v, want %v (the last line wins)", rc.search, want)
	}
	if rc.ndots != 5 || rc.timeout != 3*time.Second || rc.attempts != 4 || !rc.rotate {
		t.Errorf("options %+v, want ndots 5, timeout 3s, attempts 4, rotate", rc)
	}
	// Without search or domain, the hostname's domain is the search list.
	rc = parseResolvConf([]byte("nameserver 192.0.2.53\noptions ndots:99 timeout:0\n"), func() string { return "corp.example" })
	if !slices.Equal(rc.search, []string{"corp.example."}) || rc.ndots != 15 || rc.timeout != time.Second {
		t.Errorf("%+v: want search corp.example., ndots capped at 15, timeout at least 1s", rc)
	}
}

func TestNameList(t *testing.T) {
	rc := &resolvConf{ndots: 2, search: []string{"ns.svc.cluster.local.", "svc.cluster.local."}}
	for _, tc := range []struct {
		host string
		want []string
	}{
		// Fewer dots than ndots: the search list first.
		{"echo", []string{"echo.ns.svc.cluster.local.", "echo.svc.cluster.local.", "echo."}},
		{"echo.prod", []string{"echo.prod.ns.svc.cluster.local.", "echo.prod.svc.cluster.local.", "echo.prod."}},
		// ndots or more: as written first.
		{"echo.example.com", []string{"echo.example.com.", "echo.example.com.ns.svc.cluster.local.", "echo.example.com.svc.cluster.local."}},
		// A final dot: as written only.
		{"echo.", []string{"echo."}},
	} {
		if got := rc.nameList(tc.host); !slices.Equal(got, tc.want) {
			t.Errorf("nameList(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// writeSystem writes a resolv.conf and a hosts file into a directory and
// returns Options that use them.
func writeSystem(t *testing.T, resolvConf, hosts string) Options {
	t.Helper()
	dir := t.TempDir()
	o := fastOptions()
	o.ResolvConf, o.HostsFile = filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "hosts")
	if err := os.WriteFile(o.ResolvConf, []byte(resolvConf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.HostsFile, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

// A short name in a Kubernetes pod: found through the search list, and its
// config looked up under the name its addresses were found at.
func TestShortNameThroughSearchList(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetAddrs("echo.prod.svc.cluster.local", 60, "10.1.2.3")
		m.dns.SetConfig("echo.prod.svc.cluster.local", 60, oneChoice(cfgA))
		// The same short name under the first search domain does not
		// exist; the bare name would have another config.
		m.dns.SetConfig("echo.prod", 60, oneChoice(cfgB))
		o := writeSystem(t, "nameserver "+strings.TrimSuffix(nsAddr, ":53")+"\nsearch ns.svc.cluster.local prod.svc.cluster.local svc.cluster.local\noptions ndots:5\n", "")
		cc, _ := buildFake(t, m.builder(o), "dnsconfig:///echo.prod:8080")
		u := cc.waitN(t, 1, 5*time.Second)
		if !slices.Equal(u[0].addrs, []string{"10.1.2.3:8080"}) || u[0].config != cfgA {
			t.Fatalf("%s; want 10.1.2.3:8080 with the config of _grpc_config.echo.prod.svc.cluster.local", cc)
		}
		var asked []string
		for _, q := range m.dns.Queries() {
			if q.Type == dns.TypeTXT {
				asked = append(asked, q.Name)
			}
		}
		if slices.Contains(asked, "_grpc_config.echo.prod.") {
			t.Errorf("TXT asked at %v: the bare name's config is not the found name's", asked)
		}
	})
}

// A name with a final dot is asked as written only, and the error names
// the names tried for one without.
func TestRootedNameSkipsSearchList(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetAddrs("echo.prod.svc.cluster.local", 60, "10.1.2.3")
		o := writeSystem(t, "nameserver 192.0.2.53\nsearch svc.cluster.local\noptions ndots:5\n", "")
		cc, _ := buildFake(t, m.builder(o), "dnsconfig:///echo.prod.:8080")
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].err == nil || !strings.Contains(u[0].err.Error(), "echo.prod does not exist") {
			t.Fatalf("%s; want echo.prod. not to be found", cc)
		}
		cc, _ = buildFake(t, m.builder(o), "dnsconfig:///nothere:8080")
		u = cc.waitN(t, 1, 5*time.Second)
		if u[0].err == nil || !strings.Contains(u[0].err.Error(), "nothere.svc.cluster.local.") {
			t.Fatalf("%s; want the error to name the search-list names tried", cc)
		}
	})
}

// A nameserver in trouble for the first name of the search list ends the
// search: the channel never gets a later name's addresses by accident.
func TestSearchStopsAtFailure(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		// A search that went on would find echo.b.test's AAAA record.
		m.dns.SetAddrs("echo.b.test", 60, "2001:db8::9")
		m.dns.SetFault(dns.TypeA, dnstest.ServFail)
		o := writeSystem(t, "nameserver 192.0.2.53\nsearch a.test b.test\n", "")
		cc, _ := buildFake(t, m.builder(o), "dnsconfig:///echo:8080")
		u := cc.waitN(t, 1, 5*time.Second)
		if u[0].err == nil || !strings.Contains(u[0].err.Error(), "echo.a.test") {
			t.Fatalf("%s; want the failure at echo.a.test reported", cc)
		}
	})
}

// A name of the hosts file gets its addresses from there, as with dns:///,
// and its config from DNS under that name.
func TestHostsFileName(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetConfig("db.internal", 60, oneChoice(cfgA))
		o := writeSystem(t, "nameserver 192.0.2.53\nsearch corp.test\n",
			"127.0.0.1 localhost\n::1 localhost ip6-localhost\n192.0.2.7 db.internal db # a comment\n")
		cc, _ := buildFake(t, m.builder(o), "dnsconfig:///DB.internal:8080")
		u := cc.waitN(t, 1, 5*time.Second)
		if !slices.Equal(u[0].addrs, []string{"192.0.2.7:8080"}) || u[0].config != cfgA {
			t.Fatalf("%s; want 192.0.2.7:8080 with the config of _grpc_config.db.internal", cc)
		}
		cc, _ = buildFake(t, m.builder(o), "dnsconfig:///localhost:50051")
		u = cc.waitN(t, 1, 5*time.Second)
		if !slices.Equal(u[0].addrs, []string{"127.0.0.1:50051", "[::1]:50051"}) || u[0].config != "<nil>" {
			t.Fatalf("%s; want localhost's two addresses, no config", cc)
		}
		if n := m.dns.Count(dns.TypeA, "") + m.dns.Count(dns.TypeAAAA, ""); n != 0 {
			t.Errorf("%d address queries for names of the hosts file", n)
		}
	})
}

// resolv.conf's timeout and attempts apply where Options leave them unset;
// rotate spreads queries over the nameservers.
func TestResolvConfOptions(t *testing.T) {
	o := writeSystem(t, "nameserver 192.0.2.1\nnameserver 192.0.2.2\noptions timeout:7 attempts:3 rotate\n", "")
	o.QueryTimeout, o.Attempts = 0, 0
	c, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	lc, err := c.lookupConf(target{host: "svc.test"})
	if err != nil || lc.timeout != 7*time.Second || lc.attempts != 3 || !lc.rotate {
		t.Fatalf("%+v %v: want timeout 7s, attempts 3, rotate", lc, err)
	}
	o.QueryTimeout, o.Attempts = time.Second, 1
	c, _ = o.resolve()
	if lc, _ := c.lookupConf(target{host: "svc.test"}); lc.timeout != time.Second || lc.attempts != 1 {
		t.Errorf("%+v: Options.QueryTimeout and Attempts must win", lc)
	}
	// An explicit nameserver: no search list, no hosts file.
	if lc, _ := c.lookupConf(target{host: "svc", nameserver: "192.0.2.9:53"}); !slices.Equal(lc.names, []string{"svc."}) || lc.hostsFile != "" {
		t.Errorf("%+v: a target's nameserver is asked the name as written", lc)
	}
}

func TestRotateSpreadsQueries(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		other := m.net.Server("192.0.2.54:53")
		m.dns.SetAddrs("svc.test", 60, "192.0.2.1")
		other.SetAddrs("svc.test", 60, "192.0.2.1")
		o := writeSystem(t, "nameserver 192.0.2.53\nnameserver 192.0.2.54\noptions rotate\n", "")
		o.DefaultServiceConfig = ""
		b := m.builder(o)
		for range 4 {
			cc, r := buildFake(t, b, "dnsconfig:///svc.test:8080")
			cc.waitN(t, 1, 5*time.Second)
			r.Close()
		}
		if a, b := len(m.dns.Queries()), len(other.Queries()); a == 0 || b == 0 {
			t.Errorf("queries %d and %d: rotate must use both nameservers", a, b)
		}
	})
}

// LookupTarget, which the CLI's lint and select use for dnsconfig://
// targets, asks where a channel's resolver asks: through the search list,
// under the name the addresses were found at; a hosts-file name as
// written; with the target's nameserver, the name as written, addresses
// or not.
func TestLookupTargetFollowsTheResolver(t *testing.T) {
	bubble(t, func(t *testing.T, m *memDNS) {
		m.dns.SetAddrs("echo.prod.svc.cluster.local", 60, "10.1.2.3")
		m.dns.SetConfig("echo.prod.svc.cluster.local", 60, oneChoice(cfgA))
		m.dns.SetConfig("echo.prod", 60, oneChoice(cfgB)) // not the found name's
		m.dns.SetConfig("db.internal", 60, oneChoice(cfgB))
		m.dns.SetConfig("noaddr.test", 60, oneChoice(cfgA))
		o := writeSystem(t, "nameserver "+strings.TrimSuffix(nsAddr, ":53")+"\nsearch ns.svc.cluster.local prod.svc.cluster.local svc.cluster.local\noptions ndots:5\n",
			"192.0.2.7 db.internal\n")
		for _, tc := range []struct{ target, owner, config, err string }{
			{"dnsconfig:///echo.prod:8080", "_grpc_config.echo.prod.svc.cluster.local.", cfgA, ""},
			{"dnsconfig:///DB.internal", "_grpc_config.db.internal.", cfgB, ""},
			{"dnsconfig://" + nsAddr + "/noaddr.test:443", "_grpc_config.noaddr.test.", cfgA, ""},
			{"dnsconfig:///nothere", "", "", "nothere.svc.cluster.local., before it in the search list of " + o.ResolvConf},
			{"dnsconfig:///192.0.2.1:80", "", "", "is an IP address"},
			{"dns:///echo", "", "", "want dnsconfig://[NS_IP[:PORT]]/HOST[:PORT]"},
		} {
			rec, err := lookupTarget(t.Context(), tc.target, o, m.net)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s: error %v, want one saying %q", tc.target, err, tc.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", tc.target, err)
				continue
			}
			if !strings.EqualFold(rec.Owner, tc.owner) || len(rec.Records) != 1 || !strings.Contains(strings.Join(rec.Records[0], ""), tc.config) {
				t.Errorf("%s: asked %s, got %v; want %s with %s", tc.target, rec.Owner, rec.Records, tc.owner, tc.config)
			}
		}
		// A failed address lookup ends the search, as for a channel.
		m.dns.SetFault(dns.TypeA, dnstest.ServFail)
		if _, err := lookupTarget(t.Context(), "dnsconfig:///echo.prod", o, m.net); err == nil || !strings.Contains(err.Error(), "echo.prod.ns.svc.cluster.local") {
			t.Errorf("with A lookups failing: %v; want the failure at the first name of the search list", err)
		}
	})
}
