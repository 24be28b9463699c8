//go:build !linux || !(amd64 || arm64)

package dnspub

import "net"

// Without PKTINFO support, replies on wildcard addresses leave from the
// address the kernel picks; listen on specific addresses there.

const pktinfoSpace = 0

func isWildcard(net.IP) bool       { return false }
func setPktinfo(int, int) error    { return nil }
func replyControl(_, _ []byte) int { return 0 }
