package model

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"

	// The JSON Schema is the first layer of lint (serviceconfig.Lint).
	_ "github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

// Config is a validated publisher config with every default applied and
// every name absolute, lower-case and dot-terminated.
type Config struct {
	Zones  []*Zone
	Keys   []*Key
	Server Server
}

// Server holds the serving options of the top-level server: section. They
// take effect on reload.
type Server struct {
	// MaxUDPSize caps the EDNS buffer size the server honours: a larger
	// UDP answer is truncated (TC=1) and the client retries over TCP.
	MaxUDPSize int
	// TCPIdleTimeout closes TCP connections idle this long (RFC 7766).
	TCPIdleTimeout time.Duration
	// MaxTCPConnections bounds concurrent TCP connections.
	MaxTCPConnections int
	// MaxTCPConnectionsPerAddress bounds the TCP connections of one client
	// address (an IPv4 address, or an IPv6 /64, which one host commonly
	// holds whole), so that one client cannot take every slot.
	MaxTCPConnectionsPerAddress int
	// IXFRHistory is how many past versions of each zone are kept to
	// answer IXFR; older serials get a full transfer.
	IXFRHistory int
}

// Defaults of the server: section.
const (
	DefaultMaxUDPSize        = sc.SafeEDNSSize
	DefaultTCPIdleTimeout    = 10 * time.Second
	DefaultMaxTCPConnections = 1024
	// DefaultMaxTCPConnectionsPerAddress leaves room for 16 busy clients
	// at the default MaxTCPConnections; secondaries and resolvers use one
	// or a few connections each.
	DefaultMaxTCPConnectionsPerAddress = 64
	DefaultIXFRHistory                 = 16
)

// Key is a TSIG key (RFC 8945).
type Key struct {
	// Name is the key's name as a domain name ("xfr-key.").
	Name string
	// Algorithm is the algorithm's domain name ("hmac-sha256.").
	Algorithm string
	// Secret is the shared secret, base64-encoded.
	Secret string
}

// SignatureLen is the size of the TSIG record that signs a message with
// k (RFC 8945 §4.2; names uncompressed, no other data): what a signed
// answer or transfer message adds to the unsigned one.
func (k *Key) SignatureLen() int {
	return wireLen(k.Name) + 10 + wireLen(k.Algorithm) + 6 + 2 + 2 + tsigAlgorithms[k.Algorithm] + 2 + 2 + 2
}

// maxSignatureLen is the size of the largest TSIG record one of keys adds
// to a message, or 0 without keys. Any key may sign a query, and transfers
// carry one record per message at worst, so every answer must fit a DNS
// message with this much to spare.
func maxSignatureLen(keys []*Key) int {
	n := 0
	for _, k := range keys {
		n = max(n, k.SignatureLen())
	}
	return n
}

// Zone is one zone the publisher is authoritative for.
type Zone struct {
	Origin      string
	TTL         uint32
	SOA         SOA
	Nameservers []Nameserver
	Services    []*Service
	Transfer    Transfer
	// Compat is the zone's default for its services' Compat.
	Compat Compat
	// Policies are the zone's policies in merge order (docs/policies.md);
	// PolicySet indexes them and merges those that select a service
	// (services selected by the same policies share one merge). Both are
	// nil without policies.
	Policies  []*policy.Policy
	PolicySet *policy.Set
	policyAt  map[string]*policyPlace
	// DNSSEC, when set, signs the zone (docs/dnssec.md).
	DNSSEC *DNSSEC
	// ResourceVersion is the store revision of the zone object the zone
	// was read from (serve --store); 0 when it comes from a config file.
	ResourceVersion int64
}

// Compat shapes a published record for the gRPC clients that read DNS
// configs their own way (docs/compatibility.md).
// A zone's compat: sets the default of its services; a service's compat:
// overrides it field by field.
type Compat struct {
	// NineDigitDurations writes every duration of a published config with
	// nine fraction digits ("0.100000000s"): grpc-js takes the digits after
	// the point as nanoseconds, so it reads "0.1s" as 1 ns. Default true.
	NineDigitDurations bool
	// OmitNulls leaves out the members of a published config whose value
	// is null, which proto3 JSON reads as absent but grpc-java and grpc-js
	// reject (YAML writes null for an empty value). Default true.
	OmitNulls bool
	// BareHost also publishes the TXT record at the service's own name,
	// where grpc-js looks for it (it does not ask _grpc_config.<host>).
	BareHost bool
	// Clients are the gRPC clients declared to read the records (compat:
	// {clients: [go, java]}); none declared means every one. A record that
	// a declared client would reject, fail its channel on, or read
	// differently from the spec is refused (docs/rules.md, "Clients").
	Clients sc.Clients
	// AllowGrpcGoFailure takes grpc-go out of the declared clients: the
	// setting from before clients could be declared, kept as an alias.
	AllowGrpcGoFailure bool
	// AllowMisspelledFields publishes a config with a field one typo away
	// from one gRPC defines ("timout"), which clients ignore, dropping the
	// value the author meant. Off by default: refused with
	// misspelled-field.
	AllowMisspelledFields bool
}

// DefaultCompat is the compat: of a zone that sets none: what
// serviceconfig.DefaultPublishOptions publishes (encode's defaults), with
// no record at the bare host.
var DefaultCompat = compatOf(sc.DefaultPublishOptions())

// compatOf is the Compat that publishes as o does.
func compatOf(o sc.PublishOptions) Compat {
	return Compat{
		NineDigitDurations:    o.NineDigitDurations,
		OmitNulls:             o.OmitNulls,
		Clients:               o.Clients,
		AllowGrpcGoFailure:    o.AllowGrpcGoFailure,
		AllowMisspelledFields: o.AllowMisspelledFields,
	}
}

// publishOptions are the options serviceconfig.Publish shapes the record
// at owner with.
func (c Compat) publishOptions(owner string) sc.PublishOptions {
	return sc.PublishOptions{
		Owner:                 owner,
		NineDigitDurations:    c.NineDigitDurations,
		OmitNulls:             c.OmitNulls,
		Clients:               c.Clients,
		AllowGrpcGoFailure:    c.AllowGrpcGoFailure,
		AllowMisspelledFields: c.AllowMisspelledFields,
	}
}

// LintOptions are the options that make serviceconfig.Lint judge a record
// published at owner under c as the publisher did: for the web view and
// tools that show a served record's diagnostics.
func (c Compat) LintOptions(owner string) sc.LintOptions {
	return c.publishOptions(owner).LintOptions()
}

// SOA holds the zone's SOA fields; the serial is managed by the server.
type SOA struct {
	MName, RName                    string
	Refresh, Retry, Expire, Minimum uint32
}

// Defaults of the soa: section. Refresh can be long because the publisher
// sends NOTIFY on every change.
const (
	DefaultTTL     = 300
	DefaultRefresh = 3600
	DefaultRetry   = 600
	DefaultExpire  = 14 * 86400
	DefaultMinimum = 60
)

// Nameserver is an NS record of the zone, with the addresses published for
// it when it lies inside the zone.
type Nameserver struct {
	Name      string
	Addresses []netip.Addr
}

