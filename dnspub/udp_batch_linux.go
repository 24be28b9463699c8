//go:build linux && (amd64 || arm64)

package dnspub

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"net"
	"net/netip"
	"time"
	"unsafe"
)

// The Linux read loop. Each worker owns a UDP socket of its own (sharing
// the port through SO_REUSEPORT, so the kernel spreads clients over the
// workers and no lock is shared), in blocking mode and outside Go's network
// poller: one recvmmsg with MSG_WAITFORONE sleeps until a query arrives and
// then takes every query waiting (up to batchSize); one sendmmsg sends all
// their answers, each to the address its query came from.
//
// Through the poller, every wake-up costs a recvmmsg that fails with
// EAGAIN, an epoll_wait and a goroutine switch before the recvmmsg that
// reads; a blocking call costs only the kernel's wake-up. System calls are
// made directly: golang.org/x/net/ipv4's ReadBatch goes through the
// poller and allocates an address per packet; golang.org/x/sys/unix gives
// the system call numbers and constants.

const (
	batchSupported = true
	batchSize      = 32
	// maxQuerySize bounds a UDP query: a real one is a few hundred bytes
	// (a TSIG-signed IXFR query included); longer ones are dropped.
	maxQuerySize = 4096
	// idleWake is how often a worker with nothing to read wakes up to see
	// whether the server is shutting down (shutdown also wakes it at once).
	idleWake = 250 * time.Millisecond
)

var errBatchUnsupported = errors.New("recvmmsg not supported")

// mmsghdr is struct mmsghdr of <sys/socket.h> on 64-bit Linux.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

type batchUDP struct {
	fds   []int
	local *net.UDPAddr
	// pktinfo: the address is a wildcard, so replies name their source.
	pktinfo bool
}

func listenBatchUDP(addr string, n int) (*batchUDP, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on UDP %s: %w", addr, err)
	}
	l := &batchUDP{pktinfo: isWildcard(ua.IP)}
	for len(l.fds) < max(n, 1) {
		fd, local, err := openUDP(ua)
		if err != nil {
			if len(l.fds) > 0 {
				break // one socket still serves; more only add parallelism
			}
			if errors.Is(err, unix.ENOSYS) {
				return nil, errBatchUnsupported
			}
			return nil, fmt.Errorf("listening on UDP %s: %w", addr, err)
		}
		if l.local == nil {
			l.local = local
			ua = local // the others bind the port the first one got
		}
		l.fds = append(l.fds, fd)
	}
	return l, nil
}

