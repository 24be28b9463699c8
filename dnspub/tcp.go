package dnspub

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// TCP connections are a scarce resource that clients can hold without
// sending anything (RFC 7766 §6.2.3). Three limits keep one client from
// taking them all: a total (server.maxTCPConnections), a share per client
// address (server.maxTCPConnectionsPerAddress; an IPv6 client counts by
// its /64, which one host commonly holds whole), and, under pressure (three
// quarters of the total in use), an idle timeout cut to pressureIdle for
// every connection, including those already waiting. Clients from many
// addresses that reconnect as soon as they are closed still keep every
// slot taken; so when all are, a new connection takes the slot of the one
// that has waited longest, preferring those that never sent a whole query,
// rather than being refused.

// pressureIdle is the idle timeout while connections are scarce.
const pressureIdle = time.Second

// tcpConn is a connection being served.
type tcpConn struct {
	net.Conn
	group netip.Prefix
	// idleSince is when the connection began to wait for a query (Unix
	// nanoseconds; from its accept for the first), or 0 while one is
	// answered.
	idleSince atomic.Int64
	// asked is set once the connection has sent a whole query.
	asked atomic.Bool
}

// addressGroup is what a client's connections count against.
func addressGroup(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip, _ := netip.AddrFromSlice(ta.IP)
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// serveTCP accepts connections until the listener is closed.
func (s *Server) serveTCP() {
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of file descriptors: let others close
			continue
		}
		tc, evicted, why := s.admit(c)
		if evicted != nil {
			evicted.Close()
			s.metrics.tcpEvicted.Inc()
			if ok, n := s.limiter.allow("tcp-evicted"); ok {
				s.log.Warn("all TCP connections taken: closed the one idle longest for a new one", "peer", evicted.RemoteAddr().String(), "asked", evicted.asked.Load(), "similar_suppressed", n)
			}
		}
		if tc == nil {
			c.Close()
			s.metrics.tcpRefused.WithLabelValues(why).Inc()
			if ok, n := s.limiter.allow("tcp-refused"); ok {
				s.log.Warn("TCP connection refused", "peer", c.RemoteAddr().String(), "why", why, "similar_suppressed", n)
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.release(tc)
			s.serveConn(tc)
		}()
	}
}

// admit counts a new connection in, or says why it is refused. When every
// slot is taken, it counts out the connection that has waited longest for
// a query, which the caller closes.
func (s *Server) admit(c net.Conn) (tc, evicted *tcpConn, why string) {
	cfg := s.snap.Load().cfg.Server
	tc = &tcpConn{Conn: c, group: addressGroup(c.RemoteAddr())}
	// Waiting from now: a connection whose server has yet to run is no
	// more entitled to its slot than one that has waited as long.
	tc.idleSince.Store(time.Now().UnixNano())
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.perGroup[tc.group] >= cfg.MaxTCPConnectionsPerAddress {
		return nil, nil, "per_address"
	}
	if len(s.conns) >= cfg.MaxTCPConnections {
		if evicted = s.idleLongest(); evicted == nil {
			return nil, nil, "total" // every connection is being answered
		}
		s.forget(evicted)
	}
	s.conns[tc] = struct{}{}
	s.perGroup[tc.group]++
	s.metrics.tcpConns.Inc()
	select {
	case <-s.done:
		c.SetReadDeadline(time.Now()) // shutting down: serve nothing more
	default:
	}
	if 4*len(s.conns) >= 3*cfg.MaxTCPConnections {
		// Under pressure: connections already waiting get the short
		// timeout too, counted from when they began to wait.
		for o := range s.conns {
			if since := o.idleSince.Load(); since != 0 {
				o.SetReadDeadline(time.Unix(0, since).Add(pressureIdle))
			}
		}
	}
	return tc, evicted, ""
}

// evictPeeks bounds the connections idleLongest looks into for a query
// that has arrived, each a system call or two.
const evictPeeks = 4

// idleLongest returns the connection to close for a newcomer when every
// slot is taken (connMu held): of those waiting for a query, the one that
// has waited longest, preferring those that never sent one, and passing
// over any whose next query has already reached the kernel (its server is
// about to read it: a client that asks as soon as it connects is not
// closed in that moment). nil when every connection is being answered, or
// the few looked into all have a query waiting.
func (s *Server) idleLongest() *tcpConn {
	var passed [evictPeeks]*tcpConn
	for i := range passed {
		c := s.oldestWaiting(passed[:i])
		if c == nil || !queryWaiting(c.Conn) {
			return c
		}
		passed[i] = c
	}
	return nil
}

