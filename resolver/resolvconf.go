package resolver

import (
	"bufio"
	"bytes"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// resolvConf is what the resolver takes from a resolv.conf file, read as
// Go's resolver and glibc read it (resolv.conf(5)).
type resolvConf struct {
	// servers are the nameserver lines, IP:53, at most three (MAXNS);
	// skipped are the ones that are not IP addresses we can use, each
	// with the reason.
	servers, skipped []string
	// search is the search list, each name fully qualified: the search
	// line, or the domain line, or the domain of this machine's hostname.
	search []string
	// ndots: a name with at least this many dots is asked as written
	// before the search list is tried (options ndots:n, 0..15, default 1).
	ndots int
	// timeout and attempts are options timeout:n (seconds, at least 1) and
	// attempts:n (at least 1); 0 when the file does not set them.
	timeout  time.Duration
	attempts int
	// rotate spreads queries over the nameservers (options rotate).
	rotate bool
}

// maxNameservers is glibc's MAXNS: further nameserver lines are ignored.
const maxNameservers = 3

// readResolvConf reads a resolv.conf file.
func readResolvConf(path string) (*resolvConf, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseResolvConf(b, hostnameDomain), nil
}

// hostnameDomain is the domain of this machine's hostname, the default
// search list (as Go's resolver and glibc take it).
func hostnameDomain() string {
	h, err := processHostname()
	if err != nil {
		return ""
	}
	if i := strings.IndexByte(h, '.'); i >= 0 && i < len(h)-1 {
		return h[i+1:]
	}
	return ""
}

// parseResolvConf reads the text of a resolv.conf file. defaultDomain is
// called when the file has neither a search nor a domain line.
func parseResolvConf(text []byte, defaultDomain func() string) *resolvConf {
	rc := &resolvConf{ndots: 1}
	searchSet := false
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				rc.addNameserver(f[1])
			}
		case "domain":
			if len(f) > 1 {
				rc.search, searchSet = []string{fqdn(f[1])}, true
			}
		case "search":
			rc.setSearch(f[1:])
			searchSet = true
		case "options":
			rc.setOptions(f[1:])
		}
	}
	if !searchSet {
		if d := defaultDomain(); d != "" {
			rc.search = []string{fqdn(d)}
		}
	}
	return rc
}

// addNameserver adds the address of a nameserver line, without a port, to
// the first maxNameservers. Zoned IPv6 addresses are not supported.
func (rc *resolvConf) addNameserver(addr string) {
	if len(rc.servers) >= maxNameservers {
		return
	}
	switch ip, err := netip.ParseAddr(addr); {
	case err != nil:
		rc.skipped = append(rc.skipped, addr+" (not an IP address)")
	case ip.Zone() != "":
		rc.skipped = append(rc.skipped, addr+" (zoned IPv6 addresses are not supported)")
	default:
		rc.servers = append(rc.servers, net.JoinHostPort(ip.Unmap().String(), dnsPort))
	}
}

// setSearch makes the domains of a search line the search list, which a
// later line replaces.
func (rc *resolvConf) setSearch(domains []string) {
	rc.search = nil
	for _, s := range domains {
		if s = fqdn(s); s != "." {
			rc.search = append(rc.search, s)
		}
	}
}

// setOptions applies the options of an options line that the resolver
// follows, ndots, timeout, attempts and rotate, and passes over the
// others.
func (rc *resolvConf) setOptions(opts []string) {
	for _, o := range opts {
		name, val, _ := strings.Cut(o, ":")
		n, err := strconv.Atoi(val)
		switch {
		case name == "ndots" && err == nil:
			rc.ndots = min(max(n, 0), 15)
		case name == "timeout" && err == nil:
			rc.timeout = time.Duration(max(n, 1)) * time.Second
		case name == "attempts" && err == nil:
			rc.attempts = max(n, 1)
		case o == "rotate":
			rc.rotate = true
		}
	}
}

// nameList is the list of names a host is asked as, in order, as glibc's
// res_search and Go's resolver build it: a name with a final dot is asked
// as written only; a name with at least ndots dots is asked as written
// first, then with each search domain; a shorter one with each search
// domain first, then as written. Names too long for DNS are left out.
func (rc *resolvConf) nameList(host string) []string {
	if strings.HasSuffix(host, ".") {
		return []string{host}
	}
	rooted := host + "."
	var out []string
	if strings.Count(host, ".") >= rc.ndots {
		out = append(out, rooted)
	}
	for _, s := range rc.search {
		if n := rooted + s; len(n) <= 254-len("_grpc_config.") {
			out = append(out, n)
		}
	}
	if strings.Count(host, ".") < rc.ndots {
		out = append(out, rooted)
	}
	return out
}

// DefaultHostsFile is the hosts file read for targets resolved the
// system's way.
const DefaultHostsFile = "/etc/hosts"

// lookupHosts returns the addresses a hosts file (hosts(5)) gives host,
// matched case-insensitively against canonical names and aliases, without
// a final dot. A file that does not exist gives none.
func lookupHosts(path, host string) ([]netip.Addr, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	host = strings.TrimSuffix(host, ".")
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		ip, err := netip.ParseAddr(f[0])
		if err != nil || ip.Zone() != "" {
			continue
		}
		for _, name := range f[1:] {
			if strings.EqualFold(strings.TrimSuffix(name, "."), host) {
				out = append(out, ip.Unmap())
				break
			}
		}
	}
	return out, nil
}
