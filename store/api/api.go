// Package api is the admin HTTP API of a store (docs/store.md): zones
// and services as Kubernetes-shaped JSON objects, with resourceVersion
// preconditions, lists with limit/continue and resourceVersionMatch, and
// watches, as kube-apiserver serves them.
//
//	GET|PUT|DELETE /v1/zones/{zone}
//	GET            /v1/zones                      list, or watch with watch=true
//	GET|PUT|DELETE /v1/zones/{zone}/services/{name}
//	GET            /v1/zones/{zone}/services      list, or watch with watch=true
//	GET            /v1/zones/{zone}/services/{name}/inspect
//	GET|PUT|DELETE /v1/zones/{zone}/policies/{name}
//	GET            /v1/zones/{zone}/policies      list, or watch with watch=true
//	GET            /ui/                           the web view, when given
//	GET            /healthz, /readyz
//
// With bearer tokens configured, every /v1/ and /ui/ request must carry
// one (Authorization: Bearer TOKEN), compared in constant time; a browser
// gives it once to /ui/login, which keeps it in a cookie. /healthz and
// /readyz are open.
package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// Options configure the API.
type Options struct {
	Store *store.Store
	// Tokens are the bearer tokens accepted; none means no authentication
	// (only allowed on loopback: see cmd serve).
	Tokens []string
	// Ready reports whether the server is ready: nil when it is.
	Ready func() error
	// UI is the read-only web view served at /ui/, behind the same
	// tokens; nil means none.
	UI http.Handler
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer, when set, gets the API's request metrics.
	Registerer prometheus.Registerer
}

// ReadTokens reads a token file: one token a line; blank lines and lines
// starting with # are ignored.
func ReadTokens(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(t) < 16 {
			return nil, fmt.Errorf("admin token file %s: a token is %d characters; use at least 16 random ones (like `openssl rand -hex 32`)", path, len(t))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin token file %s holds no token: write one per line (like `openssl rand -hex 32`)", path)
	}
	return out, nil
}

type handler struct {
	s      *store.Store
	tokens [][sha256.Size]byte
	ready  func() error
	log    *slog.Logger
}

// New returns the API's handler. Its error is the Registerer's.
func New(opts Options) (http.Handler, error) {
	h := &handler{s: opts.Store, ready: opts.Ready, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	for _, t := range opts.Tokens {
		h.tokens = append(h.tokens, sha256.Sum256([]byte(t)))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", h.readyz)
	mux.HandleFunc("/v1/zones", h.auth(takes(listTakes, h.zones)))
	mux.HandleFunc("/v1/zones/{zone}", h.auth(takes(writeTakes, h.zone)))
	mux.HandleFunc("/v1/zones/{zone}/services", h.auth(takes(listTakes, h.services)))
	mux.HandleFunc("/v1/zones/{zone}/services:batch", h.auth(takes(batchTakes, h.servicesBatch)))
	mux.HandleFunc("/v1/zones/{zone}/services/{name}", h.auth(takes(writeTakes, h.service)))
	mux.HandleFunc("/v1/zones/{zone}/services/{name}/inspect", h.auth(takes(takesNone, h.inspect)))
	mux.HandleFunc("/v1/zones/{zone}/policies", h.auth(takes(listTakes, h.policies)))
	mux.HandleFunc("/v1/zones/{zone}/policies/{name}", h.auth(takes(writeTakes, h.policy)))
	mux.HandleFunc("/v1/zones/{zone}/history", h.auth(takes(historyTakes, h.history)))
	mux.HandleFunc("/v1/zones/{zone}/services/{name}/history", h.auth(takes(historyTakes, h.history)))
	mux.HandleFunc("/v1/zones/{zone}/policies/{name}/history", h.auth(takes(historyTakes, h.history)))
	if opts.UI != nil {
		mux.HandleFunc("/ui/login", h.login)
		mux.Handle("/ui/", h.auth(opts.UI.ServeHTTP))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &store.Error{Code: http.StatusNotFound, Reason: store.ReasonNotFound,
			Message: fmt.Sprintf("no such path %s: the API has /v1/zones/{zone}, /v1/zones/{zone}/services/{name} and /v1/zones/{zone}/policies/{name}", r.URL.Path)})
	})
	if opts.Registerer == nil {
		return mux, nil
	}
	m, err := newRequestMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return m.wrap(mux), nil
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.ready != nil {
		if err := h.ready(); err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
	}
	io.WriteString(w, "ok\n")
}

