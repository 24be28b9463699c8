package dnspub

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/wire"
)

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
		limit := int64(s.snap.Load().cfg.Server.MaxTCPConnections)
		if s.nconns.Load() >= limit {
			c.Close()
			continue
		}
		s.track(c, true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.track(c, false)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(c net.Conn, add bool) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if add {
		s.conns[c] = struct{}{}
		s.nconns.Add(1)
		s.metrics.tcpConns.Inc()
		select {
		case <-s.done:
			c.SetReadDeadline(time.Now()) // shutting down: serve nothing more
		default:
		}
		return
	}
	delete(s.conns, c)
	s.nconns.Add(-1)
	s.metrics.tcpConns.Dec()
}

// serveConn answers the queries of one TCP connection (RFC 7766): each
// message is preceded by its two-byte length; queries may be pipelined and
// are answered in order, and answers to queries already received are
// written out together. The connection is closed after the idle timeout.
func (s *Server) serveConn(c net.Conn) {
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
		idle := s.snap.Load().cfg.Server.TCPIdleTimeout
		select {
		case <-s.done:
			return
		default:
		}
		if br.Buffered() < 2 {
			c.SetReadDeadline(time.Now().Add(idle))
		}
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:]))
		// The rest of the message must follow promptly.
		c.SetReadDeadline(time.Now().Add(idle))
		if _, err := io.ReadFull(br, msg[:n]); err != nil {
			return
		}
		// The zone as it is now, not as it was when the connection went
		// idle: a secondary reuses its connection for the SOA check and the
		// transfer that follow a NOTIFY.
		snap := s.snap.Load()
		resp, r := snap.table.Respond(out, msg[:n], true)
		if r.Action == wire.Transfer || r.Action == wire.Signed {
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			resp, r = s.slow(snap, out, msg[:n], r, true, from, bw)
		}
		s.metrics.stats.count(protoTCP, &r)
		if len(resp) > 0 {
			if err := writeFramed(bw, resp); err != nil {
				s.log.Error("not answering over TCP", "peer", from, "err", err)
				return
			}
		}
		if br.Buffered() == 0 || bw.Buffered() > 8<<10 {
			c.SetWriteDeadline(time.Now().Add(idle))
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
