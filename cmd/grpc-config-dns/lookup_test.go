package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
)

func TestDNSInputs(t *testing.T) {
	s := dnstest.Start(t)
	s.SetConfig("svc.test", 60, `[{"clientLanguage":["java"],"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]}},{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"1s"}]}}]`)
	s.SetConfig("bad.test", 60, `[{"serviceConfig":{},"clientHostName":["x"]}]`)
	s.SetTXT("_grpc_config.spf.test", 60, []string{"v=spf1 -all"})
	big := `[{"serviceConfig":{"methodConfig":[{"name":[{"service":"a.B","method":"` + strings.Repeat("m", 2000) + `"}],"timeout":"1s"}]}}]`
	s.SetConfig("big.test", 60, big)
	dead := dnstest.DeadUDP(t)
	in := func(server, name string) string { return "dns://" + server + "/" + name }

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring
		stderr     string // substring
		wantTCPTXT int
	}{
		{"lint valid", []string{"lint", in(s.Addr, "svc.test")}, 0, "", "ok (TXT record)", 0},
		{"lint invalid", []string{"lint", in(s.Addr, "bad.test")}, 1, "choice-unknown-key", "", 0},
		{"lint no record", []string{"lint", in(s.Addr, "spf.test")}, 1, "error", "", 0},
		{"lint NXDOMAIN", []string{"lint", in(s.Addr, "missing.test")}, 1, "error", "", 0},
		{"lint over TCP", []string{"lint", in(s.Addr, "big.test")}, 0, "txt-size-edns", "", 1},
		{"lint json", []string{"lint", "--format", "json", in(s.Addr, "svc.test")}, 0, `"valid": true`, "", 0},
		{"select", []string{"select", "--bucket", "10", in(s.Addr, "svc.test")}, 0, `{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`, "", 0},
		{"select java", []string{"select", "--language", "JAVA", in(s.Addr, "svc.test")}, 0, `{"loadBalancingConfig":[{"round_robin":{}}]}`, "", 0},
		{"select explain", []string{"select", "--explain", "--bucket", "3", in(s.Addr, "svc.test")}, 0, "", "choice 0: skipped", 0},
		{"no server", []string{"lint", "dns:///svc.test"}, 2, "", "name the nameserver", 0},
		{"no name", []string{"lint", "dns://" + s.Addr + "/"}, 2, "", "want one host name", 0},
		{"unreachable server", []string{"lint", in(dead, "svc.test")}, 2, "", "failed at every nameserver", 0},
		{"bad name", []string{"lint", in(s.Addr, "a..b")}, 2, "", "label 2 is empty", 0},
		// A channel's target, as copied from client code (issue 18): read
		// as the record its resolver reads, not as a missing file.
		{"dnsconfig target", []string{"lint", "dnsconfig://" + s.Addr + "/svc.test:50051"}, 0, "", "ok (TXT record)", 0},
		{"dnsconfig select", []string{"select", "--bucket", "10", "dnsconfig://" + s.Addr + "/svc.test"}, 0, `"timeout":"1s"`, "", 0},
		{"other scheme", []string{"lint", "xds:///svc.test"}, 2, "", "xds:// is none of them", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.ResetQueries()
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
			}
			if n := s.Count(16 /* TXT */, "tcp"); n != tc.wantTCPTXT {
				t.Errorf("%d TXT queries over TCP, want %d", n, tc.wantTCPTXT)
			}
		})
	}
}

// dnsconfig:///HOST names no nameserver: the first of resolv.conf is asked,
// and without one the error says what to write.
func TestDNSConfigTargetWithoutNameserver(t *testing.T) {
	old := resolvConf
	resolvConf = t.TempDir() + "/missing"
	t.Cleanup(func() { resolvConf = old })
	code, _, errs := runCLI(t, "lint", "dnsconfig:///svc.test:50051")
	if code != 2 || !strings.Contains(errs, "write dnsconfig://NS_IP[:PORT]/svc.test") {
		t.Errorf("exit %d, stderr %s", code, errs)
	}
}

// dnsconfig:///SHORT is read where the resolver reads it (issue 18): through
// the search list and ndots of resolv.conf, under the name the addresses
// were found at, and a name of the hosts file as written. resolv.conf
// nameservers have no port, so the server listens on port 53 of a
// loopback address of its own: the test needs root (or
// CAP_NET_BIND_SERVICE), as CI has, and is skipped without.
func TestDNSConfigTargetFollowsResolvConf(t *testing.T) {
	var s *dnstest.Server
	for range 10 {
		ip := fmt.Sprintf("127.0.%d.%d", 1+rand.IntN(254), 1+rand.IntN(254))
		srv, err := dnstest.Listen(ip + ":53")
		if errors.Is(err, syscall.EACCES) {
			t.Skipf("port 53 needs root here (%v): the resolver's own tests cover the search list (TestLookupTargetFollowsTheResolver)", err)
		}
		if err == nil {
			s = srv
			t.Cleanup(s.Close)
			break
		}
	}
	if s == nil {
		t.Fatal("no loopback address with port 53 free")
	}
	ns := strings.TrimSuffix(s.Addr, ":53")
	s.SetAddrs("echo.prod.svc.cluster.local", 60, "10.1.2.3")
	s.SetConfig("echo.prod.svc.cluster.local", 60, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"3s"}]}}]`)
	s.SetConfig("echo.prod", 60, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"9s"}]}}]`)
	s.SetConfig("db.internal", 60, `[{"serviceConfig":{"methodConfig":[{"name":[{}],"timeout":"4s"}]}}]`)
	dir := t.TempDir()
	oldConf, oldHosts := resolvConf, hostsFile
	resolvConf, hostsFile = filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "hosts")
	t.Cleanup(func() { resolvConf, hostsFile = oldConf, oldHosts })
	if err := os.WriteFile(resolvConf, []byte("nameserver "+ns+"\nsearch ns.svc.cluster.local prod.svc.cluster.local svc.cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostsFile, []byte("192.0.2.7 db.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"select", "--bucket", "1", "dnsconfig:///echo.prod:50051"}, 0, `"timeout":"3s"`, ""},
		{[]string{"select", "--bucket", "1", "dnsconfig:///db.internal"}, 0, `"timeout":"4s"`, ""},
		{[]string{"lint", "dnsconfig:///echo.prod:50051"}, 0, "", "ok (TXT record)"},
		{[]string{"lint", "dnsconfig:///nothere"}, 2, "", "nothere.svc.cluster.local., before it in the search list of " + resolvConf},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.errs) {
			t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
		}
	}
}
