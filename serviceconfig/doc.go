// Package serviceconfig is the one implementation of the rules for gRPC
// service configs published in DNS (gRFC A2), shared by the resolver, the
// publisher and the command-line tools.
//
// It decodes and encodes the `_grpc_config.` TXT record (RFC 1464 attribute
// `grpc_config`, strings of at most 255 bytes), parses the list of canary
// choices strictly, selects the choice for a client by language, percentage
// bucket and hostname, and validates service configs, reporting problems as
// positioned [Diagnostic] values with stable codes.
//
// Two functions make the decisions the rest of the project carries out:
// [Choose], what a client makes of the records it resolved (no config, an
// invalid record, or a chosen config; gRFC A2 and A21), which the resolver
// and the select command run; and [Publish], whether and in which form a
// record is published, which the publisher and the encode command run.
// [Lint] reports every problem of a record, for people.
//
// The package does no I/O and imports nothing that speaks DNS or opens a
// socket: callers hand it bytes and get values and diagnostics back.
package serviceconfig
