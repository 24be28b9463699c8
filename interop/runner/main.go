// Command runner is the interop suite (interop/run.sh): it publishes the
// records of cases.go with `grpc-config-dns serve` (and, for records our
// publisher refuses to publish, a stand-in DNS server), serves them a test
// backend on 127.0.0.1 and ::1, runs gRPC clients we did not write against
// them, and checks what each client's channel did with each record. It
// prints one line per check and "N passed, M failed in T s" (with a
// warning past 180 s), and exits 1 on any failure.
//
// With -readme FILE it writes the compatibility table into FILE between
// the markers <!-- compat:begin --> and <!-- compat:end -->; with
// -check-readme it fails when that table is not what this run measured.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc"

	"github.com/grpc-config-dns/grpc-config-dns/internal/dnstest"
	"github.com/grpc-config-dns/grpc-config-dns/internal/testpb"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	// Lint with the JSON Schema layer, as `grpc-config-dns lint` does, so
	// that the codes the suite checks are the ones lint reports.
	_ "github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

func main() {
	readme := flag.String("readme", "", "write the compatibility table into this README")
	check := flag.String("check-readme", "", "fail when this README's compatibility table differs from this run's")
	only := flag.String("clients", strings.Join(clients, ","), "comma-separated clients to run: "+strings.Join(clients, ", "))
	node := flag.String("node", "node", "the Node.js binary")
	python := flag.String("python", "/usr/bin/python3", "the Python that has grpcio (Debian's python3-grpcio)")
	java := flag.String("java", "java", "the Java runtime for the grpc-java client")
	javaCP := flag.String("java-classpath", "", "the grpc-java client's classpath: its compiled classes and Debian's grpc-java jars (interop/run.sh sets it)")
	hold := flag.Bool("hold", false, "set up the publisher, the stand-in DNS server and the backend, print the targets, and wait for ^C (to run a client by hand)")
	flag.Parse()
	start := time.Now()
	switch {
	case hostnameErr != nil:
		fatalf("this machine's host name, which every client must read alike: %v", hostnameErr)
	case strings.ToUpper(hostname) == hostname:
		fatalf("this machine's host name %q has no lower-case letter, so the hostname-upper case would publish it unchanged: run the suite on a host whose name has one", hostname)
	}

	s := &suite{node: *node, python: *python, java: *java, javaCP: *javaCP, hold: *hold}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.clients = chosenClients(*only, *javaCP)
	go s.teardownOnSignal()
	code := s.run()
	// The table is written (and compared) only from a run whose every check
	// passed, with every client.
	if code == 0 && s.failed == 0 && !s.hold && len(s.clients) == len(clients) {
		s.recordTable(*readme, *check)
	} else if *check != "" && !s.hold {
		s.check(false, "README table: not compared, since the run did not pass with every client")
	}
	// CI runs the suite on every change; its budget is 3 minutes. The time
	// is the runner's: its builds, the clients and the checks, not what
	// run.sh installs and compiles before it.
	took := time.Since(start)
	over := ""
	if took > suiteBudget {
		over = fmt.Sprintf(" (warning: over the suite's budget of %.0f s)", suiteBudget.Seconds())
	}
	fmt.Printf("%d passed, %d failed in %.1f s%s\n", s.passed, s.failed, took.Seconds(), over)
	if s.failed > 0 {
		os.Exit(1)
	}
	os.Exit(code)
}

// chosenClients is the clients of -clients, only; grpc-java's classpath,
// javaCP, must then be usable.
func chosenClients(only, javaCP string) []string {
	var chosen []string
	for _, c := range strings.Split(only, ",") {
		if !slices.Contains(clients, c) {
			fatalf("-clients: unknown client %q (want %s)", c, strings.Join(clients, ", "))
		}
		chosen = append(chosen, c)
	}
	if slices.Contains(chosen, grpcJava) {
		if err := javaUsable(javaCP); err != nil {
			fatalf("grpc-java: %v; or leave it out with -clients %s", err, strings.Join(slices.DeleteFunc(slices.Clone(clients), func(c string) bool { return c == grpcJava }), ","))
		}
	}
	return chosen
}

