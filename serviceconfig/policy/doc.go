// Package policy layers partial service configs over services: zone-wide
// defaults, overrides for the services that carry some labels, and
// exceptions for one service, each written once (docs/policies.md).
//
// A Policy has a name, a TargetRef that says which services it selects
// (every service of the zone, the services carrying some labels, or one
// service by name) and a Default: a partial service config. The policies
// that select a service are merged in the order of their TargetRef's
// specificity (Zone, then Service by labels, then Service by name) and
// then of their names, so the most specific wins whatever the names are;
// the service's own config is merged last, inside every choice. Objects
// merge key by key, methodConfig entries by their name list, and every
// other list is replaced whole.
//
// Each merge records its Origins: for every value of the final config,
// the layers that set it, in merge order. A Set resolves the policies of
// every service of a snapshot once (Resolve), sparsely: services that no
// label or name policy selects share the zone's stack, and a lookup is a
// map access.
//
// The package is pure: no I/O, and it decides nothing about validity
// beyond the policies' own shape. Callers validate merged configs with
// package serviceconfig, as any other config.
package policy
