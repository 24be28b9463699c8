// Package ui is the publisher's read-only web view (GET /ui/): the zones,
// their services and policies being served; for one service the published
// TXT record, its final config with the policy that set each value (a
// link to the policy's page), its lint diagnostics, and who gets what: the
// share of clients, by language, host, dynamic parameters and percentage
// bucket, that lands on each choice, with the config of each choice beside
// the bar; for one policy (/ui/zones/{zone}/policies/{name}) its targetRef
// and default, and the services it selects with what it changes in each:
// the values it sets, and those a more specific layer overrides.
//
// Pages are rendered on the server with html/template from embedded
// files: no build step, no JavaScript. The Handler reads snapshots
// through a Source, so it can be mounted on any listener (serve mounts it
// on --metrics; the admin listener of a store can mount it too).
package ui

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/whogets"
)

// Snapshot is one published version, as the view shows it. Nothing in it
// is modified.
type Snapshot struct {
	Config *model.Config
	// Serials are the zones' SOA serials, by origin.
	Serials map[string]uint32
	// ResourceVersions are the zones' store resourceVersions, by origin;
	// nil when the zones come from a config file. (A service's is its
	// model.Service.ResourceVersion, 0 from a config file.)
	ResourceVersions map[string]string
	// Version counts the snapshots the server published.
	Version uint64
	// Source says where the zones come from (a file name, a store).
	Source string
	// Specs, when not nil, returns the specs (as a store holds them) of
	// the services named (absolute names) of zone origin, at the version
	// served, by name; a service it cannot read is left out. A page reads
	// the config a service wrote itself from them, to say which of its
	// values a policy set (model.Zone.Inspect): the published config does
	// not keep it.
	Specs func(origin string, names []string) map[string][]byte
}

// specs returns snap.Specs(origin, names), or none without Specs.
func (snap *Snapshot) specs(origin string, names []string) map[string][]byte {
	if snap.Specs == nil || len(names) == 0 {
		return nil
	}
	return snap.Specs(origin, names)
}

// Source returns the snapshot being served, or nil before the first.
type Source interface {
	Snapshot() *Snapshot
}

// SourceFunc adapts a function to Source.
type SourceFunc func() *Snapshot

// Snapshot calls f.
func (f SourceFunc) Snapshot() *Snapshot { return f() }

//go:embed templates/*.html static/*
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"trimdot":    trimdot,
	"labels":     formatLabels,
	"serviceURL": serviceURL,
	"policyURL":  policyURL,
	// What each client does with a diagnostic's value.
	"clients": func(d sc.Diagnostic) map[string]string { return sc.ClientEffects(&d) },
}).ParseFS(files, "templates/*.html"))

func trimdot(s string) string { return strings.TrimSuffix(s, ".") }

// serviceURL is the page of service name of zone.
func serviceURL(zone, name string) string {
	return "/ui/zones/" + trimdot(zone) + "/services/" + trimdot(name)
}

// policyURL is the page of policy name of zone.
func policyURL(zone, name string) string {
	return "/ui/zones/" + trimdot(zone) + "/policies/" + name
}

// Handler serves the view under /ui/ from src.
func Handler(src Source, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	h := &handler{src: src, log: log}
	static, _ := fs.Sub(files, "static")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", h.index)
	mux.HandleFunc("GET /ui/zones/{zone}/services/{name}", h.service)
	mux.HandleFunc("GET /ui/zones/{zone}/policies/{name}", h.policy)
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		h.render(w, http.StatusNotFound, "notfound", map[string]string{"What": "page " + r.URL.Path})
	})
	return mux
}

type handler struct {
	src Source
	log *slog.Logger
}

func (h *handler) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		h.log.Error("ui: rendering", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}

// zoneView is a zone as the index lists it.
type zoneView struct {
	Origin, ResourceVersion string
	Serial                  uint32
	Policies                int
	// PolicyRows are the zone's policies, in merge order.
	PolicyRows []policyRow
	Services   []serviceRow
	// Total counts the zone's services, Matched those the filter keeps
	// (at most maxRowsPerZone are listed).
	Total, Matched int
}

// Hidden is how many matching services are not listed.
func (z zoneView) Hidden() int { return z.Matched - len(z.Services) }

type policyRow struct {
	Name, Kind, Target string
}

type serviceRow struct {
	Name, Labels string
	Addresses    int
	TXTBytes     int
	Policies     []string
}

// maxRowsPerZone bounds the index: a zone of 100 000 services is found
// with the filter, not by scrolling.
const maxRowsPerZone = 500

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	snap := h.src.Snapshot()
	if snap == nil || snap.Config == nil {
		h.render(w, http.StatusServiceUnavailable, "notfound", map[string]string{"What": "a published config (nothing is published yet)"})
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var zones []zoneView
	for _, z := range snap.Config.Zones {
		zv := zoneView{Origin: z.Origin, Serial: snap.Serials[z.Origin], ResourceVersion: snap.ResourceVersions[z.Origin], Policies: len(z.Policies), Total: len(z.Services)}
		for _, p := range z.Policies {
			zv.PolicyRows = append(zv.PolicyRows, policyRow{Name: p.Name, Kind: p.TargetRef.Kind.String(), Target: describeTarget(p.TargetRef)})
		}
		for _, s := range z.Services {
			labels := formatLabels(s.Labels)
			if q != "" && !strings.Contains(s.Name, strings.ToLower(q)) && !strings.Contains(labels, q) {
				continue
			}
			if zv.Matched++; len(zv.Services) == maxRowsPerZone {
				continue
			}
			zv.Services = append(zv.Services, serviceRow{Name: s.Name, Labels: labels, Addresses: len(s.Addresses), TXTBytes: sc.RDataLen(s.TXT), Policies: z.PolicyNames(s)})
		}
		zones = append(zones, zv)
	}
	h.render(w, http.StatusOK, "index", map[string]any{"Snap": snap, "Zones": zones, "Query": q})
}