// recordTable writes this run's compatibility table into the README
// readme, and compares it with that of the README check; either may be
// "" for none.
func (s *suite) recordTable(readme, check string) {
	table := s.table()
	if readme != "" {
		if err := writeTable(readme, table); err != nil {
			fatalf("%v", err)
		}
		fmt.Printf("wrote the compatibility table to %s\n", readme)
	}
	if check != "" {
		s.checkReadme(check, table)
	}
}

// suiteBudget is how long the suite may take in CI (issue 17): past it,
// the last line warns.
const suiteBudget = 180 * time.Second

type suite struct {
	node, python string
	java, javaCP string
	hold         bool
	// ctx ends when the runner is interrupted; every child runs under it.
	ctx         context.Context
	cancel      context.CancelFunc
	stopOnce    sync.Once
	clients     []string
	dir         string // scratch directory
	bin         string // grpc-config-dns
	goclient    string
	port        int    // the backend's port
	dnsAddr     string // our publisher
	foreignAddr string // the stand-in DNS server
	serve       *exec.Cmd
	javaDNS     *relay // the one DNS server grpc-java asks
	javaResolv  string // its resolv.conf, naming javaDNS
	javaHosts   string // its hosts file: the cases' addresses
	config      string // the publisher config file
	key         string // makes Flaky keys unique to this run

	mu             sync.Mutex
	passed, failed int
	results        map[string]map[string]result // client → case → result
	versions       map[string]string
	changeDelay    map[string]string // client → table cell
}

// result is one target's probes, as every client reports them.
type result struct {
	Case     string   `json:"case"`
	Fast     string   `json:"fast"`
	Slow     string   `json:"slow"`
	SlowMS   int      `json:"slowMs"`
	Flaky    string   `json:"flaky"`
	Backends []string `json:"backends"`
	Detail   string   `json:"detail"`
}

func (s *suite) check(ok bool, format string, args ...any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	word := "PASS"
	if ok {
		s.passed++
	} else {
		s.failed++
		word = "FAIL"
	}
	fmt.Printf("%s %s\n", word, fmt.Sprintf(format, args...))
	return ok
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "interop: "+format+"\n", args...)
	os.Exit(2)
}

// teardownOnSignal stops the publisher and removes the scratch directory
// when the runner is interrupted (the clients run under s.ctx and are
// killed with it), then exits.
func (s *suite) teardownOnSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	s.cancel()
	if s.hold {
		return // run returns and tears down
	}
	s.stopPublisher()
	s.mu.Lock()
	dir := s.dir
	s.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	fmt.Fprintln(os.Stderr, "interop: interrupted")
	os.Exit(130)
}

// setupFailed reports why the suite could not run; run returns its code
// so that the deferred teardown still stops what was started.
func setupFailed(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "interop: "+format+"\n", args...)
	return 2
}

