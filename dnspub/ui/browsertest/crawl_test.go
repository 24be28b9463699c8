package browsertest

import (
	"encoding/json"
	"strings"
	"testing"
)

// crawlInBrowser loads start (a path) in p, and every page of the view
// it links to, reading the links from the DOM Chromium built (a and link
// elements, as the browser resolved them). Every link must stay within
// base's /ui/, answer 200 (asked with token as a bearer token, when not
// ""), and a fragment must name an element of its page. It returns the
// paths of the pages loaded.
func crawlInBrowser(t *testing.T, p *page, base, token, start string) []string {
	t.Helper()
	type link struct{ from, to string }
	ids := map[string]map[string]bool{} // by page URL loaded
	var links []link
	var loaded []string
	isPage := func(u string) bool {
		return strings.HasPrefix(u, base+"/ui/") && !strings.HasPrefix(u, base+"/ui/static/")
	}
	queue := []string{base + start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if _, seen := ids[u]; seen {
			continue
		}
		p.navigate(u)
		var dom struct {
			Links, IDs []string
			URL        string
		}
		js := `JSON.stringify({Links: Array.from(document.querySelectorAll("a[href], link[href]"), e => e.href),
			IDs: Array.from(document.querySelectorAll("[id]"), e => e.id), URL: location.href})`
		if err := json.Unmarshal([]byte(p.eval(js)), &dom); err != nil {
			t.Fatalf("%s: reading the links: %v", u, err)
		}
		if dom.URL != u {
			t.Errorf("loading %s, the browser is at %s", u, dom.URL)
		}
		ids[u] = map[string]bool{}
		for _, id := range dom.IDs {
			ids[u][id] = true
		}
		loaded = append(loaded, strings.TrimPrefix(u, base))
		for _, l := range dom.Links {
			links = append(links, link{u, l})
			if to, _, _ := strings.Cut(l, "#"); isPage(to) {
				queue = append(queue, to)
			}
		}
	}
	status := map[string]int{}
	for _, l := range links {
		to, frag, _ := strings.Cut(l.to, "#")
		if !strings.HasPrefix(to, base+"/ui/") {
			t.Errorf("%s links to %s, outside the view", l.from, l.to)
			continue
		}
		code, ok := status[to]
		if !ok {
			code, _ = fetch(t, to, token)
			status[to] = code
		}
		if code != 200 {
			t.Errorf("%s links to %s: %d", l.from, to, code)
		}
		if frag != "" && ids[to] != nil && !ids[to][frag] {
			t.Errorf("%s links to %s: no element has id %q", l.from, l.to, frag)
		}
	}
	t.Logf("crawled %d pages, %d links, %d distinct targets", len(loaded), len(links), len(status))
	return loaded
}