// serviceView is everything the service page shows.
type serviceView struct {
	Snap                    *Snapshot
	Zone                    *model.Zone
	Service                 *model.Service
	Serial                  uint32
	ResourceVersion, Labels string
	// ServiceVersion is the service's store resourceVersion, "" from a
	// config file.
	ServiceVersion          string
	Inspection              *model.Inspection
	Fields                  []fieldView
	ConfigJSON              string
	TXT                     []txtString
	RDataBytes, AnswerBytes int
	Diagnostics             sc.Diagnostics
	Split                   *whogets.Split
	// Rows are Split's rows, each with the configs of the choices its
	// bar shows; Choices is the legend: every choice and the default.
	Rows       []splitRow
	Choices    []choiceView
	SplitError string
}

type txtString struct {
	Text  string
	Bytes int
}

type fieldView struct {
	Path, Value string
	// SetBy is the layer whose value is published, Over those it
	// overrode, in merge order.
	SetBy    originView
	Over     []originView
	ByPolicy bool
	// Unknown says that which layer set the value is not known
	// (model.Inspection.Partial).
	Unknown bool
}

// originView is a layer that set a value: a policy (with the URL of its
// page) or the service itself (Policy ""), and the value's JSON pointer
// in that layer (Path, "" where only the layer is named).
type originView struct {
	Policy, Kind, URL, Path string
}

func (h *handler) service(w http.ResponseWriter, r *http.Request) {
	snap := h.src.Snapshot()
	zoneName, name := r.PathValue("zone"), r.PathValue("name")
	if snap == nil || snap.Config == nil {
		h.render(w, http.StatusServiceUnavailable, "notfound", map[string]string{"What": "a published config (nothing is published yet)"})
		return
	}
	z, s, err := snap.Config.FindService(name)
	if err != nil || strings.TrimSuffix(z.Origin, ".") != strings.ToLower(strings.TrimSuffix(zoneName, ".")) {
		h.render(w, http.StatusNotFound, "notfound", map[string]string{"What": "service " + name + " in zone " + zoneName})
		return
	}
	v := &serviceView{Snap: snap, Zone: z, Service: s, Serial: snap.Serials[z.Origin], ResourceVersion: snap.ResourceVersions[z.Origin], Labels: formatLabels(s.Labels)}
	if s.ResourceVersion != 0 {
		v.ServiceVersion = strconv.FormatInt(s.ResourceVersion, 10)
	}
	var spec []byte
	if len(z.PolicyNames(s)) > 0 { // only then is the service's own config read
		spec = snap.specs(z.Origin, []string{s.Name})[s.Name]
	}
	v.Inspection = z.Inspect(s, spec)
	for _, f := range v.Inspection.Fields {
		v.Fields = append(v.Fields, newFieldView(z.Origin, f))
	}
	if s.TXT != nil {
		var pretty strings.Builder
		enc := json.NewEncoder(&pretty)
		enc.SetIndent("", "  ")
		enc.Encode(v.Inspection.Config)
		v.ConfigJSON = pretty.String()
		for _, t := range s.TXT {
			v.TXT = append(v.TXT, txtString{Text: sc.EscapeTXTString(t), Bytes: len(t)})
		}
		v.RDataBytes = sc.RDataLen(s.TXT)
		v.AnswerBytes = sc.ResponseSize(s.TXTOwner(), s.TXT, true)
		v.Diagnostics = sc.LintRecords([][]string{s.TXT}, s.Compat.LintOptions(s.TXTOwner()))
		if v.Split, err = whogets.Of(s.TXTOwner(), s.TXT); err != nil {
			v.SplitError = err.Error()
		} else {
			v.Choices = choicesOf(s)
			v.Rows = splitRows(v.Split, v.Choices)
		}
	}
	h.render(w, http.StatusOK, "service", v)
}

func newFieldView(zone string, f model.InspectedField) fieldView {
	fv := fieldView{Path: f.Path, Value: string(f.Value), Unknown: len(f.Origins) == 0}
	if n := len(f.Origins); n > 0 {
		fv.SetBy, fv.ByPolicy = newOriginView(zone, f.Origins[n-1]), f.Origins[n-1].Policy != ""
		for _, o := range f.Origins[:n-1] {
			ov := newOriginView(zone, o)
			ov.Path = ""
			fv.Over = append(fv.Over, ov)
		}
	}
	return fv
}

func newOriginView(zone string, o policy.Origin) originView {
	ov := originView{Path: o.Path}
	if o.Policy != "" {
		ov.Policy, ov.Kind, ov.URL = o.Policy, o.Kind.String(), policyURL(zone, o.Policy)
	}
	return ov
}

func formatLabels(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