// run sets everything up, runs the checks and tears down; it returns 2
// when the suite could not run at all.
func (s *suite) run() int {
	dir, err := os.MkdirTemp("", "grpc-config-dns-interop-")
	if err != nil {
		return setupFailed("%v", err)
	}
	s.mu.Lock()
	s.dir = dir
	s.mu.Unlock()
	defer os.RemoveAll(s.dir)
	s.key = fmt.Sprint(time.Now().UnixNano())
	s.results = map[string]map[string]result{}
	s.versions = map[string]string{}
	s.changeDelay = map[string]string{}

	if err := s.build(); err != nil {
		return setupFailed("%v", err)
	}
	stop, err := s.startBackend()
	if err != nil {
		return setupFailed("backend: %v", err)
	}
	defer stop()
	foreign, err := dnstest.New()
	if err != nil {
		return setupFailed("stand-in DNS server: %v", err)
	}
	defer foreign.Close()
	s.foreignAddr = foreign.Addr
	serveForeignCases(foreign)
	defer s.stopPublisher()
	if err := s.startPublisher(); err != nil {
		return setupFailed("publisher: %v", err)
	}
	fmt.Printf("== backend on 127.0.0.1:%d and [::1]:%d; publisher on %s; stand-in DNS on %s\n", s.port, s.port, s.dnsAddr, s.foreignAddr)
	if slices.Contains(s.clients, grpcJava) {
		if err := s.startJavaDNS(); err != nil {
			return setupFailed("grpc-java's DNS relay: %v", err)
		}
		defer s.javaDNS.Close()
	}

	if s.hold {
		s.printTargets()
		<-s.ctx.Done()
		return 0
	}
	s.checkRecords()

	fmt.Println("== clients probe every case")
	var wg sync.WaitGroup
	for _, c := range s.clients {
		wg.Go(func() { s.probe(c) })
	}
	wg.Wait()
	for _, c := range s.clients {
		s.assertCases(c)
	}

	fmt.Println("== a config published while the channels run")
	s.watchChange()
	return 0
}

