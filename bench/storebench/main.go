// Command storebench measures the admin API of `serve --store` and the
// delay from an acknowledged write to its DNS answer, on a store of N
// services (bench/store.sh runs it on the embedded store and on etcd). By
// hand, not in CI.
//
// It starts the binary given by -bin with --store (a fresh directory, or
// -store etcd://…), loads N services of one zone (each an address and a
// ~300-byte service config, as bench/fleetgen writes them) with -load
// clients at once, and then measures, one request at a time so that each
// figure is a latency and not a queue:
//
//	PUT    a service replaced (acknowledged: on disk, or committed by etcd)
//	GET    a service
//	LIST   a page of 500 services, resourceVersion=latest known,
//	       resourceVersionMatch=NotOlderThan
//	PAGE   the next page by its continue token (Exact at the list's version)
//	DNS    PUT acknowledged → the new TXT answered over UDP (polled)
//
//	go build -o /tmp/gcd ./cmd/grpc-config-dns
//	go run ./bench/storebench -bin /tmp/gcd -n 100000
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

func main() {
	bin := flag.String("bin", "", "the grpc-config-dns binary (required)")
	loc := flag.String("store", "", "store location (default: a fresh directory)")
	n := flag.Int("n", 100000, "services in the zone")
	load := flag.Int("load", 32, "clients writing at once while loading")
	samples := flag.Int("samples", 2000, "requests measured per operation")
	flag.Parse()
	if *bin == "" {
		fail("-bin is required: go build -o /tmp/gcd ./cmd/grpc-config-dns")
	}
	tmp, err := os.MkdirTemp("", "storebench")
	check(err)
	defer os.RemoveAll(tmp)
	if *loc == "" {
		*loc = filepath.Join(tmp, "store")
	}
	dnsAddr, admin := freeAddr(), freeAddr()
	logs, stop := startServe(*bin, *loc, dnsAddr, admin)
	defer stop()
	c := &client{base: "http://" + admin, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *load + 4}, Timeout: 60 * time.Second}}
	c.waitReady(logs)
	if code, b := c.do("PUT", "/v1/zones/fleet.test", `{"spec":{"ttl":300,"nameservers":["ns1.example.net."]}}`); code != 200 && code != 201 {
		fail(fmt.Sprintf("PUT zone: %d %s", code, b))
	}
	c.loadServices(*loc, *n, *load)
	// Wait until DNS serves the last one.
	waitTXT(dnsAddr, *n-1, "fleet.v1.Service", 60*time.Second)

	// Values no earlier run wrote: a PUT of what is stored already writes
	// nothing.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	m := &measure{c: c, rng: rng, epoch: 10 + rng.IntN(100000), n: *n, samples: *samples}
	lastRV := m.puts()
	m.gets()
	m.lists(lastRV)
	m.dnsDelays(dnsAddr)
}

// startServe starts bin serving the store at loc, DNS on dnsAddr and the
// admin API on admin. It returns serve's log, unless
// STOREBENCH_SERVE_LOG names a file for it (for a look at GC with
// GODEBUG=gctrace=1), and how to stop it.
func startServe(bin, loc, dnsAddr, admin string) (logs *bytes.Buffer, stop func()) {
	cmd := exec.Command(bin, "serve", "--store", loc, "--listen", dnsAddr, "--admin", admin, "--log-level", "warn", "--history", "10000")
	logs = new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = logs, logs
	var lf *os.File
	if f := os.Getenv("STOREBENCH_SERVE_LOG"); f != "" {
		var err error
		lf, err = os.Create(f)
		check(err)
		cmd.Stdout, cmd.Stderr = lf, lf
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with us, even on fail
	check(cmd.Start())
	return logs, func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if lf != nil {
			lf.Close()
		}
	}
}

// waitReady waits up to 30 s for serve to be ready; logs is its log.
func (c *client) waitReady(logs *bytes.Buffer) {
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := c.hc.Get(c.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Since(start) > 30*time.Second {
			fail("serve not ready in 30s:\n" + logs.String())
		}
	}
}

// loadServices writes the n services of the zone with load clients at
// once, unless the store at loc, given with -store, holds them already.
func (c *client) loadServices(loc string, n, load int) {
	start := time.Now()
	var next atomic.Int64
	if code, _ := c.do("GET", svcPath(n-1), ""); code == 200 {
		fmt.Printf("store %s: holds the %d services already\n", loc, n)
		next.Store(int64(n))
	}
	var wg sync.WaitGroup
	for range load {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if code, b := c.do("PUT", svcPath(i), spec(i, "1s")); code != 201 && code != 200 {
					fail(fmt.Sprintf("PUT %s: %d %s", svcPath(i), code, b))
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	fmt.Printf("store %s: loaded %d services with %d clients in %v (%.0f writes/s)\n", loc, n, load, took.Round(time.Millisecond), float64(n)/took.Seconds())
}

// measure measures the requests of one kind after another, each on
// services drawn by rng among the n of the zone, samples times (a quarter
// of that for lists and DNS). epoch makes the values written new.
type measure struct {
	c          *client
	rng        *rand.Rand
	epoch      int
	n, samples int
}

// report prints the percentiles of the latencies d of requests name.
func report(name string, d []time.Duration) {
	slices.Sort(d)
	fmt.Printf("%-5s p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (%d samples)\n", name,
		ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1]), len(d))
}

