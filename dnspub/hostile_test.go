package dnspub

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/internal/promtest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSpoofableEventsLogBounded: signed queries with unknown keys,
// refused transfers, and IXFR over UDP from an allowed address (whose
// source anyone can forge), are all counted but logged a burst and then
// about once a second each (issue 11, item 6).
func TestSpoofableEventsLogBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, baseConfig("allow: [192.0.2.0/24, 127.0.0.2]"), func(o *Options) { o.Registerer = reg })
	// Over TCP, so that none is lost on the way; pipelined in batches.
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 2000
	start := time.Now()
	for batch := 0; batch < n; batch += 100 {
		var msgs [][]byte
		for i := batch; i < batch+100; i++ {
			q := new(dns.Msg)
			q.SetQuestion("echo.example.test.", dns.TypeA)
			q.Id = uint16(i)
			q.SetTsig("stranger.", dns.HmacSHA256, 300, time.Now().Unix())
			b, _, err := dns.TsigGenerate(q, testSecret, "", false)
			if err != nil {
				t.Fatal(err)
			}
			x := new(dns.Msg)
			x.SetIxfr("example.test.", 1, "ns.", "h.") // refused: not in allow
			msgs = append(msgs, b, pack(t, x))
		}
		writeTCP(t, c, msgs...)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for range msgs {
			if _, err := readTCP(t, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// IXFR over UDP from 127.0.0.2, which may transfer: answered with the
	// SOA, one at a time so that none is lost.
	u, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.2")}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ts.addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	buf := make([]byte, 65535)
	for i := 0; i < n; i++ {
		x := new(dns.Msg)
		x.SetIxfr("example.test.", 1, "ns.", "h.")
		x.Id = uint16(i)
		if _, err := u.Write(pack(t, x)); err != nil {
			t.Fatal(err)
		}
		u.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := u.Read(buf); err != nil {
			t.Fatalf("IXFR over UDP %d: %v", i, err)
		}
	}
	waitFor(t, "every packet counted", func() bool {
		m := promtest.Gather(t, reg)
		return m[`grpc_config_dns_tsig_failures_total{error="BADKEY"}`] == n &&
			m[`grpc_config_dns_transfers_total{result="refused",type="ixfr"}`] == n &&
			m[`grpc_config_dns_transfers_total{result="ok",type="ixfr_udp"}`] == n
	})
	elapsed := time.Since(start).Seconds()
	logs := ts.logs.String()
	limit := 10 + int(elapsed) + 1
	for _, msg := range []string{"TSIG check failed", "zone transfer refused", `msg="zone transfer" zone=example.test. type=ixfr_udp`} {
		if got := strings.Count(logs, msg); got > limit || got < 10 {
			t.Errorf("%d %q records for %d events in %.1fs, want 10..%d", got, msg, n, elapsed, limit)
		}
	}
	if !strings.Contains(logs, "similar_suppressed=") {
		t.Error("no record says how many were left out")
	}
}

func TestLogLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLogLimiter(2, time.Second)
	l.now = func() time.Time { return now }
	var got []string
	for i := range 6 {
		ok, n := l.allow("a")
		got = append(got, fmt.Sprint(ok, n))
		if i == 3 {
			now = now.Add(1500 * time.Millisecond)
		}
	}
	if ok, _ := l.allow("b"); !ok {
		t.Error("kinds share a budget")
	}
	want := "true 0,true 0,false 0,false 0,true 2,false 0"
	if strings.Join(got, ",") != want {
		t.Errorf("got %s, want %s", strings.Join(got, ","), want)
	}
}

// dialFrom opens a TCP connection to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d, c sending
// nothing.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (err != nil && strings.Contains(err.Error(), "reset"))
}

// works reports whether c answers a query.
func works(t *testing.T, c net.Conn) bool {
	q := new(dns.Msg)
	q.SetQuestion("echo.example.test.", dns.TypeA)
	writeTCP(t, c, pack(t, q))
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	r, err := readTCP(t, c)
	return err == nil && len(r.Answer) == 1
}

