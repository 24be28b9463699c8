package dnspub

import (
	"slices"
	"strings"
	"testing"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

const (
	feedZoneSpec = `{"ttl":"30s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`
	feedSvcSpec  = `{"addresses":["192.0.2.7"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"1s"}]}}`
)

func lbPolicy(lb string) []byte {
	return []byte(`{"targetRef":{"kind":"Service","labels":{"team":"a"}},"default":{"loadBalancingConfig":[{"` + lb + `":{}}]}}`)
}

// TestFeedPolicyChanges: the feed's incremental revalidation serves what
// a feed built from scratch serves, after policy changes batched before a
// build, for services labelled in metadata and (stored before labels
// moved there) in their spec.
func TestFeedPolicyChanges(t *testing.T) {
	log := func(string, ...any) {}
	labelled := strings.Replace(feedSvcSpec, `{"addresses"`, `{"labels":{"team":"a"},"addresses"`, 1)
	start := []store.Item{
		{Kind: store.KindZone, Zone: "example.test", Spec: []byte(feedZoneSpec), Rev: 2},
		{Kind: store.KindService, Zone: "example.test", Name: "meta", Spec: []byte(feedSvcSpec), Labels: map[string]string{"team": "a"}, Rev: 3},
		{Kind: store.KindService, Zone: "example.test", Name: "legacy", Spec: []byte(labelled), Rev: 4},
		{Kind: store.KindService, Zone: "example.test", Name: "other", Spec: []byte(feedSvcSpec), Rev: 5},
		{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy("pick_first"), Rev: 6},
	}
	f := newFeed(nil, nil)
	f.replace(start, 6)
	f.config(model.Server{}, log)
	for i, lb := range []string{"round_robin", "pick_first", "round_robin"} {
		f.apply(store.Item{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy(lb), Rev: int64(7 + i)})
	}
	got := f.config(model.Server{}, log)

	fresh := newFeed(nil, nil)
	fresh.replace(append(start,
		store.Item{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy("round_robin"), Rev: 9}), 9)
	want := fresh.config(model.Server{}, log)
	values := func(c *model.Config) map[string]string {
		out := map[string]string{}
		for _, z := range c.Zones {
			for _, s := range z.Services {
				out[s.Name] = string(s.Value())
			}
		}
		return out
	}
	g, w := values(got), values(want)
	if len(g) != 3 {
		t.Fatalf("served %d services: %v", len(g), g)
	}
	for name, v := range w {
		if g[name] != v {
			t.Errorf("%s: incremental %s\nfrom scratch %s", name, g[name], v)
		}
	}
	if !strings.Contains(g["legacy.example.test."], "round_robin") || strings.Contains(g["other.example.test."], "round_robin") {
		t.Errorf("selection: %v", g)
	}
}

// TestFeedNestedZones: zones of a store that lie inside another (written
// before the store refused them) are not served beside it; the outer one
// is, and the inner one is logged once, until it is deleted.
func TestFeedNestedZones(t *testing.T) {
	var logs []string
	log := func(msg string, args ...any) { logs = append(logs, msg) }
	zone := func(name string, rev int64) store.Item {
		return store.Item{Kind: store.KindZone, Zone: name, Spec: []byte(feedZoneSpec), Rev: rev}
	}
	f := newFeed(nil, nil)
	f.replace([]store.Item{zone("test", 2), zone("example.test", 3), zone("sub.example.test", 4), zone("other.net", 5),
		{Kind: store.KindService, Zone: "example.test", Name: "foo.sub", Spec: []byte(feedSvcSpec), Rev: 6}}, 6)
	origins := func(c *model.Config) []string {
		var out []string
		for _, z := range c.Zones {
			out = append(out, z.Origin)
		}
		slices.Sort(out)
		return out
	}
	if got := origins(f.config(model.Server{}, log)); !slices.Equal(got, []string{"other.net.", "test."}) {
		t.Fatalf("served %v, want other.net. and test. (the zones inside test. are not)", got)
	}
	if len(logs) != 2 {
		t.Fatalf("logged %q, want one line for each nested zone", logs)
	}
	f.apply(store.Item{Kind: store.KindService, Zone: "other.net", Name: "x", Spec: []byte(feedSvcSpec), Rev: 7})
	f.config(model.Server{}, log)
	if len(logs) != 2 {
		t.Fatalf("logged again for the same nesting: %q", logs)
	}
	f.apply(store.Item{Kind: store.KindZone, Zone: "test", Deleted: true, Rev: 8})
	if got := origins(f.config(model.Server{}, log)); !slices.Equal(got, []string{"example.test.", "other.net."}) {
		t.Fatalf("after test. is deleted, served %v, want example.test. and other.net.", got)
	}
	if len(logs) != 2 {
		t.Fatalf("logged %q again: sub.example.test. was inside example.test. before too", logs)
	}
}
