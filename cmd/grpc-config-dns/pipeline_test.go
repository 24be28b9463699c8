package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// One publish pipeline: serve (a publisher config, read by package model),
// zone, encode, lint and the admin API decide about a record with
// serviceconfig.Publish. TestOnePublishPipeline holds them to it on every
// record of the corpus and of the peers' test suites, under each compat
// setting and each list of declared clients.

// pipelineCase is a record as a user writes it.
type pipelineCase struct{ name, text string }

func pipelineCases(t *testing.T) []pipelineCase {
	t.Helper()
	var out []pipelineCase
	for _, c := range readManifest(t) {
		b, err := os.ReadFile(filepath.Join("../../testdata/corpus", c.file))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pipelineCase{"corpus/" + c.file, string(b)})
	}
	peers, _ := filepath.Glob("../../testdata/peers/*.json")
	for _, p := range peers {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Vectors []struct{ ID, Kind, Policy, Input string }
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Vectors {
			text := v.Input
			if v.Kind == "lb-config" {
				text = `{"loadBalancingConfig":[{"` + v.Policy + `":` + v.Input + `}]}`
			}
			out = append(out, pipelineCase{"peers/" + v.ID, text})
		}
	}
	if len(out) < 400 {
		t.Fatalf("only %d records", len(out))
	}
	return out
}

// pipelineCompats are the compat settings the pipeline is tested under:
// the publisher's defaults for each list of declared clients, the alias
// allowGrpcGoFailure (grpc-go taken out of the declared clients), and the
// record as written, for no client.
var pipelineCompats = func() []sc.PublishOptions {
	var out []sc.PublishOptions
	for _, c := range []sc.Clients{sc.ClientGo, sc.ClientCCore, sc.ClientJava, sc.ClientNode, sc.ClientOurs, sc.AllClients} {
		o := sc.DefaultPublishOptions()
		o.Clients = c
		out = append(out, o)
	}
	none, _ := sc.ParseClients("none")
	return append(out,
		sc.PublishOptions{NineDigitDurations: true, OmitNulls: true, AllowGrpcGoFailure: true, Clients: sc.ClientGo | sc.ClientJava},
		sc.PublishOptions{NineDigitDurations: false, OmitNulls: false, AllowMisspelledFields: true, Clients: none})
}()

// clientsArg is opts's declared clients as --clients and compat.clients
// take them.
func clientsArg(opts sc.PublishOptions) string {
	if ids := sc.ClientIDs(opts.Clients); len(ids) > 0 {
		return strings.Join(ids, ",")
	}
	return "none"
}

// owner is the owner name of the record in the publisher configs below,
// as long as the name encode sizes an unnamed record for.
const owner = "_grpc_config.service.example.com."

// TestOnePublishPipeline: for every record of the corpus and of the peers'
// suites, and every list of declared clients, lint's exit status, encode's
// record, serve's, zone's, lint of the publisher config and of the store
// objects, and the admin API's answer are Publish's decision.
func TestOnePublishPipeline(t *testing.T) {
	published, refused, embedded := 0, 0, 0
	cases := pipelineCases(t)
	api := newPipelineAPI(t)
	for _, c := range cases {
		if value, _ := publisherValue(c.text); value != nil {
			embedded++
		}
	}
	for _, opts := range pipelineCompats {
		api.zone(opts)
		for _, c := range cases {
			value, kind := publisherValue(c.text)
			rec, ds := sc.Publish(sc.Source{Text: []byte(c.text)}, opts)
			want := "refused"
			if rec != nil {
				want, published = sc.FormatTXT(rec.TXT), published+1
			} else {
				refused++
			}
			where := fmt.Sprintf("%s (--clients %s, %+v)", c.name, clientsArg(opts), opts)
			if got := encodeVerdict(t, c.text, opts); got != want {
				t.Errorf("%s: encode %s, Publish %s %v", where, got, want, codes(ds))
			}
			// Lint judges a record as the publisher publishes it, with the
			// same settings.
			code, out, _ := runStdin(t, c.text, "lint", "--clients", clientsArg(opts),
				"--nine-digit-durations="+strconv.FormatBool(opts.NineDigitDurations), "--omit-nulls="+strconv.FormatBool(opts.OmitNulls),
				"--allow-misspelled-fields="+strconv.FormatBool(opts.AllowMisspelledFields), "--allow-grpc-go-failure="+strconv.FormatBool(opts.AllowGrpcGoFailure), "-")
			if (code == exitOK) != (rec != nil) {
				t.Errorf("%s: lint exits %d, Publish publishes %v %v\n%s", where, code, rec != nil, codes(ds), out)
			}
			if value == nil {
				continue // a TXT record a publisher config cannot hold
			}
			cfg := publisherConfig(value, kind, opts)
			if got := serveVerdict(cfg); got != want {
				t.Errorf("%s: serve %s, Publish %s %v", where, got, want, codes(ds))
			}
			if got := zoneVerdict(t, cfg); got != want {
				t.Errorf("%s: zone %s, Publish %s %v", where, got, want, codes(ds))
			}
			if got := lintConfigVerdict(t, cfg); got != (rec != nil) {
				t.Errorf("%s: lint of the publisher config says valid=%v, Publish publishes %v %v", where, got, rec != nil, codes(ds))
			}
			if got := api.verdict(t, value, kind); got != want {
				t.Errorf("%s: the admin API %s, Publish %s %v", where, got, want, codes(ds))
			}
			if got := lintConfigVerdict(t, storeObjects(value, kind, opts)); got != (rec != nil) {
				t.Errorf("%s: lint of the store objects says valid=%v, Publish publishes %v %v", where, got, rec != nil, codes(ds))
			}
		}
	}
	t.Logf("%d records (%d also in a publisher config) × %d compat settings: %d published, %d refused", len(cases), embedded, len(pipelineCompats), published, refused)
	if published < 300 || refused < 300 || embedded < len(cases)*3/4 {
		t.Errorf("%d published, %d refused, %d of %d in a publisher config: the corpus should exercise all", published, refused, embedded, len(cases))
	}
}