// build builds grpc-config-dns and the grpc-go client into the scratch
// directory.
func (s *suite) build() error {
	fmt.Println("== building grpc-config-dns and the grpc-go client")
	s.bin = filepath.Join(s.dir, "grpc-config-dns")
	s.goclient = filepath.Join(s.dir, "goclient")
	for _, b := range [][2]string{{s.bin, "./cmd/grpc-config-dns"}, {s.goclient, "./interop/goclient"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	return nil
}

// serveForeignCases serves the records of the cases published elsewhere
// than by our publisher, and their hosts' addresses, from foreign.
func serveForeignCases(foreign *dnstest.Server) {
	for _, c := range cases {
		if c.Foreign == nil {
			continue
		}
		name := c.Host + "." + zoneName
		foreign.SetAddrs(name, 30, "127.0.0.1", "::1")
		var recs [][]string
		for _, r := range c.Foreign {
			recs = append(recs, splitTXT(r))
		}
		foreign.SetTXT(sc.OwnerPrefix+name, 30, recs...)
		foreign.SetTXT(name, 30, recs...) // grpc-js asks the bare host
	}
}

// printTargets prints the target of every case, and what grpc-java asks,
// for running a client by hand (-hold).
func (s *suite) printTargets() {
	for _, c := range cases {
		t := s.target(c)
		fmt.Printf("%-16s dns://%s/%s:%d\n", c.Host, t.NS, t.Host, s.port)
	}
	if s.javaDNS != nil {
		fmt.Printf("grpc-java asks %s (resolv.conf %s, hosts file %s): dns:///HOST:%d\n", s.javaDNS.addr, s.javaResolv, s.javaHosts, s.port)
	}
}

// splitTXT cuts a record's text into the strings of at most 255 bytes a
// TXT record is made of.
func splitTXT(r string) []string {
	var out []string
	for len(r) > 255 {
		out = append(out, r[:255])
		r = r[255:]
	}
	return append(out, r)
}

// startBackend serves the test service on 127.0.0.1 and ::1 at one port,
// as two backends named by their address family that share Flaky's
// attempt counts.
func (s *suite) startBackend() (func(), error) {
	for range 20 {
		l4, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l4.Addr().(*net.TCPAddr).Port
		l6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", port))
		if err != nil {
			l4.Close()
			continue
		}
		s.port = port
		v4 := testpb.NewServer("v4")
		var servers []*grpc.Server
		for _, x := range []struct {
			l  net.Listener
			be *testpb.Server
		}{{l4, v4}, {l6, v4.Named("v6")}} {
			g := grpc.NewServer()
			testpb.RegisterEchoServer(g, x.be)
			go g.Serve(x.l)
			servers = append(servers, g)
		}
		return func() {
			for _, g := range servers {
				g.Stop()
			}
		}, nil
	}
	return nil, fmt.Errorf("no port free on both 127.0.0.1 and ::1")
}

// publisherConfig writes the zone of every published case; withChange adds
// the change case's record.
func publisherConfig(withChange bool) string {
	var b strings.Builder
	b.WriteString(`# Written by interop/runner: the records of the interop suite.
zones:
  - origin: ` + zoneName + `
    ttl: 30
    nameservers: [{name: ns1, addresses: [127.0.0.1]}]
    # grpc-js asks the bare host; the records are published to measure
    # what each client does with them, misreadings included.
    compat: {bareHost: true, clients: none}
    services:
`)
	svc := func(c *testCase, ttl int, withRecord bool) {
		fmt.Fprintf(&b, "      - name: %s\n        addresses: [127.0.0.1, \"::1\"]\n", c.Host)
		if ttl > 0 {
			fmt.Fprintf(&b, "        ttl: %d\n", ttl)
		}
		if c.Compat != "" {
			fmt.Fprintf(&b, "        compat: %s\n", c.Compat)
		}
		if withRecord && c.Choices != "" {
			fmt.Fprintf(&b, "        choices: %s\n", c.Choices)
		}
	}
	for _, c := range cases {
		if c.Foreign == nil {
			svc(c, 0, true)
		}
	}
	svc(change, changeTTL, withChange)
	return b.String()
}

func freePort() (string, error) {
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := pc.LocalAddr().String()
		l, err := net.Listen("tcp", addr)
		pc.Close()
		if err == nil {
			l.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("no port free for both UDP and TCP")
}

func (s *suite) startPublisher() error {
	s.config = filepath.Join(s.dir, "publisher.yaml")
	if err := os.WriteFile(s.config, []byte(publisherConfig(false)), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(s.bin, "lint", s.config).CombinedOutput(); err != nil {
		return fmt.Errorf("lint of the suite's publisher config: %v\n%s", err, out)
	}
	var err error
	if s.dnsAddr, err = freePort(); err != nil {
		return err
	}
	serve := exec.Command(s.bin, "serve", "--config", s.config, "--listen", s.dnsAddr, "--state", "-", "--log-level", "warn")
	serve.Stdout, serve.Stderr = os.Stderr, os.Stderr
	serve.SysProcAttr = dieWithParent()
	if err := serve.Start(); err != nil {
		return err
	}
	s.mu.Lock()
	s.serve = serve
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := s.query(s.dnsAddr, zoneName, dns.TypeSOA); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("serve did not answer on %s within 10s", s.dnsAddr)
}

func (s *suite) stopPublisher() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		serve := s.serve
		s.mu.Unlock()
		if serve == nil || serve.Process == nil {
			return
		}
		_ = serve.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = serve.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = serve.Process.Kill()
			<-done
		}
	})
}

func (s *suite) query(server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	c := &dns.Client{Timeout: time.Second}
	r, _, err := c.Exchange(m, server)
	if err == nil && r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		err = fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
	}
	return r, err
}

// txtRecords are the TXT records at name, as dig prints them when dig is
// installed (the suite then checks our answers with a resolver we did not
// write), else as miekg/dns reads them.
func (s *suite) txtRecords(server, name string) ([][]string, error) {
	if _, err := exec.LookPath("dig"); err == nil {
		host, port, _ := net.SplitHostPort(server)
		out, err := exec.Command("dig", "@"+host, "-p", port, "+short", "+norecurse", "TXT", name).Output()
		if err != nil {
			return nil, fmt.Errorf("dig: %v", err)
		}
		var recs [][]string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" {
				continue
			}
			strs, err := sc.ParseTXT([]byte(line))
			if err != nil || len(strs) != 1 {
				return nil, fmt.Errorf("dig printed %q: %v", line, err)
			}
			recs = append(recs, strs[0])
		}
		return recs, nil
	}
	r, err := s.query(server, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	var recs [][]string
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			recs = append(recs, t.Txt)
		}
	}
	return recs, nil
}

