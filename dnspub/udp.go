package dnspub

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/wire"
)

// listenUDP opens n UDP sockets on addr. Where the platform has
// SO_REUSEPORT they share the port and the kernel spreads clients across
// them, so each read loop has its own socket and no lock (as Knot does);
// elsewhere one socket is opened.
func listenUDP(addr string, n int) ([]*net.UDPConn, error) {
	first, err := listenUDPReuse(addr)
	if err != nil {
		return nil, fmt.Errorf("listening on UDP %s: %w", addr, err)
	}
	conns := []*net.UDPConn{first}
	if !reusePortSupported {
		return conns, nil
	}
	bound := first.LocalAddr().String() // the real port when addr asked for 0
	for len(conns) < n {
		c, err := listenUDPReuse(bound)
		if err != nil {
			break // one socket still serves; more only add parallelism
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// serveUDP answers queries on one socket until it is closed.
func (s *Server) serveUDP(c *net.UDPConn) {
	if batchSupported && !s.opts.PortableUDP {
		if err := s.serveUDPBatch(c); err == nil || !errors.Is(err, errBatchUnsupported) {
			return
		}
		s.log.Warn("recvmmsg unavailable; using one system call per packet")
	}
	s.serveUDPPortable(c)
}

// serveUDPPortable is the read loop for platforms without recvmmsg: one
// read and one write per query, still without allocation.
func (s *Server) serveUDPPortable(c *net.UDPConn) {
	buf := make([]byte, 65535)
	out := make([]byte, 0, 65535)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		resp, ok := s.handleUDP(out, buf[:n], from.Addr())
		if ok {
			c.WriteToUDPAddrPort(resp, from)
		}
	}
}

// handleUDP answers one UDP query into out. ok is false when nothing is
// to be sent.
func (s *Server) handleUDP(out, msg []byte, from netip.Addr) ([]byte, bool) {
	snap := s.snap.Load()
	resp, r := snap.table.Respond(out, msg, false)
	if r.Action == wire.Transfer || r.Action == wire.Signed {
		resp, r = s.slow(snap, out, msg, r, false, from, nil)
	}
	s.metrics.stats.count(protoUDP, &r)
	return resp, len(resp) > 0
}
