package main

import (
	"github.com/miekg/dns"

	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

// lookupTimeout bounds a dns:// input: the resolver's per-query timeouts
// and retries, and the lookup of a nameserver given by name.
const lookupTimeout = 15 * time.Second

func init() { lookupInput = lookupDNS }

// lookupDNS reads a dns://SERVER[:PORT]/NAME input: the TXT records at
// _grpc_config.NAME, asked of SERVER with the resolver's own lookup code, so
// that lint and select see exactly what a client would.
func lookupDNS(arg string) (*input, error) {
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
	rec, err := resolver.LookupConfig(ctx, server, name)
	if err != nil {
		return nil, usageErr("%s: %v", arg, err)
	}
	return &input{name: arg, records: rec.Records, owner: rec.Owner}, nil
}

// lookupTarget reads a dnsconfig://[NS_IP[:PORT]]/HOST[:PORT] input, a
// channel's target: the record at _grpc_config.HOST, asked of the target's
// nameserver, or else of the first nameserver of /etc/resolv.conf (the name
// as written: write the name the record is published at).
func lookupTarget(arg string) (*input, error) {
	u, err := url.Parse(arg)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, usageErr("%s: want dnsconfig://[NS_IP[:PORT]]/HOST[:PORT], e.g. dnsconfig://127.0.0.1:1053/echo.example.test:50051", arg)
	}
	host := strings.TrimPrefix(u.Path, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	server := u.Host
	if server == "" {
		cfg, err := dns.ClientConfigFromFile(resolvConf)
		if err != nil || len(cfg.Servers) == 0 {
			return nil, usageErr("%s: the target names no nameserver and %s gives none (%v): write dnsconfig://NS_IP[:PORT]/%s or dns://SERVER[:PORT]/%s", arg, resolvConf, err, host, host)
		}
		server = net.JoinHostPort(cfg.Servers[0], cfg.Port)
	}
	in, err := lookupDNS("dns://" + server + "/" + host)
	if in != nil {
		in.name = arg
	}
	return in, err
}

// resolvConf is the file lookupTarget takes a nameserver from.
var resolvConf = "/etc/resolv.conf"

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
