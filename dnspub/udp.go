package dnspub

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
)

// udpListener is the set of UDP sockets on the listen address, each with
// its own read loop.
type udpListener interface {
	addr() *net.UDPAddr
	// start runs the read loops (tracked by s.wg) until s.done is closed
	// and wake has been called.
	start(s *Server)
	// wake makes the read loops notice s.done promptly.
	wake()
	// abort closes the sockets of a listener that was never started.
	abort()
	// workers is the number of read loops.
	workers() int
	batched() bool
}

// listenUDP opens the UDP sockets: on Linux (amd64, arm64) one socket per
// worker, sharing the port with SO_REUSEPORT, each read with blocking
// recvmmsg (udp_batch_linux.go); elsewhere, or with portable set, sockets
// of package net read one packet at a time.
func listenUDP(addr string, n int, portable bool) (udpListener, error) {
	if batchSupported && !portable {
		l, err := listenBatchUDP(addr, n)
		if err == nil || !errors.Is(err, errBatchUnsupported) {
			return l, err
		}
	}
	return listenPortableUDP(addr, n)
}

// portableUDP serves with package net: one read and one write system call
// per query, no allocation.
type portableUDP struct {
	conns   []*net.UDPConn
	pktinfo bool
}

func listenPortableUDP(addr string, n int) (*portableUDP, error) {
	first, err := listenUDPReuse(addr)
	if err != nil {
		return nil, fmt.Errorf("listening on UDP %s: %w", addr, err)
	}
	l := &portableUDP{conns: []*net.UDPConn{first}, pktinfo: isWildcard(first.LocalAddr().(*net.UDPAddr).IP)}
	if !reusePortSupported {
		return l, nil
	}
	bound := first.LocalAddr().String() // the real port when addr asked for 0
	for len(l.conns) < n {
		c, err := listenUDPReuse(bound)
		if err != nil {
			break // one socket still serves; more only add parallelism
		}
		l.conns = append(l.conns, c)
	}
	return l, nil
}

func (l *portableUDP) addr() *net.UDPAddr { return l.conns[0].LocalAddr().(*net.UDPAddr) }
func (l *portableUDP) workers() int       { return len(l.conns) }
func (l *portableUDP) batched() bool      { return false }

func (l *portableUDP) abort() { l.wake() }

func (l *portableUDP) wake() {
	for _, c := range l.conns {
		c.Close()
	}
}

func (l *portableUDP) start(s *Server) {
	for _, c := range l.conns {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveUDPPortable(c, l.pktinfo)
		}()
	}
}

func (s *Server) serveUDPPortable(c *net.UDPConn, pktinfo bool) {
	buf := make([]byte, 65535)
	out := make([]byte, 0, 65535)
	var rctl, sctl []byte
	if pktinfo {
		rctl, sctl = make([]byte, pktinfoSpace), make([]byte, pktinfoSpace)
	}
	for {
		n, oobn, _, from, err := c.ReadMsgUDPAddrPort(buf, rctl)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		resp, ok := s.handleUDP(out, buf[:n], from.Addr())
		if !ok {
			continue
		}
		if pktinfo {
			c.WriteMsgUDPAddrPort(resp, sctl[:replyControl(sctl, rctl[:oobn])], from)
		} else {
			c.WriteToUDPAddrPort(resp, from)
		}
	}
}

// handleUDP answers one UDP query into out. ok is false when nothing is
// to be sent.
func (s *Server) handleUDP(out, msg []byte, from netip.Addr) ([]byte, bool) {
	start := time.Now()
	snap := s.snap.Load()
	resp, r := snap.table.Respond(out, msg, false)
	if r.Action == wire.Transfer || r.Action == wire.Signed {
		resp, r = s.slow(snap, out, msg, r, false, from, nil)
	}
	took := time.Since(start)
	s.metrics.stats.record(protoUDP, &r, len(resp), took)
	if s.opts.QueryLog != nil {
		s.logQuery(protoUDP, from, msg, &r, len(resp), took)
	}
	return resp, len(resp) > 0
}
