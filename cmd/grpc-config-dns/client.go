package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func init() {
	extraCommands = append(extraCommands, importCmd, publishCmd, getCmd, listCmd, watchCmd, deleteCmd)
}

// Environment variables the client commands read.
const (
	envServer = "GRPC_CONFIG_DNS_SERVER"
	envToken  = "GRPC_CONFIG_DNS_TOKEN"
)

// clientFlags are the flags every admin API command has.
type clientFlags struct {
	server, token, tokenFile, cacert, output string
}

func (c *clientFlags) add(cmd *cobra.Command, output bool) {
	f := cmd.Flags()
	f.StringVar(&c.server, "server", "", "admin API URL, like http://127.0.0.1:8053 (default $"+envServer+", else http://"+DefaultAdmin+")")
	f.StringVar(&c.token, "token", "", "bearer token (default $"+envToken+")")
	f.StringVar(&c.tokenFile, "token-file", "", "file holding the bearer token")
	f.StringVar(&c.cacert, "cacert", "", "CA certificate (PEM) to verify an https server with")
	if output {
		f.StringVarP(&c.output, "output", "o", "table", outputHelp)
	}
}

// client talks to the admin API.
type client struct {
	base  string
	token string
	hc    *http.Client
	out   outputFormat
	e     *env
	// dry is a write's dry run (--dry-run): "" none, "server" the API
	// checks and stores nothing (dryRun=All), "client" nothing is sent
	// but reads.
	dry string
}

// dryNote is what a report of a write adds in a dry run.
func (c *client) dryNote() string {
	switch c.dry {
	case "server":
		return " (server dry run)"
	case "client":
		return " (dry run)"
	}
	return ""
}

// writePath is path with the dry run the client asks for.
func (c *client) writePath(path string) string {
	if c.dry != "server" {
		return path
	}
	if strings.Contains(path, "?") {
		return path + "&dryRun=All"
	}
	return path + "?dryRun=All"
}

