package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// serve builds the CLI, starts `serve` on loopback with the policies
// example, and returns the web view's base URL. The server is stopped
// when the test ends.
func serve(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "grpc-config-dns")
	build := exec.Command("go", "build", "-o", bin, "github.com/grpc-config-dns/grpc-config-dns/cmd/grpc-config-dns")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building grpc-config-dns: %v\n%s", err, out)
	}
	dnsAddr, httpAddr := freeAddr(t), freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "serve", "--config", "../../../testdata/publisher/policies.yaml", "--state", "-",
		"--listen", dnsAddr, "--metrics", httpAddr)
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
	})
	base := "http://" + httpAddr
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/ui/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer on %s within 15s:\n%s", base, log.String())
		}
	}
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

// validate runs HTML Tidy on the page as served: no error, no warning.
func validate(t *testing.T, url string) {
	t.Helper()
	tidy, err := exec.LookPath("tidy")
	if err != nil {
		t.Fatal("tidy not found (Debian package tidy): dnspub/ui/browsertest/run.sh installs it")
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cmd := exec.Command(tidy, "-q", "-e", "-")
	cmd.Stdin = resp.Body
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
		validate(t, base+page.path)
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
