// Package resolver is a grpc-go name resolver that takes the service config
// from DNS, as gRFC A2 describes, and applies it the way gRFC A21 says a
// client must.
//
// Targets are dnsconfig:///HOST[:PORT] (the nameservers of the Options, or
// of /etc/resolv.conf) and dnsconfig://NS_IP[:PORT]/HOST[:PORT]; the port
// defaults to 443. For each resolution the resolver asks, in parallel, for
// the A and AAAA records of HOST and the TXT record at _grpc_config.HOST. It
// hands the addresses to the channel as soon as they arrive, waiting for
// the TXT answer at most Options.TXTBudget more; a slower config follows in
// a later update, and a failing TXT lookup never fails the channel.
//
// The record is decoded, its choices parsed and one of them selected by
// package serviceconfig, the project's one implementation of those rules:
// by language, canary percentage (against a bucket drawn once per process),
// hostname and dynamic parameters. Only the chosen service config is
// validated. Then, per gRFC A21:
//
//   - no record, NXDOMAIN, or no matching choice: no service config; the
//     channel uses its default and stays healthy;
//   - an invalid record after a valid one (or after "none"): the previous
//     config stays, and the reason is logged;
//   - an invalid record on a new channel: Options.DefaultServiceConfig if
//     given, else the channel fails (TRANSIENT_FAILURE) and the resolver
//     retries with backoff until the record is fixed. A record that arrives
//     after Options.TXTBudget, when the channel already runs on its default
//     with the addresses it got first, is treated as after "none".
//
// The resolver re-resolves when the shortest TTL of the answers expires
// (bounded by Options.MinRefresh and MaxRefresh), so a published change
// reaches running channels without reconnecting; and when the channel asks
// (ResolveNow), at most once per Options.MinResolveNowInterval. Failed
// resolutions are retried with exponential backoff and jitter.
//
// Use it through a Builder:
//
//	b := resolver.NewBuilder(resolver.Options{})
//	conn, err := grpc.NewClient("dnsconfig:///echo.example.com:50051",
//		append(b.DialOptions(), grpc.WithTransportCredentials(creds))...)
//
// or register it for every channel of the process with Register (which
// cannot add the headerExtraction interceptors: see Register). The
// Builder's State method tells the application what a target resolved to
// and which config it uses; config changes are logged to Options.Logger
// (by default grpc-go's grpclog, component "dnsconfig").
//
// LookupConfig is the same lookup code, exported for tools that read a
// published record without a channel (the CLI's dns:// inputs);
// LookupTarget reads the record a channel for a target would, looked up
// the resolver's way (the CLI's dnsconfig:// inputs).
package resolver
