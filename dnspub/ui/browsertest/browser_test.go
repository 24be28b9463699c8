package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"
)

var cli struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain removes the CLI the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

// buildCLI builds grpc-config-dns once for every test.
func buildCLI(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "browsertest"); cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "grpc-config-dns")
		build := exec.Command("go", "build", "-o", cli.path, "github.com/grpc-config-dns/grpc-config-dns/cmd/grpc-config-dns")
		if out, err := build.CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("building grpc-config-dns: %v\n%s", err, out)
		}
	})
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}

// start runs the CLI with args until the test ends, and waits until url
// answers 200 (sent with token as a bearer token, when not "").
func start(t *testing.T, url, token string, args ...string) {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(buildCLI(t), args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", args[0], log.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := fetch(t, url, token); code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s within 15s:\n%s", args[0], url, log.String())
		}
	}
}

// fetch GETs url, with token as a bearer token when not "", and returns
// the status (0 when nothing answered) and the body.
func fetch(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve starts `serve` on loopback with the policies example, and returns
// the web view's base URL.
func serve(t *testing.T) string {
	t.Helper()
	dnsAddr, httpAddr := freeAddr(t), freeAddr(t)
	base := "http://" + httpAddr
	start(t, base+"/ui/", "", "serve", "--config", "../../../testdata/publisher/policies.yaml", "--state", "-",
		"--listen", dnsAddr, "--metrics", httpAddr)
	return base
}

// serveStore starts `serve --store` on loopback behind a bearer token,
// publishes the policies example into it, and returns the admin
// listener's base URL and the token.
func serveStore(t *testing.T) (base, token string) {
	t.Helper()
	dir := t.TempDir()
	token = "browsertest-0123456789abcdef"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dnsAddr, adminAddr := freeAddr(t), freeAddr(t)
	base = "http://" + adminAddr
	start(t, base+"/ui/", token, "serve", "--store", filepath.Join(dir, "store"), "--listen", dnsAddr,
		"--admin", adminAddr, "--admin-token-file", tokens)
	publish := exec.Command(buildCLI(t), "publish", "../../../testdata/publisher/policies.yaml", "--server", base, "--token", token)
	if out, err := publish.CombinedOutput(); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	return base, token
}

// resourceVersion is the metadata.resourceVersion of the object at path
// of the admin API.
func resourceVersion(t *testing.T, base, path, token string) string {
	t.Helper()
	code, body := fetch(t, base+path, token)
	var obj struct {
		Metadata struct{ ResourceVersion string }
	}
	if err := json.Unmarshal([]byte(body), &obj); code != 200 || err != nil || obj.Metadata.ResourceVersion == "" {
		t.Fatalf("GET %s: %d %v\n%s", path, code, err, body)
	}
	return obj.Metadata.ResourceVersion
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func needChromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("BROWSERTEST") == "" {
		t.Skip("browser test: run dnspub/ui/browsertest/run.sh (it installs Debian's chromium and sets BROWSERTEST=1)")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found (Debian package chromium): dnspub/ui/browsertest/run.sh installs it")
	}
	return path
}

// chromium runs headless Chromium on url with args and returns its
// stdout and the console messages it logged.
func chromium(t *testing.T, bin, url string, args ...string) (stdout []byte, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1280,3200"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, "CONSOLE") {
			console = append(console, l)
		}
	}
	return out.Bytes(), console
}

// validate runs HTML Tidy on the page as served (to token as a bearer
// token, when not ""): no error, no warning.
func validate(t *testing.T, url, token string) {
	t.Helper()
	tidy, err := exec.LookPath("tidy")
	if err != nil {
		t.Fatal("tidy not found (Debian package tidy): dnspub/ui/browsertest/run.sh installs it")
	}
	code, body := fetch(t, url, token)
	if code != 200 {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	cmd := exec.Command(tidy, "-q", "-e", "-")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("tidy finds problems in %s (%v):\n%s", url, err, out)
	}
}

