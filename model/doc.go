// Package model is the domain model of what the publisher serves: zones,
// their services and policies, and the publisher's settings (docs/publisher.md, docs/architecture.md),
// with their validation and their inspection. Both ends read it: dnspub
// serves what it describes, and store checks the objects written to it,
// so that a zone, a service or a policy is judged by one set of rules
// whether it comes from a config file or from the admin API.
//
// [Parse] checks a publisher config (the YAML or JSON file that lists the
// zones, their nameservers and SOA timers, and the services whose
// addresses and gRPC service configs go into DNS) as a whole and either
// returns a fully resolved [Config] (absolute lower-case names, TTLs in
// seconds, the exact TXT strings to publish) or the diagnostics that
// explain why it cannot be served, each positioned at the file's line and
// column. [ValidateZone], [ValidateService] and [ValidatePolicy] judge one
// store object's spec against the zone it belongs to. Service configs are
// converted from YAML to JSON while remembering where every value came
// from, decided on by serviceconfig.Publish (the rules, and the compat
// settings that shape the record), and its diagnostics are mapped back to
// the YAML.
//
// The package does no I/O: callers hand it the bytes.
package model
