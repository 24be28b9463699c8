package serviceconfig

import (
	"fmt"
	"strings"
)

// Clients is a set of the gRPC implementations whose reading of service
// configs lint models (docs/rules.md, "Clients"): grpc-go with its own dns
// resolver, C-core (and the languages built on it: C++, Python, Ruby,
// PHP, C#), grpc-java, grpc-js, and our resolver (dnsconfig:///, which
// reads records as the specs say, our extension included). A user
// declares the clients that read their records (compat.clients,
// --clients); a record that a declared client would reject, fail its
// channel on, or read differently from the spec is then an error,
// everywhere: lint, encode, serve, zone, publish and the admin API reach
// that verdict from one function (judge, which Lint and Publish apply).
//
// What each client does was read from its sources and tests (grpc-go 1.85,
// C-core and grpc-java at HEAD of 2026-08, grpc-js 1.13/1.14); the
// differential suite in testdata/peers records the evidence.
type Clients uint8

// The clients, and the set of them all.
const (
	ClientGo Clients = 1 << iota
	ClientCCore
	ClientJava
	ClientNode
	ClientOurs

	AllClients = ClientGo | ClientCCore | ClientJava | ClientNode | ClientOurs
)

// client is the package's own name for a set of clients.
type client = Clients

const (
	clientGo   = ClientGo
	clientCore = ClientCCore
	clientJava = ClientJava
	clientJS   = ClientNode
	// allClients are the clients the rules model, each its own way: our
	// resolver reads records as the specs say, so no rule names it.
	allClients = ClientGo | ClientCCore | ClientJava | ClientNode
)

// clientNames are the clients as messages name them, clientIDs as users
// declare them (ParseClients) and JSON keys them (ClientEffects).
var (
	clientNames = [...]string{"grpc-go", "C-core", "grpc-java", "grpc-js", "our resolver"}
	clientIDs   = [...]string{"go", "c-core", "java", "node", "dnsconfig"}
)

// ParseClients reads a declared list of clients: names from go, c-core,
// java, node and dnsconfig (our resolver), or all, separated by commas (spaces around them are
// allowed). "none" declares no client, for records published to test how
// clients misread them (the interop suite): nothing a client does is then
// an error. The empty list is an error, more likely a mistake.
func ParseClients(s string) (Clients, error) {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return clientsDeclared, nil
	}
	var cs Clients
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		c, ok := clientByID(f)
		if !ok {
			if f == "" {
				return 0, fmt.Errorf("empty client name in %q: list clients from go, c-core, java, node, dnsconfig, or all (or none)", s)
			}
			return 0, fmt.Errorf("unknown client %q: list clients from go, c-core, java, node, dnsconfig, or all (or none)", f)
		}
		cs |= c
	}
	return cs, nil
}

// clientByID is the client named id in a declaration; "all" is every
// client. Other common names of the same clients are accepted too (grpc-go,
// grpc-java, grpc-js, c++, python…), since users write them.
func clientByID(id string) (Clients, bool) {
	switch id {
	case "all":
		return AllClients, true
	case "go", "grpc-go", "golang":
		return ClientGo, true
	case "c-core", "ccore", "core", "c++", "cpp", "python", "ruby", "php", "csharp", "c#", "objective-c":
		return ClientCCore, true
	case "java", "grpc-java":
		return ClientJava, true
	case "node", "grpc-js", "js", "nodejs", "node.js":
		return ClientNode, true
	case "dnsconfig", "ours", "grpc-config-dns":
		return ClientOurs, true
	}
	return 0, false
}

// ClientIDs are the clients in c as users declare them: "go", "c-core",
// "java", "node", "dnsconfig" (none for an empty set). A function, not a
// method: a gRPC client of the resolver keeps every exported method of
// the types it links (grpc-go reaches reflect's MethodByName), and would
// carry this one (TestClientSize).
func ClientIDs(c Clients) []string {
	var out []string
	for i, id := range clientIDs {
		if c&(1<<i) != 0 {
			out = append(out, id)
		}
	}
	return out
}

// String lists the clients as messages name them: "grpc-go, C-core and
// grpc-java".
func (c Clients) String() string {
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
func (c Clients) verb(one, many string) string {
	if c&(c-1) == 0 {
		return one
	}
	return many
}

// declared is c, or every client when c is empty: a user who declares no
// client is kept safe for all of them (docs/rules.md, "Clients").
func (c Clients) declared() Clients {
	if c == 0 {
		return AllClients
	}
	return c & AllClients
}

// clientsDeclared marks a set of clients as declared even when it is
// empty (compat.allowGrpcGoFailure with clients [go]): declared keeps it
// empty rather than reading it as every client.
const clientsDeclared Clients = 1 << 7
