package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, versionCmd) }

// buildVersion is what the binary knows of its build, from the Go build
// information: the module version (v1.2.3 when installed with go install
// …@v1.2.3, "(devel)" when built in a checkout), the VCS revision and time
// when built from a git checkout, and the Go version.
type buildVersion struct {
	version, revision, time, goVersion string
	modified                           bool
}

// readBuildVersion is read once per call; it never fails: a binary without
// build information says "unknown".
func readBuildVersion() buildVersion {
	v := buildVersion{version: "unknown", goVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	s := "grpc-config-dns " + v.version
	if v.revision != "" {
		rev := v.revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if v.modified {
			rev += "+modified"
		}
		s += " (commit " + rev
		if v.time != "" {
			s += ", " + v.time
		}
		s += ")"
	}
	return s + " " + v.goVersion
}

func versionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary (also --version)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(e.stdout, readBuildVersion())
			return nil
		},
	}
}

// buildInfoGauge is grpc_config_dns_build_info, 1, labelled with the
// build, as Prometheus exporters and CoreDNS (coredns_build_info) do.
func buildInfoGauge() prometheus.Collector {
	v := readBuildVersion()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "grpc_config_dns", Name: "build_info",
		Help: "1, labelled with the version, VCS revision and Go version of the running binary."},
		[]string{"version", "revision", "goversion"})
	g.WithLabelValues(v.version, v.revision, v.goVersion).Set(1)
	return g
}