// checkRecords reads every case's record back from DNS and lints it: the
// quirk records draw the warning that names the affected clients, the
// records that follow lint's advice are clean.
func (s *suite) checkRecords() {
	fmt.Println("== records as served, and what lint says of them")
	for _, c := range append(slices.Clone(cases), change) {
		server := s.dnsAddr
		if c.Foreign != nil {
			server = s.foreignAddr
		}
		owner := sc.OwnerPrefix + c.Host + "." + zoneName
		recs, err := s.txtRecords(server, owner)
		if !s.check(err == nil, "%s: TXT at %s answers: %v", c.Host, owner, err) {
			continue
		}
		if c.Choices == "" && c.Foreign == nil || c == change {
			s.check(len(recs) == 0, "%s: no TXT record published (got %d)", c.Host, len(recs))
			continue
		}
		bare, err := s.txtRecords(server, c.Host+"."+zoneName)
		wantBare := c.Foreign != nil || !strings.Contains(c.Compat, "bareHost: false")
		s.check(err == nil && (len(bare) > 0) == wantBare, "%s: TXT at the bare host for grpc-js: published %v, want %v", c.Host, len(bare) > 0, wantBare)
		var codes []string
		for _, d := range sc.LintRecords(recs, sc.LintOptions{}) {
			if !slices.Contains(codes, d.Code) {
				codes = append(codes, d.Code)
			}
		}
		slices.Sort(codes)
		want := slices.Sorted(slices.Values(c.Lint))
		s.check(slices.Equal(codes, want), "%s: lint reports %v (want %v)", c.Host, codes, want)
		for _, client := range s.clients {
			got := specIntent(client, owner, recs)
			s.check(got == c.intent(client), "%s: gRFC A2 and A21 prescribe %q for %s on the record as served (the table says %q)", c.Host, got, client, c.intent(client))
		}
	}
}

// clientCmd is the command that runs one client with the suite's protocol
// on stdin.
func (s *suite) clientCmd(ctx context.Context, client string) *exec.Cmd {
	var cmd *exec.Cmd
	switch client {
	case grpcGo:
		cmd = exec.CommandContext(ctx, s.goclient, "-resolver", "dns")
	case ours:
		cmd = exec.CommandContext(ctx, s.goclient, "-resolver", "dnsconfig")
	case grpcJS:
		cmd = exec.CommandContext(ctx, s.node, filepath.Join("interop", "node", "client.js"))
		cmd.Env = append(os.Environ(), "GRPC_NODE_USE_ALTERNATIVE_RESOLVER=true")
	case grpcPy:
		cmd = exec.CommandContext(ctx, s.python, filepath.Join("interop", "python", "client.py"))
	case grpcJava:
		// In a mount namespace of its own, the JVM's /etc/resolv.conf is
		// ours (see startJavaDNS).
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, s.javaResolv,
			s.java, "-Dio.grpc.internal.DnsNameResolverProvider.enable_service_config=true",
			"-Djdk.net.hosts.file="+s.javaHosts, "-cp", s.javaCP, "ProbeClient")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = inOwnMountNamespace(dieWithParent())
		return cmd
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithParent()
	return cmd
}

