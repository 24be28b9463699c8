//go:build !linux || !(amd64 || arm64)

package dnspub

import "net"

const reusePortSupported = false

func listenUDPReuse(addr string) (*net.UDPConn, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", a)
}
