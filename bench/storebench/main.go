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
//	PUTDNS the same PUTs, from the request sent → the new TXT answered
//
// -ops chooses which of them run (bench/scale.sh runs only dns, on a
// store that `import` loaded: a store given with -store that holds the
// zone and its N services already is used as it is, not loaded again).
//
//	go build -o /tmp/gcd ./cmd/grpc-config-dns
//	go run ./bench/storebench -bin /tmp/gcd -n 100000
//	go run ./bench/storebench -bin /tmp/gcd -n 100000 -store DIR -ops dns -dns-samples 200
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
	dnsSamples := flag.Int("dns-samples", 0, "PUTs timed to their DNS answer (default: a quarter of -samples, at least 10)")
	opsFlag := flag.String("ops", "put,get,list,dns", "the measurements to run, comma-separated: put, get, list (with the pages after it), dns")
	flag.Parse()
	if *bin == "" {
		fail("-bin is required: go build -o /tmp/gcd ./cmd/grpc-config-dns")
	}
	ops := map[string]bool{}
	for _, op := range strings.Split(*opsFlag, ",") {
		switch op {
		case "put", "get", "list", "dns":
			ops[op] = true
		default:
			fail(fmt.Sprintf("-ops %q: %q is none of put, get, list, dns", *opsFlag, op))
		}
	}
	if *dnsSamples <= 0 {
		*dnsSamples = max(*samples/4, 10)
	}
	tmp, err := os.MkdirTemp("", "storebench")
	check(err)
	defer os.RemoveAll(tmp)
	if *loc == "" {
		*loc = filepath.Join(tmp, "store")
	}
	dnsAddr, admin := freeAddr(), freeAddr()
	cmd := exec.Command(*bin, "serve", "--store", *loc, "--listen", dnsAddr, "--admin", admin, "--log-level", "warn", "--history", "10000")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if f := os.Getenv("STOREBENCH_SERVE_LOG"); f != "" { // serve's log, for a look at GC (GODEBUG=gctrace=1)
		lf, err := os.Create(f)
		check(err)
		defer lf.Close()
		cmd.Stdout, cmd.Stderr = lf, lf
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with us, even on fail
	check(cmd.Start())
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	c := &client{base: "http://" + admin, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *load + 4}, Timeout: 60 * time.Second}}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := c.hc.Get(c.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Since(start) > 30*time.Second {
			fail("serve not ready in 30s:\n" + logs.String())
		}
	}
	// The zone, unless the store holds it: a zone PUT that changes it
	// validates all its services again.
	if code, _ := c.do("GET", "/v1/zones/fleet.test", ""); code != 200 {
		if code, b := c.do("PUT", "/v1/zones/fleet.test", `{"spec":{"ttl":300,"nameservers":["ns1.example.net."]}}`); code != 200 && code != 201 {
			fail(fmt.Sprintf("PUT zone: %d %s", code, b))
		}
	}

	// Load, unless a store given with -store holds the services already.
	start := time.Now()
	var next atomic.Int64
	loaded := false
	if code, _ := c.do("GET", svcPath(*n-1), ""); code == 200 {
		fmt.Printf("store %s: holds the %d services already\n", *loc, *n)
		next.Store(int64(*n))
		loaded = true
	}
	var wg sync.WaitGroup
	for range *load {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= *n {
					return
				}
				if code, b := c.do("PUT", svcPath(i), spec(i, "1s")); code != 201 && code != 200 {
					fail(fmt.Sprintf("PUT %s: %d %s", svcPath(i), code, b))
				}
			}
		}()
	}
	wg.Wait()
	if took := time.Since(start); !loaded {
		fmt.Printf("store %s: loaded %d services with %d clients in %v (%.0f writes/s)\n", *loc, *n, *load, took.Round(time.Millisecond), float64(*n)/took.Seconds())
	}
	// Wait until DNS serves the last one.
	waitTXT(dnsAddr, *n-1, "fleet.v1.Service", 60*time.Second)

	// Values no earlier run wrote: a PUT of what is stored already writes
	// nothing.
	run := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(run), 2))
	epoch := 10 + rng.IntN(100000)
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		fmt.Printf("%-6s p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (%d samples)\n", name,
			ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1]), len(d))
	}

	// PUT.
	var puts []time.Duration
	lastRV := "0"
	for k := range *samples {
		if !ops["put"] && !ops["list"] {
			break
		}
		i := rng.IntN(*n)
		t0 := time.Now()
		code, b := c.do("PUT", svcPath(i), spec(i, fmt.Sprintf("%d.%03ds", epoch+k/1000, k%1000)))
		puts = append(puts, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("PUT: %d %s", code, b))
		}
		lastRV = rvOf(b)
		if !ops["put"] { // one PUT, for the list's version
			break
		}
	}
	if ops["put"] {
		report("PUT", puts)
	}

	// GET.
	var gets []time.Duration
	for range *samples {
		if !ops["get"] {
			break
		}
		i := rng.IntN(*n)
		t0 := time.Now()
		code, b := c.do("GET", svcPath(i), "")
		gets = append(gets, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("GET: %d %s", code, b))
		}
	}
	if ops["get"] {
		report("GET", gets)
	}

	// LIST: the first page, NotOlderThan the last version written; PAGE:
	// the pages after it.
	var lists, pages []time.Duration
	listSamples := max(*samples/4, 10)
	if !ops["list"] {
		listSamples = 0
	}
	for range listSamples {
		t0 := time.Now()
		code, b := c.do("GET", "/v1/zones/fleet.test/services?limit=500&resourceVersionMatch=NotOlderThan&resourceVersion="+lastRV, "")
		lists = append(lists, time.Since(t0))
		if code != 200 {
			fail(fmt.Sprintf("LIST: %d %.300s", code, b))
		}
		var l struct {
			Metadata struct{ Continue string } `json:"metadata"`
			Items    []json.RawMessage         `json:"items"`
		}
		check(json.Unmarshal(b, &l))
		if len(l.Items) != 500 {
			fail(fmt.Sprintf("LIST: %d items", len(l.Items)))
		}
		// A few pages further on.
		cont := l.Metadata.Continue
		for range 3 {
			if cont == "" {
				break
			}
			t0 := time.Now()
			code, b := c.do("GET", "/v1/zones/fleet.test/services?limit=500&continue="+url.QueryEscape(cont), "")
			pages = append(pages, time.Since(t0))
			if code != 200 {
				fail(fmt.Sprintf("PAGE: %d %.300s", code, b))
			}
			l.Metadata.Continue = ""
			check(json.Unmarshal(b, &l))
			cont = l.Metadata.Continue
		}
	}
	if ops["list"] {
		report("LIST", lists)
		report("PAGE", pages)
	}
	if !ops["dns"] {
		return
	}

	// Write to DNS answer: from the acknowledgement, and from the request.
	var delays, sent []time.Duration
	for k := range *dnsSamples {
		i := rng.IntN(*n)
		marker := fmt.Sprintf("%d%04d.5s", epoch, k)
		t0 := time.Now()
		code, b := c.do("PUT", svcPath(i), spec(i, marker))
		acked := time.Now()
		if code != 200 {
			fail(fmt.Sprintf("PUT: %d %s", code, b))
		}
		waitTXT(dnsAddr, i, strings.TrimSuffix(marker, "s"), 10*time.Second)
		delays = append(delays, time.Since(acked))
		sent = append(sent, time.Since(t0))
	}
	report("DNS", delays)
	report("PUTDNS", sent)
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
