//go:build linux && (amd64 || arm64)

package dnspub

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

const reusePortSupported = true

// listenUDPReuse opens a UDP socket with SO_REUSEPORT, so that several
// sockets (one per read loop) can share the port.
func listenUDPReuse(addr string) (*net.UDPConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	wildcard := isWildcard(ua.IP)
	lc := net.ListenConfig{Control: func(network, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			setReceiveBuffer(int(fd))
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && wildcard {
				family := unix.AF_INET6
				if network == "udp4" {
					family = unix.AF_INET
				}
				serr = setPktinfo(int(fd), family)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// receiveBuffer is the UDP receive buffer asked for: about 0.2 s of
// queries at 100 000 a second. A read loop can pause (a reload's garbage
// collection, a single core shared with the build of the next version);
// the default buffer (rmem_default, often 208 KiB) then overflows and
// queries are lost. DNS servers ask for more for the same reason (NSD's
// so-rcvbuf, BIND's udp-receive-buffer).
const receiveBuffer = 4 << 20

// setReceiveBuffer enlarges fd's receive buffer: past the system's
// rmem_max when the process may (SO_RCVBUFFORCE, root), else up to it.
// It is best effort: a smaller buffer still serves.
func setReceiveBuffer(fd int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, receiveBuffer) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, receiveBuffer)
	}
}