func artifactDir(t *testing.T) string {
	dir := os.Getenv("CI_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWebViewInChromium(t *testing.T) {
	bin := needChromium(t)
	base := serve(t)
	shots := artifactDir(t)
	for _, page := range []struct{ name, path string }{
		{"index", "/ui/"},
		{"service-echo", "/ui/zones/policies.test/services/echo.policies.test"},
	} {
		validate(t, base+page.path, "")
		dom, console := chromium(t, bin, base+page.path, "--dump-dom")
		if len(console) > 0 {
			t.Errorf("%s: the browser logged console messages:\n%s", page.path, strings.Join(console, "\n"))
		}
		doc, err := html.Parse(bytes.NewReader(dom))
		if err != nil {
			t.Fatal(err)
		}
		if page.name == "index" {
			checkIndex(t, doc)
		} else {
			checkService(t, doc)
		}
		png := filepath.Join(shots, page.name+".png")
		chromium(t, bin, base+page.path, "--screenshot="+png, "--hide-scrollbars")
		if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 2000 {
			t.Errorf("%s: no screenshot at %s (%v)", page.path, png, err)
		} else {
			t.Logf("screenshot: %s (%d bytes)", png, len(b))
		}
	}
}

// TestWebViewFromAStoreInChromium: with serve --store, the view is on
// the admin listener behind its tokens. A browser sent to a service page
// is sent to /ui/login, signs in with the form, lands on the page it
// asked for, and sees the resourceVersions of what is served beside the
// serial. One browser, driven through the DevTools protocol, does it all.
func TestWebViewFromAStoreInChromium(t *testing.T) {
	bin := needChromium(t)
	base, token := serveStore(t)
	shots := artifactDir(t)
	zoneRV := resourceVersion(t, base, "/v1/zones/policies.test", token)
	echoRV := resourceVersion(t, base, "/v1/zones/policies.test/services/echo", token)
	echo := "/ui/zones/policies.test/services/echo.policies.test"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, body := fetch(t, base+echo, token); code == 200 && strings.Contains(body, `<span id="rv">`+echoRV+`</span>`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not show echo's resourceVersion %s within 5s", echo, echoRV)
		}
	}
	validate(t, base+echo, token)

	b := startBrowser(t, bin)
	p := b.newPage()
	p.navigate(base + echo)
	if got := p.eval("location.pathname"); got != "/ui/login" {
		t.Fatalf("a browser without a token is at %s, want /ui/login", got)
	}
	js, _ := json.Marshal(token)
	p.load("signing in", func() {
		p.eval(`document.getElementById("token").value = ` + string(js) + `; document.forms[0].submit()`)
	})
	if got := p.eval("location.pathname"); got != echo {
		t.Fatalf("signed in, the browser is at %s, want %s", got, echo)
	}
	for _, pg := range []struct{ name, path string }{{"store-service-echo", echo}, {"store-index", "/ui/"}} {
		if pg.path != echo {
			p.navigate(base + pg.path)
		}
		doc, err := html.Parse(strings.NewReader(p.eval("document.documentElement.outerHTML")))
		if err != nil {
			t.Fatal(err)
		}
		if pg.path == echo {
			checkService(t, doc)
			if rv := byID(doc, "rv"); rv == nil || text(rv) != echoRV {
				t.Errorf("the service page shows no resourceVersion %s for echo", echoRV)
			}
			if rv := byID(doc, "zone-rv"); rv == nil || text(rv) != zoneRV {
				t.Errorf("the service page shows no zone resourceVersion %s", zoneRV)
			}
		} else {
			checkIndex(t, doc)
			if rv := find(doc, "td", "rv"); len(rv) != 1 || text(rv[0]) != zoneRV {
				t.Errorf("the index shows zone resourceVersions %v, want %s", texts(rv), zoneRV)
			}
		}
		png := filepath.Join(shots, pg.name+".png")
		if err := os.WriteFile(png, p.screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", png)
	}
	// The policy page lists the services the policy changes; the service
	// page shows each choice's config beside its bar; and every link of
	// every page the view links to resolves, as the browser follows it.
	p.navigate(base + "/ui/zones/policies.test/policies/retries")
	if n := p.eval(`String(document.querySelectorAll("#affected tr.affected a").length)`); n == "0" {
		t.Errorf("the policy page lists no service it changes")
	}
	if got := p.eval(`Array.from(document.querySelectorAll("#affected tr.affected a"), a => a.textContent).join(",")`); !strings.Contains(got, "echo") {
		t.Errorf("the retries policy page lists %q, want echo among them", got)
	}
	png := filepath.Join(shots, "store-policy-retries.png")
	if err := os.WriteFile(png, p.screenshot(), 0o644); err != nil {
		t.Fatal(err)
	}
	p.navigate(base + echo)
	if n := p.eval(`String(document.querySelectorAll("#split .split ul.configs code.config").length)`); n == "0" {
		t.Errorf("the service page shows no config beside its bars")
	}
	if pages := crawlInBrowser(t, p, base, token, "/ui/"); len(pages) < 5 {
		t.Errorf("crawled %d pages: %v", len(pages), pages)
	}
	if logged := b.logged(); len(logged) > 0 {
		t.Errorf("the browser logged console messages:\n%s", strings.Join(logged, "\n"))
	}
}

func byID(n *html.Node, id string) *html.Node {
	if n.Type == html.ElementNode && attr(n, "id") == id {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := byID(c, id); f != nil {
			return f
		}
	}
	return nil
}

func checkIndex(t *testing.T, doc *html.Node) {
	zones := find(doc, "tr", "zone")
	if len(zones) != 1 || !strings.HasPrefix(text(zones[0]), "policies.test. ") {
		t.Errorf("the index lists zones %v", texts(zones))
	}
	if n := len(find(doc, "tr", "service")); n != 3 {
		t.Errorf("the index lists %d services, want 3", n)
	}
}

func checkService(t *testing.T, doc *html.Node) {
	fields := find(doc, "tr", "field")
	if len(fields) < 10 {
		t.Fatalf("%d values in the final config", len(fields))
	}
	var byPolicy int
	for _, f := range fields {
		value, origin := find(f, "td", "value"), find(f, "td", "origin")
		if len(value) != 1 || len(origin) != 1 || text(value[0]) == "" || text(origin[0]) == "" {
			t.Errorf("a value without its origin beside it: %q", text(f))
			continue
		}
		if strings.HasPrefix(text(origin[0]), "policy ") {
			byPolicy++
		}
	}
	if byPolicy == 0 {
		t.Error("no value is shown as set by a policy")
	}
	bars := find(doc, "div", "bar")
	if len(bars) < 2 {
		t.Fatalf("%d split bars", len(bars))
	}
	for _, b := range bars {
		sum := 0
		for _, s := range find(b, "span", "seg") {
			p, err := strconv.Atoi(attr(s, "data-percent"))
			if err != nil {
				t.Fatalf("segment %q: %v", text(s), err)
			}
			sum += p
		}
		if sum != 100 {
			t.Errorf("a split adds up to %d %%: %s", sum, text(b.Parent))
		}
	}
	if page := text(doc); !strings.Contains(page, "canary-1") || !strings.Contains(page, "RDATA") {
		t.Error("the page does not name the canary host or the record's size")
	}
}

func find(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ") {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		b.WriteByte(' ')
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func texts(ns []*html.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%q", text(n)))
	}
	return out
}
