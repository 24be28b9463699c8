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
// The package does no I/O and imports nothing that speaks DNS or opens a
// socket: callers hand it bytes and get values and diagnostics back.
package serviceconfig
