package model

import (
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DNSSEC is how a zone is signed (docs/dnssec.md). A zone without it is
// published unsigned.
type DNSSEC struct {
	// Algorithm is the DNSSEC algorithm number of the zone's keys:
	// 13 (ECDSAP256SHA256, the default) or 15 (ED25519).
	Algorithm uint8
	// SplitKeys signs with a key-signing key (the DNSKEY RRset) and a
	// zone-signing key (everything else); false signs with one combined
	// signing key (CSK), the default.
	SplitKeys bool
	// Validity is how long a signature is valid from when it is made, in
	// seconds; Refresh how long before its expiry it is made again.
	Validity, Refresh uint32
	// ZSKLifetime, when not 0, is how long a zone-signing key signs
	// before it is replaced by pre-publication (SplitKeys only), in
	// seconds.
	ZSKLifetime uint32
	// KSKLifetime, when not 0, is how long the key the parent's DS names
	// (the CSK, or the KSK of SplitKeys) is used before it is replaced by
	// a double-DS rollover (RFC 7583 §3.3.2), in seconds. The rollover
	// waits for the parent: ParentalAgents, or the operator's word.
	KSKLifetime uint32
	// ParentalAgents are the servers of the parent zone asked for the
	// zone's DS records during a rollover (as Knot's parental-agent):
	// the new key's DS at every one of them is the parent's word.
	ParentalAgents string
	// ZONEMD publishes at the apex a digest of the whole zone (RFC 8976,
	// SIMPLE scheme, SHA-384), made again for every serial.
	ZONEMD bool
}

// Agents returns the parental agents' addresses.
func (s *DNSSEC) Agents() []netip.AddrPort {
	var out []netip.AddrPort
	for _, f := range strings.Fields(s.ParentalAgents) {
		if ap, err := netip.ParseAddrPort(f); err == nil {
			out = append(out, ap)
		}
	}
	return out
}

// DNSSEC defaults: Knot's automatic policy (RFC 6781 §4.4.2 discusses
// the trade-off): two weeks of validity, refreshed a week before expiry.
const (
	DefaultSignatureValidity = 14 * 86400
	DefaultSignatureRefresh  = 7 * 86400
)

// Algorithm numbers (RFC 8624) the publisher signs with.
const (
	AlgorithmECDSAP256SHA256 = 13
	AlgorithmED25519         = 15
)

// dnssec reads a zone's dnssec: mapping.
func (d *doc) dnssec(n *yaml.Node, path string, z *Zone) {
	s := &DNSSEC{Algorithm: AlgorithmECDSAP256SHA256, Validity: DefaultSignatureValidity, Refresh: DefaultSignatureRefresh}
	var validityNode, refreshNode, lifetimeNode, agentsNode *yaml.Node
	if d.object(n, path, "dnssec", []field{
		{"algorithm", func(_, v *yaml.Node, p string) {
			a, ok := d.scalar(v, p, "the DNSSEC algorithm")
			if !ok {
				return
			}
			switch strings.ToLower(strings.TrimSpace(a)) {
			case "13", "ecdsap256sha256", "ecdsa-p256-sha256":
				s.Algorithm = AlgorithmECDSAP256SHA256
			case "15", "ed25519":
				s.Algorithm = AlgorithmED25519
			default:
				d.report(v, p, codeDNSSEC, "DNSSEC algorithm %q is not one the publisher signs with: write ecdsap256sha256 (13, the default) or ed25519 (15)", a)
			}
		}},
		{"keys", func(_, v *yaml.Node, p string) {
			k, ok := d.scalar(v, p, "the DNSSEC keys")
			if !ok {
				return
			}
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "csk":
				s.SplitKeys = false
			case "ksk-zsk", "ksk+zsk":
				s.SplitKeys = true
			default:
				d.report(v, p, codeDNSSEC, "DNSSEC keys %q: write csk (one combined signing key, the default) or ksk-zsk (a key-signing and a zone-signing key)", k)
			}
		}},
		{"denial", func(_, v *yaml.Node, p string) {
			den, ok := d.scalar(v, p, "the DNSSEC denial of existence")
			if !ok {
				return
			}
			switch strings.ToLower(strings.TrimSpace(den)) {
			case "nsec":
			case "nsec3":
				d.report(v, p, codeDNSSEC, "denial of existence with NSEC3 is not supported: write nsec (a zone of service names is public: NSEC3 would hide nothing a resolver cannot ask for)")
			default:
				d.report(v, p, codeDNSSEC, "DNSSEC denial %q: write nsec", den)
			}
		}},
		{"signatureValidity", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "the signature validity", 3600, 366*86400); ok {
				s.Validity, validityNode = x, v
			}
		}},
		{"zskLifetime", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "the zone-signing key's lifetime", 1, 10*366*86400); ok {
				s.ZSKLifetime, lifetimeNode = x, v
			}
		}},
		{"kskLifetime", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "the key-signing key's lifetime", 1, 10*366*86400); ok {
				s.KSKLifetime = x
			}
		}},
		{"parentalAgents", func(_, v *yaml.Node, p string) {
			agentsNode = v
			aps, _ := d.addrPorts(v, p, "parentalAgents", "parental agent", codeDNSSEC)
			agents := make([]string, len(aps))
			for i, ap := range aps {
				agents[i] = ap.String()
			}
			s.ParentalAgents = strings.Join(agents, " ")
		}},
		{"zonemd", func(_, v *yaml.Node, p string) {
			if b, ok := d.boolean(v, p, "zonemd"); ok {
				s.ZONEMD = b
			}
		}},
		{"signatureRefresh", func(_, v *yaml.Node, p string) {
			if x, ok := d.duration(v, p, "the signature refresh", 1800, 365*86400); ok {
				s.Refresh, refreshNode = x, v
			}
		}},
	}) == nil {
		return
	}
	if s.ZSKLifetime > 0 && !s.SplitKeys {
		d.report(lifetimeNode, path+"/zskLifetime", codeDNSSEC, "zskLifetime rolls a zone-signing key, which a zone signed with one combined key (keys: csk) does not have: write keys: ksk-zsk, or roll the CSK by hand (docs/dnssec.md)")
		return
	}
	if s.ParentalAgents != "" && s.KSKLifetime == 0 {
		d.report(agentsNode, path+"/parentalAgents", codeDNSSEC, "parentalAgents are asked for the DS records during a rollover of the key the parent names, which happens only with kskLifetime: set kskLifetime (for example 365d), or remove parentalAgents")
		return
	}
	if s.Refresh >= s.Validity {
		at, p := refreshNode, path+"/signatureRefresh"
		if at == nil {
			at, p = validityNode, path+"/signatureValidity"
		}
		d.report(at, p, codeDNSSEC, "signatures would be refreshed %ds before they expire but are only valid %ds: make signatureRefresh shorter than signatureValidity (defaults 7d and 14d)", s.Refresh, s.Validity)
		return
	}
	z.DNSSEC = s
}