// javaUsable says why the grpc-java client cannot run, if it cannot.
func javaUsable(classpath string) error {
	if classpath == "" {
		return fmt.Errorf("no -java-classpath: run the suite with interop/run.sh, which builds the client")
	}
	if !canUnshareMounts || os.Geteuid() != 0 {
		return fmt.Errorf("the suite must run as root on Linux: grpc-java asks the nameservers of /etc/resolv.conf, so its JVM gets a resolv.conf of its own in a mount namespace of its own")
	}
	// What clientCmd does, with /etc/resolv.conf bound over itself: it
	// needs the file, the mount command and the right to mount.
	try := exec.Command("/bin/sh", "-c", "mount --bind /etc/resolv.conf /etc/resolv.conf")
	try.SysProcAttr = inOwnMountNamespace(dieWithParent())
	if out, err := try.CombinedOutput(); err != nil {
		if out = bytes.TrimSpace(out); len(out) > 0 {
			err = fmt.Errorf("%v: %s", err, out)
		}
		return fmt.Errorf("cannot bind a file over /etc/resolv.conf in a mount namespace of its own, as the JVM needs (%v)", err)
	}
	return nil
}

// startJavaDNS starts the relay grpc-java asks and writes the resolv.conf
// and hosts file the JVM gets. grpc-java ignores the authority of
// dns://NS/HOST and asks the nameservers of /etc/resolv.conf through JNDI,
// whose DNS client accepts "nameserver 127.0.0.1:PORT"; so the JVM runs in
// a mount namespace of its own with that file bound over
// /etc/resolv.conf. Addresses come from a hosts file (jdk.net.hosts.file):
// the JDK asks the C library for them, which cannot ask a port other than
// 53. The local host name is in it too: grpc-java looks it up to match
// clientHostname, and its resolver fails without it.
func (s *suite) startJavaDNS() error {
	foreign := map[string]bool{}
	for _, c := range cases {
		if c.Foreign != nil {
			name := c.Host + "." + zoneName
			foreign[name], foreign[sc.OwnerPrefix+name] = true, true
		}
	}
	r, err := startRelay(func(qname string) string {
		if foreign[qname] {
			return s.foreignAddr
		}
		return s.dnsAddr
	})
	if err != nil {
		return err
	}
	s.javaDNS = r
	s.javaResolv = filepath.Join(s.dir, "resolv.conf")
	s.javaHosts = filepath.Join(s.dir, "hosts")
	var hosts strings.Builder
	if h, err := os.Hostname(); err == nil {
		fmt.Fprintf(&hosts, "127.0.0.1 %s\n", h)
	}
	for _, c := range append(slices.Clone(cases), change) {
		name := c.Host + "." + zoneName
		fmt.Fprintf(&hosts, "127.0.0.1 %s %s\n::1 %s %s\n", name, strings.TrimSuffix(name, "."), name, strings.TrimSuffix(name, "."))
	}
	if err := os.WriteFile(s.javaHosts, []byte(hosts.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(s.javaResolv, []byte("# Written by interop/runner for grpc-java's JVM.\nnameserver "+r.addr+"\n"), 0o644)
}

type target struct {
	Case string `json:"case"`
	NS   string `json:"ns"`
	Host string `json:"host"`
}

func (s *suite) target(c *testCase) target {
	ns := s.dnsAddr
	if c.Foreign != nil {
		ns = s.foreignAddr
	}
	return target{Case: c.Host, NS: ns, Host: c.Host + "." + zoneName}
}

func (s *suite) request(mode string, ts []target) []byte {
	b, _ := json.Marshal(map[string]any{"mode": mode, "port": s.port, "targets": ts, "watchMs": 12000, "key": s.key})
	return b
}

// probe runs one client over every case at once.
func (s *suite) probe(client string) {
	var ts []target
	for _, c := range cases {
		ts = append(ts, s.target(c))
	}
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	cmd := s.clientCmd(ctx, client)
	cmd.Stdin = bytes.NewReader(s.request("probe", ts))
	out, err := cmd.Output()
	var rep struct {
		Version  string   `json:"version"`
		Hostname string   `json:"hostname"`
		Results  []result `json:"results"`
	}
	if err == nil {
		err = json.Unmarshal(out, &rep)
	}
	if !s.check(err == nil, "%s: the client ran: %v", client, err) {
		return
	}
	// The hostname cases mean what their titles say only if every client
	// matches clientHostname with the name the runner published.
	s.check(rep.Hostname == hostname, "%s: the host name it matches clientHostname with is this machine's, %q (got %q)", client, hostname, rep.Hostname)
	byCase := map[string]result{}
	for _, r := range rep.Results {
		byCase[r.Case] = r
	}
	s.mu.Lock()
	s.results[client] = byCase
	s.versions[client] = rep.Version
	s.mu.Unlock()
}

// timedOut says whether the slow call (5 s on the server) was ended by a
// timeout. grpc-go servers reset a stream whose deadline passed, and when
// that RST_STREAM wins the race with grpc-js's own timer, grpc-js reports
// CANCELLED: both count, if the call ended before the server's 5 s.
func timedOut(r result) bool {
	return (r.Slow == "DEADLINE_EXCEEDED" || r.Slow == "CANCELLED") && r.SlowMS < 4800
}

// classify reads a channel's outcome off a client's probes.
func classify(client string, r result) string {
	timeout, retried, spread := timedOut(r), r.Flaky == "OK", len(r.Backends) >= 2
	switch {
	case r.Fast == failCodeOf(client):
		return fails
	case r.Fast == "DEADLINE_EXCEEDED" && timeout:
		return timesOut
	case r.Fast != "OK":
		return "fast call " + r.Fast
	case timeout && retried && spread:
		return applied
	}
	// Each effect is either seen or plainly absent: the slow call ran its
	// 5 s, the flaky call failed, the calls stayed on one backend.
	var missing []string
	for _, e := range []struct {
		name         string
		seen, absent bool
	}{
		{effTimeout, timeout, r.Slow == "OK"},
		{effRetry, retried, r.Flaky == "UNAVAILABLE"},
		{effRR, spread, len(r.Backends) == 1},
	} {
		switch {
		case e.absent:
			missing = append(missing, e.name)
		case !e.seen:
			return fmt.Sprintf("partly applied (slow %s, flaky %s, backends %v)", r.Slow, r.Flaky, r.Backends)
		}
	}
	if len(missing) == 3 {
		return noConfig
	}
	return without(missing...)
}

func (s *suite) assertCases(client string) {
	byCase, ok := s.results[client]
	if !ok {
		return
	}
	for _, c := range cases {
		r, ok := byCase[c.Host]
		if !s.check(ok, "%s %s: the client reported on it", client, c.Host) {
			continue
		}
		detail := ""
		if r.Detail != "" {
			detail = " — " + r.Detail
		}
		switch c.Host {
		case "full", "none":
			// The baseline: every effect asserted on its own.
			on := c.Host == "full"
			s.check(r.Fast == "OK", "%s %s: a plain call succeeds (%s)%s", client, c.Host, r.Fast, detail)
			s.check(timedOut(r) == on, "%s %s: the methodConfig timeout %s (slow call: %s after %d ms)", client, c.Host, map[bool]string{true: "fires", false: "does not fire"}[on], r.Slow, r.SlowMS)
			s.check((r.Flaky == "OK") == on, "%s %s: the flaky call %s (%s)", client, c.Host, map[bool]string{true: "succeeds on retry", false: "fails without a retry policy"}[on], r.Flaky)
			s.check((len(r.Backends) == 2) == on, "%s %s: calls %s (backends %v)", client, c.Host, map[bool]string{true: "spread over both backends (round_robin)", false: "stay on one backend (pick_first)"}[on], r.Backends)
		default:
			got, want := classify(client, r), c.want(client)
			s.check(slices.Contains(want, got), "%s %s: %s (want %s)%s", client, c.Host, got, strings.Join(want, " or "), detail)
		}
	}
}

// watchChange starts a channel per client on a name without a record,
// publishes a config for it, and measures when each channel applies it.
func (s *suite) watchChange() {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	var ws []*changeWatcher
	for _, client := range s.clients {
		if w := s.startWatcher(ctx, client); w != nil {
			ws = append(ws, w)
		}
	}
	var ready []*changeWatcher
	for _, w := range ws {
		ev := w.next(30 * time.Second)
		if s.check(ev["event"] == "ready", "%s change: the channel works before the change (%s %s)", w.client, ev["event"], ev["detail"]) {
			ready = append(ready, w)
		}
	}
	if !s.publishChange() {
		ready = nil
	}
	published := time.Now()
	var wg sync.WaitGroup
	for _, w := range ready {
		wg.Go(func() { s.assertApplied(w, published) })
	}
	wg.Wait()
	for _, w := range ws {
		_ = w.cmd.Process.Kill()
		<-w.done // os/exec: read all of StdoutPipe before Wait
		_ = w.cmd.Wait()
	}
}

// changeWatcher is a client's channel on the change case, and the events
// it prints.
type changeWatcher struct {
	client string
	cmd    *exec.Cmd
	events chan map[string]string
	done   chan struct{} // the reader finished
}

// startWatcher starts client's channel on the change case, or reports
// why it could not and returns nil.
func (s *suite) startWatcher(ctx context.Context, client string) *changeWatcher {
	w := &changeWatcher{client: client, cmd: s.clientCmd(ctx, client), events: make(chan map[string]string, 64), done: make(chan struct{})}
	w.cmd.Stdin = bytes.NewReader(s.request("watch", []target{s.target(change)}))
	stdout, err := w.cmd.StdoutPipe()
	if err == nil {
		err = w.cmd.Start()
	}
	if !s.check(err == nil, "%s change: the client started: %v", client, err) {
		return nil
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]string
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				select {
				case w.events <- ev:
				default: // nobody reads that many events
				}
			}
		}
		close(w.events)
	}()
	return w
}