// storeObjects is a file of store objects (publish's input, JSON lines)
// holding zone example.com with opts as its compat and a service that
// publishes value.
func storeObjects(value []byte, kind sc.Kind, opts sc.PublishOptions) []byte {
	key := "choices"
	if kind == sc.KindServiceConfig {
		key = "serviceConfig"
	}
	return fmt.Appendf(nil, `[{"metadata":{"name":"example.com"},"spec":{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],"compat":{"nineDigitDurations":%t,"omitNulls":%t,"allowGrpcGoFailure":%t,"allowMisspelledFields":%t,"clients":%q}}},
{"metadata":{"zone":"example.com","name":"service"},"spec":{"addresses":["192.0.2.1"],%q:%s}}]`,
		opts.NineDigitDurations, opts.OmitNulls, opts.AllowGrpcGoFailure, opts.AllowMisspelledFields, clientsArg(opts), key, value)
}

// lintConfigVerdict is whether lint finds cfg (a publisher config, or a
// file of store objects) valid.
func lintConfigVerdict(t *testing.T, cfg []byte) bool {
	code, _, _ := runStdin(t, string(cfg), "lint", "-")
	return code == exitOK
}

// pipelineAPI is an admin API on an embedded store, asked with dry runs.
type pipelineAPI struct {
	t   *testing.T
	url string
}