func (c *clientFlags) client(e *env) (*client, error) {
	base := c.server
	if base == "" {
		base = os.Getenv(envServer)
	}
	if base == "" {
		base = "http://" + DefaultAdmin
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("--server %q is not an http:// or https:// URL", base)
	}
	token := c.token
	if token == "" && c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		token = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	if token == "" {
		token = os.Getenv(envToken)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	if c.cacert != "" {
		pem, err := os.ReadFile(c.cacert)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErr("--cacert %s holds no PEM certificate", c.cacert)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	out, err := parseOutput(c.output)
	if err != nil {
		return nil, err
	}
	return &client{base: strings.TrimSuffix(base, "/"), token: token, hc: &http.Client{Transport: tr}, out: out, e: e}, nil
}

// apiError is a refusal by the server: exit 1, with its message and
// diagnostics printed like lint's.
type apiError struct{ e *store.Error }

func (a *apiError) Error() string {
	return fmt.Sprintf("%s (%d %s)", a.e.Message, a.e.Code, a.e.Reason)
}

func (c *client) request(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return usageErr("%v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: %v", method, c.base+path, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: %v", method, c.base+path, err)}
	}
	if resp.StatusCode >= 300 {
		var e store.Error
		if json.Unmarshal(b, &e) != nil || e.Code == 0 {
			msg := strings.TrimSpace(string(b))
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: the server answered %d %q, which is no admin API answer: is --server the admin URL of serve --store (https:// when it has --admin-tls-cert)?", method, c.base+path, resp.StatusCode, msg)}
		}
		return &apiError{&e}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: the answer is not JSON: %v", method, c.base+path, err)}
		}
	}
	return nil
}

// fail prints an API refusal and turns it into the exit code: 1 when the
// server refused the request (4xx), 2 when it failed (5xx).
func (c *client) fail(what string, err error) error {
	return c.failFrom(what, err, nil)
}

// failFrom is fail for a write of objects read from a file: src, when
// not nil, says where each diagnostic lies in the file (the source of
// its object, and the diagnostic's pointer relative to that object), so
// that it is printed as lint prints it, FILE:LINE:COL, rather than at a
// position in the JSON the CLI sent, which the user never saw.
func (c *client) failFrom(what string, err error, src func(store.Diagnostic) (*objectSource, store.Diagnostic)) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	fmt.Fprintf(c.e.stderr, "%s: %s\n", what, ae.e.Message)
	for _, d := range ae.e.Diagnostics {
		if src != nil {
			if s, rel := src(d); s != nil {
				if line, col, ok := s.place(rel); ok {
					fmt.Fprintln(c.e.stderr, formatDiagnostic(s.file.name, lintDiagnostic{Severity: d.Severity, Code: d.Code, Message: d.Message, Path: rel.Path, Line: line, Column: col}))
					continue
				}
			}
		}
		loc := what + ":" + d.Path
		if d.Line > 0 {
			loc = fmt.Sprintf("%s:%d:%d", loc, d.Line, d.Column)
		}
		fmt.Fprintf(c.e.stderr, "%s: %s: %s [%s]\n", loc, d.Severity, d.Message, d.Code)
	}
	code := exitInvalid
	if ae.e.Code >= 500 || ae.e.Code == http.StatusUnauthorized {
		code = exitUsage
	}
	return &exitError{code: code}
}

func esc(s string) string { return url.PathEscape(s) }

// policyArg is how a command names a policy where it names a service:
// policy/NAME (a service name has no slash).
const policyArg = "policy/"

func objectPath(zone, name string) string {
	if name == "" {
		return "/v1/zones/" + esc(zone)
	}
	if p, ok := strings.CutPrefix(name, policyArg); ok {
		return "/v1/zones/" + esc(zone) + "/policies/" + esc(p)
	}
	return "/v1/zones/" + esc(zone) + "/services/" + esc(name)
}

// print writes objects as the output flag says.
func (c *client) print(v any, objs []*store.Object) error {
	return c.out.write(c.e.stdout, v, objs)
}

// toYAML writes JSON as block YAML, numbers as written.
func toYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	var block func(*yaml.Node)
	block = func(n *yaml.Node) {
		n.Style = 0 // the encoder quotes a string that would read as another type
		for _, c := range n.Content {
			block(c)
		}
	}
	block(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func printTable(tw io.Writer, objs []*store.Object, header, wide bool) {
	services, policies := false, len(objs) > 0
	for _, o := range objs {
		services = services || o.Metadata.Zone != ""
		policies = policies && o.Kind == store.PolicyKind
	}
	if policies {
		if header {
			fmt.Fprint(tw, "ZONE\tNAME\tVERSION\tTARGET")
			if wide {
				fmt.Fprint(tw, "\tLABELS")
			}
			fmt.Fprintln(tw)
		}
		for _, o := range objs {
			var spec struct {
				TargetRef map[string]any `json:"targetRef"`
			}
			json.Unmarshal(o.Spec, &spec)
			t, _ := json.Marshal(spec.TargetRef)
			width := 60
			if wide {
				width = 200
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s", o.Metadata.Zone, o.Metadata.Name, o.Metadata.ResourceVersion, abbrev(string(t), width))
			if wide {
				fmt.Fprintf(tw, "\t%s", labelsText(o.Metadata.Labels))
			}
			fmt.Fprintln(tw)
		}
		return
	}
	if header {
		switch {
		case services && wide:
			fmt.Fprintln(tw, "ZONE\tNAME\tVERSION\tADDRESSES\tPORT\tTTL\tLABELS\tCONFIG")
		case services:
			fmt.Fprintln(tw, "ZONE\tNAME\tVERSION\tADDRESSES\tCONFIG")
		case wide:
			fmt.Fprintln(tw, "NAME\tVERSION\tTTL\tNAMESERVERS\tLABELS\tDNSSEC")
		default:
			fmt.Fprintln(tw, "NAME\tVERSION\tTTL\tNAMESERVERS")
		}
	}
	for _, o := range objs {
		var spec map[string]json.RawMessage
		json.Unmarshal(o.Spec, &spec)
		if services {
			var addrs []string
			json.Unmarshal(spec["addresses"], &addrs)
			cfg := "-"
			if v, ok := spec["choices"]; ok {
				var ch []json.RawMessage
				json.Unmarshal(v, &ch)
				cfg = fmt.Sprintf("%d choices", len(ch))
			} else if v, ok := spec["serviceConfig"]; ok {
				cfg = abbrev(string(v), 40)
			}
			if wide {
				if v, ok := spec["serviceConfig"]; ok {
					cfg = string(v)
				}
				port := orDash(strings.Trim(string(spec["port"]), `"`))
				ttl := orDash(strings.Trim(string(spec["ttl"]), `"`))
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Metadata.Zone, o.Metadata.Name, o.Metadata.ResourceVersion, orDash(strings.Join(addrs, ",")), port, ttl, labelsText(o.Metadata.Labels), cfg)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Metadata.Zone, o.Metadata.Name, o.Metadata.ResourceVersion, orDash(strings.Join(addrs, ",")), cfg)
		} else {
			ttl := strings.Trim(string(spec["ttl"]), `"`)
			var nss []json.RawMessage
			json.Unmarshal(spec["nameservers"], &nss)
			if wide {
				dnssec := "-"
				if v, ok := spec["dnssec"]; ok {
					dnssec = string(v)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", o.Metadata.Name, o.Metadata.ResourceVersion, orDash(ttl), len(nss), labelsText(o.Metadata.Labels), dnssec)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", o.Metadata.Name, o.Metadata.ResourceVersion, orDash(ttl), len(nss))
		}
	}
}

func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// putResult is what a PUT did to one object.
type putResult struct {
	obj    *store.Object
	action string // created, configured, unchanged
	err    error
	what   string
}

func (c *client) put(ctx context.Context, zone, name string, o *store.Object) putResult {
	what := "zone/" + zone
	if p, ok := strings.CutPrefix(name, policyArg); ok {
		what = "policy/" + zone + "/" + p
	} else if name != "" {
		what = "service/" + zone + "/" + name
	}
	var before *store.Object
	var out store.Object
	{
		// What is there: a write of the same content is "unchanged".
		var cur store.Object
		if err := c.request(ctx, "GET", objectPath(zone, name), nil, &cur); err == nil {
			before = &cur
		} else if c.dry == "client" {
			var ae *apiError
			if !errors.As(err, &ae) || ae.e.Code != http.StatusNotFound {
				return putResult{err: err, what: what}
			}
		}
	}
	if before != nil && sameContent(before, o) {
		// Where the object was written from is no change of it: the
		// write keeps the annotation stored, and the server, finding
		// nothing changed, makes no new version (and no new serial).
		o = withSource(o, before.Metadata.Annotations[sourceAnnotation])
	}
	if c.dry == "client" {
		// Nothing is sent: the object as it is, and what the write would do.
		out = *o
		action := "created"
		if before != nil {
			out.Metadata.ResourceVersion = before.Metadata.ResourceVersion
			action = "configured"
			if sameContent(before, o) {
				action = "unchanged"
			}
		}
		return putResult{obj: &out, action: action + c.dryNote(), what: what}
	}
	if err := c.request(ctx, "PUT", c.writePath(objectPath(zone, name)), o, &out); err != nil {
		return putResult{err: err, what: what}
	}
	action := "configured"
	switch {
	case c.dry != "" && before != nil && sameContent(before, &out):
		action = "unchanged"
	case c.dry == "" && before != nil && before.Metadata.ResourceVersion == out.Metadata.ResourceVersion:
		action = "unchanged"
	case before == nil:
		action = "created"
	}
	return putResult{obj: &out, action: action + c.dryNote(), what: what}
}

// sameContent reports whether two versions of an object are the same to
// the store: labels, annotations, and the spec's compact JSON byte for
// byte (keys in their order: the store keeps a spec as written, and
// publishes it so). The source annotation is left out: it says where a
// write came from, not what the object is, and an object whose file
// moved, or whose lines moved in its file (a comment added above it),
// is still the same object; written again it would be a new version for
// nothing, with a new SOA serial, NOTIFY and IXFR to the secondaries, a
// new item in history, and a second apply of a file edited elsewhere
// would not say "unchanged". So is written-at, which only history items
// carry.
func sameContent(a, b *store.Object) bool {
	if !maps.Equal(a.Metadata.Labels, b.Metadata.Labels) || !maps.Equal(ownAnnotations(a), ownAnnotations(b)) {
		return false
	}
	var x, y bytes.Buffer
	if json.Compact(&x, a.Spec) != nil || json.Compact(&y, b.Spec) != nil {
		return bytes.Equal(a.Spec, b.Spec)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// ownAnnotations are the annotations of o that are part of what it is:
// all but the source annotation and written-at.
func ownAnnotations(o *store.Object) map[string]string {
	a := o.Metadata.Annotations
	_, src := a[sourceAnnotation]
	_, at := a[store.WrittenAt]
	if !src && !at {
		return a
	}
	a = maps.Clone(a)
	delete(a, sourceAnnotation)
	delete(a, store.WrittenAt)
	return a
}

// withSource is o with source as its source annotation ("": none).
func withSource(o *store.Object, source string) *store.Object {
	w := *o
	w.Metadata.Annotations = maps.Clone(o.Metadata.Annotations)
	delete(w.Metadata.Annotations, sourceAnnotation)
	if source != "" {
		if w.Metadata.Annotations == nil {
			w.Metadata.Annotations = map[string]string{}
		}
		w.Metadata.Annotations[sourceAnnotation] = source
	}
	if len(w.Metadata.Annotations) == 0 {
		w.Metadata.Annotations = nil
	}
	return &w
}

// publishSpecs puts the zones of a publisher config, then their policies,
// then their services in batches (store.PutServices), and reports each,
// the server's diagnostics placed in src, the config's text (nil: not
// placed).
func (c *client) publishSpecs(ctx context.Context, specs *model.Specs, quiet bool, src *sourceFile) error {
	t := &publishTally{c: c, quiet: quiet, worst: exitInvalid, counts: map[string]int{}, src: src}
	for i, z := range specs.Zones {
		if err := t.publishZone(ctx, i, z); err != nil {
			return err
		}
	}
	if len(specs.Keys) > 0 {
		fmt.Fprintf(c.e.stderr, "note: the config's %d TSIG keys are not stored (they are secrets): give them to serve with --config FILE holding tsigKeys:\n", len(specs.Keys))
	}
	fmt.Fprintf(c.e.stderr, "%d created, %d configured, %d unchanged, %d refused\n", t.counts["created"], t.counts["configured"], t.counts["unchanged"], t.failed)
	if t.failed > 0 {
		return &exitError{code: t.worst}
	}
	return nil
}

// publishTally is what publishSpecs did so far: the objects it put, by
// action, those refused, and the exit status they make.
type publishTally struct {
	c      *client
	quiet  bool // report only what changed
	counts map[string]int
	failed int
	worst  int
	src    *sourceFile // the config, where diagnostics are placed
}

// report reports the put r, of the object from src, and counts it.
func (t *publishTally) report(r putResult, src *objectSource) {
	if r.err != nil {
		t.failed++
		var place func(store.Diagnostic) (*objectSource, store.Diagnostic)
		if src != nil {
			place = src.each
		}
		var ee *exitError
		if errors.As(t.c.failFrom(r.what, r.err, place), &ee) && ee.code == exitUsage {
			t.worst = exitUsage
		}
		return
	}
	if !t.quiet || r.action != "unchanged" {
		fmt.Fprintf(t.c.e.stdout, "%s %s (version %s)\n", r.what, r.action, r.obj.Metadata.ResourceVersion)
	}
}

// publishZone puts zone z, the config's zone i, then its policies, then
// its services in batches. Its error, one that is not the API's answer,
// ends the publish.
func (t *publishTally) publishZone(ctx context.Context, i int, z model.ZoneSpec) error {
	c := t.c
	r := c.put(ctx, z.Name, "", &store.Object{Metadata: store.Metadata{Name: z.Name}, Spec: z.Spec})
	t.report(r, t.src.zone(i, z.Spec))
	if r.err != nil {
		var ae *apiError
		if !errors.As(r.err, &ae) {
			return r.err
		}
		return nil
	}
	t.counts[r.action]++
	// Policies before services: a service may need a policy's values to
	// be valid.
	for k, p := range z.Policies {
		r := c.put(ctx, z.Name, policyArg+p.Name, &store.Object{Kind: store.PolicyKind, Metadata: store.Metadata{Name: p.Name, Zone: z.Name}, Spec: p.Spec})
		t.report(r, t.src.entry(i, "policies", k, p.Spec))
		var ae *apiError
		if r.err != nil && !errors.As(r.err, &ae) {
			return r.err
		}
		if r.err == nil {
			t.counts[r.action]++
		}
	}
	for first := 0; first < len(z.Services); {
		n := batchLen(z.Services[first:])
		if err := t.publishBatch(ctx, i, z.Name, first, z.Services[first:first+n]); err != nil {
			return err
		}
		first += n
	}
	return nil
}

// publishBatch puts svcs, services of zone, the config's zone zi, from
// its service first on, in one batch, and reports it. Its error, one
// that is not the API's answer, ends the publish.
func (t *publishTally) publishBatch(ctx context.Context, zi int, zone string, first int, svcs []model.ServiceSpec) error {
	r, err := t.c.putBatch(ctx, zone, svcs)
	if err != nil {
		return t.batchRefused(zi, zone, first, svcs, err)
	}
	t.counts["created"] += r.Created
	t.counts["configured"] += r.Configured
	t.counts["unchanged"] += r.Unchanged
	if !t.quiet || r.Created+r.Configured > 0 {
		fmt.Fprintf(t.c.e.stdout, "services/%s %s to %s: %d created, %d configured, %d unchanged (version %s)%s\n",
			zone, svcs[0].Name, svcs[len(svcs)-1].Name, r.Created, r.Configured, r.Unchanged, orDash(r.ResourceVersion), t.c.dryNote())
	}
	return nil
}

// batchRefused reports the batch of svcs that the API refused with err,
// and counts it, less what the API stored of it before. An err that is
// not the API's answer is returned, to end the publish.
func (t *publishTally) batchRefused(zi int, zone string, first int, svcs []model.ServiceSpec, err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	t.failed += len(svcs)
	if st := ae.e.Stored; st != nil {
		t.failed -= st.Created + st.Configured
		t.counts["created"] += st.Created
		t.counts["configured"] += st.Configured
	}
	var place func(store.Diagnostic) (*objectSource, store.Diagnostic)
	if t.src != nil {
		// A diagnostic of the batch is about its item N
		// (/items/N/spec/…): the config's service first+N.
		place = func(d store.Diagnostic) (*objectSource, store.Diagnostic) {
			rest, ok := strings.CutPrefix(d.Path, "/items/")
			if !ok {
				return nil, d
			}
			k, rest, _ := strings.Cut(rest, "/")
			n, err := strconv.Atoi(k)
			if err != nil || n < 0 || n >= len(svcs) {
				return nil, d
			}
			d.Path = "/" + rest
			if rest == "" {
				d.Path = ""
			}
			return t.src.entry(zi, "services", first+n, svcs[n].Spec), d
		}
	}
	t.c.failFrom(fmt.Sprintf("services/%s (%s to %s)", zone, svcs[0].Name, svcs[len(svcs)-1].Name), err, place)
	if ae.e.Code >= 500 || ae.e.Code == http.StatusUnauthorized {
		t.worst = exitUsage
	}
	return nil
}

// readInput reads a file argument ("-" for stdin).
func (e *env) readFileArg(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(e.stdin, model.MaxConfigSize+1))
	}
	return readLimited(path)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, model.MaxConfigSize+1))
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(b) > model.MaxConfigSize {
		return nil, usageErr("%s is larger than %d bytes", path, model.MaxConfigSize)
	}
	return b, nil
}

// batchItems and batchBytes bound the services of one batch: a batch is
// one transaction on the embedded store, and is validated whole before
// it is written, so that a large zone is loaded in a few requests, each
// refused or stored whole, and its progress shows.
const (
	batchItems = 10000
	batchBytes = 16 << 20
)

// batchLen returns how many of svcs (at least one) the next batch takes.
func batchLen(svcs []model.ServiceSpec) int {
	n, size := 0, 0
	for n < len(svcs) && n < batchItems {
		size += len(svcs[n].Spec) + len(svcs[n].Name) + 64
		if n > 0 && size > batchBytes {
			break
		}
		n++
	}
	return n
}

// putBatch creates or replaces services of zone with one batch request.
func (c *client) putBatch(ctx context.Context, zone string, svcs []model.ServiceSpec) (*store.BatchResult, error) {
	items := make([]*store.Object, len(svcs))
	for i, s := range svcs {
		items[i] = &store.Object{Metadata: store.Metadata{Name: s.Name, Labels: s.Labels}, Spec: s.Spec}
	}
	if c.dry == "client" {
		return c.compareBatch(ctx, zone, items)
	}
	var res store.BatchResult
	err := c.request(ctx, "POST", c.writePath("/v1/zones/"+esc(zone)+"/services:batch"), map[string]any{"kind": "ServiceList", "items": items}, &res)
	return &res, err
}

// compareBatch is a batch's client dry run: the zone's services read and
// compared with items, nothing sent.
func (c *client) compareBatch(ctx context.Context, zone string, items []*store.Object) (*store.BatchResult, error) {
	cur := map[string]*store.Object{}
	for cont := ""; ; {
		path := "/v1/zones/" + esc(zone) + "/services?limit=1000"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		var l store.List
		if err := c.request(ctx, "GET", path, nil, &l); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.e.Code == http.StatusNotFound {
				break // a zone not there yet: every service is new
			}
			return nil, err
		}
		for _, o := range l.Items {
			cur[o.Metadata.Name] = o
		}
		if cont = l.Metadata.Continue; cont == "" {
			break
		}
	}
	res := &store.BatchResult{}
	for _, it := range items {
		switch o := cur[it.Metadata.Name]; {
		case o == nil:
			res.Created++
		case sameContent(o, it) && o.Metadata.Annotations[sourceAnnotation] == "":
			// (A batch is compared by the server byte for byte: one
			// written from an object file is written again, without
			// its source annotation.)
			res.Unchanged++
		default:
			res.Configured++
		}
	}
	return res, nil
}