// Service is a name with addresses and, optionally, a gRPC service config.
type Service struct {
	Name      string
	Addresses []netip.Addr
	// Port, when not 0, is the port the service listens on, published as
	// an SRV record at _grpc._tcp.<Name> whose target is Name.
	Port uint16
	TTL  uint32
	// TXT is the TXT record at _grpc_config.<Name>: "grpc_config=" and
	// the compact JSON choice list to publish (Value) cut into strings of
	// at most 255 bytes; nil without a service config.
	TXT []string
	// Compat is how the record is shaped for other gRPC clients.
	Compat Compat
	// OwnChoices says the service wrote choices, not serviceConfig. (It
	// sits by Compat's bools, where it takes no room: a fleet holds
	// 100 000 Services.) What it wrote is not kept: Zone.Inspect reads it
	// from the service's spec when asked.
	OwnChoices bool
	// Labels are what label policies select the service by.
	Labels map[string]string
	// ResourceVersion is the store revision of the service object the
	// service was read from (serve --store); 0 when it comes from a
	// config file.
	ResourceVersion int64
}

// Value is the compact JSON choice list the service publishes, or nil.
// It is kept only inside TXT: a fleet holds one copy of each config.
func (s *Service) Value() []byte {
	if s.TXT == nil {
		return nil
	}
	return []byte(strings.TrimPrefix(strings.Join(s.TXT, ""), sc.Attribute+"="))
}

// TXTOwner is the owner name of the service's TXT record.
func (s *Service) TXTOwner() string { return sc.OwnerPrefix + s.Name }

// SRVPrefix is what the owner name of a service's SRV record starts with:
// the gRPC service name and the transport, as RFC 2782 names them.
const SRVPrefix = "_grpc._tcp."

// Transfer says who may transfer the zone and whom to notify.
type Transfer struct {
	// Allow lists the prefixes that may transfer the zone.
	Allow []netip.Prefix
	// Key, when set, is the name of the TSIG key transfers must be signed
	// with; NOTIFY messages are signed with it too.
	Key string
	// Notify lists the secondaries told of every change (RFC 1996).
	Notify []netip.AddrPort
}

// Any reports whether anyone may transfer the zone.
func (t *Transfer) Any() bool { return len(t.Allow) > 0 || t.Key != "" }

// Allowed reports whether addr may transfer the zone (before any TSIG check).
func (t *Transfer) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range t.Allow {
		if p.Contains(addr) {
			return true
		}
	}
	return len(t.Allow) == 0 && t.Key != ""
}

// Parse reads and validates a publisher config in YAML or JSON. It returns
// the config and its warnings, or nil and diagnostics holding at least one
// error. Every diagnostic has Line, Column and Offset in text when it can be
// placed, and a JSON pointer Path into the config document.
//
// Configs beyond MaxConfigSize bytes or MaxConfigNodes YAML values, or
// whose aliases expand beyond them, are refused (config-too-large), and at
// most sc.MaxDiagnostics diagnostics are listed: the cost of Parse is
// linear in the text and bounded, whatever the text.
func Parse(text []byte) (*Config, sc.Diagnostics) {
	cfg, ds, _ := parse(text, nil, defaultLimits())
	return cfg, ds
}

// ParseSettings reads the settings of a publisher whose zones live in a
// store (serve --store): a config with server: and tsigKeys: only. Zones
// in it are an error.
func ParseSettings(text []byte) (*Config, sc.Diagnostics) {
	if why := tooLarge(text); why != "" {
		return nil, sc.Diagnostics{{Severity: codeConfigTooLarge.severity(), Code: codeConfigTooLarge.String(), Offset: 0, Line: 1, Column: 1, Message: why}}
	}
	cfg, ds, _ := parseDoc(text, text, nil, nil, defaultLimits(), true)
	return cfg, ds
}

// parse is Parse, with a cache of item readings (nil for none), within
// lim. It returns the services lists it read item by item too, nil when
// it read the text whole.
func parse(text []byte, cache *itemCache, lim readLimits) (*Config, sc.Diagnostics, map[textPos]*block) {
	if len(text) > MaxConfigSize {
		return nil, tooLargeDiag(tooLarge(text)), nil // the size alone: no estimate
	}
	// Cut into items, the text's values are bounded before any item is
	// read, by the skeleton's estimate and the items' (kept readings
	// counted theirs when they were read); read whole, by the text's.
	skeleton, blocks, ok := cutServices(text)
	if ok && len(blocks) > 0 {
		cfg, ds, err := parseDoc(text, skeleton, blocks, cache, lim, false)
		switch err {
		case nil:
			return cfg, ds, blocks
		case errTooManyNodes:
			return nil, tooLargeDiag(tooManyNodes(MaxConfigNodes + 1)), nil
		}
		// An item did not read alone: read the whole text.
	}
	if n := nodeEstimate(text); n > MaxConfigNodes {
		return nil, tooLargeDiag(tooManyNodes(n)), nil
	}
	cfg, ds, _ := parseDoc(text, text, nil, nil, lim, false)
	return cfg, ds, nil
}

// tooLargeDiag is the diagnostic of a config beyond the limits.
func tooLargeDiag(why string) sc.Diagnostics {
	return sc.Diagnostics{{Severity: codeConfigTooLarge.severity(), Code: codeConfigTooLarge.String(), Offset: 0, Line: 1, Column: 1,
		Message: why + ": split its zones across several publishers, each with its own config"}}
}

// parseDoc reads text, whose YAML is skeleton (text itself, or text with
// the items of blocks blanked out, read separately), within lim; with
// settingsOnly, as ParseSettings.
func parseDoc(text, skeleton []byte, blocks map[textPos]*block, cache *itemCache, lim readLimits, settingsOnly bool) (*Config, sc.Diagnostics, error) {
	d := newDoc(text)
	d.blocks, d.cache, d.lim, d.settingsOnly = blocks, cache, lim, settingsOnly
	if blocks != nil {
		d.nodes = nodeEstimate(skeleton)
		if d.nodes > MaxConfigNodes {
			return nil, nil, errTooManyNodes
		}
	}
	root := d.parseYAML(skeleton)
	var cfg *Config
	if root != nil {
		cfg = d.config(root)
	}
	if d.cutFailed == nil && d.readBlocks != len(blocks) {
		// A list that is not a zone's services (a misplaced key, a zone
		// given up before its services): its items were never read, so a
		// mistake in them would go unreported.
		d.cutFailed = errCut
	}
	if d.cutFailed != nil {
		return nil, nil, d.cutFailed
	}
	if cache != nil {
		cache.jsonBytes = d.jsonBytes
	}
	ds := d.diagnostics()
	if ds.HasErrors() {
		return nil, ds, nil
	}
	return cfg, ds, nil
}

