package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/resolver"
	"github.com/grpc-config-dns/grpc-config-dns/resolver/dnssec"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/spf13/cobra"
)

// lookupTimeout bounds a dns:// input: the resolver's per-query timeouts
// and retries, and the lookup of a nameserver given by name.
const lookupTimeout = 15 * time.Second

func init() { lookupInput = lookupDNS }

// lookupDNS reads a dns://SERVER[:PORT]/NAME input: the TXT records at
// _grpc_config.NAME, asked of SERVER with the resolver's own lookup code, so
// that lint and select see exactly what a client would.
func lookupDNS(arg, trustAnchor string) (*input, error) {
	u, err := url.Parse(arg)
	if err != nil || u.Scheme != "dns" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, usageErr("%s: want dns://SERVER[:PORT]/NAME, e.g. dns://127.0.0.1:1053/echo.example.test", arg)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" {
		return nil, usageErr("%s: name the nameserver to ask: dns://SERVER[:PORT]/%s", arg, name)
	}
	if name == "" || strings.Contains(name, "/") {
		return nil, usageErr("%s: want one host name after the server: dns://%s/NAME", arg, u.Host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	server, err := nameserverAddr(ctx, u.Host)
	if err != nil {
		return nil, usageErr("%s: %v", arg, err)
	}
	if trustAnchor != "" {
		// The resolver's way with the nameserver given: the name as
		// written, validated from the anchor.
		v, err := anchorValidator(trustAnchor)
		if err != nil {
			return nil, err
		}
		rec, err := resolver.LookupTarget(ctx, "dnsconfig://"+server+"/"+name, resolver.Options{Validator: v})
		return validatedInput(arg, trustAnchor, rec, err)
	}
	rec, err := resolver.LookupConfig(ctx, server, name)
	if err != nil {
		return nil, usageErr("%s: %v", arg, err)
	}
	return &input{name: arg, records: rec.Records, owner: rec.Owner}, nil
}

// validatedInput is the input of a lookup validated with DNSSEC from the
// anchors of file trustAnchor: its records, and what validation found.
func validatedInput(arg, trustAnchor string, rec *resolver.ConfigRecords, err error) (*input, error) {
	var bogus *dnssec.BogusError
	if errors.As(err, &bogus) {
		return &input{name: arg, dnssec: sc.Diagnostics{sc.DNSSECDiagnostic("bogus", bogus.Error()+": a validating client refuses this answer")}}, nil
	}
	if err != nil {
		return nil, usageErr("%s: %v", arg, err)
	}
	in := &input{name: arg, records: rec.Records, owner: rec.Owner}
	switch {
	case !rec.Secure:
		in.dnssec = append(in.dnssec, sc.DNSSECDiagnostic("insecure", fmt.Sprintf("%s is under no trust anchor of %s: the answer was not validated, anyone answering a client's queries could have forged it", rec.Owner, trustAnchor)))
	case !rec.SignatureExpires.IsZero() && time.Until(rec.SignatureExpires) < 2*rec.TTL:
		in.dnssec = append(in.dnssec, sc.DNSSECDiagnostic("expiring", fmt.Sprintf("a signature of the answer expires at %s, in less than twice its TTL (%v): resolvers caching it then fail to validate it; is the publisher refreshing its signatures?", rec.SignatureExpires.UTC().Format(time.RFC3339), rec.TTL)))
	}
	return in, nil
}

// lookupTarget reads a dnsconfig://[NS_IP[:PORT]]/HOST[:PORT] input, a
// channel's target: the record the resolver reads for it, found the
// resolver's way (resolver.LookupTarget): with the target's nameserver,
// else through the hosts file and the search list and ndots of
// /etc/resolv.conf, under the name the host's addresses were found at.
func lookupTarget(arg, trustAnchor string) (*input, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	o := resolver.Options{ResolvConf: resolvConf, HostsFile: hostsFile}
	if trustAnchor != "" {
		v, err := anchorValidator(trustAnchor)
		if err != nil {
			return nil, err
		}
		o.Validator = v
	}
	rec, err := resolver.LookupTarget(ctx, arg, o)
	if trustAnchor != "" && !errors.Is(err, resolver.ErrNoNameservers) {
		return validatedInput(arg, trustAnchor, rec, err)
	}
	if errors.Is(err, resolver.ErrNoNameservers) {
		host := "HOST"
		if u, perr := url.Parse(arg); perr == nil {
			host = strings.TrimPrefix(u.Path, "/")
		}
		return nil, usageErr("%s: the target names no nameserver and %s gives none: write dnsconfig://NS_IP[:PORT]/%s or dns://SERVER[:PORT]/%s (%v)", arg, resolvConf, host, host, err)
	}
	if err != nil {
		return nil, usageErr("%s: %v", arg, err)
	}
	return &input{name: arg, records: rec.Records, owner: rec.Owner}, nil
}

// resolvConf and hostsFile are the files lookupTarget follows, as the
// resolver does, for a target without a nameserver.
var (
	resolvConf = resolver.DefaultResolvConf
	hostsFile  = resolver.DefaultHostsFile
)

// nameserverAddr turns SERVER[:PORT] into IP[:PORT], looking a server given
// by name up with the system resolver.
func nameserverAddr(ctx context.Context, hostport string) (string, error) {
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = strings.Trim(host, "[]")
	if _, err := netip.ParseAddr(host); err != nil {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return "", err
		}
		if len(ips) == 0 {
			return "", &net.DNSError{Err: "no addresses", Name: host}
		}
		host = ips[0].Unmap().String()
	}
	if port == "" {
		return host, nil
	}
	return net.JoinHostPort(host, port), nil
}

// trustAnchorFlag adds --trust-anchor to a command reading DNS inputs,
// and checks the file before the command runs.
func trustAnchorFlag(cmd *cobra.Command, e *env) {
	cmd.Flags().StringVar(&e.trustAnchor, "trust-anchor", "", "validate dns:// and dnsconfig:// inputs with DNSSEC from the DS or DNSKEY records in FILE (Unbound's or BIND's format); reports bogus, insecure and expiring answers")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if e.trustAnchor != "" {
			if _, err := anchorValidator(e.trustAnchor); err != nil {
				return err
			}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// anchorValidator is the DNSSEC validator of the anchors in file.
func anchorValidator(file string) (*dnssec.Validator, error) {
	anchors, err := dnssec.ReadAnchorFile(file)
	if err != nil {
		return nil, usageErr("--trust-anchor: %v", err)
	}
	v, err := dnssec.New(anchors, dnssec.Options{})
	if err != nil {
		return nil, usageErr("--trust-anchor: %v", err)
	}
	return v, nil
}
