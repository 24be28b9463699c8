package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// answer asks name's TXT and zone's SOA serial from s.
func (s *storeServe) answer(name, zone string) (string, uint32) {
	s.t.Helper()
	c := &dns.Client{Timeout: time.Second}
	ask := func(q string, t uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(q, t)
		m.SetEdns0(4096, false) // echo's record is above 512 bytes
		r, _, err := c.Exchange(m, s.dnsAddr)
		if err != nil {
			s.t.Fatal(err)
		}
		return r
	}
	txt := ""
	for _, rr := range ask(name, dns.TypeTXT).Answer {
		if t, ok := rr.(*dns.TXT); ok {
			// miekg/dns escapes quotes in presentation format.
			txt = strings.ReplaceAll(strings.Join(t.Txt, ""), `\"`, `"`)
		}
	}
	serial := uint32(0)
	if r := ask(zone, dns.TypeSOA); len(r.Answer) == 1 {
		serial = r.Answer[0].(*dns.SOA).Serial
	}
	return txt, serial
}

// waitAnswer waits until name's TXT holds want.
func (s *storeServe) waitAnswer(name, zone, want string, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		txt, _ := s.answer(name, zone)
		if strings.Contains(txt, want) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: %q, want %q within %v", name, txt, want, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *storeServe) put(path string, body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest("PUT", s.url()+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *storeServe) get(path string) (int, string) {
	s.t.Helper()
	resp, err := http.Get(s.url() + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// resourceVersion is the metadata.resourceVersion of the object at path.
func (s *storeServe) resourceVersion(path string) string {
	s.t.Helper()
	code, body := s.get(path)
	var obj struct {
		Metadata struct{ ResourceVersion string }
	}
	if err := json.Unmarshal([]byte(body), &obj); code != 200 || err != nil || obj.Metadata.ResourceVersion == "" {
		s.t.Fatalf("GET %s: %d %v\n%s", path, code, err, body)
	}
	return obj.Metadata.ResourceVersion
}

// waitPage waits until the page at path holds want: the view shows the
// snapshot being served, which follows a write within milliseconds.
func (s *storeServe) waitPage(path, want string) {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		code, body := s.get(path)
		if code == 200 && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("GET %s: %d, want %q within 3s in\n%s", path, code, want, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStorePolicies: a publisher config with policies, published into a
// store, is served exactly as serve --config serves it; inspect --server
// prints what inspect --config prints.
func TestStorePolicies(t *testing.T) {
	const file = "../../testdata/publisher/policies.yaml"
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatal(ds)
	}
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	if code, out, errs := s.cli("publish", file); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := s.cli("list", "policies.test", "--policies"); code != 0 || !strings.Contains(out, "payments-round-robin") || !strings.Contains(out, `{"kind":"Service","labels":{"team":"payments"}}`) {
		t.Fatalf("list --policies: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := s.cli("get", "policies.test", "policy/echo-fast", "-o", "json"); code != 0 || !strings.Contains(out, `"kind": "Policy"`) {
		t.Fatalf("get policy/echo-fast: exit %d\n%s%s", code, out, errs)
	}
	for _, z := range cfg.Zones {
		for _, svc := range z.Services {
			v := svc.Value()
			if v == nil {
				continue
			}
			s.waitAnswer(svc.TXTOwner(), z.Origin, string(v), 3*time.Second)
		}
	}
	for _, name := range []string{"echo.policies.test", "billing.policies.test", "search.policies.test"} {
		_, want, _ := runCLI(t, "inspect", "--config", file, name, "--format", "json")
		code, got, errs := s.cli("inspect", name, "--format", "json")
		if code != 0 || got != want {
			t.Fatalf("inspect --server %s: exit %d %s\ngot  %s\nwant %s", name, code, errs, got, want)
		}
	}
	if code, out, _ := s.cli("inspect", "echo.policies.test"); code != 0 || !strings.Contains(out, "policy echo-fast (Service by name)") {
		t.Fatalf("inspect text:\n%s", out)
	}
	if code, _, errs := s.cli("inspect", "nope.example.org"); code != exitUsage || !strings.Contains(errs, "no zone") {
		t.Fatalf("inspect of a service in no zone: exit %d %s", code, errs)
	}

	// The web view on the admin listener shows the policies and the
	// origin of each value, as for a config file.
	for _, c := range []struct{ path, want string }{
		{"/ui/", "echo-fast"},
		{"/ui/zones/policies.test/services/echo.policies.test", `policy <a href="/ui/zones/policies.test/policies/echo-fast">echo-fast</a>`},
		{"/ui/zones/policies.test/policies/echo-fast", `<a href="/ui/zones/policies.test/services/echo.policies.test">`},
	} {
		resp, err := http.Get(s.url() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Fatalf("GET %s: %d, want %q in\n%s", c.path, resp.StatusCode, c.want, b)
		}
	}

	// The web view shows the resourceVersions of the zone and the service
	// it serves, and follows a write: the service written again (one
	// more address) shows its new version once it is served.
	zoneRV, echoRV := s.resourceVersion("/v1/zones/policies.test"), s.resourceVersion("/v1/zones/policies.test/services/echo")
	s.waitPage("/ui/", `<td class="num rv">`+zoneRV+`</td>`)
	echoPage := "/ui/zones/policies.test/services/echo.policies.test"
	s.waitPage(echoPage, `zone resourceVersion <span id="zone-rv">`+zoneRV+`</span>`)
	s.waitPage(echoPage, `resourceVersion <span id="rv">`+echoRV+`</span>`)
	code, body := s.get("/v1/zones/policies.test/services/echo")
	if code != 200 {
		t.Fatalf("GET echo: %d %s", code, body)
	}
	var echo struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(body), &echo); err != nil {
		t.Fatal(err)
	}
	if echo.APIVersion != "grpc-config-dns/v1" || echo.Kind != "Service" {
		t.Errorf("GET echo: apiVersion %q kind %q", echo.APIVersion, echo.Kind)
	}
	echo.Spec["addresses"] = []string{"127.0.0.1", "127.0.0.9"}
	again, _ := json.Marshal(echo)
	if code, body = s.put("/v1/zones/policies.test/services/echo", string(again)); code != 200 {
		t.Fatalf("PUT echo again: %d %s", code, body)
	}
	newRV := s.resourceVersion("/v1/zones/policies.test/services/echo")
	if newRV == echoRV {
		t.Fatalf("writing echo again kept its resourceVersion %s", echoRV)
	}
	s.waitPage(echoPage, `resourceVersion <span id="rv">`+newRV+`</span>`)

	// A policy change reaches DNS; a service's labels, from metadata,
	// select it.
	code, body = s.put("/v1/zones/policies.test/policies/payments-round-robin",
		`{"spec":{"targetRef":{"kind":"Service","labels":{"team":"payments"}},"default":{"loadBalancingConfig":[{"pick_first":{}}]}}}`)
	if code != 200 {
		t.Fatalf("PUT policy: %d %s", code, body)
	}
	s.waitAnswer("_grpc_config.billing.policies.test.", "policies.test.", "pick_first", 3*time.Second)
	if txt, _ := s.answer("_grpc_config.search.policies.test.", "policies.test."); strings.Contains(txt, "pick_first") {
		t.Fatalf("search is not labelled team=payments, yet: %s", txt)
	}
	// Retargeted: the services the old version selected lose it, those
	// the new one selects get it.
	code, body = s.put("/v1/zones/policies.test/policies/payments-round-robin",
		`{"spec":{"targetRef":{"kind":"Service","name":"search"},"default":{"loadBalancingConfig":[{"pick_first":{}}]}}}`)
	if code != 200 {
		t.Fatalf("PUT policy: %d %s", code, body)
	}
	s.waitAnswer("_grpc_config.search.policies.test.", "policies.test.", "pick_first", 3*time.Second)
	if txt, _ := s.answer("_grpc_config.billing.policies.test.", "policies.test."); strings.Contains(txt, "pick_first") || strings.Contains(txt, "round_robin") {
		t.Fatalf("billing kept the old version's value: %s", txt)
	}
	if code, out, errs := s.cli("delete", "policies.test", "policy/payments-round-robin"); code != 0 {
		t.Fatalf("delete: exit %d %s%s", code, out, errs)
	}
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		txt, _ := s.answer("_grpc_config.search.policies.test.", "policies.test.")
		if !strings.Contains(txt, "pick_first") && strings.Contains(txt, "search.Search") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search kept the deleted policy's value: %s", txt)
		}
	}
}

// TestStorePolicyBreakingOneOf300: a policy PUT that would make one of
// 300 services invalid is refused, naming it; DNS answers do not change.
func TestStorePolicyBreakingOneOf300(t *testing.T) {
	s := startStoreServe(t, t.TempDir())
	defer stopAll(t, s)
	if code, body := s.put("/v1/zones/example.test", `{"spec":{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}}`); code != 201 {
		t.Fatalf("PUT zone: %d %s", code, body)
	}
	var objs bytes.Buffer
	for i := range 300 {
		mc := `{"name":[{"service":"s"}],"timeout":"1s"}`
		if i == 211 {
			mc = `{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2}}`
		}
		fmt.Fprintf(&objs, "---\nmetadata: {zone: example.test, name: svc-%d}\nspec: {addresses: [192.0.2.1], serviceConfig: {methodConfig: [%s]}}\n", i, mc)
	}
	path := t.TempDir() + "/objs.yaml"
	os.WriteFile(path, objs.Bytes(), 0o644)
	if code, _, errs := s.cli("publish", path); code != 0 {
		t.Fatalf("publish: exit %d %s", code, errs)
	}
	s.waitTXT("_grpc_config.svc-299.example.test.", "1s", 5*time.Second)
	before := map[string]string{}
	_, serial := s.answer("example.test.", "example.test.")
	for i := range 300 {
		name := fmt.Sprintf("_grpc_config.svc-%d.example.test.", i)
		before[name], _ = s.answer(name, "example.test.")
	}
	pol := `{"spec":{"targetRef":{"kind":"Zone"},"default":{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}}`
	code, body := s.put("/v1/zones/example.test/policies/retries", pol)
	if code != 422 {
		t.Fatalf("PUT policy: %d %s, want 422", code, body)
	}
	var e struct {
		Diagnostics []struct{ Code, Message, Path string }
	}
	json.Unmarshal([]byte(body), &e)
	if len(e.Diagnostics) != 1 || !strings.Contains(e.Diagnostics[0].Message, "svc-211") || e.Diagnostics[0].Code != "retry-and-hedging" {
		t.Fatalf("want svc-211 named, alone: %s", body)
	}
	time.Sleep(200 * time.Millisecond) // time for a wrong change to show
	if _, now := s.answer("example.test.", "example.test."); now != serial {
		t.Fatalf("the serial moved: %d → %d", serial, now)
	}
	for name, txt := range before {
		if now, _ := s.answer(name, "example.test."); now != txt {
			t.Fatalf("%s changed: %q → %q", name, txt, now)
		}
	}
}