func (d *doc) config(root *yaml.Node) *Config {
	cfg := &Config{Server: Server{
		MaxUDPSize:        DefaultMaxUDPSize,
		TCPIdleTimeout:    DefaultTCPIdleTimeout,
		MaxTCPConnections: DefaultMaxTCPConnections,
		IXFRHistory:       DefaultIXFRHistory,

		MaxTCPConnectionsPerAddress: DefaultMaxTCPConnectionsPerAddress,
	}}
	var zonesNode, keysNode *yaml.Node
	var zonesPath, keysPath string
	present := d.object(root, "", "the publisher config", []field{
		{"zones", func(_, v *yaml.Node, p string) { zonesNode, zonesPath = v, p }},
		{"tsigKeys", func(_, v *yaml.Node, p string) { keysNode, keysPath = v, p }},
		{"server", func(_, v *yaml.Node, p string) { d.server(v, p, &cfg.Server) }},
	})
	if present == nil {
		return nil
	}
	keys := map[string]bool{}
	if keysNode != nil {
		for i, kn := range d.list(keysNode, keysPath, "tsigKeys") {
			if k := d.key(kn, fmt.Sprintf("%s/%d", keysPath, i), keys); k != nil {
				cfg.Keys = append(cfg.Keys, k)
			}
		}
	}
	d.sigLen = maxSignatureLen(cfg.Keys)
	if d.settingsOnly {
		if zonesNode != nil {
			d.report(zonesNode, zonesPath, codeUnknownKey, "zones live in the store when serve has --store: load them with `grpc-config-dns import --config FILE --server URL`, and keep only server: and tsigKeys: here")
			return nil
		}
		return cfg
	}
	if zonesNode == nil {
		d.report(root, "", codeMissingField, "the config has no zones: add a zones: list with at least one zone (see testdata/publisher/example.yaml)")
		return nil
	}
	zs := d.list(zonesNode, zonesPath, "zones")
	if len(zs) == 0 && deref(zonesNode).Kind == yaml.SequenceNode {
		d.report(zonesNode, zonesPath, codeMissingField, "zones is empty: add at least one zone with an origin, nameservers and services")
	}
	origins := map[string]*yaml.Node{}
	var nest zoneNesting
	for i, zn := range zs {
		path := fmt.Sprintf("%s/%d", zonesPath, i)
		z, originNode := d.zone(zn, path, keys)
		if z == nil {
			continue
		}
		if first, dup := origins[z.Origin]; dup {
			d.report(originNode, path+"/origin", codeZoneDuplicate, "zone %s is defined twice (first at line %d): merge the two", z.Origin, first.Line)
			continue
		}
		outer, inner := nest.add(z.Origin)
		if outer != "" {
			d.report(originNode, path+"/origin", codeZoneNested, "%s", nestedMessage(z.Origin, outer, fmt.Sprintf(" (line %d)", origins[outer].Line)))
		}
		if inner != "" {
			d.report(originNode, path+"/origin", codeZoneNested, "%s", nestedMessage(inner, z.Origin, fmt.Sprintf(" (line %d)", origins[inner].Line)))
		}
		origins[z.Origin] = originNode
		cfg.Zones = append(cfg.Zones, z)
	}
	return cfg
}

func (d *doc) server(n *yaml.Node, path string, s *Server) {
	option := func(name string, lo, hi int, dst *int) field {
		return field{name, func(_, v *yaml.Node, p string) {
			if x, ok := d.integer(v, p, name, codeServerOption, lo, hi); ok {
				*dst = x
			}
		}}
	}
	d.object(n, path, "server", []field{
		{"maxUDPSize", func(_, v *yaml.Node, p string) {
			if x, ok := d.integer(v, p, "maxUDPSize", codeUDPSize, 512, sc.MaxMessageSize); ok {
				s.MaxUDPSize = x
				if x > sc.SafeEDNSSize {
					d.report(v, p, codeUDPSizeFragmentation, "maxUDPSize %d is above %d: UDP answers that large may be fragmented and lost on real networks (DNS flag day 2020); clients retry over TCP when the answer is truncated", x, sc.SafeEDNSSize)
				}
			}
		}},
		{"tcpIdleTimeout", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "tcpIdleTimeout", 1, 3600); ok {
				s.TCPIdleTimeout = time.Duration(x) * time.Second
			}
		}},
		option("maxTCPConnections", 1, 1<<20, &s.MaxTCPConnections),
		option("maxTCPConnectionsPerAddress", 1, 1<<20, &s.MaxTCPConnectionsPerAddress),
		option("ixfrHistory", 0, 1000, &s.IXFRHistory),
	})
}

func (d *doc) integer(n *yaml.Node, path, what string, rangeCode diagCode, lo, hi int) (int, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.report(n, path, codeFieldType, "%s must be a whole number, not %s", what, describe(n))
		return 0, false
	}
	x, err := strconv.Atoi(n.Value)
	if err != nil || x < lo || x > hi {
		d.report(n, path, rangeCode, "%s is %s: it must be between %d and %d", what, n.Value, lo, hi)
		return 0, false
	}
	return x, true
}

// maxSecretFile bounds a TSIG secret file: a base64 key is under 100 bytes.
const maxSecretFile = 4 << 10

// readSecretFile reads a TSIG secret file (a path relative to the working
// directory, or absolute).
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("%s is larger than %d bytes: it should hold only the base64 secret", path, maxSecretFile)
	}
	return b, nil
}

// TSIG algorithms we accept: the HMAC-SHA2 family (RFC 8945 §6 makes
// HMAC-SHA256 mandatory; MD5 and SHA-1 are deprecated).
var tsigAlgorithms = map[string]int{"hmac-sha256.": 32, "hmac-sha384.": 48, "hmac-sha512.": 64}

// key reads a TSIG key of tsigKeys: its fields, then its one secret,
// then its name against the keys before it (seen). It returns nil when the
// key cannot be used; a key with a bad secret is still counted in seen.
func (d *doc) key(n *yaml.Node, path string, seen map[string]bool) *Key {
	k := &Key{Algorithm: "hmac-sha256."}
	present, nameNode, secretNode := d.keyFields(n, path, k)
	if present == nil {
		return nil
	}
	if present["name"] == nil {
		d.report(n, path, codeMissingField, "the TSIG key has no name: add name: (the same name the secondary uses)")
	}
	d.keySecret(n, path, k, present, secretNode)
	if k.Name == "" {
		return nil
	}
	if seen[k.Name] {
		d.report(nameNode, path+"/name", codeTSIGKey, "TSIG key %s is defined twice", k.Name)
		return nil
	}
	// A key with a bad secret still counts as defined, so that the
	// transfers naming it do not add a second error.
	seen[k.Name] = true
	if k.Secret == "" {
		return nil
	}
	return k
}

