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
