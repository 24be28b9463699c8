package dnspub

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func pack(t testing.TB, m *dns.Msg) []byte {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRawUDP sends packets no well-behaved client would: they get FORMERR
// or NOTIMP, and responses get no answer at all.
func TestRawUDP(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	c, err := net.Dial("udp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := new(dns.Msg)
	q.SetQuestion("echo.example.test.", dns.TypeA)
	q.Id = 0x1234
	good := pack(t, q)
	roundTrip := func(what string, msg []byte) *dns.Msg {
		t.Helper()
		c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 65535)
		n, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return r
	}
	two := append([]byte(nil), good...)
	two[5] = 2
	if r := roundTrip("QDCOUNT 2", two); r == nil || r.Rcode != dns.RcodeFormatError || r.Id != 0x1234 {
		t.Errorf("QDCOUNT 2: %v", r)
	}
	if r := roundTrip("truncated", good[:len(good)-3]); r == nil || r.Rcode != dns.RcodeFormatError {
		t.Errorf("truncated question: %v", r)
	}
	resp := append([]byte(nil), good...)
	resp[2] |= 0x80
	if r := roundTrip("response", resp); r != nil {
		t.Errorf("answered a response: %v", r)
	}
	if r := roundTrip("runt", good[:5]); r != nil {
		t.Errorf("answered a runt: %v", r)
	}
	// The socket still works.
	if r := roundTrip("good", good); r == nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("good query after garbage: %v", r)
	}
	if d := ts.metrics.stats.dropped[protoUDP].Load(); d != 2 {
		t.Errorf("dropped = %d, want 2", d)
	}
}

func writeTCP(t testing.TB, c net.Conn, msgs ...[]byte) {
	t.Helper()
	var buf []byte
	for _, m := range msgs {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(m)))
		buf = append(buf, m...)
	}
	if _, err := c.Write(buf); err != nil {
		t.Fatal(err)
	}
}

func readTCP(t testing.TB, c net.Conn) (*dns.Msg, error) {
	t.Helper()
	var l [2]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	return m, m.Unpack(b)
}

// TestTCPPipeliningAndIdleTimeout: queries sent back to back in one write
// are all answered, in order (RFC 7766 §6.2.1.1), on a connection that
// stays open past miekg's default of 128 queries, and an idle connection
// is closed after tcpIdleTimeout (1s here).
func TestTCPPipeliningAndIdleTimeout(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names := []string{"echo.example.test.", "nope.example.test.", "_grpc_config.big.example.test."}
	var msgs [][]byte
	for i := 0; i < 300; i++ {
		q := new(dns.Msg)
		q.SetQuestion(names[i%len(names)], dns.TypeTXT)
		q.Id = uint16(i)
		msgs = append(msgs, pack(t, q))
	}
	writeTCP(t, c, msgs...)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := 0; i < 300; i++ {
		r, err := readTCP(t, c)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if r.Id != uint16(i) || r.Question[0].Name != names[i%len(names)] {
			t.Fatalf("answer %d out of order: id %d %s", i, r.Id, r.Question[0].Name)
		}
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readTCP(t, c); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	if idle := time.Since(start); idle < 800*time.Millisecond || idle > 3*time.Second {
		t.Errorf("closed after %v idle, want about 1s", idle)
	}
}

// TestShutdown: Shutdown returns promptly with an idle TCP connection
// open, and the sockets are closed afterwards.
func TestShutdown(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/p.yaml"
	os.WriteFile(file, []byte(baseConfig("")), 0o644)
	s, err := New(Options{ConfigFile: file, Listen: "127.0.0.1:0", WatchInterval: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := new(dns.Msg)
	q.SetQuestion("echo.example.test.", dns.TypeA)
	writeTCP(t, c, pack(t, q))
	if _, err := readTCP(t, c); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if _, err := readTCP(t, c); err == nil {
		t.Error("connection still open after shutdown")
	}
	if _, err := net.Dial("tcp", s.Addr().String()); err == nil {
		t.Error("still accepting after shutdown")
	}
}

// TestTCPConnectionSeesReload: a connection opened before a reload answers
// its next query from the new zone. Secondaries keep their connection for
// the SOA check and the transfer that follow a NOTIFY.
func TestTCPConnectionSeesReload(t *testing.T) {
	ts := startServer(t, baseConfig(""), func(o *Options) {
		o.WatchInterval = 20 * time.Millisecond
		o.Debounce = 50 * time.Millisecond
	})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	soa := func() uint32 {
		q := new(dns.Msg)
		q.SetQuestion("example.test.", dns.TypeSOA)
		writeTCP(t, c, pack(t, q))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		r, err := readTCP(t, c)
		if err != nil || len(r.Answer) != 1 {
			t.Fatalf("SOA over the open connection: %v %v", r, err)
		}
		return r.Answer[0].(*dns.SOA).Serial
	}
	before := soa()
	ts.write(strings.Replace(baseConfig(""), "192.0.2.1,", "192.0.2.7,", 1))
	waitFor(t, "the reload", func() bool { return ts.serial() != before })
	if got, want := soa(), ts.serial(); got != want {
		t.Errorf("the open connection answers serial %d, the zone is at %d", got, want)
	}
}