// keyFields reads a TSIG key's fields into k, returning the fields present
// (nil when the entry is not an object) and the nodes of its name and of
// its secret, wherever that came from. A secret that could not be read is
// "-", reported already.
func (d *doc) keyFields(n *yaml.Node, path string, k *Key) (present map[string]*yaml.Node, nameNode, secretNode *yaml.Node) {
	present = d.object(n, path, "a TSIG key", []field{
		{"name", func(_, v *yaml.Node, p string) {
			s, ok := d.scalar(v, p, "the key name")
			if !ok {
				return
			}
			nameNode = v
			k.Name = absName(s, ".")
			if msg := checkName(k.Name, false); msg != "" {
				d.report(v, p, codeTSIGKey, "key name %q: %s", s, msg)
				k.Name = ""
			}
		}},
		{"algorithm", func(_, v *yaml.Node, p string) {
			s, ok := d.scalar(v, p, "the key algorithm")
			if !ok {
				return
			}
			a := strings.ToLower(strings.TrimSuffix(s, ".")) + "."
			if _, ok := tsigAlgorithms[a]; !ok {
				d.report(v, p, codeTSIGKey, "TSIG algorithm %q is not supported: use hmac-sha256 (or hmac-sha384, hmac-sha512)", s)
				return
			}
			k.Algorithm = a
		}},
		{"secret", func(_, v *yaml.Node, p string) {
			if s, ok := d.scalar(v, p, "the key secret"); ok {
				secretNode, k.Secret = v, strings.Join(strings.Fields(s), "")
			}
		}},
		// The secret out of the config, as a Kubernetes Secret is mounted
		// or injected: a file holding the base64 secret, or an
		// environment variable. Both are read at every load.
		{"secretFile", func(_, v *yaml.Node, p string) {
			if s, ok := d.scalar(v, p, "the key's secret file"); ok {
				secretNode, k.Secret = v, d.secretFromFile(v, p, s)
			}
		}},
		{"secretEnv", func(_, v *yaml.Node, p string) {
			if s, ok := d.scalar(v, p, "the key's secret variable"); ok {
				secretNode, k.Secret = v, d.secretFromEnv(v, p, s)
			}
		}},
	})
	return present, nameNode, secretNode
}

// secretFromFile is the secret held by file, or "-" when it cannot be read
// (reported at v).
func (d *doc) secretFromFile(v *yaml.Node, p, file string) string {
	b, err := readSecretFile(file)
	if err != nil {
		d.report(v, p, codeTSIGKey, "cannot read the secret file: %v; mount the secret there or give secret: or secretEnv: instead", err)
		return "-"
	}
	return strings.Join(strings.Fields(string(b)), "")
}

// secretFromEnv is the secret held by the environment variable name, or
// "-" when it is not set (reported at v).
func (d *doc) secretFromEnv(v *yaml.Node, p, name string) string {
	val, set := os.LookupEnv(name)
	if !set {
		d.report(v, p, codeTSIGKey, "environment variable %s is not set: set it to the base64 secret (in Kubernetes, from a Secret with env.valueFrom.secretKeyRef)", name)
		return "-"
	}
	return strings.Join(strings.Fields(val), "")
}

// keySecret checks that the key has exactly one secret and that it is
// base64 of a usable length for its algorithm, clearing k.Secret when it
// is not.
func (d *doc) keySecret(n *yaml.Node, path string, k *Key, present map[string]*yaml.Node, secretNode *yaml.Node) {
	sources := 0
	for _, f := range []string{"secret", "secretFile", "secretEnv"} {
		if present[f] != nil {
			sources++
		}
	}
	switch {
	case sources == 0:
		d.report(n, path, codeMissingField, "the TSIG key has no secret: add secret: with a base64 key, as `tsig-keygen` prints, or secretFile: or secretEnv: to keep it out of the config")
		return
	case sources > 1:
		d.report(n, path, codeTSIGKey, "the TSIG key has more than one of secret, secretFile and secretEnv: keep one")
		k.Secret = ""
		return
	case k.Secret == "-":
		k.Secret = "" // reported where it was read
		return
	case secretNode == nil:
		return
	}
	raw, err := base64.StdEncoding.DecodeString(k.Secret)
	switch {
	case err != nil:
		d.report(secretNode, path+"/secret", codeTSIGKey, "the secret is not valid base64 (%v): generate one with `tsig-keygen -a hmac-sha256 NAME`", err)
		k.Secret = ""
	case len(raw) == 0:
		d.report(secretNode, path+"/secret", codeTSIGKey, "the secret is empty")
		k.Secret = ""
	case len(raw) < tsigAlgorithms[k.Algorithm]:
		d.report(secretNode, path+"/secret", codeTSIGKeyShort, "the secret is %d bytes; RFC 8945 asks for at least the hash length (%d bytes for %s)", len(raw), tsigAlgorithms[k.Algorithm], strings.TrimSuffix(k.Algorithm, "."))
	}
}

// zoneBuild collects what zone() learns before the cross-checks.
type nsEntry struct {
	ns   Nameserver
	node *yaml.Node
	path string
	addr *yaml.Node // addresses node, when given
}

type svcEntry struct {
	svc *Service
	// line and col place the service's name (line 0: none), for the
	// diagnostics that name it: a node for each of 100 000 services would
	// be made for nothing.
	line, col int32
	path      string
	// target is what policies selected the service by.
	target policy.Target
}

// name is a node at the service's name, for d.report.
func (e *svcEntry) name() *yaml.Node {
	if e.line == 0 {
		return nil
	}
	return &yaml.Node{Line: int(e.line), Column: int(e.col)}
}

func (d *doc) zone(n *yaml.Node, path string, keys map[string]bool) (*Zone, *yaml.Node) {
	if !d.mapping(n, path, "a zone") {
		return nil, nil
	}
	z := &Zone{TTL: DefaultTTL, Compat: DefaultCompat, SOA: SOA{Refresh: DefaultRefresh, Retry: DefaultRetry, Expire: DefaultExpire, Minimum: DefaultMinimum}}
	var originNode, nsNode, soaNode, svcKey, svcNode, xfrNode, polNode, secNode *yaml.Node
	var nsPath, soaPath, svcPath, xfrPath, polPath, secPath string
	present := d.object(n, path, "a zone", []field{
		{"origin", func(_, v *yaml.Node, _ string) { originNode = v }},
		{"ttl", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "the zone ttl", 0, MaxTTL); ok {
				z.TTL = x
				d.largeTTL(v, p, x)
			}
		}},
		{"nameservers", func(_, v *yaml.Node, p string) { nsNode, nsPath = v, p }},
		{"soa", func(_, v *yaml.Node, p string) { soaNode, soaPath = v, p }},
		{"services", func(k, v *yaml.Node, p string) { svcKey, svcNode, svcPath = k, v, p }},
		{"transfer", func(_, v *yaml.Node, p string) { xfrNode, xfrPath = v, p }},
		{"compat", func(_, v *yaml.Node, p string) { z.Compat, _ = d.compat(v, p, z.Compat) }},
		{"policies", func(_, v *yaml.Node, p string) { polNode, polPath = v, p }},
		{"dnssec", func(_, v *yaml.Node, p string) { secNode, secPath = v, p }},
	})
	if present == nil {
		return nil, nil
	}
	if originNode == nil {
		d.report(n, path, codeMissingField, "the zone has no origin: add origin: with the zone's domain name, like example.test.")
		return nil, nil
	}
	s, ok := d.scalar(originNode, path+"/origin", "origin")
	if !ok {
		return nil, nil
	}
	z.Origin = strings.ToLower(s)
	if !strings.HasSuffix(z.Origin, ".") {
		z.Origin += "."
	}
	if msg := checkName(z.Origin, false); msg != "" {
		d.report(originNode, path+"/origin", codeNameSyntax, "origin %q: %s", s, msg)
		return nil, nil
	}
	errorsBefore := d.errors

	nss := d.nameservers(n, path, nsNode, nsPath, z)
	z.SOA.RName = "hostmaster." + z.Origin
	if z.Origin == "." {
		z.SOA.RName = "hostmaster."
	}
	if soaNode != nil {
		d.soa(soaNode, soaPath, z)
	}
	d.zonePolicies(polNode, polPath, z)
	if secNode != nil {
		d.dnssec(secNode, secPath, z)
	}
	// The answers of a signed zone carry RRSIG records: every one must
	// still fit a message.
	tsigLen := d.sigLen
	d.sigLen += z.rrsigLen()
	svcs := d.zoneServices(svcKey, svcNode, svcPath, z)
	d.sigLen = tsigLen
	if xfrNode != nil {
		d.transfer(xfrNode, xfrPath, z, keys)
	}
	if secNode != nil {
		d.checkDNSSECTimes(secNode, secPath, z)
	}
	d.crossCheck(z, svcs, nss)
	if d.errors == errorsBefore {
		// An invalid service would look unselected.
		d.unusedPolicies(z)
	}
	if d.errors > errorsBefore {
		return nil, originNode
	}
	return z, originNode
}