// next is the channel's next event, or an event "none" when it prints
// none within limit.
func (w *changeWatcher) next(limit time.Duration) map[string]string {
	select {
	case ev, ok := <-w.events:
		if ok {
			return ev
		}
	case <-time.After(limit):
	}
	return map[string]string{"event": "none"}
}

// publishChange publishes the change case's config and waits until the
// publisher serves its record: the clock of the change starts then, not
// when the publisher is told to reload. It reports whether it did.
func (s *suite) publishChange() bool {
	err := os.WriteFile(s.config, []byte(publisherConfig(true)), 0o644)
	if err == nil {
		err = s.serve.Process.Signal(syscall.SIGHUP)
	}
	told := s.check(err == nil, "change: the new config is written and the publisher told to reload: %v", err)
	owner := sc.OwnerPrefix + change.Host + "." + zoneName
	served := false
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, qerr := s.query(s.dnsAddr, owner, dns.TypeTXT); qerr == nil && len(r.Answer) > 0 {
			served = true
			break
		}
	}
	served = s.check(served, "change: the publisher serves the new record at %s within 5 s of the reload", owner)
	return told && served
}

// assertApplied checks when w's channel applies the config published at
// published, and notes it for the table.
func (s *suite) assertApplied(w *changeWatcher, published time.Time) {
	ev := w.next(20 * time.Second)
	delay := time.Since(published)
	got := ev["event"] == "applied"
	inTTL := got && delay <= (changeTTL+1)*time.Second
	cell := "not applied within 12 s"
	if inTTL {
		cell = "applied within the TTL"
	} else if got {
		cell = "applied after the TTL"
	}
	s.mu.Lock()
	s.changeDelay[w.client] = cell
	s.mu.Unlock()
	measured := fmt.Sprintf("%s (%.1f s after the change)", cell, delay.Seconds())
	if !got {
		measured = cell
	}
	if w.client == ours {
		s.check(inTTL, "%s change: the running channel applies the new config within the TTL of %d s (+1 s): %s", w.client, changeTTL, measured)
	} else {
		s.check(got == changeWant[w.client], "%s change: %s (want applied=%v)", w.client, measured, changeWant[w.client])
	}
}
