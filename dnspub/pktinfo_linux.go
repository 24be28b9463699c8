//go:build linux && (amd64 || arm64)

package dnspub

import (
	"encoding/binary"
	"golang.org/x/sys/unix"
	"net"
)

// On a wildcard address (0.0.0.0, [::]) the kernel picks the source
// address of a reply by routing, which may differ from the address the
// client sent its query to; clients drop such replies. So on wildcard
// sockets we ask for the destination address of each query (IP_PKTINFO,
// IPV6_RECVPKTINFO) and send the reply from it.

const (
	cmsgHdrLen = 16 // struct cmsghdr on 64-bit Linux
	// pktinfoSpace fits the control messages a query can carry (both an
	// IPv4 and an IPv6 PKTINFO for IPv4 queries on dual-stack sockets).
	pktinfoSpace = 128
)

func isWildcard(ip net.IP) bool { return ip == nil || ip.IsUnspecified() }

// setPktinfo asks the kernel for the destination address of each packet.
func setPktinfo(fd int, family int) error {
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
			return err
		}
	}
	// Also on IPv6 sockets: IPv4 queries to a dual-stack socket.
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
}

func cmsgAlign(n int) int { return (n + 7) &^ 7 }

// replyControl writes to dst the control message that sends a reply from
// the address the query was sent to, given the control messages rcvd that
// came with the query. It returns the length written, 0 for none.
func replyControl(dst, rcvd []byte) int {
	var v4, v6 []byte
	for off := 0; off+cmsgHdrLen <= len(rcvd); {
		l := int(binary.NativeEndian.Uint64(rcvd[off:]))
		if l < cmsgHdrLen || off+l > len(rcvd) {
			break
		}
		level := int32(binary.NativeEndian.Uint32(rcvd[off+8:]))
		typ := int32(binary.NativeEndian.Uint32(rcvd[off+12:]))
		data := rcvd[off+cmsgHdrLen : off+l]
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= 12:
			v4 = data
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= 20:
			v6 = data
		}
		off += cmsgAlign(l)
	}
	switch {
	case v4 != nil && len(dst) >= cmsgHdrLen+16:
		// struct in_pktinfo {int ifindex; in_addr spec_dst; in_addr addr}:
		// send from the query's destination (addr), on any interface.
		binary.NativeEndian.PutUint64(dst, cmsgHdrLen+12)
		binary.NativeEndian.PutUint32(dst[8:], unix.IPPROTO_IP)
		binary.NativeEndian.PutUint32(dst[12:], unix.IP_PKTINFO)
		clear(dst[16:32])
		copy(dst[20:24], v4[8:12])
		return cmsgHdrLen + 16
	case v6 != nil && len(dst) >= cmsgHdrLen+24:
		// struct in6_pktinfo {in6_addr addr; int ifindex}: as received.
		binary.NativeEndian.PutUint64(dst, cmsgHdrLen+20)
		binary.NativeEndian.PutUint32(dst[8:], unix.IPPROTO_IPV6)
		binary.NativeEndian.PutUint32(dst[12:], unix.IPV6_PKTINFO)
		clear(dst[16:40])
		copy(dst[16:36], v6[:20])
		return cmsgHdrLen + 24
	}
	return 0
}