// nameservers reads a zone's nameservers: into z, and the SOA's MNAME
// from the first.
func (d *doc) nameservers(zn *yaml.Node, zpath string, n *yaml.Node, path string, z *Zone) []nsEntry {
	var nss []nsEntry
	if n == nil {
		d.report(zn, zpath, codeNSMissing, "zone %s has no nameservers: add nameservers: [{name: ns1, addresses: [192.0.2.53]}] (the names secondaries and resolvers are told to ask)", z.Origin)
		return nil
	}
	for i, e := range d.list(n, path, "nameservers") {
		if ns, ok := d.nameserver(e, fmt.Sprintf("%s/%d", path, i), z.Origin); ok {
			nss = append(nss, ns)
		}
	}
	if len(nss) == 0 && deref(n).Kind == yaml.SequenceNode && len(deref(n).Content) == 0 {
		d.report(n, path, codeNSMissing, "zone %s has an empty nameservers list: a zone needs at least one NS record", z.Origin)
	}
	for _, e := range nss {
		z.Nameservers = append(z.Nameservers, e.ns)
	}
	if len(nss) > 0 {
		z.SOA.MName = nss[0].ns.Name
	}
	return nss
}

// zoneServices reads a zone's services: list, item by item from the
// blocks cut out of the text when there are any (see chunks.go).
func (d *doc) zoneServices(key, n *yaml.Node, path string, z *Zone) []svcEntry {
	var svcs []svcEntry
	switch b := d.blocks[posOf(key)]; {
	case b != nil:
		d.readBlocks++
		b.zone, b.path = z, path
		var err error
		if svcs, err = d.services(b, path, z); err != nil {
			d.cutFailed = err
		}
	case n != nil:
		for i, e := range d.list(n, path, "services") {
			if s := d.service(e, fmt.Sprintf("%s/%d", path, i), z); s.svc != nil {
				svcs = append(svcs, s)
			}
		}
	}
	return svcs
}

// crossCheck checks what no single entry can: duplicate services, and
// nameserver addresses against the services that may give them. It
// fills z.Services.
func (d *doc) crossCheck(z *Zone, svcs []svcEntry, nss []nsEntry) {
	// Indexes into svcs, sized once: a fleet's zone has 100 000 services
	// and this runs at every reload.
	byName := make(map[string]int32, len(svcs))
	z.Services = slices.Grow(z.Services, len(svcs))
	for i := range svcs {
		s := &svcs[i]
		if first, dup := byName[s.svc.Name]; dup {
			d.report(s.name(), s.path+"/name", codeServiceDuplicate, "service %s is defined twice (first at line %d): merge the two entries", s.svc.Name, svcs[first].line)
			continue
		}
		byName[s.svc.Name] = int32(i)
		z.Services = append(z.Services, s.svc)
	}
	for _, e := range nss {
		in := inZone(e.ns.Name, z.Origin)
		var svc *svcEntry
		i, hasSvc := byName[e.ns.Name]
		if hasSvc {
			svc = &svcs[i]
		}
		switch {
		case !in && len(e.ns.Addresses) > 0:
			d.report(e.addr, e.path+"/addresses", codeNSGlueOutsideZone, "nameserver %s lies outside zone %s, so the zone cannot publish its addresses: remove them (its own zone publishes them)", e.ns.Name, z.Origin)
		case in && len(e.ns.Addresses) > 0 && hasSvc && len(svc.svc.Addresses) > 0:
			d.report(e.addr, e.path+"/addresses", codeNSAddressConflict, "addresses for %s are given both here and by the service at line %d: give them in one place", e.ns.Name, svc.line)
		case in && len(e.ns.Addresses) == 0 && (!hasSvc || len(svc.svc.Addresses) == 0) && (len(z.Transfer.Allow) > 0 || len(z.Transfer.Notify) > 0):
			d.report(e.node, e.path, codeNSNoAddress, "nameserver %s lies inside zone %s but has no address: add addresses: to it (or a service of that name), or the secondaries this zone is transferred to, such as BIND, refuse it", e.ns.Name, z.Origin)
		case in && len(e.ns.Addresses) == 0 && (!hasSvc || len(svc.svc.Addresses) == 0):
			// Served by us alone, the zone works: resolvers find this
			// server through the parent's glue. It is still a broken zone
			// for anyone who loads it, so say so.
			d.report(e.node, e.path, codeNSNoAddressStandalone, "nameserver %s lies inside zone %s but has no address: this server answers anyway, but the zone cannot be transferred (secondaries such as BIND, and named-checkzone, refuse it) and resolvers can reach the server only through glue at the parent; add addresses: to it (or a service of that name)", e.ns.Name, z.Origin)
		}
	}
}

func (d *doc) largeTTL(n *yaml.Node, path string, ttl uint32) {
	if ttl > 86400 {
		d.report(n, path, codeTTLLarge, "TTL %d is more than a day: resolvers cap TTLs (often at one day), and a config change takes this long to reach every client; a few minutes is usual for service configs", ttl)
	}
}

// addrPorts reads a list (or one) of address:port targets, what names
// them (field) and one (one) for messages, each bad one reported with
// code; it returns the targets and their nodes.
func (d *doc) addrPorts(v *yaml.Node, path, field, one string, code diagCode) ([]netip.AddrPort, []*yaml.Node) {
	var out []netip.AddrPort
	var nodes []*yaml.Node
	for ep, e := range d.elements(v, path, field) {
		s, ok := d.scalar(e, ep, "a "+one)
		if !ok {
			continue
		}
		ap, err := parseAddrPort(strings.TrimSpace(s))
		if err != nil {
			d.report(e, ep, code, "%s %q: %v", one, s, err)
			continue
		}
		out = append(out, ap)
		nodes = append(nodes, e)
	}
	return out, nodes
}