// auth checks the bearer token, comparing its hash with every accepted
// token's in constant time. A request that passes marks its connection
// authenticated: when connections run short, those of clients that never
// showed a token are closed first.
func (h *handler) auth(next http.HandlerFunc) http.HandlerFunc {
	if len(h.tokens) == 0 {
		return func(w http.ResponseWriter, r *http.Request) {
			httpserve.Authenticated(r)
			next(w, r)
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		isUI := strings.HasPrefix(r.URL.Path, "/ui/")
		if !ok && isUI {
			// A browser's token, from /ui/login; only the web view takes
			// it (Path=/ui/), so no page elsewhere can write with it.
			if c, err := r.Cookie(uiCookie); err == nil {
				if b, err := base64.RawURLEncoding.DecodeString(c.Value); err == nil {
					got, ok = string(b), true
				}
			}
		}
		if !ok || !h.valid(got) {
			if isUI && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="grpc-config-dns"`)
			writeError(w, &store.Error{Code: http.StatusUnauthorized, Reason: store.ReasonUnauthorized,
				Message: "a valid bearer token is required: send Authorization: Bearer TOKEN with a token of the server's --admin-token-file"})
			return
		}
		httpserve.Authenticated(r)
		next(w, r)
	}
}

// valid compares token's hash with every accepted token's in constant
// time.
func (h *handler) valid(token string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, t := range h.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return match == 1
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b []byte
	var err error
	if l, ok := v.(*store.List); ok {
		// A page of 500 services is 150 KB of JSON: its buffer is
		// used again, so that paging through a fleet does not make the
		// collector run (and slow every request) every few hundred
		// pages. Write copies it before it returns.
		buf := listBuffers.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= maxPooledList {
				listBuffers.Put(buf)
			}
		}()
		*buf = append(l.AppendJSON((*buf)[:0]), '\n')
		b = *buf
	} else if b, err = json.Marshal(v); err != nil {
		writeError(w, err)
		return
	} else {
		b = append(b, '\n')
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// listBuffers holds the buffers list responses are written in; one larger
// than maxPooledList (a page of very large configs) is not kept.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledList = 4 << 20

func writeError(w http.ResponseWriter, err error) {
	var e *store.Error
	if !errors.As(err, &e) {
		e = &store.Error{Code: http.StatusInternalServerError, Reason: store.ReasonInternal, Message: err.Error()}
	}
	b, _ := json.Marshal(e)
	w.Header().Set("Content-Type", "application/json")
	if e.Code == http.StatusServiceUnavailable {
		// The store does not answer: clients (client-go among them)
		// retry after this many seconds. A replica reconnects within a
		// second of the store's return.
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.Code)
	w.Write(append(b, '\n'))
}

func notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, &store.Error{Code: http.StatusMethodNotAllowed, Reason: store.ReasonNotAllowed,
		Message: fmt.Sprintf("%s is not allowed on %s: use %s", r.Method, r.URL.Path, allow)})
}

// maxBody bounds a request body: a spec (model.MaxSpecSize) and its
// metadata.
const maxBody = 2 << 20

func readObject(w http.ResponseWriter, r *http.Request) (*store.Object, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &store.Error{Code: http.StatusRequestEntityTooLarge, Reason: store.ReasonTooLarge, Message: fmt.Sprintf("the request body is larger than %d bytes", maxBody)}
	}
	if err != nil {
		return nil, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("reading the request body: %v", err)}
	}
	if e := checkKeys(b, objectShape); e != nil {
		return nil, e
	}
	var obj store.Object
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest,
			Message: fmt.Sprintf("the body is not a JSON object {\"metadata\":{…},\"spec\":{…}}: %v", err)}
	}
	return &obj, nil
}

func listOptions(r *http.Request) (store.ListOptions, error) {
	q := r.URL.Query()
	o := store.ListOptions{Continue: q.Get("continue"), ResourceVersion: q.Get("resourceVersion"), ResourceVersionMatch: q.Get("resourceVersionMatch")}
	if l := q.Get("limit"); l != "" {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil || v < 0 {
			return o, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("limit %q is not a whole number of items (0 or more)", l)}
		}
		o.Limit = v
	}
	return o, nil
}

// deletePrecondition reads the resourceVersion a DELETE requires, from
// ?resourceVersion= or a Kubernetes DeleteOptions body
// ({"preconditions":{"resourceVersion":"N"}}).
func deletePrecondition(w http.ResponseWriter, r *http.Request) (string, error) {
	rv := r.URL.Query().Get("resourceVersion")
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		return "", &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("reading the request body: %v", err)}
	}
	if len(bytes.TrimSpace(b)) > 0 {
		var opts struct {
			Preconditions struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"preconditions"`
		}
		if e := checkKeys(b, deleteOptionsShape); e != nil {
			return "", e
		}
		if err := json.Unmarshal(b, &opts); err != nil {
			return "", &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("the body of a DELETE is DeleteOptions ({\"preconditions\":{\"resourceVersion\":\"N\"}}): %v", err)}
		}
		if p := opts.Preconditions.ResourceVersion; p != "" {
			if rv != "" && rv != p {
				return "", &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: "the resourceVersion parameter and preconditions.resourceVersion differ: give one"}
			}
			rv = p
		}
	}
	return rv, nil
}

