//go:build linux && (amd64 || arm64)

package dnspub

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReceiveBufferEnlarged: the UDP sockets ask for a receive buffer
// large enough to ride out a pause of the read loop: receiveBuffer as
// root, else as much as rmem_max allows.
func TestReceiveBufferEnlarged(t *testing.T) {
	ts := startServer(t, baseConfig(""), nil)
	b, ok := ts.udp.(*batchUDP)
	if !ok {
		t.Skip("portable UDP")
	}
	want := receiveBuffer
	if os.Geteuid() != 0 {
		raw, err := os.ReadFile("/proc/sys/net/core/rmem_max")
		if err != nil {
			t.Skip(err)
		}
		max, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		want = min(want, max)
	}
	for _, fd := range b.fds {
		got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err != nil {
			t.Fatal(err)
		}
		if got < want { // the kernel reports twice what was set
			t.Errorf("SO_RCVBUF %d, want at least %d", got, want)
		}
	}
}
