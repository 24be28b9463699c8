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
