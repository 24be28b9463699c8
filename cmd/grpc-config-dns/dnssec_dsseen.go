package main

import (
	"fmt"
	"time"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
)

// dnssecDSSeenCmd is `dnssec ds-seen`: the operator's word that the
// parent publishes the new key's DS, for rollovers without parental
// agents.
func dnssecDSSeenCmd(e *env) *cobra.Command {
	var dir, config string
	cmd := &cobra.Command{
		Use:   "ds-seen ZONE [--dnssec-keys DIR | --config FILE]",
		Short: "Tell the publisher that the parent publishes the new key's DS",
		Long: `During a rollover of the key the parent's DS names (kskLifetime), once
the new key is ready (its DS is among those dnssec ds prints, and CDS
names it), hand its DS to the parent; when the parent publishes it, run

  grpc-config-dns dnssec ds-seen example.test --config FILE

The new key's .private file records it (DSPublish, as BIND's
dnssec-settime -P ds). The publishers serving the zone read it within
the DNSKEY TTL and retire the old key a day later (the longest DS TTL
parents commonly use). Zones with parentalAgents need none of this: the
publisher asks the parent itself, and learns the DS TTL.

Exit status: 0 recorded; 2 usage or I/O error, or no rollover waiting.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case dir == "" && config == "":
				return usageErr("dnssec ds-seen needs --dnssec-keys DIR or --config FILE (whose keys are in FILE.keys)")
			case dir == "":
				dir = config + ".keys"
			}
			k, err := dnssec.MarkDSSeen(dir, args[0], time.Now())
			if err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(e.stdout, "recorded: the parent of %s publishes the DS of key %d\n%s\n", dns.Fqdn(args[0]), k.DNSKEY.KeyTag(), k.DNSKEY.ToDS(dns.SHA256))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dnssec-keys", "", "directory of the zone's keys")
	cmd.Flags().StringVar(&config, "config", "", "publisher config whose keys are in FILE.keys")
	return cmd
}
