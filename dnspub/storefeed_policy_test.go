package dnspub

import (
	"context"
	"errors"
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

// itemLog is a store's history for a feed without a store: every item
// written, in order of revision.
type itemLog []store.Item

func (l itemLog) ServicesAt(_ context.Context, zone string, _ []string, rev int64) ([]store.Item, error) {
	latest := map[string]store.Item{}
	for _, it := range l {
		if it.Kind == store.KindService && it.Zone == zone && it.Rev <= rev {
			latest[it.Name] = it
		}
	}
	var out []store.Item
	for _, it := range latest {
		if !it.Deleted {
			out = append(out, it)
		}
	}
	return out, nil
}

// feedWith is a feed holding items, its history.
func feedWith(items ...store.Item) (*feed, *itemLog) {
	l := itemLog(slices.Clone(items))
	f := newFeed(nil, nil)
	f.specs = &l
	f.replace(items, items[len(items)-1].Rev)
	return f, &l
}

// write applies items to f as the store would feed them.
func (l *itemLog) write(f *feed, items ...store.Item) {
	for _, it := range items {
		*l = append(*l, it)
		f.apply(it)
		f.rev = it.Rev
	}
}

func feedConfig(t *testing.T, f *feed, log func(string, ...any)) *model.Config {
	t.Helper()
	c, err := f.config(context.Background(), model.Server{}, log)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFeedPolicyChanges: the feed's incremental revalidation serves what
// a feed built from scratch serves, after policy changes batched before a
// build, for services labelled in metadata and (stored before labels
// moved there) in their spec, also with a value that is not a JSON string
// (validation reads the scalar 1 as the label "1"; found in review: a
// reading of the spec's labels as strings did not select it, and a
// policy change left it serving the old config).
func TestFeedPolicyChanges(t *testing.T) {
	log := func(string, ...any) {}
	labelled := strings.Replace(feedSvcSpec, `{"addresses"`, `{"labels":{"team":"a"},"addresses"`, 1)
	numeric := strings.Replace(feedSvcSpec, `{"addresses"`, `{"labels":{"team":"a","rank":1},"addresses"`, 1)
	start := []store.Item{
		{Kind: store.KindZone, Zone: "example.test", Spec: []byte(feedZoneSpec), Rev: 2},
		{Kind: store.KindService, Zone: "example.test", Name: "meta", Spec: []byte(feedSvcSpec), Labels: map[string]string{"team": "a"}, Rev: 3},
		{Kind: store.KindService, Zone: "example.test", Name: "legacy", Spec: []byte(labelled), Rev: 4},
		{Kind: store.KindService, Zone: "example.test", Name: "other", Spec: []byte(feedSvcSpec), Rev: 5},
		{Kind: store.KindService, Zone: "example.test", Name: "numeric", Spec: []byte(numeric), Rev: 6},
		{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy("pick_first"), Rev: 7},
	}
	f, l := feedWith(start...)
	feedConfig(t, f, log)
	for i, lb := range []string{"round_robin", "pick_first", "round_robin"} {
		l.write(f, store.Item{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy(lb), Rev: int64(8 + i)})
	}
	got := feedConfig(t, f, log)

	fresh, _ := feedWith(append(start,
		store.Item{Kind: store.KindPolicy, Zone: "example.test", Name: "lb", Spec: lbPolicy("round_robin"), Rev: 10})...)
	want := feedConfig(t, fresh, log)
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
	if len(g) != 4 {
		t.Fatalf("served %d services: %v", len(g), g)
	}
	for name, v := range w {
		if g[name] != v {
			t.Errorf("%s: incremental %s\nfrom scratch %s", name, g[name], v)
		}
	}
	if !strings.Contains(g["legacy.example.test."], "round_robin") || !strings.Contains(g["numeric.example.test."], "round_robin") ||
		strings.Contains(g["other.example.test."], "round_robin") {
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
	if got := origins(feedConfig(t, f, log)); !slices.Equal(got, []string{"other.net.", "test."}) {
		t.Fatalf("served %v, want other.net. and test. (the zones inside test. are not)", got)
	}
	if len(logs) != 2 {
		t.Fatalf("logged %q, want one line for each nested zone", logs)
	}
	f.apply(store.Item{Kind: store.KindService, Zone: "other.net", Name: "x", Spec: []byte(feedSvcSpec), Rev: 7})
	feedConfig(t, f, log)
	if len(logs) != 2 {
		t.Fatalf("logged again for the same nesting: %q", logs)
	}
	f.apply(store.Item{Kind: store.KindZone, Zone: "test", Deleted: true, Rev: 8})
	if got := origins(feedConfig(t, f, log)); !slices.Equal(got, []string{"example.test.", "other.net."}) {
		t.Fatalf("after test. is deleted, served %v, want example.test. and other.net.", got)
	}
	if len(logs) != 2 {
		t.Fatalf("logged %q again: sub.example.test. was inside example.test. before too", logs)
	}
}

// TestFeedReadsSpecsAgain: the feed lets go of the specs it validated;
// when its zone changes, it reads them again from the store at its
// revision, and when that revision was compacted meanwhile the build
// fails with errSpecs and a snapshot (what the server reads then) serves
// every service under the new zone spec.
func TestFeedReadsSpecsAgain(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Location: t.TempDir(), History: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(name string) {
		t.Helper()
		if _, _, err := st.PutService(ctx, "example.test", name, &store.Object{Spec: []byte(feedSvcSpec)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.PutZone(ctx, "example.test", &store.Object{Spec: []byte(feedZoneSpec)}); err != nil {
		t.Fatal(err)
	}
	put("a")
	put("b")
	f := newFeed(st, nil)
	items, rev, err := st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.replace(items, rev)
	log := func(string, ...any) {}
	feedConfig(t, f, log)
	for name, s := range f.zones["example.test"].services {
		if s.spec != nil || s.svc == nil {
			t.Fatalf("service %s after a build: spec kept %v, validated %v", name, s.spec != nil, s.svc != nil)
		}
	}
	ttls := func(c *model.Config) []uint32 {
		var out []uint32
		for _, z := range c.Zones {
			for _, s := range z.Services {
				out = append(out, s.TTL)
			}
		}
		return out
	}
	// The zone changes: both services are validated again, under its
	// new TTL, from specs read at the feed's revision.
	zone := func(ttl string) store.Item {
		t.Helper()
		o, _, err := st.PutZone(ctx, "example.test", &store.Object{Spec: []byte(strings.Replace(feedZoneSpec, `"30s"`, `"`+ttl+`"`, 1))})
		if err != nil {
			t.Fatal(err)
		}
		rv, _ := store.ParseRV(o.Metadata.ResourceVersion)
		return store.Item{Kind: store.KindZone, Zone: "example.test", Spec: o.Spec, Rev: rv}
	}
	it := zone("60s")
	f.apply(it)
	f.rev = it.Rev
	if got := ttls(feedConfig(t, f, log)); !slices.Equal(got, []uint32{60, 60}) {
		t.Fatalf("TTLs after the zone changed: %v, want 60 for both", got)
	}
	// The zone changes again, and the store moves on past its history
	// before the feed builds.
	it = zone("90s")
	f.apply(it)
	f.rev = it.Rev
	put("c")
	put("d")
	if _, err := f.config(ctx, model.Server{}, log); !errors.Is(err, errSpecs) || !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("build at a compacted revision: %v, want errSpecs for ErrCompacted", err)
	}
	items, rev, err = st.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.replace(items, rev)
	if got := ttls(feedConfig(t, f, log)); !slices.Equal(got, []uint32{90, 90, 90, 90}) {
		t.Fatalf("TTLs after reading the store whole: %v, want 90 for the four services", got)
	}
}