// publishConfig checks a publisher config and publishes its objects.
func (c *client) publishConfig(name string, text []byte) error {
	specs, ds := model.SplitSpecs(text)
	for _, d := range ds {
		fmt.Fprintln(c.e.stderr, formatDiagnostic(name, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
	}
	if specs == nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: nothing was published", name)}
	}
	return c.publishSpecs(context.Background(), specs, false, configSource(name, text))
}

func importCmd(e *env) *cobra.Command {
	var cf clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "import --config FILE --server URL",
		Short: "Load the zones and services of a publisher config into a store",
		Long: `Load every zone and service of a publisher config into the store behind an
admin API (serve --store): each zone, then its services, created or replaced.
The config is checked whole first, as serve would; the store checks each
object again. TSIG keys are not stored: serve reads them from --config.

Exit status: 0 all stored; 1 the config or an object was refused; 2 usage
or connection error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErr("--config FILE is required")
			}
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			text, err := e.readFileArg(file)
			if err != nil {
				return err
			}
			return c.publishConfig(file, text)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "publisher config (YAML or JSON; - for stdin)")
	cf.add(cmd, false)
	return cmd
}

func publishCmd(e *env) *cobra.Command {
	var cf clientFlags
	var ifVersion, dry string
	cmd := &cobra.Command{
		Use:   "publish FILE --server URL [--if-version RV]",
		Short: "Create or replace zones and services through the admin API",
		Long: `Create or replace objects in a store through its admin API. FILE (- for
stdin) is either a publisher config (zones: …), whose zones and services are
all published, or one or more objects, YAML documents or JSON:

  metadata: {zone: example.test, name: echo}
  spec:
    addresses: [192.0.2.1]
    serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}

An object with metadata.zone is a service of that zone, or with kind: Policy
one of its policies (docs/policies.md); one without metadata.zone is a zone.
A publisher config's policies are published after its zones and before its
services, and a service's labels: become its metadata.labels. --if-version RV (or metadata.resourceVersion) makes the write
conditional: it is refused with a conflict if the object changed since.

The server's diagnostics about an object are printed at the FILE:LINE:COL
of FILE that holds it, as lint prints them; every object is sent. Each
object of a file of objects is written with the annotation
grpc-config-dns/source: FILE:LINE (where it starts); an object that
differs from the stored one only by it is unchanged.

Exit status: 0 published; 1 refused (invalid, conflict, not found); 2 usage
or connection error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			if err := c.setDryRun(dry); err != nil {
				return err
			}
			text, err := e.readFileArg(args[0])
			if err != nil {
				return err
			}
			objs, srcs, isConfig, err := readObjects(args[0], text)
			if err != nil {
				return &exitError{code: exitInvalid, err: fmt.Errorf("%s: %v", args[0], err)}
			}
			if isConfig {
				if ifVersion != "" {
					return usageErr("--if-version applies to one object, not to a publisher config")
				}
				return c.publishConfig(args[0], text)
			}
			if ifVersion != "" {
				if len(objs) != 1 {
					return usageErr("--if-version applies to one object; %s holds %d", args[0], len(objs))
				}
				objs[0].Metadata.ResourceVersion = ifVersion
			}
			return c.publishObjects(args[0], objs, srcs)
		},
	}
	cmd.Flags().StringVar(&ifVersion, "if-version", "", "publish only if the object is still at this resourceVersion")
	dryRunFlag(cmd, &dry)
	cf.add(cmd, true)
	return cmd
}