// openUDP opens a blocking UDP socket with SO_REUSEPORT bound to ua.
func openUDP(ua *net.UDPAddr) (int, *net.UDPAddr, error) {
	family := unix.AF_INET6
	var sa unix.Sockaddr
	if ip4 := ua.IP.To4(); ip4 != nil {
		family = unix.AF_INET
		sa4 := &unix.SockaddrInet4{Port: ua.Port}
		copy(sa4.Addr[:], ip4)
		sa = sa4
	} else {
		sa6 := &unix.SockaddrInet6{Port: ua.Port}
		copy(sa6.Addr[:], ua.IP.To16()) // nil IP: [::], both families
		sa = sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	fail := func(err error) (int, *net.UDPAddr, error) {
		unix.Close(fd)
		return -1, nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return fail(err)
	}
	if family == unix.AF_INET6 {
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	if isWildcard(ua.IP) {
		if err := setPktinfo(fd, family); err != nil {
			return fail(err)
		}
	}
	setReceiveBuffer(fd)
	tv := unix.NsecToTimeval(idleWake.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail(err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail(err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail(err)
	}
	local := &net.UDPAddr{}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		local.IP, local.Port = net.IP(append([]byte(nil), a.Addr[:]...)), a.Port
	case *unix.SockaddrInet6:
		local.IP, local.Port = net.IP(append([]byte(nil), a.Addr[:]...)), a.Port
	}
	return fd, local, nil
}

func (l *batchUDP) addr() *net.UDPAddr { return l.local }
func (l *batchUDP) workers() int       { return len(l.fds) }
func (l *batchUDP) batched() bool      { return true }

func (l *batchUDP) abort() {
	for _, fd := range l.fds {
		unix.Close(fd)
	}
}

// wake interrupts blocked reads: shutdown(2) makes recvmmsg return.
func (l *batchUDP) wake() {
	for _, fd := range l.fds {
		unix.Shutdown(fd, unix.SHUT_RD)
	}
}

func (l *batchUDP) start(s *Server) {
	for _, fd := range l.fds {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer unix.Close(fd)
			s.serveBatch(fd, l.pktinfo)
		}()
	}
}

// udpBatch holds one worker's buffers and message headers, allocated once.
type udpBatch struct {
	rhdrs [batchSize]mmsghdr
	riov  [batchSize]unix.Iovec
	names [batchSize]unix.RawSockaddrInet6 // large enough for IPv4 too
	in    [batchSize][]byte
	out   [batchSize][]byte
	shdrs [batchSize]mmsghdr
	siov  [batchSize]unix.Iovec
	// Control messages (PKTINFO) on wildcard sockets.
	rctl [batchSize][pktinfoSpace]byte
	sctl [batchSize][pktinfoSpace]byte
}

func newUDPBatch() *udpBatch {
	b := &udpBatch{}
	buf := make([]byte, batchSize*maxQuerySize)
	for i := range batchSize {
		b.in[i] = buf[i*maxQuerySize : (i+1)*maxQuerySize]
		b.out[i] = make([]byte, 0, 65535)
		b.riov[i].Base = &b.in[i][0]
		b.riov[i].SetLen(maxQuerySize)
		b.rhdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		b.rhdrs[i].hdr.Iov = &b.riov[i]
		b.rhdrs[i].hdr.Iovlen = 1
		b.shdrs[i].hdr.Iovlen = 1
	}
	return b
}

func (b *udpBatch) from(i int) netip.Addr {
	sa := &b.names[i]
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrFrom4(sa4.Addr)
	case unix.AF_INET6:
		return netip.AddrFrom16(sa.Addr)
	}
	return netip.Addr{}
}

func (s *Server) serveBatch(fd int, pktinfo bool) {
	b := newUDPBatch()
	for {
		select {
		case <-s.done:
			return
		default:
		}
		for i := range batchSize {
			b.rhdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
			b.rhdrs[i].hdr.Flags = 0
			if pktinfo {
				b.rhdrs[i].hdr.Control = &b.rctl[i][0]
				b.rhdrs[i].hdr.SetControllen(pktinfoSpace)
			}
		}
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.rhdrs[0])), batchSize, unix.MSG_WAITFORONE, 0, 0)
		if e != 0 || r == 0 {
			continue // EAGAIN after idleWake, EINTR, or woken by shutdown
		}
		n := int(r)
		k := 0
		for i := range n {
			h := &b.rhdrs[i]
			if h.hdr.Flags&unix.MSG_TRUNC != 0 {
				continue
			}
			resp, ok := s.handleUDP(b.out[i][:0], b.in[i][:h.len], b.from(i))
			if !ok {
				continue
			}
			b.siov[k].Base = &resp[0]
			b.siov[k].SetLen(len(resp))
			sh := &b.shdrs[k]
			sh.hdr.Name = h.hdr.Name
			sh.hdr.Namelen = h.hdr.Namelen
			sh.hdr.Iov = &b.siov[k]
			sh.hdr.Control, sh.hdr.Controllen = nil, 0
			if pktinfo {
				if n := replyControl(b.sctl[k][:], b.rctl[i][:h.hdr.Controllen]); n > 0 {
					sh.hdr.Control = &b.sctl[k][0]
					sh.hdr.SetControllen(n)
				}
			}
			k++
		}
		for off := 0; off < k; {
			r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.shdrs[off])), uintptr(k-off), 0, 0, 0)
			switch {
			case e == unix.EINTR:
			case e != 0:
				off++ // the first message failed (unreachable client…): skip it
			default:
				off += int(r)
			}
		}
	}
}
