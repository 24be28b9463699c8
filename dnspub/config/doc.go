// Package config reads and validates publisher configs (DESIGN.md §6): the
// YAML or JSON file that lists the zones the publisher serves, their
// nameservers and SOA timers, and the services whose addresses and gRPC
// service configs (gRFC A2 choices) go into DNS.
//
// [Parse] checks a config as a whole and either returns a fully resolved
// [Config] (absolute lower-case names, TTLs in seconds, the exact TXT strings
// to publish) or the diagnostics that explain why it cannot be served, each
// positioned at the file's line and column. Service configs inside the file
// are converted from YAML to JSON while remembering where every value came
// from, decided on by serviceconfig.Publish (the rules, and the compat
// settings that shape the record), and its diagnostics are
// mapped back to the YAML.
//
// The package does no I/O: callers hand it the file's bytes.
package config
