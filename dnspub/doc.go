// Package dnspub is the publisher: an authoritative DNS server for gRPC
// service configs (gRFC A2) and the addresses of the services they
// configure.
//
// A [Server] reads a publisher config (package config), builds an
// immutable snapshot of its zones with every answer precomputed in wire
// format (packages zone and internal/wire), and serves it over UDP and TCP. A reload
// (SIGHUP, a changed file, or [Server.Reload]) builds the next snapshot
// beside the current one and swaps a pointer, so a query sees one version
// or the next, never a mix; an invalid config is rejected and the current
// one keeps serving. Each zone whose content changes gets a new SOA serial,
// which is persisted so that it never goes backwards across restarts.
//
// Real DNS servers are fed by zone transfer: AXFR and IXFR (from a history
// of recent versions) to allowed addresses, optionally with TSIG, and
// NOTIFY to the configured secondaries on every change, retried until
// acknowledged.
package dnspub