func (h *handler) zones(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		notAllowed(w, r, "GET")
		return
	}
	h.listOrWatch(w, r, func(ctx context.Context, o store.ListOptions) (*store.List, error) {
		return h.s.ListZones(ctx, o)
	}, func(ctx context.Context, rv string) (<-chan store.Event, error) {
		return h.s.WatchZones(ctx, rv)
	})
}

func (h *handler) services(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		notAllowed(w, r, "GET")
		return
	}
	zone := r.PathValue("zone")
	h.listOrWatch(w, r, func(ctx context.Context, o store.ListOptions) (*store.List, error) {
		return h.s.ListServices(ctx, zone, o)
	}, func(ctx context.Context, rv string) (<-chan store.Event, error) {
		return h.s.WatchServices(ctx, zone, rv)
	})
}

// objectOps are the store's operations on one kind of object, named by
// the request's path.
type objectOps struct {
	get func(ctx context.Context, r *http.Request, rv string) (*store.Object, error)
	// put answers the object stored, or in a dry run what the write
	// would store (and publish).
	put func(ctx context.Context, r *http.Request, obj *store.Object) (any, bool, error)
	// del answers the object deleted, or in a dry run what the deletion
	// would delete (and change).
	del func(ctx context.Context, r *http.Request, rv string) (any, error)
}

// dryRunEffect is what a dry-run write of a zone or a policy answers:
// the object as it would be stored (or deleted), and the services whose
// record it would change, with their TXT before and after.
type dryRunEffect struct {
	*store.Object
	Effect *store.Effect `json:"effect"`
}

// dryRun reads the dryRun parameter: the one dry run is dryRun=All.
func dryRun(r *http.Request) (bool, error) {
	if !r.URL.Query().Has("dryRun") {
		return false, nil
	}
	if v := r.URL.Query()["dryRun"]; len(v) != 1 || v[0] != "All" {
		return false, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest,
			Message: fmt.Sprintf("dryRun %q: the one dry run is dryRun=All (validate and check, store nothing)", strings.Join(v, ","))}
	}
	return true, nil
}

// serve serves GET, PUT, PATCH and DELETE of one object; a write with
// dryRun=All is checked as usual and stores nothing (store.DryRun).
func (o objectOps) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if dry, err := dryRun(r); err != nil {
		writeError(w, err)
		return
	} else if dry {
		ctx = store.DryRun(ctx)
	}
	switch r.Method {
	case http.MethodGet:
		obj, err := o.get(ctx, r, r.URL.Query().Get("resourceVersion"))
		respond(w, http.StatusOK, obj, err)
	case http.MethodPut:
		obj, err := readObject(w, r)
		if err != nil {
			writeError(w, err)
			return
		}
		out, created, err := o.put(ctx, r, obj)
		respond(w, createdCode(created), out, err)
	case http.MethodPatch:
		o.patch(ctx, w, r)
	case http.MethodDelete:
		rv, err := deletePrecondition(w, r)
		if err != nil {
			writeError(w, err)
			return
		}
		out, err := o.del(ctx, r, rv)
		respond(w, http.StatusOK, out, err)
	default:
		notAllowed(w, r, "GET, PUT, PATCH, DELETE")
	}
}

func (h *handler) zone(w http.ResponseWriter, r *http.Request) {
	objectOps{
		get: func(ctx context.Context, r *http.Request, rv string) (*store.Object, error) {
			return h.s.GetZone(ctx, r.PathValue("zone"), rv)
		},
		put: func(ctx context.Context, r *http.Request, obj *store.Object) (any, bool, error) {
			out, created, err := h.s.PutZone(ctx, r.PathValue("zone"), obj)
			if err != nil || !r.URL.Query().Has("dryRun") {
				return out, created, err
			}
			eff, err := h.s.ZoneEffect(ctx, r.PathValue("zone"), obj)
			return dryRunEffect{Object: out, Effect: eff}, created, err
		},
		del: func(ctx context.Context, r *http.Request, rv string) (any, error) {
			return h.s.DeleteZone(ctx, r.PathValue("zone"), rv)
		},
	}.serve(w, r)
}