// publishObjects puts objs, read from file, and prints them. An object
// refused as invalid is reported, its diagnostics placed in the file by
// srcs (where each object came from), and the others are put; the exit
// status says so.
func (c *client) publishObjects(file string, objs []*store.Object, srcs []*objectSource) error {
	var out []*store.Object
	failed := false
	for i, o := range objs {
		zone, name, err := objectPlace(srcs[i].at(file), o)
		if err != nil {
			// This object cannot be put: the others still are.
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitInvalid {
				return err
			}
			fmt.Fprintln(c.e.stderr, ee.err)
			failed = true
			continue
		}
		r := c.put(context.Background(), zone, name, o)
		if r.err != nil {
			if err := c.failPut(r, srcs[i]); err != nil {
				return err
			}
			failed = true
			continue
		}
		out = append(out, r.obj)
		if c.out.human() {
			fmt.Fprintf(c.e.stdout, "%s %s (version %s)\n", r.what, r.action, r.obj.Metadata.ResourceVersion)
			if c.dry == "server" && !strings.HasPrefix(r.action, "unchanged") {
				// What would change, as diff shows it: the object, the
				// record, who gets what.
				if _, err := c.diffObject(context.Background(), zone, name, o); err != nil {
					return err
				}
			}
		}
	}
	if !c.out.human() {
		var v any = out
		if len(out) == 1 {
			v = out[0]
		}
		if err := c.print(v, out); err != nil {
			return err
		}
	}
	if failed {
		return &exitError{code: exitInvalid}
	}
	return nil
}