// puts measures PUTs and returns the resourceVersion of the last.
func (m *measure) puts() string {
	var puts []time.Duration
	var lastRV string
	for k := range m.samples {
		i := m.rng.IntN(m.n)
		t0 := time.Now()
		code, b := m.c.do("PUT", svcPath(i), spec(i, fmt.Sprintf("%d.%03ds", m.epoch+k/1000, k%1000)))
		puts = append(puts, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("PUT: %d %s", code, b))
		}
		lastRV = rvOf(b)
	}
	report("PUT", puts)
	return lastRV
}

// gets measures GETs.
func (m *measure) gets() {
	var gets []time.Duration
	for range m.samples {
		i := m.rng.IntN(m.n)
		t0 := time.Now()
		code, b := m.c.do("GET", svcPath(i), "")
		gets = append(gets, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("GET: %d %s", code, b))
		}
	}
	report("GET", gets)
}

// lists measures LIST, the first page NotOlderThan lastRV, the last
// version written, and PAGE, the pages after it.
func (m *measure) lists(lastRV string) {
	var lists, pages []time.Duration
	for range max(m.samples/4, 10) {
		t0 := time.Now()
		code, b := m.c.do("GET", "/v1/zones/fleet.test/services?limit=500&resourceVersionMatch=NotOlderThan&resourceVersion="+lastRV, "")
		lists = append(lists, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("LIST: %d %.300s", code, b))
		}
		var l listPage
		check(json.Unmarshal(b, &l))
		if len(l.Items) != 500 {
			fail(fmt.Sprintf("LIST: %d items", len(l.Items)))
		}
		// A few pages further on.
		pages = append(pages, m.nextPages(l.Metadata.Continue, 3)...)
	}
	report("LIST", lists)
	report("PAGE", pages)
}

// listPage is what the measures read of a page of a list.
type listPage struct {
	Metadata struct{ Continue string } `json:"metadata"`
	Items    []json.RawMessage         `json:"items"`
}

// nextPages reads up to count pages from the continue token cont on, and
// returns how long each took.
func (m *measure) nextPages(cont string, count int) []time.Duration {
	var pages []time.Duration
	for range count {
		if cont == "" {
			break
		}
		t0 := time.Now()
		code, b := m.c.do("GET", "/v1/zones/fleet.test/services?limit=500&continue="+url.QueryEscape(cont), "")
		pages = append(pages, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("PAGE: %d %.300s", code, b))
		}
		var l listPage
		check(json.Unmarshal(b, &l))
		cont = l.Metadata.Continue
	}
	return pages
}

// dnsDelays measures the delay from an acknowledged PUT to its TXT
// answer from the DNS server at dnsAddr.
func (m *measure) dnsDelays(dnsAddr string) {
	var delays []time.Duration
	for k := range max(m.samples/4, 10) {
		i := m.rng.IntN(m.n)
		marker := fmt.Sprintf("%d%04d.5s", m.epoch, k)
		code, b := m.c.do("PUT", svcPath(i), spec(i, marker))
		acked := time.Now()
		if code != 200 {
			fail(fmt.Sprintf("PUT: %d %s", code, b))
		}
		waitTXT(dnsAddr, i, strings.TrimSuffix(marker, "s"), 10*time.Second)
		delays = append(delays, time.Since(acked))
	}
	report("DNS", delays)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func svcPath(i int) string { return fmt.Sprintf("/v1/zones/fleet.test/services/svc%d", i) }

func spec(i int, timeout string) string {
	return fmt.Sprintf(`{"spec":{"addresses":["10.%d.%d.%d"],"serviceConfig":{"methodConfig":[{"name":[{"service":"fleet.v1.Service%d"}],"timeout":"%s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}}}`,
		i>>16, i>>8&0xff, i&0xff, i, timeout)
}

func rvOf(b []byte) string {
	var o struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	check(json.Unmarshal(b, &o))
	return o.Metadata.ResourceVersion
}

// waitTXT polls the TXT record of service i until it contains want.
func waitTXT(addr string, i int, want string, within time.Duration) {
	c := &dns.Client{Timeout: time.Second, UDPSize: 4096}
	m := new(dns.Msg)
	m.SetQuestion(fmt.Sprintf("_grpc_config.svc%d.fleet.test.", i), dns.TypeTXT)
	m.SetEdns0(4096, false)
	deadline := time.Now().Add(within)
	for {
		r, _, err := c.Exchange(m, addr)
		if err == nil {
			for _, rr := range r.Answer {
				if t, ok := rr.(*dns.TXT); ok && strings.Contains(strings.Join(t.Txt, ""), want) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			fail(fmt.Sprintf("svc%d: TXT without %q after %v: %v %v", i, want, within, r, err))
		}
	}
}

type client struct {
	base string
	hc   *http.Client
}

func (c *client) do(method, path, body string) (int, []byte) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	check(err)
	resp, err := c.hc.Do(req)
	if err != nil {
		fail(fmt.Sprintf("%s %s: %v", method, path, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(bufio.NewReader(resp.Body))
	check(err)
	return resp.StatusCode, b
}

func freeAddr() string {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			u.Close()
			return addr
		}
	}
	fail("no free port")
	return ""
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "storebench:", msg)
	os.Exit(1)
}
