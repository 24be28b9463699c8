package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listenError explains a failure to listen on addr, given with flag: when
// the address is taken it says which flag chooses another, since the
// message of the system ("bind: address already in use") names neither.
func listenError(flag, addr string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		by := "another server, or another grpc-config-dns?"
		if flag == "--listen" {
			by = "another DNS server, or another grpc-config-dns?"
		}
		return usageErr("%s %s: the address is already in use (by %s): choose a free one with %s, e.g. %s %s (%v)",
			flag, addr, by, flag, flag, nextPort(addr), err)
	case errors.Is(err, syscall.EACCES):
		return usageErr("%s %s: permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE; choose a port above 1023 with %s", flag, addr, flag)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return usageErr("%s %s: no interface of this machine has that address: choose one with %s", flag, addr, flag)
	}
	return usageErr("%s %s: %v", flag, addr, err)
}

// nextPort suggests the address with the next port, for a message.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n <= 0 || n >= 65535 {
		return "127.0.0.1:1054"
	}
	return net.JoinHostPort(host, fmt.Sprint(n+1))
}