// objectPlace is where object o, read from file, is put: the zone and the
// name under it (policy/NAME for a policy, "" for the zone itself).
func objectPlace(file string, o *store.Object) (zone, name string, err error) {
	zone, name = o.Metadata.Zone, o.Metadata.Name
	switch {
	case o.Kind == store.PolicyKind:
		name = policyArg + name
	case o.Kind == store.ZoneKind && zone != "":
		return "", "", &exitError{code: exitInvalid, err: fmt.Errorf("%s: zone %s has metadata.zone %q: a zone is named by metadata.name alone", file, name, zone)}
	case o.Kind == store.ServiceKind && zone == "":
		return "", "", &exitError{code: exitInvalid, err: fmt.Errorf("%s: service %s has no metadata.zone: add the zone it belongs to", file, name)}
	case o.Kind != "" && o.Kind != store.ZoneKind && o.Kind != store.ServiceKind:
		return "", "", &exitError{code: exitInvalid, err: fmt.Errorf("%s: kind %q: objects are Zone, Service and Policy (a zone or service may leave kind out)", file, o.Kind)}
	case zone == "":
		zone, name = name, ""
	}
	return zone, name, nil
}

// failPut reports the put r, which failed, of an object read from a file
// (src, nil when it was not), and returns the error that ends the
// command, or nil when the object was refused as invalid and the others
// are still put.
func (c *client) failPut(r putResult, src *objectSource) error {
	var place func(store.Diagnostic) (*objectSource, store.Diagnostic)
	if src != nil {
		place = src.each
	}
	err := c.failFrom(r.what, r.err, place)
	var ee *exitError
	if err == nil || errors.As(err, &ee) && ee.code == exitInvalid {
		return nil
	}
	return err
}