// TestTCPConnectionsPerAddress: one client address cannot hold more than
// its share of the TCP slots; another address still gets in (issue 11,
// item 8).
func TestTCPConnectionsPerAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, strings.Replace(baseConfig(""), "server: {tcpIdleTimeout: 1s}", "server: {tcpIdleTimeout: 10s, maxTCPConnectionsPerAddress: 3}", 1),
		func(o *Options) { o.Registerer = reg })
	var held []net.Conn
	for range 3 {
		c := dialFrom(t, "127.0.0.1", ts.addr)
		if !works(t, c) {
			t.Fatal("a connection within the share does not work")
		}
		held = append(held, c)
	}
	if c := dialFrom(t, "127.0.0.1", ts.addr); !closedWithin(c, 2*time.Second) {
		t.Error("a fourth connection from the same address was kept")
	}
	if c := dialFrom(t, "127.0.0.2", ts.addr); !works(t, c) {
		t.Error("another address was refused")
	}
	if got := promtest.Gather(t, reg)[`grpc_config_dns_tcp_refused_total{limit="per_address"}`]; got != 1 {
		t.Errorf("tcp_refused_total{per_address} = %v", got)
	}
	held[0].Close()
	waitFor(t, "the slot freed", func() bool {
		c := dialFrom(t, "127.0.0.1", ts.addr)
		return works(t, c)
	})
}

// TestIdleTimeoutUnderPressure: when three quarters of the TCP slots are
// taken, idle connections, those already waiting included, are closed
// after a second instead of tcpIdleTimeout (RFC 7766 §6.2.3), while a
// busy one keeps working.
func TestIdleTimeoutUnderPressure(t *testing.T) {
	ts := startServer(t, strings.Replace(baseConfig(""), "server: {tcpIdleTimeout: 1s}", "server: {tcpIdleTimeout: 30s, maxTCPConnections: 8}", 1), nil)
	var idle []net.Conn
	for i := range 5 {
		idle = append(idle, dialFrom(t, fmt.Sprintf("127.0.0.%d", 10+i), ts.addr))
	}
	busy := dialFrom(t, "127.0.0.20", ts.addr) // the sixth: pressure
	// The busy connection asks every 200ms (less than the pressure
	// timeout) while the idle ones are watched.
	busyErr := make(chan string, 1)
	go func() {
		for range 10 {
			q := new(dns.Msg)
			q.SetQuestion("echo.example.test.", dns.TypeA)
			b, _ := q.Pack()
			busy.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := busy.Write(append([]byte{byte(len(b) >> 8), byte(len(b))}, b...)); err != nil {
				busyErr <- err.Error()
				return
			}
			if _, err := io.ReadFull(busy, make([]byte, 2)); err != nil {
				busyErr <- err.Error()
				return
			}
			busy.Read(make([]byte, 512))
			time.Sleep(200 * time.Millisecond)
		}
		busyErr <- ""
	}()
	start := time.Now()
	for _, c := range idle {
		if !closedWithin(c, 5*time.Second) {
			t.Fatalf("an idle connection outlived the pressure timeout (%v)", time.Since(start))
		}
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("idle connections closed after %v, want about a second", d)
	}
	if err := <-busyErr; err != "" {
		t.Errorf("the busy connection stopped working: %s", err)
	}
}

