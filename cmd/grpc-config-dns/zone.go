package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

func init() { extraCommands = append(extraCommands, zoneCmd) }

func zoneCmd(e *env) *cobra.Command {
	var file, only, state, keys string
	var serial uint32
	cmd := &cobra.Command{
		Use:   "zone --config FILE [--zone ORIGIN] [--serial N] [--state FILE]",
		Short: "Print the zones of a publisher config as RFC 1035 master files",
		Long: `Validate a publisher config and print its zones as RFC 1035 master files,
as serve publishes them: for BIND, Knot, NSD or CoreDNS's file plugin, or
for review.

The SOA serial is the one serve would publish: the serial kept in the state
file (FILE.serial, or --state; "-" for none) when the zone is unchanged,
else one derived from the clock. --serial sets it.

Exit status: 0 printed; 1 the config is invalid; 2 usage or I/O error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErr("zone needs --config FILE")
			}
			if state == "" {
				state = file + ".serial"
			}
			if keys == "" {
				keys = file + ".keys"
			}
			return e.zone(file, only, state, keys, serial, cmd.Flags().Changed("serial"))
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "publisher config (YAML or JSON)")
	cmd.Flags().StringVar(&only, "zone", "", "print only this zone")
	cmd.Flags().StringVar(&state, "state", "", `serial state file (default FILE.serial; "-" for none)`)
	cmd.Flags().Uint32Var(&serial, "serial", 0, "SOA serial to print")
	cmd.Flags().StringVar(&keys, "dnssec-keys", "", "directory of the DNSSEC keys of signed zones (default FILE.keys, where serve keeps them; made there when missing)")
	return cmd
}

func (e *env) zone(file, only, state, keyDir string, serial uint32, setSerial bool) error {
	in, err := readFile(file)
	if err != nil {
		return err
	}
	ds := in.tooLarge
	var cfg *model.Config
	if ds == nil {
		cfg, ds = model.Parse(in.text)
	}
	for _, d := range ds {
		fmt.Fprintln(e.stderr, formatDiagnostic(file, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
	}
	if cfg == nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: no zone printed", file)}
	}
	if only != "" {
		only = strings.ToLower(strings.TrimSuffix(only, ".")) + "."
	}
	printed := 0
	for _, zc := range cfg.Zones {
		if only != "" && zc.Origin != only {
			continue
		}
		z := zone.New(zc, 0)
		s := serial
		how := "set with --serial"
		if !setSerial {
			if s, err = dnspub.NextSerial(state, zc.Origin, z.Digest(), time.Now()); err != nil {
				return usageErr("%v", err)
			}
			how = "the serial serve publishes for this content"
		}
		if printed > 0 {
			fmt.Fprintln(e.stdout)
		}
		comment := fmt.Sprintf("zone %s from %s, printed by grpc-config-dns zone\nserial %d: %s", zc.Origin, file, s, how)
		z = z.WithSerial(s)
		if zc.DNSSEC != nil {
			ks, err := dnssec.Load(keyDir, zc.Origin, dnssec.Options{Algorithm: zc.DNSSEC.Algorithm, SplitKeys: zc.DNSSEC.SplitKeys, Generate: true})
			if err != nil {
				return usageErr("%v", err)
			}
			if z, err = zone.Sign(nil, z, nil, ks, *zc.DNSSEC, time.Now()); err != nil {
				return usageErr("%v", err)
			}
			comment += "\nsigned with the keys in " + keyDir
		}
		if err := z.WriteMasterFile(e.stdout, comment); err != nil {
			return usageErr("writing output: %v", err)
		}
		printed++
	}
	if printed == 0 {
		return usageErr("%s has no zone %s", file, only)
	}
	return nil
}