// parseObjects reads objects (YAML documents, a JSON object or a JSON
// list) or recognises a publisher config, and returns with each object
// the line it starts on. A spec keeps its keys in the order written
// (model.NodeJSON): written back in another order, it would be another
// value to the store, and another TXT record.
func parseObjects(text []byte) (objs []*store.Object, lines []int, isConfig bool, err error) {
	isConfig, err = eachObjectNode(text, func(doc int, it *yaml.Node) error {
		o, err := decodeObject(text, it, doc)
		if err != nil {
			return err
		}
		objs = append(objs, o)
		lines = append(lines, it.Line)
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, false, err
	case isConfig:
		return nil, nil, true, nil
	case len(objs) == 0:
		return nil, nil, false, errors.New("no object in the file")
	}
	return objs, lines, false, nil
}

// documentItems returns the items of document i, root: the objects of a
// list, or of an object with items, or root itself. isConfig is set when
// the first document is a publisher config (zones: …).
func documentItems(root *yaml.Node, i int) (items []*yaml.Node, isConfig bool) {
	switch root.Kind {
	case yaml.MappingNode:
		for k := 0; k+1 < len(root.Content); k += 2 {
			switch key, v := root.Content[k].Value, root.Content[k+1]; {
			case key == "zones" && i == 0:
				return nil, true
			case key == "items" && v.Kind == yaml.SequenceNode:
				return v.Content, false
			}
		}
	case yaml.SequenceNode:
		return root.Content, false
	}
	return []*yaml.Node{root}, false
}

// decodeObject decodes it, an item of document i of text, as an object.
func decodeObject(text []byte, it *yaml.Node, i int) (*store.Object, error) {
	b, ds := model.NodeJSON(text, it)
	if b == nil {
		msg := "not JSON"
		if len(ds) > 0 {
			msg = ds[0].Message
			if ds[0].Line > 0 {
				msg = fmt.Sprintf("line %d: %s", ds[0].Line, msg)
			}
		}
		return nil, fmt.Errorf("document %d: %s", i+1, msg)
	}
	var o store.Object
	if err := json.Unmarshal(b, &o); err != nil || o.Metadata.Name == "" || len(o.Spec) == 0 {
		return nil, fmt.Errorf("document %d is not an object {metadata: {name: …, zone: …}, spec: {…}} nor a publisher config (zones: …)", i+1)
	}
	return &o, nil
}

func getCmd(e *env) *cobra.Command {
	var cf clientFlags
	var rv string
	cmd := &cobra.Command{
		Use:   "get ZONE [SERVICE | policy/NAME] --server URL",
		Short: "Show a zone, a service or a policy of a store",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			path := objectPath(args[0], name)
			if rv != "" {
				path += "?resourceVersion=" + url.QueryEscape(rv)
			}
			var o store.Object
			if err := c.request(context.Background(), "GET", path, nil, &o); err != nil {
				return c.fail(strings.Join(args, "/"), err)
			}
			return c.print(&o, []*store.Object{&o})
		},
	}
	cmd.Flags().StringVar(&rv, "resource-version", "", "at least this version (default: the latest)")
	cf.add(cmd, true)
	return cmd
}

