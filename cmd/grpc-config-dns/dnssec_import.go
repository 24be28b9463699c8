package main

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// dnssecImportCmd is `dnssec import`: a key made by Knot's keymgr (or
// any PKCS#8 PEM file) written into the key directory as dnssec-keygen
// writes keys.
func dnssecImportCmd(e *env) *cobra.Command {
	var dir, config, role string
	cmd := &cobra.Command{
		Use:   "import ZONE FILE.pem --role csk|ksk|zsk [--dnssec-keys DIR | --config FILE]",
		Short: "Import a private key in PEM form (Knot's keymgr) as a key of a signed zone",
		Long: `Import the private key in FILE.pem as a key of ZONE: written into the key
directory (--dnssec-keys DIR, or FILE.keys for a publisher config FILE,
where serve keeps them) as the .key and .private files dnssec-keygen
writes, which serve, zone and dnssec ds then read like any other key.

FILE.pem is a PKCS#8 "PRIVATE KEY" (what Knot's keymgr keeps in
<kasp-db>/keys/<key id>.pem) or a SEC1 "EC PRIVATE KEY", of an ECDSA
P-256 (algorithm 13) or Ed25519 (algorithm 15) key. --role says what
the key is, as keymgr's ksk= and zsk= said: csk (ksk=yes zsk=yes) and
ksk sign the DNSKEY RRset and are what the parent's DS names (flags
257); zsk signs the rest (flags 256). The key tag depends on the role:
with the right one the DNSKEY and DS are those keymgr prints. Knot's
timing is not imported: the key is published and signs from the next
start of serve.

Prints the key tag and the files written. A key already in the
directory is not overwritten.

Exit status: 0 imported; 2 usage or I/O error, or a key the publisher
does not sign with.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sep bool
			switch role {
			case "csk", "ksk":
				sep = true
			case "zsk":
			case "":
				return usageErr("dnssec import needs --role csk, ksk or zsk: what the key was made for (keymgr list shows ksk= and zsk=; both yes is a csk)")
			default:
				return usageErr("--role %q: csk, ksk or zsk", role)
			}
			switch {
			case dir == "" && config == "":
				return usageErr("dnssec import needs --dnssec-keys DIR or --config FILE (whose keys are in FILE.keys)")
			case dir == "":
				dir = config + ".keys"
			}
			k, err := dnssec.ImportPEMFile(dir, args[0], args[1], sep)
			if err != nil {
				return usageErr("%v", err)
			}
			origin := k.DNSKEY.Hdr.Name
			fmt.Fprintf(e.stdout, "imported key %d of %s: %s, flags %d (%s)\n%s.key\n%s.private\n",
				k.DNSKEY.KeyTag(), origin, dns.AlgorithmToString[k.DNSKEY.Algorithm], k.DNSKEY.Flags, role, k.File, k.File)
			if config != "" {
				e.checkImportedKey(config, k)
			}
			if sep {
				where := "--dnssec-keys " + dir
				if config != "" && dir == config+".keys" {
					where = "--config " + config
				}
				fmt.Fprintf(e.stderr, "restart serve to publish and sign with it; hand its DS to the parent: grpc-config-dns dnssec ds %s %s\n", strings.TrimSuffix(origin, "."), where)
			} else {
				fmt.Fprintln(e.stderr, "restart serve to publish and sign with it")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "csk, ksk or zsk: what the key signs (csk and ksk: flags 257, zsk: 256)")
	cmd.Flags().StringVar(&dir, "dnssec-keys", "", "directory of the zone's keys")
	cmd.Flags().StringVar(&config, "config", "", "publisher config whose keys are in FILE.keys")
	return cmd
}

// checkImportedKey warns when the zone of config FILE would not sign
// with the key imported: the zone is not there, not signed, or signed
// with another algorithm.
func (e *env) checkImportedKey(file string, k *dnssec.Key) {
	in, err := readFile(file)
	if err != nil || in.tooLarge != nil {
		return
	}
	cfg, _ := model.Parse(in.text)
	if cfg == nil {
		return
	}
	origin := k.DNSKEY.Hdr.Name
	for _, zc := range cfg.Zones {
		if zc.Origin != origin {
			continue
		}
		switch {
		case zc.DNSSEC == nil:
			fmt.Fprintf(e.stderr, "warning: zone %s of %s is not signed: the key signs once it has dnssec: {algorithm: %s}\n", origin, file, algorithmName(k.DNSKEY.Algorithm))
		case zc.DNSSEC.Algorithm != k.DNSKEY.Algorithm:
			fmt.Fprintf(e.stderr, "warning: zone %s of %s is signed with algorithm %d: this key, of algorithm %d, is not used unless its dnssec: says algorithm: %s\n", origin, file, zc.DNSSEC.Algorithm, k.DNSKEY.Algorithm, algorithmName(k.DNSKEY.Algorithm))
		}
		return
	}
	fmt.Fprintf(e.stderr, "warning: %s has no zone %s: the key is not used until it has\n", file, origin)
}

// algorithmName is the name of an algorithm in a zone's dnssec: mapping.
func algorithmName(alg uint8) string {
	if alg == dns.ED25519 {
		return "ed25519"
	}
	return "ecdsap256sha256"
}