// name resolves a name written in the config against origin, checks it,
// and warns about a missing final dot.
func (d *doc) name(n *yaml.Node, path, what, origin string, hostname bool) (string, bool) {
	s, ok := d.scalar(n, path, what)
	if !ok {
		return "", false
	}
	s = strings.TrimSpace(s)
	fqdn := absName(s, origin)
	if msg := checkName(fqdn, hostname); msg != "" {
		d.report(n, path, codeNameSyntax, "%s %q: %s", what, s, msg)
		return "", false
	}
	if repeatsOrigin(s, origin) {
		d.report(n, path, codeNameRepeatsOrigin, "%s %q is relative, so it means %s; if you meant %s, write %s. (with a final dot) or %s", what, s, fqdn, strings.ToLower(s)+".", s, relative(strings.ToLower(s)+".", origin))
	}
	return fqdn, true
}

func (d *doc) nameserver(n *yaml.Node, path, origin string) (nsEntry, bool) {
	e := nsEntry{node: n, path: path}
	if n != nil && n.Kind == yaml.ScalarNode {
		name, ok := d.name(n, path, "nameserver", origin, true)
		e.ns.Name = name
		return e, ok
	}
	var nameNode *yaml.Node
	ok := true
	present := d.object(n, path, "a nameserver", []field{
		{"name", func(_, v *yaml.Node, _ string) { nameNode = v }},
		{"addresses", func(_, v *yaml.Node, p string) {
			e.addr = v
			e.ns.Addresses, ok = d.addresses(v, p, "nameserver")
		}},
	})
	if present == nil {
		return e, false
	}
	if nameNode == nil {
		d.report(n, path, codeMissingField, "the nameserver has no name: add name: ns1 (relative to the origin) or an absolute name like ns1.example.net.")
		return e, false
	}
	name, nameOK := d.name(nameNode, path+"/name", "nameserver", origin, true)
	e.ns.Name = name
	return e, ok && nameOK
}

func (d *doc) addresses(n *yaml.Node, path, what string) ([]netip.Addr, bool) {
	ok := true
	var out []netip.Addr
	seen := map[netip.Addr]int{}
	for i, e := range d.list(n, path, "addresses") {
		p := path
		if deref(n).Kind == yaml.SequenceNode {
			p = fmt.Sprintf("%s/%d", path, i)
		}
		s, sok := d.scalar(e, p, "an address")
		if !sok {
			ok = false
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || a.Zone() != "" {
			hint := ""
			if strings.Contains(s, ":") && strings.Count(s, ":") == 1 {
				hint = "; addresses carry no port"
			} else if strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") && !strings.Contains(s, ":") {
				hint = "; names are not allowed here, only IP addresses"
			}
			d.report(e, p, codeAddressSyntax, "%q is not an IPv4 or IPv6 address%s", s, hint)
			ok = false
			continue
		}
		if j, dup := seen[a]; dup {
			d.report(e, p, codeAddressDuplicate, "address %s is listed twice for this %s (also item %d): remove one", a, what, j)
			ok = false
			continue
		}
		seen[a] = i
		out = append(out, a)
	}
	return out, ok
}

func (d *doc) soa(n *yaml.Node, path string, z *Zone) {
	var refreshNode *yaml.Node
	d.object(n, path, "soa", []field{
		{"mname", func(_, v *yaml.Node, p string) {
			if name, ok := d.name(v, p, "mname", z.Origin, true); ok {
				z.SOA.MName = name
			}
		}},
		{"rname", func(_, v *yaml.Node, p string) {
			s, ok := d.scalar(v, p, "rname")
			if !ok {
				return
			}
			// Accept the mailbox as an e-mail address: hostmaster@example.test.
			if local, domain, found := strings.Cut(s, "@"); found {
				if strings.Contains(local, ".") {
					d.report(v, p, codeNameSyntax, "rname %q: a mailbox whose local part holds a dot cannot be written here; use a mailbox without dots", s)
					return
				}
				dom := strings.ToLower(strings.TrimSuffix(domain, ".")) + "."
				z.SOA.RName = strings.ToLower(local) + "." + dom
				if msg := checkName(z.SOA.RName, false); msg != "" {
					d.report(v, p, codeNameSyntax, "rname %q: %s", s, msg)
				}
				return
			}
			if name, ok := d.name(v, p, "rname", z.Origin, false); ok {
				z.SOA.RName = name
			}
		}},
		{"refresh", func(_, v *yaml.Node, p string) {
			refreshNode = v
			if x, ok := d.duration(v, p, "soa refresh", 1, MaxTTL); ok {
				z.SOA.Refresh = x
			}
		}},
		{"retry", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "soa retry", 1, MaxTTL); ok {
				z.SOA.Retry = x
			}
		}},
		{"expire", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "soa expire", 1, MaxTTL); ok {
				z.SOA.Expire = x
			}
		}},
		{"minimum", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "soa minimum (the negative-caching TTL)", 0, MaxTTL); ok {
				z.SOA.Minimum = x
			}
		}},
	})
	if uint64(z.SOA.Expire) < uint64(z.SOA.Refresh)+uint64(z.SOA.Retry) {
		at := refreshNode
		if at == nil {
			at = n
		}
		d.report(at, path, codeSOATimers, "soa expire (%ds) is shorter than refresh + retry (%ds): a secondary that misses one refresh drops the zone; make expire much longer (14 days is usual)", z.SOA.Expire, z.SOA.Refresh+z.SOA.Retry)
	}
}

// serviceNodes are the parts of a service entry read after its fields:
// what depends on the name, and on choices and serviceConfig together.
type serviceNodes struct {
	name, port, choices, config, bareHostNode *yaml.Node
	choicesPath, configPath                   string
	bareHost, compatBareHost                  *bool
}

func (d *doc) service(n *yaml.Node, path string, z *Zone) svcEntry {
	e := svcEntry{path: path}
	if !d.mapping(n, path, "a service") {
		return e
	}
	s := &Service{TTL: z.TTL, Compat: z.Compat}
	sn, ok, present := d.serviceFields(n, path, s)
	if !present {
		return e
	}
	if sn.name == nil {
		d.report(n, path, codeMissingField, "the service has no name: add name: with its host name relative to %s (like echo), or absolute with a final dot", z.Origin)
		return e
	}
	e.line, e.col = int32(sn.name.Line), int32(sn.name.Column)
	name, nok := d.name(sn.name, path+"/name", "service name", z.Origin, true)
	if !nok {
		return e
	}
	s.Name = name
	e.target = s.target()
	if !d.serviceName(sn, path, s, z) {
		return e
	}
	if s.Port != 0 && len(s.Addresses) == 0 {
		d.report(sn.port, path+"/port", codeSRVNoAddress, "service %s names a port but has no addresses: its SRV record (%s%s) would point at a name without any; add addresses: or remove port:", name, SRVPrefix, name)
		ok = false
	}
	ok = d.addressAnswerFits(sn.name, path, s) && ok
	switch {
	case sn.choices != nil && sn.config != nil:
		d.report(sn.config, sn.configPath, codeChoicesAndConfig, "service %s sets both choices and serviceConfig: use choices for a list of canary choices, or serviceConfig for one config for every client", name)
		ok = false
	case sn.choices != nil:
		s.TXT = d.serviceTXT(sn.choices, sn.choicesPath, sc.KindChoices, s, z)
		ok = ok && s.TXT != nil
	case sn.config != nil:
		s.TXT = d.serviceTXT(sn.config, sn.configPath, sc.KindServiceConfig, s, z)
		ok = ok && s.TXT != nil
	}
	hasConfig := sn.choices != nil || sn.config != nil
	if len(s.Addresses) == 0 && !hasConfig {
		d.report(sn.name, path+"/name", codeServiceEmpty, "service %s has no addresses and no service config, so it publishes nothing: add addresses:, choices: or serviceConfig:", name)
	}
	if (sn.bareHost != nil && *sn.bareHost || sn.compatBareHost != nil && *sn.compatBareHost) && !hasConfig {
		d.report(sn.name, path+"/name", codeServiceEmpty, "bareHost is set but service %s has no service config to publish", name)
	}
	if ok {
		e.svc = s
	}
	return e
}

