package dnspub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// specsConfig: a zone policy sets a timeout over the service's own, and
// a retry policy of its own; the service writes its timeout too.
const specsConfig = `zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: slow
        targetRef: {kind: Zone}
        default: {methodConfig: [{name: [{service: s}], timeout: 9s, waitForReady: true}]}
    services:
      - name: a
        addresses: [192.0.2.7]
        serviceConfig: {methodConfig: [{name: [{service: s}], timeout: TIMEOUT}]}
`

// origins returns the origin of each published value of service a, by
// JSON pointer: "service", a policy's name, or "" for none known.
func origins(t *testing.T, z *model.Zone, spec []byte) map[string]string {
	t.Helper()
	var svc *model.Service
	for _, s := range z.Services {
		if s.Name == "a.example.test." {
			svc = s
		}
	}
	in := z.Inspect(svc, spec)
	out := map[string]string{}
	for _, f := range in.Fields {
		switch n := len(f.Origins); {
		case n == 0:
			out[f.Path] = ""
		case f.Origins[n-1].Kind == policy.Own:
			out[f.Path] = "service"
		default:
			out[f.Path] = f.Origins[n-1].Policy
		}
	}
	return out
}

// A server reads a service's spec again for the web view: from its config
// file while the file is the text it serves, and not once it changed
// (until it is loaded); from the store, at the service's revision.
func TestServiceSpecs(t *testing.T) {
	ctx := context.Background()
	const timeout, waitForReady = "/0/serviceConfig/methodConfig/0/timeout", "/0/serviceConfig/methodConfig/0/waitForReady"
	check := func(t *testing.T, s *Server, wantTimeout string) {
		t.Helper()
		cfg, _, _ := s.Published()
		z := cfg.Zones[0]
		specs := s.ServiceSpecs(ctx, z.Origin, z.Services)
		if specs["a.example.test."] == nil {
			t.Fatalf("no spec read for a: %v", specs)
		}
		got := origins(t, z, specs["a.example.test."])
		if got[timeout] != "service" || got[waitForReady] != "slow" {
			t.Errorf("origins %v: want the timeout the service's, waitForReady the policy's", got)
		}
		if v := string(z.Inspect(z.Services[0], specs["a.example.test."]).Config); !strings.Contains(v, `"timeout":"`+wantTimeout+`"`) {
			t.Errorf("published %s, want timeout %s", v, wantTimeout)
		}
	}
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "publisher.yaml")
		write := func(timeout string) {
			t.Helper()
			if err := os.WriteFile(file, []byte(strings.Replace(specsConfig, "TIMEOUT", timeout, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("1s")
		s, err := New(Options{ConfigFile: file, StateFile: "-", WatchInterval: -1, Listen: "127.0.0.1:0", Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(ctx)
		check(t, s, "1s")
		// Changed on disk, not loaded: the file is not what is served.
		write("2s")
		cfg, _, _ := s.Published()
		if specs := s.ServiceSpecs(ctx, "example.test.", cfg.Zones[0].Services); len(specs) != 0 {
			t.Fatalf("specs read from a file that is not the one served: %v", specs)
		}
		if in := cfg.Zones[0].Inspect(cfg.Zones[0].Services[0], nil); in.Partial == "" || len(in.Fields) == 0 || len(in.Fields[0].Origins) != 0 {
			t.Fatalf("without its spec: partial %q, fields %+v; want no origins, and why", in.Partial, in.Fields)
		}
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
		check(t, s, "2s")
	})
	t.Run("store", func(t *testing.T) {
		st, err := store.Open(ctx, store.Options{Location: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		specs, ds := model.SplitSpecs([]byte(strings.Replace(specsConfig, "TIMEOUT", "1s", 1)))
		if specs == nil {
			t.Fatal(ds)
		}
		zs := specs.Zones[0]
		if _, _, err := st.PutZone(ctx, zs.Name, &store.Object{Spec: zs.Spec}); err != nil {
			t.Fatal(err)
		}
		for _, p := range zs.Policies {
			if _, _, err := st.PutPolicy(ctx, zs.Name, p.Name, &store.Object{Spec: p.Spec}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := st.PutService(ctx, zs.Name, "a", &store.Object{Spec: zs.Services[0].Spec}); err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{Store: st, Listen: "127.0.0.1:0", StorePing: 100 * time.Millisecond, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(ctx)
		check(t, s, "1s")
		// A later write does not change what the served version reads.
		served, _, _ := s.Published()
		later := []byte(strings.Replace(string(zs.Services[0].Spec), `"1s"`, `"5s"`, 1))
		if _, _, err := st.PutService(ctx, zs.Name, "a", &store.Object{Spec: later}); err != nil {
			t.Fatal(err)
		}
		got := s.ServiceSpecs(ctx, "example.test.", served.Zones[0].Services)["a.example.test."]
		if !strings.Contains(string(got), `"1s"`) {
			t.Errorf("the served version's spec read as %s, want its own (timeout 1s)", got)
		}
	})
}

// The view never reads a served service's own config from a text it was
// not read from: not after a reload that changed no record but the
// service's own config (the old version stays served: no origins rather
// than the new text's), not for the services of a version no longer
// served; and after a reload that only changed a comment, it reads them
// as before.
func TestServiceSpecsAcrossReloads(t *testing.T) {
	const cfg = `zones:
  - origin: example.test.
    nameservers: [ns1.example.net.]
    policies:
      - name: p
        targetRef: {kind: Service, labels: {team: a}}
        default: {methodConfig: [{name: [{service: s}], timeout: 9s, waitForReady: true}]}
      - name: q
        targetRef: {kind: Service, labels: {team: b}}
        default: {methodConfig: [{name: [{service: s}], timeout: 9s, waitForReady: true}]}
    services:
      - name: a
        labels: {team: LABEL}
        addresses: [192.0.2.7]
        serviceConfig: {methodConfig: [{name: [{service: s}]OWN}]}
`
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "publisher.yaml")
	write := func(label, own, head string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(head+strings.NewReplacer("LABEL", label, "OWN", own).Replace(cfg)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "", "")
	s, err := New(Options{ConfigFile: file, StateFile: "-", WatchInterval: -1, Listen: "127.0.0.1:0", Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	const wait = "/0/serviceConfig/methodConfig/0/waitForReady"
	specsOf := func(c *model.Config) map[string][]byte {
		return s.ServiceSpecs(ctx, c.Zones[0].Origin, c.Zones[0].Services)
	}
	first, _, _ := s.Published()
	if got := origins(t, first.Zones[0], specsOf(first)["a.example.test."]); got[wait] != "p" {
		t.Fatalf("waitForReady set by %q, want p", got[wait])
	}
	// A comment: the same services, read again from the new text.
	write("a", "", "# a comment\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	served, _, _ := s.Published()
	if got := origins(t, served.Zones[0], specsOf(served)["a.example.test."]); got[wait] != "p" {
		t.Errorf("after a comment: waitForReady set by %q, want p", got[wait])
	}
	// The same record from another own config and another policy: the
	// records served stay, read from the new text now; the services of
	// the config the view had are not read from it.
	before := served
	write("b", ", waitForReady: true", "")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	served, _, _ = s.Published()
	if names := served.Zones[0].PolicyNames(served.Zones[0].Services[0]); len(names) != 1 || names[0] != "q" {
		t.Fatalf("the version served applies %v; want q, the new text's", names)
	}
	if got := origins(t, served.Zones[0], specsOf(served)["a.example.test."]); got[wait] != "service" {
		t.Errorf("the new text: waitForReady set by %q, want the service (over q)", got[wait])
	}
	if got := specsOf(before); len(got) != 0 {
		t.Errorf("own configs read from a text the version before was not read from: %s", got["a.example.test."])
	}
	// A version no longer served: its services are not read.
	write("a", ", timeout: 2s", "")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := specsOf(first); len(got) != 0 {
		t.Errorf("own configs read for the services of a version no longer served: %s", got["a.example.test."])
	}
	now, _, _ := s.Published()
	if got := origins(t, now.Zones[0], specsOf(now)["a.example.test."]); got["/0/serviceConfig/methodConfig/0/timeout"] != "service" {
		t.Errorf("the version served: timeout set by %q, want the service", got["/0/serviceConfig/methodConfig/0/timeout"])
	}
}
