package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// recordsOf returns the TXT records each case publishes, as the publisher
// builds them from the suite's config (or as the stand-in server serves
// them).
func recordsOf(t *testing.T, withChange bool) map[string][][]string {
	t.Helper()
	cfg, ds := model.Parse([]byte(publisherConfig(withChange)))
	if ds.HasErrors() {
		t.Fatalf("the suite's publisher config is invalid:\n%v", ds.Err())
	}
	out := map[string][][]string{}
	for _, s := range cfg.Zones[0].Services {
		if s.TXT != nil {
			out[strings.TrimSuffix(s.Name, "."+zoneName)] = [][]string{s.TXT}
		}
	}
	for _, c := range cases {
		for _, r := range c.Foreign {
			out[c.Host] = append(out[c.Host], splitTXT(r))
		}
	}
	return out
}

// Every quirk record draws the lint warning that names the clients it
// breaks, and every record that follows lint's advice is clean: the lint
// half of the interop suite, without the clients.
func TestCaseLint(t *testing.T) {
	recs := recordsOf(t, false)
	for _, c := range cases {
		var codes []string
		for _, d := range sc.LintRecords(recs[c.Host], sc.LintOptions{}) {
			if !slices.Contains(codes, d.Code) {
				codes = append(codes, d.Code)
			}
		}
		if c.Choices == "" && c.Foreign == nil {
			if recs[c.Host] != nil {
				t.Errorf("%s: published %v, want no record", c.Host, recs[c.Host])
			}
			continue
		}
		slices.Sort(codes)
		if want := slices.Sorted(slices.Values(c.Lint)); !slices.Equal(codes, want) {
			t.Errorf("%s: lint reports %v, want %v", c.Host, codes, want)
		}
		if c.Fix != "" && len(c.Lint) == 0 && !strings.Contains(c.Compat, "bareHost") && c.Host != "timeout-1s" {
			t.Errorf("%s has a fix but no lint code", c.Host)
		}
	}
	if _, ok := recs[change.Host]; ok {
		t.Errorf("the change case publishes a record before the change")
	}
	if _, ok := recordsOf(t, true)[change.Host]; !ok {
		t.Errorf("the change case publishes no record after the change")
	}
}

// Every published record fits a 512-byte UDP answer (see fullConfig).
func TestCaseRecordsFitUDP(t *testing.T) {
	for host, recs := range recordsOf(t, true) {
		for _, r := range recs {
			if size := sc.ResponseSize(sc.OwnerPrefix+host+"."+zoneName, r, false); size > 512 {
				t.Errorf("%s: the answer is %d bytes, more than 512", host, size)
			}
		}
	}
}

// The intent each case states for each client is what
// serviceconfig.Choose, our resolver's decision, makes of the record the
// publisher (or the stand-in server) serves.
func TestIntentIsWhatChooseDecides(t *testing.T) {
	recs := recordsOf(t, false)
	for _, client := range clients {
		if _, ok := languages[client]; !ok {
			t.Errorf("client %s has no clientLanguage in languages", client)
		}
	}
	for _, c := range cases {
		for _, client := range clients {
			if got := specIntent(client, sc.OwnerPrefix+c.Host+"."+zoneName, recs[c.Host]); got != c.intent(client) {
				t.Errorf("%s, %s: Choose says %q, the case says %q", c.Host, client, got, c.intent(client))
			}
		}
	}
}

// outcomes are the outcomes classify can return that a case may expect.
var outcomes = []string{applied, noConfig, fails, timesOut,
	without(effTimeout), without(effRetry), without(effRR),
	without(effTimeout, effRetry), without(effTimeout, effRR), without(effRetry, effRR)}