// serviceFields reads a service entry's fields into s, keeping the nodes
// that later steps check against each other. ok is false when a field was
// refused; present is false when the entry is not an object at all.
func (d *doc) serviceFields(n *yaml.Node, path string, s *Service) (sn serviceNodes, ok, present bool) {
	ok = true
	isMap := d.keys(n, path, "a service", serviceKeys, func(i int, _, v *yaml.Node, p string) {
		if i < 0 {
			return
		}
		switch serviceKeys[i] {
		case "name":
			sn.name = v
		case "addresses":
			var aok bool
			s.Addresses, aok = d.addresses(v, p, "service")
			ok = ok && aok
		case "port":
			x, pok := d.integer(v, p, "the service port", codeSRVPort, 1, 65535)
			s.Port, ok = uint16(x), ok && pok
			sn.port = v
		case "ttl":
			x, tok := d.duration(v, p, "the service ttl", 0, MaxTTL)
			s.TTL, ok = x, ok && tok
			if tok {
				d.largeTTL(v, p, x)
			}
		case "choices":
			sn.choices, sn.choicesPath = v, p
		case "labels":
			var lok bool
			s.Labels, lok = d.labels(v, p)
			ok = ok && lok
		case "serviceConfig":
			sn.config, sn.configPath = v, p
		case "bareHostCompat":
			b, bok := d.boolean(v, p, "bareHostCompat")
			if bok {
				sn.bareHost, sn.bareHostNode = &b, v
			}
			ok = ok && bok
		case "compat":
			var set map[string]bool
			s.Compat, set = d.compat(v, p, s.Compat)
			if set["bareHost"] {
				sn.compatBareHost = &s.Compat.BareHost
			}
		}
	})
	switch {
	case sn.bareHost != nil && sn.compatBareHost != nil && *sn.bareHost != *sn.compatBareHost:
		d.report(sn.bareHostNode, path+"/bareHostCompat", codeCompatConflict, "bareHostCompat: %t contradicts compat: {bareHost: %t}: keep only compat.bareHost", *sn.bareHost, *sn.compatBareHost)
		ok = false
	case sn.bareHost != nil:
		s.Compat.BareHost = *sn.bareHost
	}
	return sn, ok, isMap
}

// serviceKeys are the keys a service may hold, in the order diagnostics
// list them.
var serviceKeys = []string{"name", "addresses", "port", "ttl", "choices", "labels", "serviceConfig", "bareHostCompat", "compat"}

// serviceName checks that the owner names a service publishes are its
// own and fit in DNS.
func (d *doc) serviceName(sn serviceNodes, path string, s *Service, z *Zone) bool {
	name := s.Name
	switch {
	case !inZone(name, z.Origin):
		d.report(sn.name, path+"/name", codeNameOutsideZone, "service %s lies outside zone %s: list it under the zone that holds it, or write it relative to %s", name, z.Origin, z.Origin)
	case strings.HasPrefix(name, sc.OwnerPrefix) || name == strings.TrimSuffix(sc.OwnerPrefix, ".")+".":
		d.report(sn.name, path+"/name", codeNameReserved, "service name %s starts with %s, which the publisher adds itself: name the service by its host name", name, sc.OwnerPrefix)
	case prefixedWireLen(sc.OwnerPrefix, name) > maxNameWire:
		d.report(sn.name, path+"/name", codeNameSyntax, "service name %s is too long: %s%s would be %d bytes in DNS wire format, more than %d", name, sc.OwnerPrefix, name, wireLen(sc.OwnerPrefix+name), maxNameWire)
	case s.Port != 0 && prefixedWireLen(SRVPrefix, name) > maxNameWire:
		d.report(sn.name, path+"/name", codeNameSyntax, "service name %s is too long for its port: %s%s would be %d bytes in DNS wire format, more than %d", name, SRVPrefix, name, wireLen(SRVPrefix+name), maxNameWire)
	default:
		return true
	}
	return false
}

// addressAnswerFits checks that the A and the AAAA answers of a service,
// as served, fit in a DNS message: header, question, the compressed
// records, the OPT record, and a TSIG record when keys may sign them.
func (d *doc) addressAnswerFits(at *yaml.Node, path string, s *Service) bool {
	n := len(s.Addresses)
	if n == 0 {
		return true
	}
	var v4, v6 int
	for _, a := range s.Addresses {
		if a.Is4() {
			v4++
		} else {
			v6++
		}
	}
	size := 12 + wireLen(s.Name) + 4 + max(v4*(12+4), v6*(12+16)) + optLen + d.sigLen
	if size > sc.MaxMessageSize {
		d.report(at, path+"/addresses", codeAnswerTooLarge, "service %s has %d addresses, an answer of %d bytes%s: a DNS message holds at most %d", s.Name, n, size, d.signedNote(), sc.MaxMessageSize)
		return false
	}
	return true
}

// serviceTXT converts a service's choices or serviceConfig to JSON,
// merges the zone's policies that select it into every choice, has
// serviceconfig.Publish decide what to publish under the service's compat
// settings, maps its diagnostics back to the YAML (a policy's value when
// the policy set it), and returns the strings of the TXT record to publish
// (nil when it is refused).
func (d *doc) serviceTXT(n *yaml.Node, path string, kind sc.Kind, s *Service, z *Zone) []string {
	j, ok := d.toJSON(n, path)
	if !ok {
		return nil
	}
	text, place := j.text, func(diag *sc.Diagnostic) bool {
		at := n
		if diag.Offset >= 0 {
			if m := d.placed(j, diag.Offset); m != nil {
				at = m
			}
		}
		loc := d.at(at, path+diag.Path, codeYAMLValue, "")
		diag.Path, diag.Line, diag.Column, diag.Offset = loc.Path, loc.Line, loc.Column, loc.Offset
		return true
	}
	s.OwnChoices = kind == sc.KindChoices
	if z.PolicySet != nil {
		if st := z.PolicySet.StackFor(s.target()); !st.Empty() {
			res, err := st.Apply(j.text, kind == sc.KindChoices)
			if err != nil {
				d.report(n, path, codeYAMLValue, "%v", err)
				return nil
			}
			text, place = res.JSON, d.placeByOrigin(n, path, res, s, z)
		}
	}
	rec, ds := sc.Publish(sc.Source{JSON: text, Kind: kind}, s.Compat.publishOptions(s.TXTOwner()))
	for _, diag := range ds {
		if e, w := diag.OmittedCounts(); e+w > 0 || d.full(diag.Severity) {
			d.add(diag) // counted, not placed
			continue
		}
		if diag.Code == sc.CodeMisspelledField {
			diag.Message += " (or set compat: {allowMisspelledFields: true} to publish it as written)"
		}
		if place(&diag) {
			d.add(diag)
		}
	}
	if rec == nil {
		return nil
	}
	// Signed answers carry a TSIG record too.
	if d.sigLen > 0 {
		if size := sc.ResponseSize(s.TXTOwner(), rec.TXT, true) + d.sigLen; size > sc.MaxMessageSize {
			d.report(n, path, codeAnswerTooLarge, "the TXT answer at %s would be %d bytes%s: a DNS message holds at most %d; shrink the config or split it across services", s.TXTOwner(), size, d.signedNote(), sc.MaxMessageSize)
			return nil
		}
	}
	return rec.TXT
}

