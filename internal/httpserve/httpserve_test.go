package httpserve

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func start(t *testing.T, h http.Handler, l Limits) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", h, l)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// get sends one keep-alive request on c and reads the answer.
func get(t *testing.T, c net.Conn) error {
	t.Helper()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "ok" {
		return err
	}
	return nil
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d (after
// whatever it writes first, such as a 408).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(c)
	return !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestSlowHeadersAreCut: a client that sends its headers a byte at a time
// (slowloris) loses its connection after ReadHeaderTimeout.
func TestSlowHeadersAreCut(t *testing.T) {
	s := start(t, ok, Limits{ReadHeaderTimeout: 200 * time.Millisecond})
	c := dial(t, s)
	io.WriteString(c, "GET / HTTP/1.1\r\nHo")
	if !closedWithin(c, 2*time.Second) {
		t.Fatal("a connection with unfinished headers was kept")
	}
}

// TestIdleConnectionsDoNotLockOut: keep-alive connections holding every
// slot give way to a new client.
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 3})
	var idle []net.Conn
	for range 3 {
		c := dial(t, s)
		if err := get(t, c); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	if err := get(t, dial(t, s)); err != nil {
		t.Fatalf("a new client was locked out by idle connections: %v", err)
	}
	closed := 0
	for _, c := range idle {
		if closedWithin(c, 500*time.Millisecond) {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d idle connections closed, want 1 (the oldest)", closed)
	}
}

// TestBusySlotsRefuseNewConnections: when every slot is in an
// authenticated request, a new connection is closed at once (and counted)
// rather than queued.
func TestBusySlotsRefuseNewConnections(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Authenticated(r)
		entered <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	})
	s := start(t, slow, Limits{MaxConns: 2})
	done := make(chan error, 2)
	for range 2 {
		c := dial(t, s)
		go func() { done <- get(t, c) }()
		<-entered
	}
	c := dial(t, s)
	if !closedWithin(c, 2*time.Second) {
		t.Error("a connection beyond the limit was kept")
	}
	if s.Refused() != 1 {
		t.Errorf("Refused() = %d", s.Refused())
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	// The clients have their answers; the server marks the connections
	// idle a moment later, and then a new client closes one.
	for try := 0; ; try++ {
		err := get(t, dial(t, s))
		if err == nil {
			break
		}
		if try == 20 {
			t.Fatalf("after the busy requests: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// selfSigned is a certificate for 127.0.0.1, made for one test.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSConnectionsAreReleased: over TLS, http.Server reports the states
// of the *tls.Conn, not of the connection the listener handed out; they
// were not recognised, so closed connections kept their slots and, after
// MaxConns connections in all, every new one was refused.
func TestTLSConnectionsAreReleased(t *testing.T) {
	s, err := Listen("127.0.0.1:0", ok, Limits{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	go s.ServeTLS("", "")
	t.Cleanup(func() { s.Close() })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	}}
	for i := range 10 {
		resp, err := client.Get("https://" + s.Addr().String() + "/")
		if err != nil {
			t.Fatalf("request %d of 10, each on a connection of its own, after the others closed: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("request %d: %q", i+1, b)
		}
	}
}

// held opens a connection that sends nothing.
func held(t *testing.T, s *Server) net.Conn {
	t.Helper()
	return dial(t, s)
}

// slow opens a connection that sends a request header a byte every 20 ms,
// never finishing it, until the server closes it or the test ends.
func slow(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c := dial(t, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		header := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "
		for i := 0; ; i++ {
			b := byte('a')
			if i < len(header) {
				b = header[i]
			}
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c
}

// TestHeldConnectionsGiveWay: connections that send nothing used to keep
// every slot until ReadHeaderTimeout, and a new client was refused; now
// it takes the slot of the oldest of them, however many come.
func TestHeldConnectionsGiveWay(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 4, ReadHeaderTimeout: time.Minute, BusyHeaderTimeout: time.Minute})
	var hs []net.Conn
	for range 12 {
		hs = append(hs, held(t, s))
	}
	time.Sleep(50 * time.Millisecond) // all accepted
	if err := get(t, dial(t, s)); err != nil {
		t.Fatalf("a new client was locked out by connections that send nothing: %v", err)
	}
	// The oldest gave way first; the newest three, then the new client's
	// (now idle), hold the slots.
	for i, c := range hs[:9] {
		if !closedWithin(c, time.Second) {
			t.Errorf("held connection %d is open, want the oldest 9 of 12 closed", i+1)
		}
	}
	for i, c := range hs[9:] {
		if closedWithin(c, 100*time.Millisecond) {
			t.Errorf("held connection %d closed, want the newest 3 kept", 10+i)
		}
	}
	if s.Refused() != 0 {
		t.Errorf("Refused() = %d, want 0: no connection need be refused while one that sent no request can be closed", s.Refused())
	}
}

// TestSlowHeadersGiveWay: clients that send a header a byte at a time
// (slowloris) give way to a new client.
func TestSlowHeadersGiveWay(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 4, ReadHeaderTimeout: time.Minute, BusyHeaderTimeout: time.Minute})
	for range 8 {
		slow(t, s)
	}
	time.Sleep(100 * time.Millisecond)
	for i := range 3 {
		if err := get(t, dial(t, s)); err != nil {
			t.Fatalf("new client %d was locked out by slow headers: %v", i+1, err)
		}
	}
}

// TestSlowHeadersCutUnderPressure: while three quarters of the slots are
// taken, a connection has BusyHeaderTimeout, not ReadHeaderTimeout, to
// send its first request header, even with no new client to make room
// for: the oldest go until the server is no longer under pressure.
func TestSlowHeadersCutUnderPressure(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 8, ReadHeaderTimeout: time.Minute, BusyHeaderTimeout: 200 * time.Millisecond})
	var cs []net.Conn
	for range 7 { // under pressure from 6 of 8
		cs = append(cs, slow(t, s))
		time.Sleep(5 * time.Millisecond) // accepted in this order
	}
	for i, c := range cs[:2] {
		if !closedWithin(c, 2*time.Second) {
			t.Fatalf("slow header %d of 7 was kept past BusyHeaderTimeout with 7 of 8 slots taken", i+1)
		}
	}
	// 5 of 8 left: not under pressure, ReadHeaderTimeout again.
	time.Sleep(400 * time.Millisecond)
	for i, c := range cs[2:] {
		if closedWithin(c, 10*time.Millisecond) {
			t.Errorf("slow header %d of 7 was cut with %d of 8 slots taken", i+3, 5)
		}
	}
}

// TestUnprovenGoBeforeKeepAlive: a connection that has sent no complete
// request gives way before an idle keep-alive one, which has.
func TestUnprovenGoBeforeKeepAlive(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 4, ReadHeaderTimeout: time.Minute, BusyHeaderTimeout: time.Minute})
	var kept []net.Conn
	for range 2 {
		c := dial(t, s)
		if err := get(t, c); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, c)
	}
	held(t, s)
	slow(t, s)
	time.Sleep(50 * time.Millisecond)
	for range 2 {
		if err := get(t, dial(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range kept {
		if err := get(t, c); err != nil {
			t.Errorf("keep-alive connection %d was closed while unproven ones held slots: %v", i+1, err)
		}
	}
}

// slowHeader is the byte a slow client sends n-th: a request header that
// never ends.
func slowHeader(n int) byte {
	const header = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "
	if n < len(header) {
		return header[n]
	}
	return 'a'
}

// flood keeps n connections to s open until the test ends, opening a new
// one whenever the server closes one; the even ones send nothing, the odd
// ones a header a byte every 20 ms. It returns how many it opened so far.
func flood(t *testing.T, s *Server, n int) func() int64 {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for {
				// Stop is checked before every dial: under pressure the
				// server closes each new connection within the read
				// deadline below, so a client that only looked for it
				// after a timeout would redial forever.
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", s.Addr().String(), time.Second)
				if err != nil {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
						continue
					}
				}
				opened.Add(1)
				for b := 0; ; b++ {
					if i%2 == 1 {
						c.Write([]byte{slowHeader(b)})
					}
					c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
					if _, err := c.Read(buf); !isTimeout(err) {
						break // closed by the server
					}
					select {
					case <-stop:
						c.Close()
						return
					default:
					}
				}
				c.Close()
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	return opened.Load
}

// probe asks for / on a new connection, within d from the dial on.
func probe(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if string(b) != "ok" {
		return fmt.Errorf("%s %q", resp.Status, b)
	}
	return nil
}

// TestProbesAnswerThroughAFlood: 64 clients that hold connections against
// 8 slots, opening a new one whenever the server closes theirs: a probe on
// a new connection is answered, every time. (It waits its turn in the
// kernel's backlog behind the flood, about 0.1 s here; the bound is loose
// for a busy machine and the race detector. faults/http_test.go holds the
// real binary to 1 s.)
func TestProbesAnswerThroughAFlood(t *testing.T) {
	s := start(t, ok, Limits{MaxConns: 8, ReadHeaderTimeout: time.Minute})
	opened := flood(t, s, 64)
	time.Sleep(200 * time.Millisecond)
	var worst time.Duration
	for i := range 10 {
		t0 := time.Now()
		if err := probe(s.Addr().String(), 5*time.Second); err != nil {
			t.Fatalf("probe %d of 10 with 64 clients holding connections (%d opened): %v", i+1, opened(), err)
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the flood opened %d connections; the slowest probe took %v", opened(), worst.Round(time.Millisecond))
}

// authOK is ok, and it authenticates requests for /auth.
var authOK = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/auth" {
		Authenticated(r)
	}
	io.WriteString(w, "ok")
})

// getPath is get for path.
func getPath(t *testing.T, c net.Conn, path string) error {
	t.Helper()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// TestAuthenticatedKeptLongest: an idle keep-alive connection that
// authenticated is closed after those that did not, however long it has
// been idle.
func TestAuthenticatedKeptLongest(t *testing.T) {
	s := start(t, authOK, Limits{MaxConns: 2})
	admin, other := dial(t, s), dial(t, s)
	if err := getPath(t, admin, "/auth"); err != nil {
		t.Fatal(err)
	}
	if err := getPath(t, other, "/"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := get(t, dial(t, s)); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(other, time.Second) {
		t.Error("the unauthenticated idle connection was kept")
	}
	if err := getPath(t, admin, "/auth"); err != nil {
		t.Errorf("the authenticated connection, idle the longest, was closed before an unauthenticated one: %v", err)
	}
}

// slowBody opens a connection that sends a complete request header, so
// that its request is read, and then its body a byte every 20 ms: the
// server reads the body (to discard it) before it answers.
func slowBody(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c := dial(t, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			return
		}
		for {
			time.Sleep(20 * time.Millisecond)
			if _, err := c.Write([]byte{'a'}); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c
}

// TestStalledRequestsGiveWay: requests that never finish (a body sent a
// byte at a time) and did not authenticate give way to a new client,
// the oldest first.
func TestStalledRequestsGiveWay(t *testing.T) {
	s := start(t, authOK, Limits{MaxConns: 3, ReadTimeout: time.Minute})
	var cs []net.Conn
	for range 3 {
		cs = append(cs, slowBody(t, s))
		time.Sleep(50 * time.Millisecond) // in their requests, in this order
	}
	if err := get(t, dial(t, s)); err != nil {
		t.Fatalf("a new client was locked out by requests that never finish: %v", err)
	}
	if !closedWithin(cs[0], time.Second) {
		t.Error("the oldest stalled request was kept")
	}
	for i, c := range cs[1:] {
		if closedWithin(c, 10*time.Millisecond) {
			t.Errorf("stalled request %d of 3 was closed, want only the oldest", i+2)
		}
	}
	if s.Refused() != 0 {
		t.Errorf("Refused() = %d", s.Refused())
	}
}