// TestIdleFloodLeavesRoomForQueries: connections that send nothing, from
// more addresses than the per-address share can stop, and reopened soon
// after they are closed, keep every TCP slot taken. A client that connects
// and asks must still be answered: the newcomer takes the slot of the
// connection that has waited longest without a query (RFC 7766 §6.2.3).
// Before, it was refused whenever the flood had refilled the slots (10 of
// 10 queries failed).
//
// Each flooder waits pause before it reconnects: a newcomer's slot then
// lasts at least about pause·slots/flooders, which must cover the time the
// test's client, on a busy machine under the race detector, takes from its
// connect to its query.
func TestIdleFloodLeavesRoomForQueries(t *testing.T) {
	const slots, flooders, addresses, pause = 32, 48, 64, 100 * time.Millisecond
	reg := prometheus.NewRegistry()
	ts := startServer(t, strings.Replace(baseConfig(""), "server: {tcpIdleTimeout: 1s}",
		fmt.Sprintf("server: {tcpIdleTimeout: 30s, maxTCPConnections: %d, maxTCPConnectionsPerAddress: 4}", slots), 1),
		func(o *Options) { o.Registerer = reg })
	stop := make(chan struct{})
	done := make(chan struct{})
	for w := range flooders {
		go func() {
			defer func() { done <- struct{}{} }()
			d := net.Dialer{Timeout: time.Second}
			for i := w; ; i += flooders {
				d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i%addresses))}
				if c, err := d.Dial("tcp", ts.addr); err == nil {
					// Hold it, sending nothing, until the server closes it
					// (or the test ends).
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					c.Read(make([]byte, 1))
					c.Close()
				}
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
			}
		}()
	}
	defer func() {
		close(stop)
		for range flooders {
			<-done
		}
	}()
	waitFor(t, "the flood to take every slot", func() bool {
		return promtest.Gather(t, reg)["grpc_config_dns_tcp_connections"] == slots
	})
	failed := 0
	for i := range 10 {
		time.Sleep(50 * time.Millisecond)
		c, err := net.DialTimeout("tcp", ts.addr, time.Second)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		q := new(dns.Msg)
		q.SetQuestion("echo.example.test.", dns.TypeA)
		writeTCP(t, c, pack(t, q))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if r, err := readTCP(t, c); err != nil || len(r.Answer) != 1 {
			t.Logf("query %d: %v", i, err)
			failed++
		}
		c.Close()
	}
	if failed > 0 {
		t.Errorf("%d of 10 queries failed under the flood", failed)
	}
	if n := promtest.Gather(t, reg)["grpc_config_dns_tcp_evicted_total"]; n < 10 {
		t.Errorf("tcp_evicted_total = %v, want at least one for each query", n)
	}
}

// TestEvictionOrder: when every slot is taken, the newcomer takes the slot
// of a connection that never sent a query before that of one that did,
// however long the latter has been idle; among those that did, of the one
// idle longest.
func TestEvictionOrder(t *testing.T) {
	ts := startServer(t, strings.Replace(baseConfig(""), "server: {tcpIdleTimeout: 1s}", "server: {tcpIdleTimeout: 30s, maxTCPConnections: 2}", 1), nil)
	// allWaiting: every connection's server waits for a query, so that
	// the next newcomer finds them as the client left them.
	allWaiting := func(n int) func() bool {
		return func() bool {
			ts.connMu.Lock()
			defer ts.connMu.Unlock()
			for c := range ts.conns {
				if c.idleSince.Load() == 0 {
					return false
				}
			}
			return len(ts.conns) == n
		}
	}
	asked := dialFrom(t, "127.0.0.11", ts.addr)
	if !works(t, asked) {
		t.Fatal("the first connection does not work")
	}
	silent := dialFrom(t, "127.0.0.12", ts.addr)
	waitFor(t, "two connections waiting", allWaiting(2))
	first := dialFrom(t, "127.0.0.13", ts.addr)
	if !works(t, first) {
		t.Fatal("a newcomer was refused")
	}
	if !closedWithin(silent, 2*time.Second) {
		t.Fatal("the connection that never asked was kept")
	}
	if !works(t, asked) { // now idle for less time than first
		t.Fatal("a connection that asked was closed for a newcomer while one that never asked was open")
	}
	waitFor(t, "two connections waiting", allWaiting(2))
	// The server stamps a connection idle when its goroutine waits again,
	// which a busy machine can delay past the next query's answer: ask
	// again until asked's wait began after first's.
	idleOf := func(peer string) int64 {
		ts.connMu.Lock()
		defer ts.connMu.Unlock()
		for c := range ts.conns {
			if strings.HasPrefix(c.RemoteAddr().String(), peer+":") {
				return c.idleSince.Load()
			}
		}
		return 0
	}
	for range 20 {
		if idleOf("127.0.0.11") > idleOf("127.0.0.13") {
			break
		}
		if !works(t, asked) {
			t.Fatal("a connection that asked was closed")
		}
		waitFor(t, "two connections waiting", allWaiting(2))
	}
	second := dialFrom(t, "127.0.0.14", ts.addr)
	if !works(t, second) {
		t.Fatal("the second newcomer was refused")
	}
	if !closedWithin(first, 2*time.Second) {
		t.Fatal("the connection idle longest was kept")
	}
	if !works(t, asked) {
		t.Fatal("the connection idle for less time was closed")
	}
}