func TestCasesConsistent(t *testing.T) {
	hosts := map[string]bool{}
	for _, c := range cases {
		if hosts[strings.ToLower(c.Host)] {
			t.Errorf("case %s twice (DNS names ignore case)", c.Host)
		}
		hosts[strings.ToLower(c.Host)] = true
		for _, m := range []map[string]string{c.IntentFor, c.Want} {
			for client, o := range m {
				if !slices.Contains(clients, client) {
					t.Errorf("%s: unknown client %q", c.Host, client)
				}
				for _, alt := range strings.Split(o, "|") {
					if !slices.Contains(outcomes, alt) {
						t.Errorf("%s: unknown outcome %q", c.Host, alt)
					}
				}
			}
		}
	}
	for _, c := range cases {
		if c.Fix != "" && !hosts[c.Fix] {
			t.Errorf("%s: its fix %s is not a case", c.Host, c.Fix)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		client string
		r      result
		want   string
	}{
		{grpcGo, result{Fast: "OK", Slow: "DEADLINE_EXCEEDED", SlowMS: 4001, Flaky: "OK", Backends: []string{"v4", "v6"}}, applied},
		{grpcJS, result{Fast: "OK", Slow: "CANCELLED", SlowMS: 4001, Flaky: "OK", Backends: []string{"v4", "v6"}}, applied},
		{grpcGo, result{Fast: "OK", Slow: "OK", SlowMS: 5002, Flaky: "UNAVAILABLE", Backends: []string{"v6"}}, noConfig},
		{grpcGo, result{Fast: "UNAVAILABLE", Slow: "UNAVAILABLE", Flaky: "UNAVAILABLE"}, fails},
		{grpcGo, result{Fast: "DEADLINE_EXCEEDED", Slow: "DEADLINE_EXCEEDED", SlowMS: 1, Flaky: "DEADLINE_EXCEEDED"}, timesOut},
		{grpcGo, result{Fast: "OK", Slow: "DEADLINE_EXCEEDED", SlowMS: 4001, Flaky: "UNAVAILABLE", Backends: []string{"v6"}}, "applied without retry and round_robin"},
		{grpcGo, result{Fast: "OK", Slow: "OK", SlowMS: 5001, Flaky: "OK", Backends: []string{"v4", "v6"}}, without(effTimeout)},
		{grpcGo, result{Fast: "OK", Slow: "DEADLINE_EXCEEDED", SlowMS: 4001, Flaky: "OK", Backends: []string{"v4"}}, without(effRR)},
		// An effect neither seen nor plainly absent: the slow call failed
		// otherwise, no backend answered.
		{grpcGo, result{Fast: "OK", Slow: "INTERNAL", SlowMS: 12, Flaky: "OK", Backends: []string{"v4", "v6"}}, "partly applied (slow INTERNAL, flaky OK, backends [v4 v6])"},
		{grpcGo, result{Fast: "OK", Slow: "DEADLINE_EXCEEDED", SlowMS: 4001, Flaky: "OK"}, "partly applied (slow DEADLINE_EXCEEDED, flaky OK, backends [])"},
		{grpcGo, result{Fast: "INTERNAL"}, "fast call INTERNAL"},
		// grpc-java fails calls with UNKNOWN on a record it rejects, and
		// only that counts as its channel failing.
		{grpcJava, result{Fast: "UNKNOWN", Slow: "UNKNOWN", Flaky: "UNKNOWN"}, fails},
		{grpcJava, result{Fast: "UNAVAILABLE", Slow: "UNAVAILABLE", Flaky: "UNAVAILABLE"}, "fast call UNAVAILABLE"},
		{grpcGo, result{Fast: "UNKNOWN", Slow: "UNKNOWN", Flaky: "UNKNOWN"}, "fast call UNKNOWN"},
	} {
		if got := classify(tc.client, tc.r); got != tc.want {
			t.Errorf("classify(%s, %+v) = %q, want %q", tc.client, tc.r, got, tc.want)
		}
	}
}

// effects reads a config as proto3 JSON does: exact field names, an empty
// loadBalancingConfig list as none.
func TestEffects(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{full, applied},
		{"{}", noConfig},
		{timeoutCase, without(effTimeout)},
		{policyUpper, applied},
		{lbEmpty, without(effRR)},
		{strings.Replace(full, `"loadBalancingConfig":[{"round_robin":{}}]`, `"loadBalancingConfig":[{"pick_first":{}},{"round_robin":{}}]`, 1), without(effRR)},
		{`{"methodConfig":[{"name":[{}],"timeout":"1s"}]}`, without(effRetry, effRR)},
	} {
		if got := effects([]byte(tc.config)); got != tc.want {
			t.Errorf("effects(%s) = %q, want %q", tc.config, got, tc.want)
		}
	}
}

func TestReplaceTable(t *testing.T) {
	in := "# x\n" + beginMarker + "\nold\n" + endMarker + "\nafter\n"
	got, err := replaceTable([]byte(in), "| new |\n")
	if err != nil || string(got) != "# x\n"+beginMarker+"\n| new |\n"+endMarker+"\nafter\n" {
		t.Errorf("replaceTable = %q, %v", got, err)
	}
	if _, err := replaceTable([]byte("no markers"), "x"); err == nil {
		t.Error("no error without markers")
	}
}

func TestCellOfARace(t *testing.T) {
	c := &testCase{Intent: noConfig, Want: map[string]string{grpcJS: jsRace}}
	for _, got := range []string{fails, noConfig} {
		if s := cell(c, grpcJS, got); s != "❌ fails or no config ³" {
			t.Errorf("cell(%s) = %q", got, s)
		}
	}
	if s := cell(c, grpcJS, applied); s != "❌ applied" {
		t.Errorf("cell(applied) = %q", s)
	}
	if s := cell(c, ours, noConfig); s != "✅ no config" {
		t.Errorf("cell(ours) = %q", s)
	}
	draw := &testCase{Intent: fails, Want: map[string]string{grpcJS: jsDraw}}
	for _, got := range []string{noConfig, applied} {
		if s := cell(draw, grpcJS, got); s != "❌ no config or applied ⁵" {
			t.Errorf("cell(draw, %s) = %q", got, s)
		}
	}
}