// compat reads a compat: mapping over base and says which fields it set.
func (d *doc) compat(n *yaml.Node, path string, base Compat) (Compat, map[string]bool) {
	set := map[string]bool{}
	flag := func(name string, dst *bool) field {
		return field{name, func(_, v *yaml.Node, p string) {
			if b, ok := d.boolean(v, p, "compat."+name); ok {
				*dst, set[name] = b, true
			}
		}}
	}
	d.object(n, path, "compat", []field{
		flag("nineDigitDurations", &base.NineDigitDurations),
		flag("omitNulls", &base.OmitNulls),
		flag("bareHost", &base.BareHost),
		{"clients", func(_, v *yaml.Node, p string) {
			if cs, ok := d.clients(v, p); ok {
				base.Clients, set["clients"] = cs, true
			}
		}},
		flag("allowGrpcGoFailure", &base.AllowGrpcGoFailure),
		flag("allowMisspelledFields", &base.AllowMisspelledFields),
	})
	return base, set
}

// clients reads compat.clients: a list of client names (go, c-core, java,
// node, all), or one string of them separated by commas; none declares no
// client (serviceconfig.ParseClients).
func (d *doc) clients(n *yaml.Node, path string) (sc.Clients, bool) {
	var cs sc.Clients
	ok := true
	for ep, e := range d.elements(n, path, "compat.clients") {
		name, good := d.scalar(e, ep, "a client name")
		if !good {
			ok = false
			continue
		}
		c, err := sc.ParseClients(name)
		if err != nil {
			d.report(e, ep, codeFieldType, "compat.clients: %v", err)
			ok = false
			continue
		}
		cs |= c
	}
	if ok && cs == 0 {
		d.report(n, path, codeFieldType, "compat.clients is empty: list the clients that read the records, from go, c-core, java, node, or all (leave it out for all)")
		ok = false
	}
	return cs, ok
}

func (d *doc) transfer(n *yaml.Node, path string, z *Zone, keys map[string]bool) {
	t := &z.Transfer
	var allowNodes, notifyNodes []*yaml.Node
	d.object(n, path, "transfer", []field{
		{"allow", func(_, v *yaml.Node, p string) {
			for ep, e := range d.elements(v, p, "allow") {
				if pfx, ok := d.allowEntry(e, ep); ok {
					t.Allow = append(t.Allow, pfx)
					allowNodes = append(allowNodes, e)
				}
			}
		}},
		{"key", func(_, v *yaml.Node, p string) {
			s, ok := d.scalar(v, p, "the transfer key")
			if !ok {
				return
			}
			t.Key = absName(s, ".")
			if !keys[t.Key] {
				d.report(v, p, codeTSIGKeyUnknown, "TSIG key %s is not defined: add it to tsigKeys: with the same name and secret as on the secondary", t.Key)
			}
		}},
		{"notify", func(_, v *yaml.Node, p string) {
			t.Notify, notifyNodes = d.addrPorts(v, p, "notify", "notify target", codeNotifyTarget)
		}},
	})
	for i, p := range t.Allow {
		if p.Bits() == 0 && t.Key == "" {
			d.report(allowNodes[i], path+"/allow", codeTransferOpen, "zone %s can be transferred by anyone: restrict allow: to your secondaries, or set key: to require TSIG", z.Origin)
		}
	}
	allowed := t.Allowed
	if len(t.Allow) > 16 {
		allowed = prefixIndex(t)
	}
	for i, ap := range t.Notify {
		if !allowed(ap.Addr()) {
			d.report(notifyNodes[i], path+"/notify", codeNotifyNotAllowed, "secondary %s is notified but may not transfer zone %s: add %s to allow: (or set key:)", ap, z.Origin, ap.Addr())
		}
	}
}

// allowEntry reads one entry of a transfer allow: list, an address or a
// prefix without host bits.
func (d *doc) allowEntry(e *yaml.Node, path string) (netip.Prefix, bool) {
	s, ok := d.scalar(e, path, "an allow entry")
	if !ok {
		return netip.Prefix{}, false
	}
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err == nil && pfx != pfx.Masked() {
			d.report(e, path, codeTransferACL, "%s has host bits set: write %s", s, pfx.Masked())
			return netip.Prefix{}, false
		}
		if err == nil {
			return pfx, true
		}
	} else if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), true
	}
	d.report(e, path, codeTransferACL, "%q is not an IP address or prefix (like 192.0.2.1 or 10.0.0.0/8)", s)
	return netip.Prefix{}, false
}

// prefixIndex returns Transfer.Allowed for long allow lists: a set of the
// prefixes for each prefix length, so that checking every notify target
// against every allow entry does not cost their product.
func prefixIndex(t *Transfer) func(netip.Addr) bool {
	byBits := map[int]map[netip.Prefix]bool{}
	for _, p := range t.Allow {
		if byBits[p.Bits()] == nil {
			byBits[p.Bits()] = map[netip.Prefix]bool{}
		}
		byBits[p.Bits()][p.Masked()] = true
	}
	return func(addr netip.Addr) bool {
		addr = addr.Unmap()
		for bits, set := range byBits {
			if p, err := addr.Prefix(bits); err == nil && set[p] {
				return true
			}
		}
		return len(t.Allow) == 0 && t.Key != ""
	}
}

// parseAddrPort reads IP, IP:PORT or [IPv6]:PORT; the port defaults to 53.
func parseAddrPort(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.AddrPort{}, fmt.Errorf("zoned addresses are not supported")
		}
		return netip.AddrPortFrom(a, 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("write an IP address with an optional port, like 192.0.2.1, 192.0.2.1:5300 or [2001:db8::1]:53 (host names are not resolved)")
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("port 0 cannot receive a NOTIFY")
	}
	return ap, nil
}

// optLen is the size of the OPT record an answer to an EDNS query carries.
const optLen = 11

// signedNote completes a size message when TSIG keys are configured.
func (d *doc) signedNote() string {
	if d.sigLen == 0 {
		return " with the EDNS OPT record"
	}
	return fmt.Sprintf(" with the EDNS OPT record and %d bytes of TSIG and RRSIG records (signed queries and transfers, DNSSEC)", d.sigLen)
}