func (h *handler) service(w http.ResponseWriter, r *http.Request) {
	objectOps{
		get: func(ctx context.Context, r *http.Request, rv string) (*store.Object, error) {
			return h.s.GetService(ctx, r.PathValue("zone"), r.PathValue("name"), rv)
		},
		put: func(ctx context.Context, r *http.Request, obj *store.Object) (any, bool, error) {
			out, created, svc, err := h.s.PutServicePublished(ctx, r.PathValue("zone"), r.PathValue("name"), obj)
			if err != nil || !r.URL.Query().Has("dryRun") {
				return out, created, err
			}
			return dryRunResult{Object: out, Published: publishedOf(svc)}, created, nil
		},
		del: func(ctx context.Context, r *http.Request, rv string) (any, error) {
			return h.s.DeleteService(ctx, r.PathValue("zone"), r.PathValue("name"), rv)
		},
	}.serve(w, r)
}

// dryRunResult is what a dry-run write of a service answers: the object
// as it would be stored, and what DNS would publish for it.
type dryRunResult struct {
	*store.Object
	Published *published `json:"published"`
}

// published is a service as its zone would publish it.
type published struct {
	// Owner is the name of the TXT record, TXT its strings (none without
	// a service config).
	Owner     string   `json:"owner"`
	TXT       []string `json:"txt,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	Port      uint16   `json:"port,omitempty"`
	TTL       uint32   `json:"ttl"`
}

func publishedOf(svc *model.Service) *published {
	if svc == nil {
		return nil
	}
	p := &published{Owner: svc.TXTOwner(), TXT: svc.TXT, Port: svc.Port, TTL: svc.TTL}
	for _, a := range svc.Addresses {
		p.Addresses = append(p.Addresses, a.String())
	}
	return p
}

func createdCode(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func respond(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, code, v)
}

// DefaultWatchTimeout is how long a watch without timeoutSeconds lasts.
const DefaultWatchTimeout = 30 * time.Minute

func (h *handler) listOrWatch(w http.ResponseWriter, r *http.Request,
	list func(context.Context, store.ListOptions) (*store.List, error),
	watch func(context.Context, string) (<-chan store.Event, error)) {
	q := r.URL.Query()
	match, err := objectMatch(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		for _, p := range []string{"limit", "continue", "resourceVersionMatch"} {
			if q.Get(p) != "" {
				writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("%s is not allowed on a watch: a watch takes resourceVersion and timeoutSeconds", p)})
				return
			}
		}
		timeout := DefaultWatchTimeout
		if t := q.Get("timeoutSeconds"); t != "" {
			v, err := strconv.ParseInt(t, 10, 64)
			if err != nil || v <= 0 {
				writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("timeoutSeconds %q is not a positive whole number", t)})
				return
			}
			timeout = time.Duration(min(v, 24*3600)) * time.Second
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		rv := q.Get("resourceVersion")
		selected := map[string]bool{}
		if match != nil && rv != "" && rv != "0" {
			// What the selector selects at rv: the objects whose change
			// makes them stop matching are DELETED for this watch.
			l, err := list(ctx, store.ListOptions{ResourceVersion: rv, ResourceVersionMatch: store.MatchExact, Match: match})
			if err != nil {
				writeError(w, err)
				return
			}
			for _, o := range l.Items {
				selected[o.Metadata.Zone+"/"+o.Metadata.Name] = true
			}
		}
		events, err := watch(ctx, rv)
		if err != nil {
			writeError(w, err)
			return
		}
		if match != nil {
			events = filterWatch(ctx, events, match, selected)
		}
		h.stream(ctx, w, events, timeout)
		return
	}
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o.Match = match
	l, err := list(r.Context(), o)
	respond(w, http.StatusOK, l, err)
}

// stream writes events as newline-delimited JSON, flushing each, with the
// server's read and write timeouts lifted for the watch's life.
func (h *handler) stream(ctx context.Context, w http.ResponseWriter, events <-chan store.Event, timeout time.Duration) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	enc := json.NewEncoder(w)
	for e := range events {
		rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if err := enc.Encode(e); err != nil {
			return
		}
		if len(events) == 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
	rc.Flush()
}
