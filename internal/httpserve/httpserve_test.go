package httpserve

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/http"
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

// TestBusySlotsRefuseNewConnections: when every slot is in a request, a
// new connection is closed at once (and counted) rather than queued.
func TestBusySlotsRefuseNewConnections(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	if err := get(t, dial(t, s)); err != nil {
		t.Errorf("after the busy requests: %v", err)
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
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
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
