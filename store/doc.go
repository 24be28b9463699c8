// Package store keeps the zones, services and policies that `serve
// --store` publishes, versioned as Kubernetes versions its objects
// (docs/store.md): every accepted write gets a new
// resourceVersion, strictly greater than every earlier one; reads, lists
// and watches are at a version; a write can require the version it read.
//
// Every write is validated with the publisher's own rules (package
// model) against what it meets in the store — a service against
// its zone's settings and policies, a policy against the services it
// selects, a zone against all of its services — and is refused whole
// (422, nothing stored) when one would be invalid, so that the store never
// holds what the publisher would refuse to serve.
//
// Two backends hold the data: an embedded one (bbolt, one directory, one
// publisher) and etcd (several publishers on one store). Package
// store/api serves a Store over HTTP; dnspub follows it (Snapshot and
// Follow) to publish its zones.
package store
