package resolver

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port of a target that names none, as in grpc-go's dns
// resolver.
const DefaultPort = "443"

// dnsPort is the nameserver port when an address names none.
const dnsPort = "53"

// target is a parsed dnsconfig target.
type target struct {
	// host is the name to resolve, without a trailing dot, or an IP literal
	// (ip set).
	host string
	ip   netip.Addr
	port string
	// nameserver is the authority's "IP:PORT", or "" for the configured or
	// system nameservers.
	nameserver string
	// rooted is set when the host was written with a final dot: it is
	// asked as written, never through the search list.
	rooted bool
}

// written is the host as the target wrote it: with its final dot when
// rooted.
func (t target) written() string {
	if t.rooted {
		return t.host + "."
	}
	return t.host
}

// parseTarget splits a target's authority ("" or NS_IP[:PORT]) and endpoint
// (HOST[:PORT]). Errors say which part is wrong and what is expected.
func parseTarget(authority, endpoint string) (target, error) {
	var t target
	if authority != "" {
		ns, err := parseNameserver(authority)
		if err != nil {
			return t, fmt.Errorf("dnsconfig target authority %q: %v; write dnsconfig://NS_IP[:PORT]/HOST[:PORT], or dnsconfig:///HOST[:PORT] for the system nameservers", authority, err)
		}
		t.nameserver = ns
	}
	if endpoint == "" {
		return t, fmt.Errorf("dnsconfig target has no host: write dnsconfig:///HOST[:PORT]")
	}
	if strings.Contains(endpoint, "%") {
		return t, fmt.Errorf("dnsconfig target host %q: zoned IPv6 addresses are not supported", endpoint)
	}
	if ip, ok := bareIP(endpoint); ok {
		// A bare IP literal: IPv4, or IPv6 with or without brackets.
		t.ip, t.host, t.port = ip.Unmap(), ip.Unmap().String(), DefaultPort
		return t, nil
	}
	host, port, err := splitEndpoint(endpoint)
	if err != nil {
		return t, err
	}
	t.port = canonicalPort(port)
	if host == "" {
		return t, fmt.Errorf("dnsconfig target %q has no host before the port: write HOST:%s", endpoint, port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is4() && strings.HasPrefix(endpoint, "[") {
			return t, fmt.Errorf("dnsconfig target %q: brackets are for IPv6 addresses; write %s:%s", endpoint, host, port)
		}
		t.ip, t.host = ip.Unmap(), ip.Unmap().String()
		return t, nil
	}
	host, t.rooted = strings.CutSuffix(host, ".")
	if err := checkHostname(host); err != nil {
		return t, fmt.Errorf("dnsconfig target host %q: %v", host, err)
	}
	t.host = host
	return t, nil
}

// splitEndpoint splits an endpoint that is not a bare IP literal into its
// host and its port, DefaultPort when it has none, and checks the port.
func splitEndpoint(endpoint string) (host, port string, err error) {
	if inner, ok := strings.CutPrefix(endpoint, "["); ok {
		if ip, err := netip.ParseAddr(strings.TrimSuffix(inner, "]")); err == nil && ip.Is4() {
			return "", "", fmt.Errorf("dnsconfig target %q: brackets are for IPv6 addresses; write %s", endpoint, ip)
		}
	}
	host, port = endpoint, DefaultPort
	if h, p, err := net.SplitHostPort(endpoint); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(endpoint, "[") || strings.Count(endpoint, ":") > 0 {
		return "", "", fmt.Errorf("dnsconfig target host %q: %v; write HOST, HOST:PORT or [IPv6]:PORT", endpoint, err)
	}
	if err := checkPort(port); err != nil {
		return "", "", fmt.Errorf("dnsconfig target %q: %v", endpoint, err)
	}
	return host, port, nil
}

// addr returns the address gRPC dials for ip.
func (t target) addr(ip netip.Addr) string {
	return net.JoinHostPort(ip.String(), t.port)
}

// bareIP parses an IP literal without a port: IPv4, IPv6, or IPv6 in
// brackets. Brackets must enclose an IPv6 address exactly.
func bareIP(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		ip, err := netip.ParseAddr(s[1 : len(s)-1])
		return ip, err == nil && ip.Is6()
	}
	ip, err := netip.ParseAddr(s)
	return ip, err == nil
}

// canonicalPort writes a checked port in decimal without leading zeros.
func canonicalPort(port string) string {
	n, _ := strconv.ParseUint(port, 10, 16)
	return strconv.FormatUint(n, 10)
}

func checkPort(port string) error {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("port %q must be a number from 1 to 65535", port)
	}
	return nil
}

// checkHostname accepts what can be asked in DNS as a host name: at most 253
// bytes, labels of 1..63 bytes, and no bytes that would need escaping in a
// name (so that "_grpc_config." + host is still the name the user meant).
func checkHostname(host string) error {
	if host == "" {
		return fmt.Errorf("empty host name")
	}
	// The TXT owner adds len("_grpc_config.") bytes and must fit too.
	if len(host) > 253-len("_grpc_config.") {
		return fmt.Errorf("name is %d bytes, too long for DNS with the _grpc_config. prefix (at most %d)", len(host), 253-len("_grpc_config."))
	}
	for i, label := range strings.Split(host, ".") {
		if label == "" {
			return fmt.Errorf("label %d is empty", i+1)
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", label)
		}
		for j := 0; j < len(label); j++ {
			c := label[j]
			if !(c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return fmt.Errorf("byte %q in label %q: host names use letters, digits, '-' and '_'", c, label)
			}
		}
	}
	return nil
}

// parseNameserver normalises a nameserver address, IP[:PORT] or [IPv6]:PORT,
// to IP:PORT with port 53 by default.
func parseNameserver(s string) (string, error) {
	if strings.Contains(s, "%") {
		return "", fmt.Errorf("zoned IPv6 addresses are not supported")
	}
	if ip, ok := bareIP(s); ok {
		return net.JoinHostPort(ip.Unmap().String(), dnsPort), nil
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		if !strings.ContainsAny(s, ":[]") {
			return "", fmt.Errorf("%q is not an IP address: nameservers are given by address", s)
		}
		return "", fmt.Errorf("not IP[:PORT] (%v)", err)
	}
	ip, err := netip.ParseAddr(h)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("%q is not an IP address: nameservers are given by address", h)
	}
	if ip.Is4() && strings.HasPrefix(s, "[") {
		return "", fmt.Errorf("brackets are for IPv6 addresses; write %s:%s", h, p)
	}
	if err := checkPort(p); err != nil {
		return "", err
	}
	return net.JoinHostPort(ip.Unmap().String(), canonicalPort(p)), nil
}
