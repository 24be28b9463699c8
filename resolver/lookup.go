package resolver

import (
	"context"
	"fmt"
	"strings"
	"time"

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
	out := &ConfigRecords{Owner: owner, Name: a.name, NXDomain: a.nxdomain, TTL: a.ttl, Server: a.server, TCP: a.tcp}
	if recs := a.txt; len(recs) > 0 {
		out.Records = recs
	}
	return out, nil
}
