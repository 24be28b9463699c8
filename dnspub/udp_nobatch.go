//go:build !linux || !(amd64 || arm64)

package dnspub

import "errors"

const batchSupported = false

var errBatchUnsupported = errors.New("recvmmsg not supported")

func listenBatchUDP(string, int) (udpListener, error) { return nil, errBatchUnsupported }