// checkDNSSECTimes warns when a signature may expire while resolvers
// still cache a record it covers: the refresh must leave at least twice
// the longest TTL of the zone (RFC 6781 §4.4.2.2).
func (d *doc) checkDNSSECTimes(n *yaml.Node, path string, z *Zone) {
	if z.DNSSEC == nil {
		return
	}
	maxTTL := max(z.TTL, z.SOA.Minimum)
	for _, s := range z.Services {
		maxTTL = max(maxTTL, s.TTL)
	}
	if uint64(z.DNSSEC.Refresh) < 2*uint64(maxTTL) {
		d.report(n, path, codeDNSSECTimes, "signatures are refreshed %ds before they expire, less than twice the zone's longest TTL (%ds): a resolver could keep a record past its signature's expiry and then fail to validate it; make signatureRefresh at least %ds", z.DNSSEC.Refresh, maxTTL, 2*maxTTL)
	}
}

// rrsigLen is the room the RRSIG records of an answer of zone z take:
// two (a key rollover signs with both keys) of an owner name compressed
// to a pointer, the fixed fields, the signer's name and a 64-byte
// signature (ECDSA P-256 and Ed25519 alike); 0 for an unsigned zone.
func (z *Zone) rrsigLen() int {
	if z.DNSSEC == nil {
		return 0
	}
	return 2 * (2 + 10 + 18 + wireLen(z.Origin) + 64)
}