// oldestWaiting returns the connection that has waited longest for a
// query, among those that never sent one if any, but for those in except
// (connMu held).
func (s *Server) oldestWaiting(except []*tcpConn) *tcpConn {
	var best *tcpConn
	var bestSince int64
	bestAsked := true
	for c := range s.conns {
		since := c.idleSince.Load()
		if since == 0 || slices.Contains(except, c) {
			continue
		}
		asked := c.asked.Load()
		if best == nil || (bestAsked && !asked) || (asked == bestAsked && since < bestSince) {
			best, bestSince, bestAsked = c, since, asked
		}
	}
	return best
}

// release counts a connection out when its server ends, unless admit
// already did.
func (s *Server) release(tc *tcpConn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if _, ok := s.conns[tc]; ok {
		s.forget(tc)
	}
}

// forget counts a connection out (connMu held).
func (s *Server) forget(tc *tcpConn) {
	delete(s.conns, tc)
	if s.perGroup[tc.group]--; s.perGroup[tc.group] == 0 {
		delete(s.perGroup, tc.group)
	}
	s.metrics.tcpConns.Dec()
}

// idleTimeout is how long a connection may wait for its next query, or for
// the rest of one: the configured timeout, cut under pressure.
func (s *Server) idleTimeout(cfg *model.Server) time.Duration {
	s.connMu.Lock()
	n := len(s.conns)
	s.connMu.Unlock()
	if 4*n >= 3*cfg.MaxTCPConnections {
		return min(cfg.TCPIdleTimeout, pressureIdle)
	}
	return cfg.TCPIdleTimeout
}

// serveConn answers the queries of one TCP connection (RFC 7766): each
// message is preceded by its two-byte length; queries may be pipelined and
// are answered in order, and answers to queries already received are
// written out together. The connection is closed after the idle timeout.
func (s *Server) serveConn(c *tcpConn) {
	defer c.Close()
	var from netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		from, _ = netip.AddrFromSlice(ta.IP)
	}
	br := bufio.NewReaderSize(c, 4096)
	bw := bufio.NewWriterSize(c, 16<<10)
	msg := make([]byte, 65535)
	out := make([]byte, 0, 65535)
	var lenBuf [2]byte
	for {
		cfg := &s.snap.Load().cfg.Server
		select {
		case <-s.done:
			return
		default:
		}
		if br.Buffered() < 2 {
			// The wait for the first query began at the accept.
			since := c.idleSince.Load()
			if since == 0 {
				since = time.Now().UnixNano()
				c.idleSince.Store(since)
			}
			c.SetReadDeadline(time.Unix(0, since).Add(s.idleTimeout(cfg)))
		}
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:]))
		// The rest of the message must follow promptly. Until it has, the
		// connection still waits for a query: a slot for a newcomer when
		// all are taken.
		c.SetReadDeadline(time.Now().Add(s.idleTimeout(cfg)))
		if _, err := io.ReadFull(br, msg[:n]); err != nil {
			return
		}
		c.idleSince.Store(0)
		c.asked.Store(true)
		// The zone as it is now, not as it was when the connection went
		// idle: a secondary reuses its connection for the SOA check and the
		// transfer that follow a NOTIFY.
		start := time.Now()
		snap := s.snap.Load()
		resp, r := snap.table.Respond(out, msg[:n], true)
		if r.Action == wire.Transfer || r.Action == wire.Signed {
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			resp, r = s.slow(snap, out, msg[:n], r, true, from, bw)
		}
		took := time.Since(start)
		s.metrics.stats.record(protoTCP, &r, len(resp), took)
		if s.opts.QueryLog != nil {
			s.logQuery(protoTCP, from, msg[:n], &r, len(resp), took)
		}
		if len(resp) > 0 {
			if err := writeFramed(bw, resp); err != nil {
				s.log.Error("not answering over TCP", "peer", from, "err", err)
				return
			}
		}
		if br.Buffered() == 0 || bw.Buffered() > 8<<10 {
			c.SetWriteDeadline(time.Now().Add(cfg.TCPIdleTimeout))
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
