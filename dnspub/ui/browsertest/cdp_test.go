package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// browser is headless Chromium driven through the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ended by a NUL byte on
// file descriptors 3 and 4), for what the command line cannot do: sign
// in with a form, then read the page it leads to. It needs no port and no
// WebSocket client.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File // our end of the browser's fd 3
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan message
	events  chan message
	// console collects what the page logged: console calls, uncaught
	// exceptions, and the browser's warnings and errors (a blocked
	// style, a missing asset).
	console []string
}

type message struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts Chromium; it is stopped when the test ends.
func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	cmdIn, in, err := os.Pipe() // the browser reads commands on fd 3
	if err != nil {
		t.Fatal(err)
	}
	out, cmdOut, err := os.Pipe() // and writes answers on fd 4
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,3200", "--remote-debugging-pipe", "about:blank")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{cmdIn, cmdOut}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdIn.Close()
	cmdOut.Close()
	b := &browser{t: t, cmd: cmd, in: in, waiting: map[int]chan message{}, events: make(chan message, 256)}
	go b.read(out)
	t.Cleanup(func() {
		in.Close() // Chromium exits when its pipe closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		out.Close()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", stderr.String())
		}
	})
	return b
}

func (b *browser) read(out *os.File) {
	r := bufio.NewReader(out)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			close(b.events)
			return
		}
		var m message
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		b.record(m)
		select {
		case b.events <- m:
		default: // nobody waits for this one
		}
	}
}

// record keeps what the page logged.
func (b *browser) record(m message) {
	var p struct {
		Type string `json:"type"`
		Args []struct {
			Value any `json:"value"`
		} `json:"args"`
		Entry struct {
			Level, Text, URL string
		} `json:"entry"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	json.Unmarshal(m.Params, &p)
	var line string
	switch m.Method {
	case "Runtime.consoleAPICalled":
		line = fmt.Sprintf("console.%s %v", p.Type, p.Args)
	case "Runtime.exceptionThrown":
		line = "uncaught exception: " + p.ExceptionDetails.Text
	case "Log.entryAdded":
		if p.Entry.Level == "warning" || p.Entry.Level == "error" {
			line = fmt.Sprintf("%s: %s (%s)", p.Entry.Level, p.Entry.Text, p.Entry.URL)
		}
	}
	if line != "" {
		b.mu.Lock()
		b.console = append(b.console, line)
		b.mu.Unlock()
	}
}

// call sends a command (to the page of session, or to the browser when
// session is "") and decodes its result into result (when not nil).
func (b *browser) call(session, method string, params, result any) {
	b.t.Helper()
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	p, _ := json.Marshal(params)
	msg, _ := json.Marshal(message{ID: id, SessionID: session, Method: method, Params: p})
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		b.t.Fatalf("%s: writing to chromium: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			b.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				b.t.Fatalf("%s: %v in %s", method, err, m.Result)
			}
		}
	case <-time.After(30 * time.Second):
		b.t.Fatalf("%s: chromium did not answer within 30s", method)
	}
}

// page is one tab.
type page struct {
	b       *browser
	session string
}

// newPage opens a tab and listens to its events.
func (b *browser) newPage() *page {
	b.t.Helper()
	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	p := &page{b: b, session: attached.SessionID}
	for _, domain := range []string{"Page", "Runtime", "Log"} {
		b.call(p.session, domain+".enable", nil, nil)
	}
	return p
}

// load runs action, which makes the page load another document (a
// navigation, a form sent), and waits until it has loaded.
func (p *page) load(what string, action func()) {
	p.b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for drained := false; !drained; { // events of loads before this one
		select {
		case <-p.b.events:
		default:
			drained = true
		}
	}
	action()
	for {
		select {
		case m, ok := <-p.b.events:
			if !ok {
				p.b.t.Fatalf("%s: chromium exited", what)
			}
			if m.SessionID == p.session && m.Method == "Page.loadEventFired" {
				return
			}
		case <-ctx.Done():
			p.b.t.Fatalf("%s: the page did not load within 30s", what)
		}
	}
}

func (p *page) navigate(url string) {
	p.b.t.Helper()
	p.load("loading "+url, func() { p.b.call(p.session, "Page.navigate", map[string]any{"url": url}, nil) })
}

// eval evaluates a JavaScript expression in the page and returns its
// value as a string.
func (p *page) eval(expr string) string {
	p.b.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		p.b.t.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails.Text)
	}
	if s, ok := r.Result.Value.(string); ok {
		return s
	}
	return fmt.Sprint(r.Result.Value)
}

// screenshot returns a PNG of the whole page.
func (p *page) screenshot() []byte {
	p.b.t.Helper()
	var r struct{ Data string }
	p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		p.b.t.Fatal(err)
	}
	return png
}

// logged returns what the browser's pages logged so far.
func (b *browser) logged() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.console)
}
