package dnspub

import (
	"encoding/binary"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// queryWaiting reports whether a whole query (its length prefix and as
// many bytes) has reached the kernel's receive queue of c, unread.
func queryWaiting(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	waiting := false
	rc.Control(func(fd uintptr) {
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if err != nil || queued < 2 {
			return
		}
		var l [2]byte
		if n, _, err := unix.Recvfrom(int(fd), l[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); err != nil || n < 2 {
			return
		}
		waiting = queued >= 2+int(binary.BigEndian.Uint16(l[:]))
	})
	return waiting
}
