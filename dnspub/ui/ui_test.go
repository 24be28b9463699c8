package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

func testSource(t *testing.T) Source {
	t.Helper()
	text, err := os.ReadFile("../../testdata/publisher/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ds := model.Parse(text)
	if cfg == nil {
		t.Fatal(ds)
	}
	snap := &Snapshot{Config: cfg, Serials: map[string]uint32{"policies.test.": 2026112301}, Version: 3, Source: "policies.yaml", Specs: specsOf(text, cfg)}
	return SourceFunc(func() *Snapshot { return snap })
}

// specsOf reads services' specs from config text, as a server does from
// its config file.
func specsOf(text []byte, cfg *model.Config) func(string, []string) map[string][]byte {
	return func(origin string, names []string) map[string][]byte {
		var services []*model.Service
		for _, z := range cfg.Zones {
			for _, s := range z.Services {
				if z.Origin == origin && slices.Contains(names, s.Name) {
					services = append(services, s)
				}
			}
		}
		return model.ServiceSpecsOf(text, cfg, origin, services)
	}
}

// get fetches path from h and parses the page.
func get(t *testing.T, h http.Handler, path string, status int) *html.Node {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != status {
		t.Fatalf("GET %s: %d, want %d:\n%s", path, rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	doc, err := html.Parse(io.Reader(rec.Body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// all returns the elements below n with tag and class (either may be "").
func all(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) && (class == "" || hasClass(n, class)) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	return strings.Contains(" "+attr(n, "class")+" ", " "+c+" ")
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		b.WriteByte(' ') // cells and blocks read apart
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func TestIndexListsZonesAndServices(t *testing.T) {
	doc := get(t, Handler(testSource(t), nil), "/ui/", 200)
	zones := all(doc, "tr", "zone")
	if len(zones) != 1 || !strings.Contains(text(zones[0]), "policies.test. 2026112301 3 3") {
		t.Errorf("zones table: %q", text(zones[0]))
	}
	var links []string
	for _, a := range all(doc, "a", "") {
		links = append(links, attr(a, "href"))
	}
	if !strings.Contains(strings.Join(links, " "), "/ui/zones/policies.test/services/echo.policies.test") {
		t.Errorf("no link to echo's page: %v", links)
	}
	if s := all(doc, "script", ""); len(s) > 0 {
		t.Error("the page has a script")
	}
}

func TestServicePage(t *testing.T) {
	doc := get(t, Handler(testSource(t), nil), "/ui/zones/policies.test/services/echo.policies.test", 200)
	fields := all(doc, "tr", "field")
	if len(fields) < 10 {
		t.Fatalf("%d fields", len(fields))
	}
	// Every value has its origin beside it.
	byPath := map[string]string{}
	for _, f := range fields {
		path, value, origin := all(f, "td", "path"), all(f, "td", "value"), all(f, "td", "origin")
		if len(path) != 1 || len(value) != 1 || len(origin) != 1 || text(origin[0]) == "" {
			t.Fatalf("a field row without path, value and origin: %q", text(f))
		}
		byPath[text(path[0])] = text(value[0]) + " | " + text(origin[0])
	}
	if got, want := byPath["/0/serviceConfig/methodConfig/0/timeout"], `"3s" | policy echo-fast (Service by name) /methodConfig/0/timeout over policy retries (Zone)`; got != want {
		t.Errorf("timeout row %q, want %q", got, want)
	}
	// Every bar of the split adds up to 100 %.
	rows := all(doc, "div", "bar")
	if len(rows) < 2 {
		t.Fatalf("%d split rows", len(rows))
	}
	for _, r := range rows {
		sum := 0
		for _, s := range all(r, "span", "seg") {
			p, err := strconv.Atoi(attr(s, "data-percent"))
			if err != nil {
				t.Fatal(err)
			}
			sum += p
		}
		if sum != 100 {
			t.Errorf("a split row adds up to %d%%: %q", sum, text(r))
		}
	}
	// Go clients on other hosts: 20 % on choice 0, the rest on choice 2
	// (choice 1 is for host canary-1 only).
	if got := text(rows[0].Parent); !strings.Contains(got, "go on other hosts choice 0 · 20% choice 2 · 80%") {
		t.Errorf("first row %q", got)
	}
	page := text(doc)
	for _, want := range []string{"canary-1", "RDATA", "SOA serial 2026112301", "labels team=payments"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(all(doc, "li", "")) == 0 || len(all(doc, "ol", "")) == 0 {
		t.Error("no TXT strings listed")
	}
}

// In store mode the view shows the zone's resourceVersion (index and
// service page) and the service's; from a config file it shows none.
func TestResourceVersionsShown(t *testing.T) {
	echo := "/ui/zones/policies.test/services/echo.policies.test"
	file := Handler(testSource(t), nil)
	for _, path := range []string{"/ui/", echo} {
		if page := text(get(t, file, path, 200)); strings.Contains(page, "resourceVersion") {
			t.Errorf("%s from a config file mentions a resourceVersion: %q", path, page)
		}
	}

	snap := testSource(t).Snapshot()
	snap.ResourceVersions = map[string]string{"policies.test.": "17"}
	for _, s := range snap.Config.Zones[0].Services {
		if s.Name == "echo.policies.test." {
			s.ResourceVersion = 42
		}
	}
	store := Handler(SourceFunc(func() *Snapshot { return snap }), nil)
	if rv := all(get(t, store, "/ui/", 200), "td", "rv"); len(rv) != 1 || text(rv[0]) != "17" {
		t.Errorf("index: zone resourceVersion cells %d, want one saying 17", len(rv))
	}
	doc := get(t, store, echo, 200)
	ids := map[string]string{}
	for _, n := range all(doc, "span", "") {
		if id := attr(n, "id"); id != "" {
			ids[id] = text(n)
		}
	}
	if ids["zone-rv"] != "17" || ids["rv"] != "42" {
		t.Errorf("service page: zone resourceVersion %q, service's %q; want 17 and 42", ids["zone-rv"], ids["rv"])
	}
}

func TestNotFoundAndStatic(t *testing.T) {
	h := Handler(testSource(t), nil)
	get(t, h, "/ui/zones/policies.test/services/nope.policies.test", 404)
	get(t, h, "/ui/zones/other.test/services/echo.policies.test", 404)
	get(t, h, "/ui/nothing", 404)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/static/style.css", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), ".w100 { width: 100%; }") {
		t.Errorf("style.css: %d", rec.Code)
	}
	// The icon every page links to: without it a browser asks for
	// /favicon.ico and logs the 404 as a console error.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/static/favicon.svg", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" {
		t.Errorf("favicon.svg: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	empty := Handler(SourceFunc(func() *Snapshot { return nil }), nil)
	get(t, empty, "/ui/", 503)
}

func TestIndexFilter(t *testing.T) {
	h := Handler(testSource(t), nil)
	doc := get(t, h, "/ui/?q=team%3Dpayments", 200)
	var names []string
	for _, r := range all(doc, "tr", "service") {
		names = append(names, strings.Fields(text(r))[0])
	}
	if got := strings.Join(names, " "); got != "echo.policies.test. billing.policies.test." {
		t.Errorf("filtered by label: %s", got)
	}
	doc = get(t, h, "/ui/?q=SEARCH", 200)
	if rows := all(doc, "tr", "service"); len(rows) != 1 {
		t.Errorf("filtered by name: %d rows", len(rows))
	}
}

func TestIndexListsAtMost500ServicesPerZone(t *testing.T) {
	var b strings.Builder
	b.WriteString("zones:\n  - origin: big.test.\n    nameservers: [ns1.example.net.]\n    services:\n")
	for i := range 600 {
		b.WriteString("      - {name: s" + strconv.Itoa(i) + ", addresses: [10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256) + "]}\n")
	}
	cfg, ds := model.Parse([]byte(b.String()))
	if cfg == nil {
		t.Fatal(ds)
	}
	snap := &Snapshot{Config: cfg}
	doc := get(t, Handler(SourceFunc(func() *Snapshot { return snap }), nil), "/ui/", 200)
	if n := len(all(doc, "tr", "service")); n != 500 {
		t.Errorf("%d rows", n)
	}
	if !strings.Contains(text(doc), "100 more services are not listed") {
		t.Error("the index does not say how many services it leaves out")
	}
}

// A diagnostic that concerns some clients and not others shows what each
// does, client by client (ClientEffects); the record's diagnostics
// are those of its service's declared clients.
func TestServicePageShowsWhatEachClientDoes(t *testing.T) {
	cfg, ds := model.Parse([]byte(`
zones:
  - origin: clients.test.
    nameservers: [{name: ns1, addresses: [192.0.2.1]}]
    services:
      - name: echo
        compat: {clients: [c-core, java]}
        serviceConfig: {methodConfig: [{name: [{}], WaitForReady: true}]}
`))
	if cfg == nil {
		t.Fatal(ds)
	}
	snap := &Snapshot{Config: cfg, Serials: map[string]uint32{"clients.test.": 1}, Version: 1, Source: "clients.yaml"}
	doc := get(t, Handler(SourceFunc(func() *Snapshot { return snap }), nil), "/ui/zones/clients.test/services/echo.clients.test", 200)
	items := all(doc, "li", "warning")
	if len(items) != 1 || !strings.Contains(text(items[0]), "[field-case]") {
		t.Fatalf("diagnostics: %d warnings", len(items))
	}
	tables := all(items[0], "table", "clients")
	if len(tables) != 1 {
		t.Fatalf("no table of clients in %q", text(items[0]))
	}
	got := text(tables[0])
	for _, want := range []string{"c-core dnsconfig go java node", "ignores field ok reads it as the field of that name ignores field ignores field"} {
		if !strings.Contains(got, want) {
			t.Errorf("clients table %q lacks %q", got, want)
		}
	}
}

// A service's page whose own config cannot be read again (the file
// changed since it was served) says so, and says no origin rather than a
// wrong one.
func TestServicePageWithoutOwnConfig(t *testing.T) {
	snap := *testSource(t).Snapshot()
	snap.Specs = func(string, []string) map[string][]byte { return nil }
	doc := get(t, Handler(SourceFunc(func() *Snapshot { return &snap }), nil), "/ui/zones/policies.test/services/echo.policies.test", 200)
	partial := all(doc, "p", "partial")
	if len(partial) != 1 || !strings.Contains(text(partial[0]), "could not be read again") {
		t.Fatalf("the page does not say its origins may be short: %d notes", len(partial))
	}
	for _, f := range all(doc, "tr", "field") {
		if p := all(f, "td", "path"); len(p) == 1 && text(p[0]) == "/0/serviceConfig/methodConfig/0/timeout" {
			if o := text(all(f, "td", "origin")[0]); o != "unknown" {
				t.Errorf("timeout's origin %q, want unknown", o)
			}
		}
	}
	// With the specs, no note.
	full := get(t, Handler(testSource(t), nil), "/ui/zones/policies.test/services/echo.policies.test", 200)
	if n := len(all(full, "p", "partial")); n != 0 {
		t.Errorf("%d notes on a page whose own config was read", n)
	}
}