// The relay grpc-java asks passes each query to the server of its name and
// the answer back unchanged, over UDP and over TCP.
func TestRelay(t *testing.T) {
	a, b := dnstest.Start(t), dnstest.Start(t)
	a.SetTXT("_grpc_config.a.test.", 30, []string{"grpc_config=[]", "from a"})
	b.SetTXT("_grpc_config.b.test.", 30, []string{"from b"})
	r, err := startRelay(func(qname string) string {
		if strings.HasSuffix(qname, "b.test.") {
			return b.Addr
		}
		return a.Addr
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, proto := range []string{"udp", "tcp"} {
		for name, server := range map[string]string{"_grpc_config.a.test.": a.Addr, "_grpc_config.b.test.": b.Addr, "nx.a.test.": a.Addr} {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeTXT)
			c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
			direct, _, err := c.Exchange(m, server)
			if err != nil {
				t.Fatal(err)
			}
			relayed, _, err := c.Exchange(m, r.addr)
			if err != nil {
				t.Fatalf("%s %s through the relay: %v", proto, name, err)
			}
			if direct.String() != relayed.String() {
				t.Errorf("%s %s: through the relay\n%v\nwant\n%v", proto, name, relayed, direct)
			}
		}
	}
}

// suiteClients are the clients the suite runs, with the name a user
// declares them by (our resolver, a Go client, is not among them: it reads
// records as the spec says).
var suiteClients = map[string]sc.Clients{grpcGo: sc.ClientGo, grpcPy: sc.ClientCCore, grpcJava: sc.ClientJava, grpcJS: sc.ClientNode}

// notTheRecord are the outcomes the suite measures that no verdict on the
// record can refuse, with the reason: a client's release older than the
// one the rules follow, a client's bug, where the record is published,
// or a field a client ignores (which docs/rules.md counts as no
// misreading).
var notTheRecord = map[string]string{
	"no-bare " + grpcJS:         "where the record is published: grpc-js asks the bare host name (compat.bareHost), not what the record says",
	"lang-empty " + grpcPy:      "grpcio 1.51's C-core matched no client with an empty list; C-core's current resolver matches all, which the rules follow",
	"empty-list " + grpcPy:      "grpcio 1.51's C-core matched no client with an empty list; C-core's current resolver matches all, which the rules follow",
	"number-string " + grpcJava: "grpc-java 1.41 (the suite's) rejects numbers written as strings; 1.43 and later read them, which the rules follow",
	"short-durations " + grpcPy: "C-core ends calls with a timeout about 1.8 s early (grpc/grpc#34547), whatever the record says",
	"nine-digits " + grpcPy:     "C-core ends calls with a timeout about 1.8 s early (grpc/grpc#34547), whatever the record says",
	"timeout-1s " + grpcPy:      "C-core ends calls with a timeout about 1.8 s early (grpc/grpc#34547), whatever the record says",
	"lb-policy-upper " + grpcJS: "grpc-js ignores loadBalancingPolicy, a field it does not implement: ignoring is not a verdict (docs/rules.md, Clients)",
}

// TestClientVerdicts: for each record the suite runs and each client it
// runs, lint --clients CLIENT refuses the record exactly when the suite
// measured the client doing otherwise than the spec prescribes (rejecting
// it, failing the channel, misreading it), unless the spec itself makes
// the record invalid. The interop run asserts the measured outcomes (Want);
// this holds the declared-clients verdict to them.
func TestClientVerdicts(t *testing.T) {
	recs := recordsOf(t, false)
	none, _ := sc.ParseClients("none")
	for _, c := range cases {
		r := recs[c.Host]
		if r == nil {
			continue
		}
		owner := sc.OwnerPrefix + c.Host + "." + zoneName
		specInvalid := sc.LintRecords(r, sc.LintOptions{Owner: owner, Clients: none, AsServed: true, AllowMisspelledFields: true}).HasErrors()
		for name, cl := range suiteClients {
			want, measured := c.Want[name]
			deviates := measured && want != c.intent(name)
			if why, ok := notTheRecord[c.Host+" "+name]; ok && deviates {
				if why == "" {
					t.Errorf("%s, %s: an exception without a reason", c.Host, name)
				}
				continue
			}
			refused := sc.LintRecords(r, sc.LintOptions{Owner: owner, Clients: cl, AsServed: true}).HasErrors()
			switch {
			case deviates && !refused:
				t.Errorf("%s: %s does %q where the spec prescribes %q, but lint --clients %s accepts the record", c.Host, name, want, c.intent(name), sc.ClientIDs(cl)[0])
			case !deviates && refused && !specInvalid:
				t.Errorf("%s: %s does as the spec prescribes (%q), but lint --clients %s refuses the record", c.Host, name, c.intent(name), sc.ClientIDs(cl)[0])
			}
		}
	}
}