func newPipelineAPI(t *testing.T) *pipelineAPI {
	st, err := store.Open(context.Background(), store.Options{Location: t.TempDir(), WaitForRevision: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := api.New(api.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &pipelineAPI{t: t, url: srv.URL}
}

func (a *pipelineAPI) do(method, path string, body []byte) (int, []byte) {
	req, _ := http.NewRequest(method, a.url+path, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// zone puts zone example.com with opts as its compat.
func (a *pipelineAPI) zone(opts sc.PublishOptions) {
	body := fmt.Appendf(nil, `{"spec":{"nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],"compat":{"nineDigitDurations":%t,"omitNulls":%t,"allowGrpcGoFailure":%t,"allowMisspelledFields":%t,"clients":%q}}}`,
		opts.NineDigitDurations, opts.OmitNulls, opts.AllowGrpcGoFailure, opts.AllowMisspelledFields, clientsArg(opts))
	if code, out := a.do("PUT", "/v1/zones/example.com", body); code/100 != 2 {
		a.t.Fatalf("zone: %d %s", code, out)
	}
}

// verdict is the record the API would publish for a service holding
// value (a dry run), or "refused" when it answers 422.
func (a *pipelineAPI) verdict(t *testing.T, value []byte, kind sc.Kind) string {
	key := "choices"
	if kind == sc.KindServiceConfig {
		key = "serviceConfig"
	}
	body := fmt.Appendf(nil, `{"spec":{"addresses":["192.0.2.1"],%q:%s}}`, key, value)
	code, out := a.do("PUT", "/v1/zones/example.com/services/service?dryRun=All", body)
	switch {
	case code == http.StatusUnprocessableEntity:
		return "refused"
	case code/100 != 2:
		return fmt.Sprintf("HTTP %d: %s", code, out)
	}
	var res struct {
		Published struct {
			Owner string   `json:"owner"`
			TXT   []string `json:"txt"`
		} `json:"published"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Published.Owner != owner {
		return "at " + res.Published.Owner
	}
	return sc.FormatTXT(res.Published.TXT)
}

func codes(ds sc.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Code)
	}
	return out
}

// encodeVerdict is what encode prints for text under opts: the record, or
// "refused".
func encodeVerdict(t *testing.T, text string, opts sc.PublishOptions) string {
	code, out, errs := runStdin(t, text, "encode", "--clients", clientsArg(opts), "--nine-digit-durations="+strconv.FormatBool(opts.NineDigitDurations),
		"--omit-nulls="+strconv.FormatBool(opts.OmitNulls), "--allow-grpc-go-failure="+strconv.FormatBool(opts.AllowGrpcGoFailure), "--allow-misspelled-fields="+strconv.FormatBool(opts.AllowMisspelledFields), "-")
	switch code {
	case exitOK:
		return strings.TrimSuffix(out, "\n")
	case exitInvalid:
		return "refused"
	}
	return fmt.Sprintf("exit %d: %s", code, errs)
}

// publisherValue returns the choice list or bare service config text
// holds, as JSON a publisher config can hold, and its kind; nil when a
// publisher config cannot hold the same record: text that is not JSON
// (YAML reads it its own way), a TXT record whose strings are the problem
// (a publisher config has no strings: the publisher cuts them), and bytes
// outside ASCII (a publisher config's strings are YAML text, which the
// publisher writes with \u escapes, where a record as written must be
// ASCII, gRFC A2).
func publisherValue(text string) ([]byte, sc.Kind) {
	for i := range len(text) {
		if text[i] >= 0x80 {
			return nil, sc.KindUnknown
		}
	}
	kind := sc.DetectKind([]byte(text))
	switch kind {
	case sc.KindChoices, sc.KindServiceConfig:
		if !json.Valid([]byte(text)) {
			return nil, kind
		}
		return []byte(text), kind
	case sc.KindTXT:
		records := [][]string{{strings.TrimSpace(text)}}
		if trimmed := strings.TrimSpace(text); !strings.HasPrefix(strings.ToLower(trimmed), "grpc_config") {
			r, err := sc.ParseTXT([]byte(text))
			if err != nil {
				return nil, kind
			}
			records = r
		}
		for _, r := range records {
			for _, str := range r {
				if len(str) > 255 { // RFC 1035 §3.3
					return nil, kind
				}
			}
		}
		value, err := sc.DecodeTXT(records)
		if err != nil || !json.Valid(value) {
			return nil, kind
		}
		return value, sc.KindChoices
	}
	return nil, kind
}

// publisherConfig is a publisher config (JSON, which is YAML) that
// publishes value at owner under opts.
func publisherConfig(value []byte, kind sc.Kind, opts sc.PublishOptions) []byte {
	key := "choices"
	if kind == sc.KindServiceConfig {
		key = "serviceConfig"
	}
	return fmt.Appendf(nil, `{"zones":[{"origin":"example.com.","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}],
"compat":{"nineDigitDurations":%t,"omitNulls":%t,"allowGrpcGoFailure":%t,"allowMisspelledFields":%t,"clients":%q},
"services":[{"name":"service","addresses":["192.0.2.1"],%q:%s}]}]}`, opts.NineDigitDurations, opts.OmitNulls, opts.AllowGrpcGoFailure, opts.AllowMisspelledFields, clientsArg(opts), key, value)
}

// serveVerdict is the record serve would publish from cfg, or "refused".
func serveVerdict(cfg []byte) string {
	c, _ := model.Parse(cfg)
	if c == nil {
		return "refused"
	}
	s := c.Zones[0].Services[0]
	if s.TXTOwner() != owner {
		return "at " + s.TXTOwner()
	}
	return sc.FormatTXT(s.TXT)
}

// zoneVerdict is the TXT record the zone command prints for cfg, or
// "refused".
func zoneVerdict(t *testing.T, cfg []byte) string {
	path := filepath.Join(t.TempDir(), "publisher.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "zone", "--config", path, "--serial", "1")
	switch code {
	case exitInvalid:
		return "refused"
	case exitOK:
	default:
		return fmt.Sprintf("exit %d: %s", code, errs)
	}
	// _grpc_config.service TTL IN TXT "…" "…", or ( … ) over lines.
	_, rest, found := strings.Cut(out, "\n_grpc_config.service ")
	_, rest, ok := strings.Cut(rest, " TXT ")
	if !found || !ok {
		return "no TXT record at " + owner + " in\n" + out
	}
	rest = strings.TrimSpace(rest)
	end := strings.IndexByte(rest, '\n')
	if strings.HasPrefix(rest, "(") {
		end = strings.IndexByte(rest, ')') + 1
	}
	if end > 0 {
		rest = rest[:end]
	}
	recs, err := sc.ParseTXT([]byte(rest))
	if err != nil || len(recs) != 1 {
		return fmt.Sprintf("unreadable TXT record %q: %v", rest, err)
	}
	return sc.FormatTXT(recs[0])
}
