package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/ui"
	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func init() { extraCommands = append(extraCommands, serveCmd) }

func serveCmd(e *env) *cobra.Command {
	var o struct {
		config, listen, metrics, state, answers, logFormat, logLevel string // answers: deprecated, ignored
		keys                                                         string
		grace, lameDuck                                              time.Duration
		queryLog                                                     bool
		storeFlags
	}
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen 127.0.0.1:1053] [--metrics ADDR] [--state FILE] [--log-format text|json] [--log-level LEVEL] [--shutdown-grace 5s] [--lame-duck 0s] [--query-log]",
		Short: "Serve the zones of a publisher config as an authoritative DNS server",
		Long: `Serve the zones of a publisher config: addresses and gRPC service configs
(TXT at _grpc_config.<service>) over UDP and TCP, with AXFR/IXFR to allowed
secondaries and NOTIFY to them on every change.

Without --config, a built-in example zone (example.test.) is served:
  dig @127.0.0.1 -p 1053 TXT _grpc_config.echo.example.test

The config is reloaded on SIGHUP and when the file changes (a file being
written is never loaded: write it by rename, or see docs/publisher.md); an
invalid config is logged and the previous one keeps serving. SOA serials are kept
in FILE.serial (--state) so that they never go backwards. SIGTERM or
SIGINT stops the server gracefully: /readyz turns unready, DNS is answered
for --lame-duck more, then TCP connections get --shutdown-grace to finish.
--metrics serves Prometheus metrics at http://ADDR/metrics, with /healthz
(liveness) and /readyz (readiness) beside them, and a read-only web view
of the zones and services at http://ADDR/ui/ (for each service: the
published record, the policy that set each value, lint, and which clients
get which choice); with --store the view is on the admin listener instead,
behind its tokens. --query-log logs every query answered.

Exit status: 0 stopped by a signal; 1 the config is invalid; 2 usage, I/O
or listen error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.store != "" {
				if cmd.Flags().Changed("state") {
					return usageErr("--state is for --config files: with --store, serials follow the store's revisions")
				}
				return e.serveStore(o.storeFlags, o.keys, o.config, o.listen, o.metrics, o.logFormat, o.logLevel, o.grace, o.lameDuck, o.queryLog)
			}
			for _, name := range []string{"admin", "admin-token-file", "admin-tls-cert", "admin-tls-key", "history"} {
				if cmd.Flags().Changed(name) {
					return usageErr("--%s is for a store: give --store DIR or --store etcd://HOST:PORT/PREFIX", name)
				}
			}
			return e.serve(o.config, o.keys, o.listen, o.metrics, o.state, o.logFormat, o.logLevel, o.grace, o.lameDuck, o.queryLog)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "publisher config (YAML or JSON); default: the built-in example")
	f.StringVar(&o.listen, "listen", "127.0.0.1:1053", "UDP and TCP address to answer on")
	f.StringVar(&o.metrics, "metrics", "", "address for Prometheus metrics (like 127.0.0.1:9153); off when empty")
	f.StringVar(&o.state, "state", "", `file keeping SOA serials (default FILE.serial; "-" for none)`)
	f.StringVar(&o.keys, "dnssec-keys", "", "directory of the DNSSEC keys of signed zones, as dnssec-keygen writes them; missing keys are made there (default FILE.keys; needed with --store)")
	f.StringVar(&o.answers, "answers", "", "ignored: a restart reads the config, as fast as a first start")
	f.MarkDeprecated("answers", "a restart reads the config, as fast as a first start; the answers file is no longer written or read (remove the flag, and any old .answers file)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&o.grace, "shutdown-grace", 5*time.Second, "how long TCP connections may take to finish on SIGTERM")
	f.DurationVar(&o.lameDuck, "lame-duck", 0, "on SIGTERM, how long to keep answering DNS with /readyz unready before stopping (like 5s behind a load balancer)")
	f.BoolVar(&o.queryLog, "query-log", false, "log every query answered (client, name, type, rcode, zone, size, duration) at info level")
	f.StringVar(&o.store, "store", "", "serve the zones of a store, changed at runtime through the admin API: a directory (embedded store) or etcd://HOST:PORT[,HOST:PORT]/PREFIX; --config then holds only server: and tsigKeys:")
	f.StringVar(&o.admin, "admin", DefaultAdmin, "address of the admin HTTP API (with --store)")
	f.StringVar(&o.tokenFile, "admin-token-file", "", "file of bearer tokens (one a line) the admin API requires; needed to listen beyond loopback")
	f.StringVar(&o.tlsCert, "admin-tls-cert", "", "certificate (PEM) for HTTPS on the admin API")
	f.StringVar(&o.tlsKey, "admin-tls-key", "", "private key (PEM) of --admin-tls-cert")
	f.Int64Var(&o.history, "history", store.DefaultHistory, "store revisions kept for watches, Exact lists and continue tokens; older ones are compacted")
	return cmd
}

func (e *env) serve(configFile, keyDir, listen, metricsAddr, state, logFormat, logLevel string, grace, lameDuck time.Duration, queryLog bool) error {
	log, err := newLogger(e, logFormat, logLevel)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge())
	var qlog *slog.Logger
	if queryLog {
		qlog = log.With("log", "query")
	}
	// Register signals before loading, so that a SIGHUP during start-up
	// is not lost (nor kills the process).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	restoreGC := firstLoadGC()
	srv, err := dnspub.New(dnspub.Options{ConfigFile: configFile, KeyDir: keyDir, StateFile: state, Listen: listen, Logger: log, Registerer: reg, QueryLog: qlog})
	restoreGC()
	if err != nil {
		return e.loadError(err)
	}
	if err := srv.Start(); err != nil {
		return listenError("--listen", listen, err)
	}
	if configFile == "" {
		// The address bound, not the one asked for: --listen :0 gets a port.
		log.Info("no --config: serving the built-in example zone example.test.; try: " + digHint(srv.Addr()) + " TXT _grpc_config.echo.example.test")
	}
	var hs *httpserve.Server
	var hc health
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		hc.register(mux)
		// The read-only web view: what DNS answers now, and why.
		mux.Handle("/ui/", ui.Handler(publishedSource(srv, configFile), log))
		// Timeouts and a connection bound: held connections must not use
		// up the descriptors the DNS server needs.
		hs, err = httpserve.Listen(metricsAddr, mux, httpserve.Limits{MaxConns: 16})
		if err != nil {
			srv.Shutdown(context.Background())
			return listenError("--metrics", metricsAddr, err)
		}
		go hs.Serve()
		base := "http://" + hs.Addr().String()
		log.Info("metrics", "url", base+"/metrics", "ui", base+"/ui/", "healthz", base+"/healthz", "readyz", base+"/readyz")
	}
	hc.ready.Store(true)
	awaitStop(sigs, srv, log, "SIGHUP: reloading")
	hc.ready.Store(false)
	lameDuckWait(log, lameDuck)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if hs != nil {
		hs.Shutdown(ctx)
	}
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("connections closed before they finished", "err", err)
	}
	log.Info("stopped")
	return nil
}

// awaitStop reloads srv on each SIGHUP of sigs, logged as hup, until
// another signal asks it to stop.
func awaitStop(sigs <-chan os.Signal, srv *dnspub.Server, log *slog.Logger, hup string) {
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			log.Info(hup)
			srv.Reload() // logs its own outcome
			continue
		}
		log.Info("stopping", "signal", sig.String())
		return
	}
}

// lameDuckWait keeps the server answering DNS for lameDuck, --lame-duck,
// while /readyz says it is not ready, so that a load balancer takes it
// out before it stops.
func lameDuckWait(log *slog.Logger, lameDuck time.Duration) {
	if lameDuck > 0 {
		log.Info("lame duck: /readyz unready, still answering DNS", "for", lameDuck.String())
		time.Sleep(lameDuck)
	}
}

// loadError is the error serve exits with when the config cannot be
// loaded: its diagnostics, then exit code 1 for an invalid config.
func (e *env) loadError(err error) error {
	var ce *dnspub.ConfigError
	if errors.As(err, &ce) {
		for _, d := range ce.Diagnostics {
			fmt.Fprintln(e.stderr, formatDiagnostic(ce.File, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
		}
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: not serving", ce.File)}
	}
	return usageErr("%v", err)
}

// digHint is the start of a dig command asking the server bound at addr:
// a wildcard address is asked on loopback.
func digHint(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "dig @127.0.0.1 -p 1053"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "dig @" + host + " -p " + port
}

// servicesNamed returns zone origin of cfg and its services named.
func servicesNamed(cfg *model.Config, origin string, names []string) (*model.Zone, []*model.Service) {
	for _, z := range cfg.Zones {
		if z.Origin != origin {
			continue
		}
		want := make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
		var out []*model.Service
		for _, s := range z.Services {
			if want[s.Name] {
				out = append(out, s)
			}
		}
		return z, out
	}
	return nil, nil
}

// publishedSource shows the web view what srv serves, one snapshot per
// page. In store mode the zones carry the resourceVersions of the store
// objects they were read from (services too: the view reads those from
// model.Service).
func publishedSource(srv *dnspub.Server, configFile string) ui.Source {
	name := configFile
	if name == "" {
		name = "the built-in example"
	}
	return ui.SourceFunc(func() *ui.Snapshot {
		cfg, serials, version := srv.Published()
		if cfg == nil {
			return nil
		}
		snap := &ui.Snapshot{Config: cfg, Serials: serials, Version: version, Source: name,
			Specs: func(origin string, names []string) map[string][]byte {
				z, svcs := servicesNamed(cfg, origin, names)
				if z == nil {
					return nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				return srv.ServiceSpecs(ctx, z.Origin, svcs)
			}}
		for _, z := range cfg.Zones {
			if z.ResourceVersion == 0 {
				continue
			}
			if snap.ResourceVersions == nil {
				snap.ResourceVersions = make(map[string]string, len(cfg.Zones))
			}
			snap.ResourceVersions[z.Origin] = store.FormatRV(z.ResourceVersion)
		}
		return snap
	})
}
