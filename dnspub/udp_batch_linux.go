//go:build linux && (amd64 || arm64)

package dnspub

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// The batched read loop: one recvmmsg takes every query waiting on the
// socket (up to batchSize), and one sendmmsg sends all their answers, each
// to the address its query came from. Under load this divides the system
// calls per query by the batch size, the largest cost left once answers
// are precomputed. It uses package syscall directly rather than
// golang.org/x/net/ipv4's ReadBatch, which allocates a net.UDPAddr for
// every packet.

const (
	batchSupported = true
	batchSize      = 32
	// maxQuerySize bounds a UDP query: a real one is a few hundred bytes
	// (a TSIG-signed IXFR query included); longer ones are dropped.
	maxQuerySize = 4096
)

var errBatchUnsupported = errors.New("recvmmsg not supported")

// mmsghdr is struct mmsghdr of <sys/socket.h> on 64-bit Linux.
type mmsghdr struct {
	hdr syscall.Msghdr
	len uint32
	_   [4]byte
}

type udpBatch struct {
	rc    syscall.RawConn
	rhdrs [batchSize]mmsghdr
	riov  [batchSize]syscall.Iovec
	names [batchSize]syscall.RawSockaddrInet6 // large enough for IPv4 too
	in    [batchSize][]byte
	out   [batchSize][]byte
	shdrs [batchSize]mmsghdr
	siov  [batchSize]syscall.Iovec

	// State of the system call closures, bound once so that the loop
	// does not allocate.
	n       int
	sendOff int
	sendEnd int
	errno   syscall.Errno
	readFn  func(uintptr) bool
	writeFn func(uintptr) bool
}

func newUDPBatch(rc syscall.RawConn) *udpBatch {
	b := &udpBatch{rc: rc}
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
	b.readFn = b.recv
	b.writeFn = b.send
	return b
}

func (b *udpBatch) recv(fd uintptr) bool {
	for i := range batchSize {
		b.rhdrs[i].hdr.Namelen = syscall.SizeofSockaddrInet6
		b.rhdrs[i].hdr.Flags = 0
	}
	r, _, e := syscall.Syscall6(sysRECVMMSG, fd, uintptr(unsafe.Pointer(&b.rhdrs[0])), batchSize, 0, 0, 0)
	if e == syscall.EAGAIN || e == syscall.EINTR {
		return false // wait until the socket is readable
	}
	b.n, b.errno = int(r), e
	return true
}

func (b *udpBatch) send(fd uintptr) bool {
	r, _, e := syscall.Syscall6(sysSENDMMSG, fd, uintptr(unsafe.Pointer(&b.shdrs[b.sendOff])), uintptr(b.sendEnd-b.sendOff), 0, 0, 0)
	if e == syscall.EAGAIN || e == syscall.EINTR {
		return false // wait until the socket is writable
	}
	b.n, b.errno = int(r), e
	return true
}

func (b *udpBatch) from(i int) netip.Addr {
	sa := &b.names[i]
	switch sa.Family {
	case syscall.AF_INET:
		sa4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrFrom4(sa4.Addr)
	case syscall.AF_INET6:
		return netip.AddrFrom16(sa.Addr)
	}
	return netip.Addr{}
}

func (s *Server) serveUDPBatch(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return errBatchUnsupported
	}
	b := newUDPBatch(rc)
	for {
		if err := rc.Read(b.readFn); err != nil {
			return nil // closed
		}
		if b.errno == syscall.ENOSYS {
			return errBatchUnsupported
		}
		if b.errno != 0 {
			continue // e.g. ECONNREFUSED from an earlier send: not ours to report
		}
		k := 0
		for i := range b.n {
			h := &b.rhdrs[i]
			if h.hdr.Flags&syscall.MSG_TRUNC != 0 {
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
			k++
		}
		b.sendOff, b.sendEnd = 0, k
		for b.sendOff < b.sendEnd {
			if err := rc.Write(b.writeFn); err != nil {
				return nil
			}
			if b.errno != 0 {
				b.sendOff++ // the first message failed (unreachable client…): skip it
				continue
			}
			b.sendOff += b.n
		}
	}
}