func deleteCmd(e *env) *cobra.Command {
	var cf clientFlags
	var ifVersion, dry string
	cmd := &cobra.Command{
		Use:   "delete ZONE [SERVICE | policy/NAME] --server URL [--if-version RV]",
		Short: "Delete a service, a policy, or an empty zone of a store",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			if err := c.setDryRun(dry); err != nil {
				return err
			}
			path := objectPath(args[0], name)
			var o store.Object
			if c.dry == "client" {
				// Nothing is sent: the object must be there.
				if err := c.request(context.Background(), "GET", path, nil, &o); err != nil {
					return c.fail(strings.Join(args, "/"), err)
				}
			} else {
				if ifVersion != "" {
					path += "?resourceVersion=" + url.QueryEscape(ifVersion)
				}
				if err := c.request(context.Background(), "DELETE", c.writePath(path), nil, &o); err != nil {
					return c.fail(strings.Join(args, "/"), err)
				}
			}
			if c.out.human() {
				fmt.Fprintf(e.stdout, "%s deleted (version %s)%s\n", strings.Join(args, "/"), o.Metadata.ResourceVersion, c.dryNote())
				return nil
			}
			return c.print(&o, nil)
		},
	}
	cmd.Flags().StringVar(&ifVersion, "if-version", "", "delete only if the object is still at this resourceVersion")
	dryRunFlag(cmd, &dry)
	cf.add(cmd, true)
	return cmd
}

// collectionPath is the path of what list and watch show: the zones, or
// a zone's services or policies.
func collectionPath(args []string, policies bool) (string, error) {
	switch {
	case len(args) == 0 && policies:
		return "", usageErr("--policies needs the ZONE whose policies to show")
	case len(args) == 0:
		return "/v1/zones", nil
	case policies:
		return objectPath(args[0], "") + "/policies", nil
	}
	return objectPath(args[0], "") + "/services", nil
}

