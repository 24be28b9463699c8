package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/etcdtest"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// soak is how long the concurrency test runs: 2s in CI, longer by hand
// (GRPC_CONFIG_DNS_SOAK=30s).
func soak(t *testing.T) time.Duration {
	if v := os.Getenv("GRPC_CONFIG_DNS_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 2 * time.Second
}

const counters = 4

func counterSpec(n int) string {
	return fmt.Sprintf(`{"addresses":["192.0.2.1"],"ttl":%d,"serviceConfig":{}}`, n)
}

type ack struct {
	svc int
	n   int
	rv  int64
}

// TestConcurrency: 8 writers increment counters (a service's ttl) with
// read-modify-write under a resourceVersion precondition while 8 readers
// list and get. No update may be lost, no version given twice, and every
// reader's versions must increase. On etcd the writers and readers are
// spread over two replicas (two API servers on one etcd).
func TestConcurrency(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		s := openStore(t, store.Options{Location: t.TempDir()})
		srv := serve(t, s)
		concurrency(t, []*server{srv})
	})
	t.Run("etcd", func(t *testing.T) {
		e := etcdtest.Start(t)
		loc := e.Location("concurrency")
		a := serve(t, openStore(t, store.Options{Location: loc}))
		b := serve(t, openStore(t, store.Options{Location: loc}))
		concurrency(t, []*server{a, b})
	})
}

func concurrency(t *testing.T, srvs []*server) {
	srvs[0].putZone("example.test")
	for i := range counters {
		srvs[0].putService("example.test", fmt.Sprintf("c%d", i), counterSpec(0))
	}
	deadline := time.Now().Add(soak(t))
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := srvs[w%len(srvs)]
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(deadline) {
				i := rng.IntN(counters)
				path := fmt.Sprintf("%s/c%d", services, i)
				g := srv.do("GET", path, nil)
				if g.code != 200 {
					errs <- fmt.Errorf("GET %s: %d %s", path, g.code, g.body)
					return
				}
				var o struct {
					Metadata store.Metadata `json:"metadata"`
					Spec     struct {
						TTL int `json:"ttl"`
					} `json:"spec"`
				}
				json.Unmarshal(g.body, &o)
				p := srv.do("PUT", path, obj(counterSpec(o.Spec.TTL+1), o.Metadata.ResourceVersion))
				switch p.code {
				case 200:
					var out store.Object
					json.Unmarshal(p.body, &out)
					mu.Lock()
					acks = append(acks, ack{i, o.Spec.TTL + 1, rvOf(t, out.Metadata.ResourceVersion)})
					mu.Unlock()
				case 409:
				default:
					errs <- fmt.Errorf("PUT %s: %d %s", path, p.code, p.body)
					return
				}
			}
		}()
	}
	reads := make([]int, 8)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := srvs[r%len(srvs)]
			var lastList int64
			last := make([]int64, counters)
			for time.Now().Before(deadline) {
				l := srv.do("GET", services, nil)
				if l.code != 200 {
					errs <- fmt.Errorf("list: %d %s", l.code, l.body)
					return
				}
				var list store.List
				json.Unmarshal(l.body, &list)
				rv := rvOf(t, list.Metadata.ResourceVersion)
				if rv < lastList {
					errs <- fmt.Errorf("reader %d: list at %d after one at %d", r, rv, lastList)
					return
				}
				lastList = rv
				for _, it := range list.Items {
					var i int
					fmt.Sscanf(it.Metadata.Name, "c%d", &i)
					v := rvOf(t, it.Metadata.ResourceVersion)
					if v < last[i] {
						errs <- fmt.Errorf("reader %d: %s at %d after %d", r, it.Metadata.Name, v, last[i])
						return
					}
					last[i] = v
				}
				reads[r]++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// No version twice.
	seen := map[int64]bool{}
	for _, a := range acks {
		if seen[a.rv] {
			t.Errorf("version %d acknowledged twice", a.rv)
		}
		seen[a.rv] = true
	}
	// No lost update: each counter's acknowledged values are 1..n, in
	// increasing versions, and the final value is n.
	for i := range counters {
		var mine []ack
		for _, a := range acks {
			if a.svc == i {
				mine = append(mine, a)
			}
		}
		sort.Slice(mine, func(a, b int) bool { return mine[a].n < mine[b].n })
		for k, a := range mine {
			if a.n != k+1 {
				t.Fatalf("c%d: acknowledged values %v: an update was lost or made twice", i, mine)
			}
			if k > 0 && a.rv <= mine[k-1].rv {
				t.Errorf("c%d: value %d at version %d, not after %d", i, a.n, a.rv, mine[k-1].rv)
			}
		}
		var o struct {
			Spec struct {
				TTL int `json:"ttl"`
			} `json:"spec"`
		}
		json.Unmarshal(srvs[len(srvs)-1].must(200, "GET", fmt.Sprintf("%s/c%d", services, i), nil).body, &o)
		if o.Spec.TTL != len(mine) {
			t.Errorf("c%d is %d after %d acknowledged increments", i, o.Spec.TTL, len(mine))
		}
	}
	total := 0
	for _, n := range reads {
		total += n
	}
	t.Logf("%d acknowledged writes, %d lists over %d servers in %v", len(acks), total, len(srvs), soak(t))
	if len(acks) == 0 || total == 0 {
		t.Error("nothing was written or read")
	}
}

func TestAuth(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	s := openStore(t, store.Options{Location: t.TempDir()})
	srv := serve(t, s, token)
	srv.putZone("example.test")
	for _, bad := range []string{"", "wrong-token-0123456789", token + "x"} {
		anon := &server{t: t, url: srv.url, token: bad}
		for _, req := range []struct{ method, path string }{
			{"GET", "/v1/zones"}, {"GET", services}, {"PUT", services + "/x"}, {"DELETE", "/v1/zones/example.test"},
			{"GET", services + "?watch=true"},
		} {
			r := anon.do(req.method, req.path, obj(svcSpec(1), ""))
			if r.code != 401 || r.err(t).Reason != "Unauthorized" {
				t.Errorf("token %q: %s %s: %d %s, want 401 Unauthorized", bad, req.method, req.path, r.code, r.body)
			}
		}
	}
	// Nothing changed.
	srv.must(404, "GET", services+"/x", nil)
	srv.must(200, "GET", "/v1/zones/example.test", nil)
	// Health is open.
	anon := &server{t: t, url: srv.url}
	anon.must(200, "GET", "/healthz", nil)
	anon.must(200, "GET", "/readyz", nil)
}
