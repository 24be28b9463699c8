package dnspub

import (
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// queryWaiting sees a whole query in the receive queue, and only a whole
// one: nothing, a length prefix cut short, or part of the message is not a
// query a newcomer should leave to its server.
func TestQueryWaiting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	queued := func() (n int) {
		rc, err := server.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return n
	}
	sent := 0
	for _, step := range []struct {
		send string
		want bool
	}{
		{"", false},
		{"\x00", false},      // half the length
		{"\x05", false},      // the length: 5 bytes to come
		{"abcd", false},      // four of them
		{"e", true},          // all five
		{"\x00\x09xy", true}, // and the start of another
	} {
		if _, err := client.Write([]byte(step.send)); err != nil {
			t.Fatal(err)
		}
		sent += len(step.send)
		waitFor(t, "the bytes sent to arrive", func() bool { return queued() == sent })
		if got := queryWaiting(server); got != step.want {
			t.Errorf("after %q (%d bytes queued): %v, want %v", step.send, sent, got, step.want)
		}
	}
}
