package resolver

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	grpcresolver "google.golang.org/grpc/resolver"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// ConfigRecords is the answer to the service config query for one host.
type ConfigRecords struct {
	// Owner is the name asked, _grpc_config.HOST. (fully qualified); Name is
	// where the records were found, the end of Owner's CNAME chain.
	Owner, Name string
	// Records are the TXT records found, each a list of raw strings as on
	// the wire. Empty when the name has none or does not exist.
	Records [][]string
	// NXDomain is set when the name does not exist.
	NXDomain bool
	// TTL is the shortest TTL of the answer.
	TTL time.Duration
	// Server is the nameserver that answered; TCP is set when the answer
	// was truncated over UDP and asked again over TCP.
	Server string
	TCP    bool
	// Secure is set when the answer was validated (Options.Validator of
	// LookupTarget: resolver/dnssec), or carried the AD bit
	// (Options.RequireAuthenticatedData); an answer that does not
	// validate is an error. SignatureExpires is when the first signature
	// validated expires.
	Secure           bool
	SignatureExpires time.Time
}

// LookupConfig asks nameserver (IP[:PORT], port 53 by default) for the TXT
// records at _grpc_config.HOST, with the code and defaults a resolver uses
// (UDP with EDNS0 at 1232 bytes, TCP when truncated, CNAMEs followed,
// Options' default timeout and attempts). It returns the records
// undecoded: pass them to serviceconfig.DecodeTXT or LintRecords.
func LookupConfig(ctx context.Context, nameserver, host string) (*ConfigRecords, error) {
	ns, err := parseNameserver(nameserver)
	if err != nil {
		return nil, fmt.Errorf("nameserver %q: %v", nameserver, err)
	}
	host = strings.TrimSuffix(host, ".")
	if err := checkHostname(host); err != nil {
		return nil, fmt.Errorf("host %q: %v", host, err)
	}
	c := dnsClient{servers: []string{ns}, timeout: DefaultQueryTimeout, attempts: DefaultAttempts}
	owner := fqdn(sc.OwnerPrefix + host)
	a, err := c.lookup(ctx, owner, typeTXT)
	if err != nil {
		return nil, err
	}
	return configRecords(owner, a), nil
}

// LookupTarget asks for the TXT records of a channel's target,
// dnsconfig://[NS_IP[:PORT]]/HOST[:PORT], where a resolver built with o
// finds them: the host is looked up with the target's nameserver, else
// o.Nameservers (the host as written), else the system's way, as the
// resolver does (the hosts file, then the nameservers of the resolv.conf
// file through its search list and ndots, with its timeout, attempts and
// rotate options), and the records are asked at _grpc_config. under the
// name the addresses were found at. So dnsconfig:///echo in a Kubernetes
// pod reads the record of echo.NAMESPACE.svc.cluster.local. When the
// search list gives several names and none has an address, the error
// names them, as a channel's would; a single name is asked for its
// records whether or not it has addresses. Owner of the result says which
// name was asked.
func LookupTarget(ctx context.Context, target string, o Options) (*ConfigRecords, error) {
	return lookupTarget(ctx, target, o, nil)
}

// lookupTarget is LookupTarget over a transport (nil: the network).
func lookupTarget(ctx context.Context, target string, o Options, net transport) (*ConfigRecords, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != Scheme || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("target %q: want %s://[NS_IP[:PORT]]/HOST[:PORT], e.g. %s:///echo.example.test:50051", target, Scheme, Scheme)
	}
	c, err := o.resolve()
	if err != nil {
		return nil, err
	}
	tg, err := parseTarget(u.Host, grpcresolver.Target{URL: *u}.Endpoint())
	if err != nil {
		return nil, err
	}
	if tg.ip.IsValid() {
		return nil, fmt.Errorf("target %q is an IP address: a channel asks no DNS for it and uses no published config", target)
	}
	lc, err := c.lookupConf(tg)
	if err != nil {
		return nil, err
	}
	client := dnsClient{servers: lc.servers, timeout: lc.timeout, attempts: lc.attempts, rotate: lc.rotate, next: new(atomic.Uint32), net: net, val: c.Validator, ad: c.RequireAuthenticatedData}
	name, err := addressName(ctx, &client, lc, tg.host, c.ResolvConf)
	if err != nil {
		return nil, err
	}
	owner := fqdn(sc.OwnerPrefix + strings.TrimSuffix(name, "."))
	a, err := client.lookup(ctx, owner, typeTXT)
	if err != nil {
		return nil, err
	}
	return configRecords(owner, a), nil
}

// addressName is the name at which a resolver finds the addresses of
// host, as lc says: the host as written when the hosts file lists it, the
// one name to ask when there is one, else the first name of the search
// list that has addresses. The error is the resolver's when it stops
// searching with none (see searchOn); resolvConf names the file of the
// search list.
func addressName(ctx context.Context, client *dnsClient, lc *lookupConf, host, resolvConf string) (string, error) {
	if lc.hostsFile != "" {
		// As the resolver: a hosts file that cannot be read is passed over.
		if addrs, err := lookupHosts(lc.hostsFile, host); err == nil && len(addrs) > 0 {
			return fqdn(host), nil
		}
	}
	if len(lc.names) == 1 {
		// One name to try: its records, whether or not it has addresses.
		return lc.names[0], nil
	}
	for i, name := range lc.names {
		got := map[uint16]lookupResult{}
		found := false
		for _, qt := range []uint16{typeA, typeAAAA} {
			a, err := client.lookup(ctx, name, qt)
			got[qt] = lookupResult{qt, a, err}
			found = found || (err == nil && len(a.addrs) > 0)
		}
		switch {
		case found:
			return name, nil
		case !searchOn(got[typeA], got[typeAAAA], i == len(lc.names)-1):
			return "", addressError(lc.names, name, resolvConf, got)
		}
	}
	return "", nil
}

// configRecords is the result of the lookup of owner's TXT records, a.
func configRecords(owner string, a *answer) *ConfigRecords {
	out := &ConfigRecords{Owner: owner, Name: a.name, NXDomain: a.nxdomain, TTL: a.ttl, Server: a.server, TCP: a.tcp, Secure: a.secure, SignatureExpires: a.expires}
	if len(a.txt) > 0 {
		out.Records = a.txt
	}
	return out
}
