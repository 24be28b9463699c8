package serviceconfig

import "strings"

// client is a set of the gRPC implementations whose reading of service
// configs lint models (docs/rules.md): a warning names the clients that read
// a valid config differently or refuse it, and the publisher's compat gate
// asks whether grpc-go is among those that refuse it.
//
// What each client does was read from its sources and tests (grpc-go 1.85,
// C-core and grpc-java at HEAD of 2026-08, grpc-js 1.13/1.14); the
// differential suite in testdata/peers records the evidence.
type client uint8

const (
	clientGo client = 1 << iota
	clientCore
	clientJava
	clientJS

	allClients = clientGo | clientCore | clientJava | clientJS
)

var clientNames = [...]string{"grpc-go", "C-core", "grpc-java", "grpc-js"}

// String lists the clients as "grpc-go, C-core and grpc-java".
func (c client) String() string {
	var names []string
	for i, n := range clientNames {
		if c&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	switch len(names) {
	case 0:
		return "no client"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// verb picks the singular or plural form for c as a subject.
func (c client) verb(one, many string) string {
	if c&(c-1) == 0 {
		return one
	}
	return many
}
