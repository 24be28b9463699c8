//go:build !linux || !(amd64 || arm64)

package dnspub

import (
	"errors"
	"net"
)

const batchSupported = false

var errBatchUnsupported = errors.New("recvmmsg not supported")

func (s *Server) serveUDPBatch(*net.UDPConn) error { return errBatchUnsupported }