func listCmd(e *env) *cobra.Command {
	var cf clientFlags
	var policies bool
	var o store.ListOptions
	var sel selectorFlags
	cmd := &cobra.Command{
		Use:   "list [ZONE] --server URL [--policies] [-l SELECTOR] [--field-selector SELECTOR] [--limit N] [--resource-version RV] [--match Exact|NotOlderThan] [--continue TOKEN]",
		Short: "List the services (or policies) of a zone, or the zones, of a store",
		Long: `List the services of ZONE (its policies with --policies), or the zones
without it. --resource-version and
--match follow Kubernetes (resourceVersion and resourceVersionMatch): without
them the latest; NotOlderThan RV at least that version; Exact RV exactly that
version (refused when it was compacted). --limit N shows one page of N and
prints the command for the next page on stderr. -l selects by labels as
kubectl does (team=a, team!=a, "team in (a,b)", team, !team), and
--field-selector by metadata.name or metadata.zone.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			path, err := collectionPath(args, policies)
			if err != nil {
				return err
			}
			q := url.Values{}
			sel.set(q)
			if o.Limit > 0 {
				q.Set("limit", fmt.Sprint(o.Limit))
			}
			for k, v := range map[string]string{"continue": o.Continue, "resourceVersion": o.ResourceVersion, "resourceVersionMatch": o.ResourceVersionMatch} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var l store.List
			if err := c.request(context.Background(), "GET", path, nil, &l); err != nil {
				return c.fail("list", err)
			}
			if err := c.print(&l, l.Items); err != nil {
				return err
			}
			if l.Metadata.Continue != "" {
				fmt.Fprintf(e.stderr, "more: add --continue %s (list at version %s)\n", l.Metadata.Continue, l.Metadata.ResourceVersion)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&policies, "policies", false, "list the zone's policies instead of its services")
	f.Int64Var(&o.Limit, "limit", 0, "at most this many items (one page)")
	f.StringVar(&o.ResourceVersion, "resource-version", "", "the version to list at (see --match)")
	f.StringVar(&o.ResourceVersionMatch, "match", "", "how --resource-version applies: Exact or NotOlderThan")
	f.StringVar(&o.Continue, "continue", "", "the continue token of the previous page")
	sel.add(cmd)
	cf.add(cmd, true)
	return cmd
}

// selectorFlags are -l and --field-selector of list and watch.
type selectorFlags struct{ labels, fields string }

func (s *selectorFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.labels, "selector", "l", "", "label selector, as kubectl's (team=a,tier!=canary, \"team in (a,b)\", !team)")
	cmd.Flags().StringVar(&s.fields, "field-selector", "", "field selector: metadata.name=NAME, metadata.zone=ZONE (=, ==, !=)")
}

func (s *selectorFlags) set(q url.Values) {
	if s.labels != "" {
		q.Set("labelSelector", s.labels)
	}
	if s.fields != "" {
		q.Set("fieldSelector", s.fields)
	}
}

func watchCmd(e *env) *cobra.Command {
	var cf clientFlags
	var rv string
	var policies bool
	var sel selectorFlags
	cmd := &cobra.Command{
		Use:   "watch [ZONE] --server URL [--policies] [-l SELECTOR] [--field-selector SELECTOR] [--resource-version RV]",
		Short: "Follow the changes of the services (or policies) of a zone, or of the zones",
		Long: `Print every change of the services of ZONE (its policies with --policies,
the zones without ZONE) as it happens:
from --resource-version RV on, or, without it, every object first (as ADDED)
and then the changes. Stops on SIGINT; -o json prints the raw events.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(e)
			if err != nil {
				return err
			}
			path, err := collectionPath(args, policies)
			if err != nil {
				return err
			}
			q := url.Values{"watch": {"true"}}
			if rv != "" {
				q.Set("resourceVersion", rv)
			}
			sel.set(q)
			path += "?" + q.Encode()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return c.watch(ctx, path)
		},
	}
	cmd.Flags().StringVar(&rv, "resource-version", "", "print the changes after this version")
	cmd.Flags().BoolVar(&policies, "policies", false, "follow the zone's policies instead of its services")
	sel.add(cmd)
	cf.add(cmd, true)
	return cmd
}

func (c *client) watch(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return usageErr("%v", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return &exitError{code: exitUsage, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return c.watchRefused(resp)
	}
	return c.printEvents(ctx, resp.Body)
}

// watchRefused reports the answer of a server that refused a watch.
func (c *client) watchRefused(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e store.Error
	if json.Unmarshal(b, &e) != nil || e.Code == 0 {
		e = store.Error{Code: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	return c.fail("watch", &apiError{&e})
}

// printEvents prints the events of a watch, read from body, as they come,
// until the watch or ctx ends.
func (c *client) printEvents(ctx context.Context, body io.Reader) error {
	// Events are printed as they come, so the columns have fixed widths
	// (a tabwriter aligns only what it holds).
	const row = "%-9s %-24s %-24s %s\n"
	if c.out.human() {
		fmt.Fprintf(c.e.stdout, row, "EVENT", "ZONE", "NAME", "VERSION")
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var ev struct {
			Type   store.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("watch: %v", err)}
		}
		switch c.out.kind {
		case "json":
			fmt.Fprintln(c.e.stdout, sc.Text())
			continue
		case "yaml":
			b, _ := toYAML(ev)
			fmt.Fprintf(c.e.stdout, "---\n%s", b)
			continue
		case "name", "jsonpath":
			if ev.Type == store.Bookmark || ev.Type == store.ErrorEvent {
				break
			}
			var o store.Object
			json.Unmarshal(ev.Object, &o)
			if err := c.print(&o, []*store.Object{&o}); err != nil {
				return err
			}
			continue
		}
		if ev.Type == store.ErrorEvent {
			var e store.Error
			json.Unmarshal(ev.Object, &e)
			return c.fail("watch", &apiError{&e})
		}
		var o store.Object
		json.Unmarshal(ev.Object, &o)
		if ev.Type == store.Bookmark {
			continue
		}
		fmt.Fprintf(c.e.stdout, row, ev.Type, orDash(o.Metadata.Zone), o.Metadata.Name, o.Metadata.ResourceVersion)
	}
	if ctx.Err() == nil && sc.Err() != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("watch: %v", sc.Err())}
	}
	return nil
}
