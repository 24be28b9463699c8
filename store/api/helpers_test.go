package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// newHandler is api.New for a test.
func newHandler(t testing.TB, opts api.Options) http.Handler {
	t.Helper()
	h, err := api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// backend opens a store of one kind for a test.
type backend struct {
	name string
	open func(t *testing.T, opts store.Options) *store.Store
}

var prefixes atomic.Int64

func backends() []backend {
	return []backend{
		{"embedded", func(t *testing.T, opts store.Options) *store.Store {
			opts.Location = t.TempDir()
			return openStore(t, opts)
		}},
		{"etcd", func(t *testing.T, opts store.Options) *store.Store {
			e := etcdtest.Start(t)
			opts.Location = e.Location(fmt.Sprintf("t%d-%d", time.Now().UnixNano(), prefixes.Add(1)))
			return openStore(t, opts)
		}},
	}
}

func openStore(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	if opts.WaitForRevision == 0 {
		opts.WaitForRevision = 300 * time.Millisecond
	}
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// server is the real API on 127.0.0.1:0, through internal/httpserve.
type server struct {
	t     *testing.T
	url   string
	token string
	s     *store.Store
}

func serve(t *testing.T, s *store.Store, tokens ...string) *server {
	t.Helper()
	h := newHandler(t, api.Options{Store: s, Tokens: tokens})
	hs, err := httpserve.Listen("127.0.0.1:0", h, httpserve.Limits{MaxConns: 256})
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve()
	t.Cleanup(func() { hs.Close() })
	srv := &server{t: t, url: "http://" + hs.Addr().String(), s: s}
	if len(tokens) > 0 {
		srv.token = tokens[0]
	}
	return srv
}

type response struct {
	code int
	body []byte
}

func (r response) object(t *testing.T) *store.Object {
	t.Helper()
	var o store.Object
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("not an object: %v: %s", err, r.body)
	}
	return &o
}

func (r response) list(t *testing.T) *store.List {
	t.Helper()
	var l store.List
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("not a list: %v: %s", err, r.body)
	}
	return &l
}

func (r response) err(t *testing.T) *store.Error {
	t.Helper()
	var e store.Error
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("not an error: %v: %s", err, r.body)
	}
	if e.Code != r.code {
		t.Fatalf("error code %d in a %d answer: %s", e.Code, r.code, r.body)
	}
	return &e
}

func (s *server) do(method, path string, body any) response {
	s.t.Helper()
	return s.doType(method, path, "", body)
}

func (s *server) must(code int, method, path string, body any) response {
	s.t.Helper()
	r := s.do(method, path, body)
	if r.code != code {
		s.t.Fatalf("%s %s: got %d, want %d: %s", method, path, r.code, code, r.body)
	}
	return r
}

const zoneSpec = `{"ttl":"30s","nameservers":[{"name":"ns1","addresses":["192.0.2.53"]}]}`

func svcSpec(i int) string {
	return fmt.Sprintf(`{"addresses":["192.0.2.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"s"}],"timeout":"%ds"}]}}`, i%250+1, i+1)
}

func obj(spec string, rv string) map[string]any {
	m := map[string]any{"metadata": map[string]any{}, "spec": json.RawMessage(spec)}
	if rv != "" {
		m["metadata"].(map[string]any)["resourceVersion"] = rv
	}
	return m
}

func (s *server) putZone(zone string) int64 {
	s.t.Helper()
	r := s.do("PUT", "/v1/zones/"+zone, obj(zoneSpec, ""))
	if r.code != 201 && r.code != 200 {
		s.t.Fatalf("PUT zone: %d %s", r.code, r.body)
	}
	return rvOf(s.t, r.object(s.t).Metadata.ResourceVersion)
}

func (s *server) putService(zone, name, spec string) int64 {
	s.t.Helper()
	r := s.do("PUT", "/v1/zones/"+zone+"/services/"+name, obj(spec, ""))
	if r.code != 201 && r.code != 200 {
		s.t.Fatalf("PUT service %s: %d %s", name, r.code, r.body)
	}
	return rvOf(s.t, r.object(s.t).Metadata.ResourceVersion)
}

func rvOf(t testing.TB, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return v
}

// watcher reads a watch stream.
type watcher struct {
	t      *testing.T
	cancel func()
	events chan store.Event
}

type wireEvent struct {
	Type   store.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

func (s *server) watch(path string) (*watcher, response) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, response{resp.StatusCode, b}
	}
	w := &watcher{t: s.t, cancel: cancel, events: make(chan store.Event, 1000)}
	go func() {
		defer close(w.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var e wireEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				return
			}
			var o store.Object
			json.Unmarshal(e.Object, &o)
			w.events <- store.Event{Type: e.Type, Object: &o}
		}
	}()
	s.t.Cleanup(cancel)
	return w, response{code: 200}
}

// next returns the next event that is not a periodic BOOKMARK.
func (w *watcher) next() (store.EventType, *store.Object) {
	w.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e, ok := <-w.events:
			if !ok {
				w.t.Fatal("watch ended")
			}
			o := e.Object.(*store.Object)
			if e.Type == store.Bookmark && o.Metadata.Annotations["k8s.io/initial-events-end"] == "" {
				continue
			}
			return e.Type, o
		case <-timeout:
			w.t.Fatal("no watch event in 5s")
		}
	}
}

// quiet checks that no event but bookmarks comes for d.
func (w *watcher) quiet(d time.Duration) {
	w.t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-w.events:
			if !ok {
				return
			}
			if e.Type != store.Bookmark {
				w.t.Fatalf("unexpected event %s %+v", e.Type, e.Object)
			}
		case <-timeout:
			return
		}
	}
}

// doType sends a request with body (a string as it is, else as JSON)
// and Content-Type ctype (none when "").
func (s *server) doType(method, path, ctype string, body any) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, b}
}
