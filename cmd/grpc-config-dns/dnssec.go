package main

import (
	"fmt"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
)

func init() { extraCommands = append(extraCommands, dnssecCmd) }

func dnssecCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dnssec",
		Short: "DNSSEC keys of signed zones: the DS records for the parent, keys from Knot",
		Long: `Commands about the DNSSEC keys of signed zones (docs/dnssec.md).

  grpc-config-dns dnssec ds example.test --dnssec-keys DIR

prints the DS records of the zone's key-signing keys (or CSK), to hand
to the parent zone; resolvers validate the zone once the parent
publishes them.

  grpc-config-dns dnssec import example.test KEY.pem --role csk --dnssec-keys DIR

writes a private key in PEM form (Knot's keymgr keeps them as
<kasp-db>/keys/<key id>.pem) into the key directory, as dnssec-keygen
writes keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var dir, config string
	ds := &cobra.Command{
		Use:   "ds ZONE [--dnssec-keys DIR | --config FILE]",
		Short: "Print the DS records of a signed zone's key-signing keys",
		Long: `Print the DS records (SHA-256) of the key-signing keys (or CSK) of ZONE
found in the key directory: --dnssec-keys DIR, or FILE.keys for a
publisher config FILE (where serve keeps them), but those being retired
after a rollover. Hand them to the parent zone. They are also published as CDS and CDNSKEY records at the zone's
apex, for parents that poll (RFC 7344).

Exit status: 0 printed; 2 usage or I/O error, or no key-signing key.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case dir == "" && config == "":
				return usageErr("dnssec ds needs --dnssec-keys DIR or --config FILE (whose keys are in FILE.keys)")
			case dir == "":
				dir = config + ".keys"
			}
			keys, err := dnssec.Find(dir, args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			n := 0
			for _, k := range keys {
				if !k.SEP() || !k.Timing.Delete.IsZero() {
					// A key being retired: the parent drops its DS.
					continue
				}
				fmt.Fprintln(e.stdout, k.DNSKEY.ToDS(dns.SHA256).String())
				n++
			}
			if n == 0 {
				return usageErr("no key-signing key of %s in %s: serve makes them when the zone is signed (dnssec: in its config), or bring your own (dnssec-keygen -f KSK)", dns.Fqdn(args[0]), dir)
			}
			return nil
		},
	}
	ds.Flags().StringVar(&dir, "dnssec-keys", "", "directory of the zone's keys")
	ds.Flags().StringVar(&config, "config", "", "publisher config whose keys are in FILE.keys")
	cmd.AddCommand(ds, dnssecImportCmd(e), dnssecDSSeenCmd(e))
	return cmd
}
