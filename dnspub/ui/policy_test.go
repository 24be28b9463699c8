package ui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// overridesSource serves testdata/overrides.yaml: overrides, removals,
// a selected service without config, a value to escape, and a zone
// without policies.
func overridesSource(t *testing.T) Source {
	t.Helper()
	text, err := os.ReadFile("testdata/overrides.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ds := model.Parse(text)
	if cfg == nil || ds.HasErrors() {
		t.Fatal(ds)
	}
	snap := &Snapshot{Config: cfg, Serials: map[string]uint32{"overrides.test.": 7, "bare.test.": 8}, Version: 1, Source: "overrides.yaml", Specs: specsOf(text, cfg)}
	return SourceFunc(func() *Snapshot { return snap })
}

// storeLike is src as a store's snapshot is: zones carry resourceVersions.
func storeLike(t *testing.T, src Source) Source {
	t.Helper()
	snap := *src.Snapshot()
	cfg := *snap.Config
	snap.Config = &cfg
	cfg.Zones = nil
	snap.ResourceVersions = map[string]string{}
	for i, z := range src.Snapshot().Config.Zones {
		c := *z
		cfg.Zones = append(cfg.Zones, &c)
		snap.ResourceVersions[z.Origin] = strings.Repeat("1", i+1)
	}
	return SourceFunc(func() *Snapshot { return &snap })
}

// changeRows returns the rows of the changes table in section id, by
// class, each as its cells' texts.
func changeRows(t *testing.T, doc *html.Node, id string) map[string][][]string {
	t.Helper()
	sec := byID(doc, id)
	if sec == nil {
		t.Fatalf("no section %s", id)
	}
	out := map[string][][]string{}
	for _, class := range []string{"set", "overridden", "removed"} {
		for _, tr := range all(sec, "tr", class) {
			var cells []string
			for _, td := range all(tr, "td", "") {
				cells = append(cells, text(td))
			}
			out[class] = append(out[class], cells)
		}
	}
	return out
}

func byID(n *html.Node, id string) *html.Node {
	for _, e := range all(n, "", "") {
		if attr(e, "id") == id {
			return e
		}
	}
	return nil
}

// hasRow reports whether rows has one whose cells start with want.
func hasRow(rows [][]string, want ...string) bool {
	return slices.ContainsFunc(rows, func(r []string) bool {
		return len(r) >= len(want) && slices.Equal(r[:len(want)], want)
	})
}

// affected lists the services of the policy page's table, each with the
// href of its link.
func affected(doc *html.Node) map[string]string {
	out := map[string]string{}
	for _, tr := range all(doc, "tr", "affected") {
		if a := all(tr, "a", ""); len(a) > 0 {
			out[text(a[0])] = attr(a[0], "href")
		}
	}
	return out
}

func TestPolicyPageListsTheServicesItChanges(t *testing.T) {
	for name, src := range map[string]Source{"file": testSource(t), "store": storeLike(t, testSource(t))} {
		t.Run(name, func(t *testing.T) {
			h := Handler(src, nil)
			doc := get(t, h, "/ui/zones/policies.test/policies/retries", 200)
			want := map[string]string{
				"echo.policies.test.":    "/ui/zones/policies.test/services/echo.policies.test",
				"billing.policies.test.": "/ui/zones/policies.test/services/billing.policies.test",
				"search.policies.test.":  "/ui/zones/policies.test/services/search.policies.test",
			}
			if got := affected(doc); !mapsEqual(got, want) {
				t.Errorf("retries changes %v, want %v", got, want)
			}
			if got := text(byID(doc, "target-ref")); got != `{"kind":"Zone"}` {
				t.Errorf("targetRef %s", got)
			}
			if got := text(byID(doc, "default")); !strings.Contains(got, `"maxAttempts": 3`) {
				t.Errorf("default %s", got)
			}
			rows := changeRows(t, doc, "service-echo.policies.test")
			// echo-fast, more specific, wins on the timeout in every choice.
			if !hasRow(rows["overridden"], "/methodConfig/0/timeout", "0, 1, 2", `"3s"`, `"5s"`, "/methodConfig/0/timeout", "overridden by policy echo-fast (Service by name)") {
				t.Errorf("echo's overridden values: %q", rows["overridden"])
			}
			if !hasRow(rows["set"], "/methodConfig/0/retryPolicy/maxAttempts", "0, 1, 2", "3", "3") {
				t.Errorf("echo's values set by retries: %q", rows["set"])
			}
			// Published with nine digits, written 0.1s.
			if !hasRow(rows["set"], "/methodConfig/0/retryPolicy/initialBackoff", "0, 1, 2", `"0.100000000s"`, `"0.1s"`) {
				t.Errorf("echo's values set by retries: %q", rows["set"])
			}
			if len(rows["removed"]) != 0 {
				t.Errorf("removed: %q", rows["removed"])
			}

			doc = get(t, h, "/ui/zones/policies.test/policies/payments-round-robin", 200)
			if got := affected(doc); len(got) != 2 || got["echo.policies.test."] == "" || got["billing.policies.test."] == "" {
				t.Errorf("payments-round-robin changes %v, want echo and billing", got)
			}
			rows = changeRows(t, doc, "service-billing.policies.test")
			if !hasRow(rows["set"], "/loadBalancingConfig/0/round_robin", "0", "{}", "{}", "/loadBalancingConfig/0/round_robin") {
				t.Errorf("billing's values set by payments-round-robin: %q", rows)
			}

			doc = get(t, h, "/ui/zones/policies.test/policies/echo-fast", 200)
			if got := affected(doc); len(got) != 1 || got["echo.policies.test."] == "" {
				t.Errorf("echo-fast changes %v, want echo", got)
			}
			if page := text(doc); !strings.Contains(page, "Merged 3 of 3, after retries , payments-round-robin ;") {
				t.Errorf("echo-fast's place in echo's merge order is not given: %s", page)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestPolicyPageOverriddenRemovedAndNoConfig(t *testing.T) {
	h := Handler(overridesSource(t), nil)
	doc := get(t, h, "/ui/zones/overrides.test/policies/base", 200)
	if got := affected(doc); len(got) != 2 || got["echo.overrides.test."] == "" || got["plain.overrides.test."] == "" {
		t.Errorf("base changes %v, want echo and plain", got)
	}
	rows := changeRows(t, doc, "service-echo.overrides.test")
	// Choice 0 wrote its own loadBalancingConfig, a list: it replaces
	// the policy's whole.
	if !hasRow(rows["overridden"], "/loadBalancingConfig", "0", `[{"round_robin":{}}]`, `[{"pick_first":{}}]`, "/loadBalancingConfig", "overridden by service") {
		t.Errorf("echo's loadBalancingConfig: %q", rows["overridden"])
	}
	if !hasRow(rows["set"], "/loadBalancingConfig/0/pick_first", "1", "{}") {
		t.Errorf("choice 1 keeps base's loadBalancingConfig: %q", rows["set"])
	}
	// Choice 1 lists its own status codes; edge (by labels) sets the
	// timeout in both.
	if !hasRow(rows["overridden"], "/methodConfig/0/retryPolicy/retryableStatusCodes", "1", `["UNAVAILABLE","ABORTED"]`, `["UNAVAILABLE"]`) {
		t.Errorf("echo's retryableStatusCodes: %q", rows["overridden"])
	}
	if !hasRow(rows["overridden"], "/methodConfig/0/timeout", "0, 1", `"2s"`, `"5s"`, "/methodConfig/0/timeout", "overridden by policy edge (Service by labels)") {
		t.Errorf("echo's timeout: %q", rows["overridden"])
	}
	// Choice 0 wrote retryThrottling empty: removed from what it publishes.
	for _, leaf := range []string{"/retryThrottling/maxTokens", "/retryThrottling/tokenRatio"} {
		if !slices.ContainsFunc(rows["removed"], func(r []string) bool { return r[1] == "0" && r[4] == leaf }) {
			t.Errorf("%s is not shown as removed in choice 0: %q", leaf, rows["removed"])
		}
	}
	if len(rows["removed"]) != 2 {
		t.Errorf("removed: %q", rows["removed"])
	}
	// gateway carries tier=edge but publishes no config.
	if nc := byID(doc, "no-config"); nc == nil || !strings.Contains(text(nc), "gateway.overrides.test.") {
		t.Error("gateway, selected without a config, is not listed")
	}
	doc = get(t, h, "/ui/zones/overrides.test/policies/edge", 200)
	if got := affected(doc); len(got) != 1 || got["echo.overrides.test."] == "" {
		t.Errorf("edge changes %v, want echo", got)
	}
	if nc := byID(doc, "no-config"); nc == nil || !strings.Contains(text(nc), "gateway.overrides.test.") {
		t.Error("gateway, selected without a config, is not listed")
	}
	// The filter narrows the services listed.
	doc = get(t, h, "/ui/zones/overrides.test/policies/base?q=plain", 200)
	if got := affected(doc); len(got) != 1 || got["plain.overrides.test."] == "" {
		t.Errorf("base filtered by plain: %v", got)
	}
}

// A policy's value reaches the page escaped: html/template writes it as
// text wherever it shows (the default, the changes, the configs beside
// the bars).
func TestPolicyValuesAreEscaped(t *testing.T) {
	h := Handler(overridesSource(t), nil)
	for _, path := range []string{"/ui/zones/overrides.test/policies/base", "/ui/zones/overrides.test/services/echo.overrides.test"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body := rec.Body.String()
		if rec.Code != 200 || strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: %d; the policy's value is not escaped", path, rec.Code)
		}
		if s := all(get(t, h, path, 200), "script", ""); len(s) > 0 {
			t.Errorf("%s has a script", path)
		}
	}
}

func TestPolicyNotFound(t *testing.T) {
	h := Handler(testSource(t), nil)
	get(t, h, "/ui/zones/policies.test/policies/nope", 404)
	get(t, h, "/ui/zones/other.test/policies/retries", 404)
	empty := Handler(SourceFunc(func() *Snapshot { return nil }), nil)
	get(t, empty, "/ui/zones/policies.test/policies/retries", 503)
}

func TestIndexListsPolicies(t *testing.T) {
	doc := get(t, Handler(testSource(t), nil), "/ui/", 200)
	var got []string
	for _, tr := range all(doc, "tr", "policy") {
		a := all(tr, "a", "")
		if len(a) != 1 {
			t.Fatalf("a policy row without its link: %q", text(tr))
		}
		got = append(got, text(a[0])+" "+attr(a[0], "href"))
	}
	want := []string{
		"retries /ui/zones/policies.test/policies/retries",
		"payments-round-robin /ui/zones/policies.test/policies/payments-round-robin",
		"echo-fast /ui/zones/policies.test/policies/echo-fast",
	}
	if !slices.Equal(got, want) {
		t.Errorf("policies listed: %q, want %q", got, want)
	}
	// The services' policy names link to the policies.
	for _, tr := range all(doc, "tr", "service") {
		if strings.HasPrefix(text(tr), "search.") {
			a := all(tr, "a", "")
			if len(a) != 2 || attr(a[1], "href") != "/ui/zones/policies.test/policies/retries" {
				t.Errorf("search's row: %q", text(tr))
			}
		}
	}
}

// On the service page every policy named is a link to its page, and
// every bar has beside it the config of each choice it shows, as the
// legend has it.
func TestServicePageLinksPoliciesAndShowsConfigs(t *testing.T) {
	doc := get(t, Handler(testSource(t), nil), "/ui/zones/policies.test/services/echo.policies.test", 200)
	var policyLinks int
	for _, a := range all(doc, "a", "") {
		if strings.Contains(attr(a, "href"), "/policies/") {
			policyLinks++
			if want := "/ui/zones/policies.test/policies/" + text(a); attr(a, "href") != want {
				t.Errorf("policy %s links to %s", text(a), attr(a, "href"))
			}
		}
	}
	if policyLinks < 3+5 { // the list, and the origins of the values
		t.Errorf("%d links to policies", policyLinks)
	}
	for _, f := range all(doc, "td", "origin") {
		if strings.Contains(text(f), "policy ") && len(all(f, "a", "")) == 0 {
			t.Errorf("an origin names a policy without a link: %q", text(f))
		}
	}
	legend := map[string]string{}
	for _, tr := range all(doc, "tr", "choice") {
		cfg := ""
		if c := all(tr, "code", "config"); len(c) == 1 {
			cfg = text(c[0])
		}
		legend[attr(tr, "data-choice")] = cfg
	}
	if len(legend) != 4 || legend["-1"] != "" {
		t.Fatalf("legend %q: want choices 0, 1, 2 and the default", legend)
	}
	if !strings.Contains(legend["1"], `"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}`) {
		t.Errorf("choice 1's config: %s", legend["1"])
	}
	for i, split := range all(doc, "div", "split") {
		want := map[string]bool{}
		for _, s := range all(split, "span", "seg") {
			want[attr(s, "data-choice")] = true
		}
		got := map[string]bool{}
		for _, li := range all(split, "li", "") {
			c := attr(li, "data-choice")
			got[c] = true
			if c == "-1" {
				continue
			}
			code := all(li, "code", "config")
			if len(code) != 1 || text(code[0]) != legend[c] || !json.Valid([]byte(text(code[0]))) {
				t.Errorf("bar %d: choice %s's config beside it is not the legend's: %q", i, c, text(li))
			}
		}
		if len(got) != len(want) || len(want) == 0 {
			t.Errorf("bar %d shows choices %v, has configs beside it for %v", i, want, got)
		}
		for c := range want {
			if !got[c] {
				t.Errorf("bar %d: no config beside it for choice %s", i, c)
			}
		}
	}
}

// TestEveryLinkResolves crawls the view from /ui/, following every link
// (a and link elements) within /ui/: each answers 200, and each fragment
// names an element of its page. With a config file and as a store serves
// it, with both examples.
func TestEveryLinkResolves(t *testing.T) {
	for name, src := range map[string]Source{
		"policies":       testSource(t),
		"policies-store": storeLike(t, testSource(t)),
		"overrides":      overridesSource(t),
	} {
		t.Run(name, func(t *testing.T) {
			pages := crawl(t, Handler(src, nil), "/ui/")
			for _, want := range []string{"/ui/", "/ui/static/style.css"} {
				if !slices.Contains(pages, want) {
					t.Errorf("the crawl did not reach %s", want)
				}
			}
			var policies int
			for _, p := range pages {
				if strings.Contains(p, "/policies/") {
					policies++
				}
			}
			if policies == 0 {
				t.Errorf("no policy page reached: %v", pages)
			}
			t.Logf("%d pages", len(pages))
		})
	}
}

// crawl GETs start from h and every page it links to within /ui/,
// failing t on any answer other than 200 and on a fragment that names no
// element of its page; it returns the paths it fetched.
func crawl(t *testing.T, h http.Handler, start string) []string {
	t.Helper()
	type link struct{ from, to string }
	ids := map[string]map[string]bool{} // by path fetched
	var fragments []link
	queue := []link{{"", start}}
	var fetched []string
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		path, frag, _ := strings.Cut(l.to, "#")
		if frag != "" {
			fragments = append(fragments, l)
		}
		if _, seen := ids[path]; seen {
			continue
		}
		ids[path] = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Errorf("%s links to %s: %d", l.from, path, rec.Code)
			continue
		}
		fetched = append(fetched, path)
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			continue
		}
		doc, err := html.Parse(rec.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids[path] = map[string]bool{}
		for _, n := range all(doc, "", "") {
			if id := attr(n, "id"); id != "" {
				ids[path][id] = true
			}
			href := attr(n, "href")
			if (n.Data != "a" && n.Data != "link") || href == "" {
				continue
			}
			to, ok := resolve(path, href)
			if !ok {
				t.Errorf("%s links to %s, outside /ui/", path, href)
				continue
			}
			queue = append(queue, link{path, to})
		}
	}
	for _, l := range fragments {
		path, frag, _ := strings.Cut(l.to, "#")
		if ids[path] != nil && !ids[path][frag] {
			t.Errorf("%s links to %s: no element has id %q", l.from, l.to, frag)
		}
	}
	return fetched
}

// resolve resolves href on page from (a path) to a path with its query
// and fragment; ok is false when it leads out of /ui/.
func resolve(from, href string) (string, bool) {
	req := httptest.NewRequest("GET", "http://ui.test"+from, nil)
	u, err := req.URL.Parse(href)
	if err != nil || u.Host != "ui.test" || !strings.HasPrefix(u.Path, "/ui/") {
		return "", false
	}
	out := u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		out += "#" + u.Fragment
	}
	return out, true
}
