package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/ui"
	"github.com/grpc-config-dns/grpc-config-dns/internal/httpserve"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
	"github.com/grpc-config-dns/grpc-config-dns/store/api"
)

// storeFlags are serve's flags for store mode (docs/store.md).
type storeFlags struct {
	store, admin, tokenFile, tlsCert, tlsKey string
	history                                  int64
}

// DefaultAdmin is where the admin API listens by default: loopback only.
const DefaultAdmin = "127.0.0.1:8053"

// isLoopback reports whether a listen address only accepts connections
// from this machine.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveStore runs serve with the zones of a store and the admin API.
func (e *env) serveStore(sf storeFlags, keyDir, configFile, listen, metricsAddr, logFormat, logLevel string, grace, lameDuck time.Duration, queryLog bool) error {
	log, err := newLogger(e, logFormat, logLevel)
	if err != nil {
		return err
	}
	tokens, tlsConfig, err := adminAccess(sf, log)
	if err != nil {
		return err
	}
	settings, err := e.readSettings(configFile)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st, err := store.Open(ctx, store.Options{Location: sf.store, History: sf.history, Keys: settings.Keys, Logger: log})
	cancel()
	if err != nil {
		return usageErr("%v", err)
	}
	defer st.Close()
	opts := dnspub.Options{Store: st, KeyDir: keyDir, Listen: listen, Logger: log, Registerer: reg, Keys: settings.Keys}
	if queryLog {
		opts.QueryLog = log.With("log", "query")
	}
	if configFile != "" {
		opts.Settings = &settings.Server
	}
	restoreGC := firstLoadGC()
	srv, err := dnspub.New(opts)
	restoreGC()
	if err != nil {
		return usageErr("%v", err)
	}
	if err := srv.Start(); err != nil {
		return listenError("--listen", listen, err)
	}
	// One readiness for both listeners: the store's, and unready during
	// the lame-duck period.
	hc := &health{check: srv.Ready}
	hc.ready.Store(true)
	stop := func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("connections closed before they finished", "err", err)
		}
	}
	// The read-only web view, as with a config file: what DNS answers
	// now, from the store's snapshot; behind the admin API's tokens, as
	// it shows every config.
	view := ui.Handler(publishedSource(srv, "the store "+redact(sf.store)), log)
	handler, err := api.New(api.Options{Store: st, Tokens: tokens, Ready: hc.err, Logger: log, UI: view, Registerer: reg})
	if err != nil {
		stop(context.Background())
		return err
	}
	admin, err := httpserve.Listen(sf.admin, handler,
		httpserve.Limits{MaxConns: 256})
	if err != nil {
		stop(context.Background())
		return listenError("--admin", sf.admin, err)
	}
	serveAdmin(admin, tlsConfig, log, sf.store, len(tokens) > 0)
	hs, err := serveStoreMetrics(metricsAddr, reg, hc, log)
	if err != nil {
		admin.Close()
		stop(context.Background())
		return err
	}
	awaitStop(sigs, srv, log, "SIGHUP: reading the store again")
	hc.ready.Store(false)
	lameDuckWait(log, lameDuck)
	ctx, cancel = context.WithTimeout(context.Background(), grace)
	defer cancel()
	admin.Shutdown(ctx)
	if hs != nil {
		hs.Shutdown(ctx)
	}
	stop(ctx)
	log.Info("stopped")
	return nil
}

// adminAccess reads the bearer tokens and the TLS certificate of the
// admin API that sf names. Tokens are required beyond loopback, and said
// to travel in clear text there without TLS.
func adminAccess(sf storeFlags, log *slog.Logger) ([]string, *tls.Config, error) {
	var tokens []string
	var err error
	switch {
	case sf.tokenFile != "":
		if tokens, err = api.ReadTokens(sf.tokenFile); err != nil {
			return nil, nil, usageErr("%v", err)
		}
	case !isLoopback(sf.admin):
		return nil, nil, usageErr("--admin %s accepts connections from other machines: give --admin-token-file with the bearer tokens that may use the admin API (or listen on 127.0.0.1)", sf.admin)
	}
	if (sf.tlsCert == "") != (sf.tlsKey == "") {
		return nil, nil, usageErr("--admin-tls-cert and --admin-tls-key go together")
	}
	if sf.tlsCert == "" {
		if len(tokens) > 0 && !isLoopback(sf.admin) {
			log.Warn("the admin API's bearer tokens travel in clear text: give --admin-tls-cert and --admin-tls-key, or keep the network trusted", "admin", sf.admin)
		}
		return tokens, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(sf.tlsCert, sf.tlsKey)
	if err != nil {
		return nil, nil, usageErr("admin TLS: %v", err)
	}
	return tokens, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// readSettings reads the server settings and TSIG keys of a store's
// publisher, --config configFile; none when it is not given.
func (e *env) readSettings(configFile string) (*model.Config, error) {
	if configFile == "" {
		return &model.Config{}, nil
	}
	text, err := os.ReadFile(configFile)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	cfg, ds := model.ParseSettings(text)
	for _, d := range ds {
		fmt.Fprintln(e.stderr, formatDiagnostic(configFile, lintDiagnostic{d.Severity.String(), d.Code, d.Message, d.Path, d.Line, d.Column}))
	}
	if cfg == nil {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("%s is invalid: not serving", configFile)}
	}
	return cfg, nil
}

// serveAdmin serves the admin API on admin, over TLS when tlsConfig is
// set, and logs where, with the store it serves and whether it requires
// tokens (auth).
func serveAdmin(admin *httpserve.Server, tlsConfig *tls.Config, log *slog.Logger, storeLoc string, auth bool) {
	// TLS handshake failures and the like go to the log, as warnings.
	admin.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		admin.TLSConfig = tlsConfig
	}
	go func() {
		var err error
		if tlsConfig != nil {
			err = admin.ServeTLS("", "")
		} else {
			err = admin.Serve()
		}
		if err != nil {
			log.Error("admin API stopped", "err", err)
		}
	}()
	log.Info("admin API", "url", scheme+"://"+admin.Addr().String(), "ui", scheme+"://"+admin.Addr().String()+"/ui/", "store", redact(storeLoc), "auth", auth)
}

// serveStoreMetrics serves the metrics of reg and the probes of hc at
// addr, --metrics; it returns a nil server when addr is empty.
func serveStoreMetrics(addr string, reg *prometheus.Registry, hc *health, log *slog.Logger) (*httpserve.Server, error) {
	if addr == "" {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hc.register(mux)
	hs, err := httpserve.Listen(addr, mux, httpserve.Limits{MaxConns: 16})
	if err != nil {
		return nil, listenError("--metrics", addr, err)
	}
	go hs.Serve()
	log.Info("metrics", "url", "http://"+hs.Addr().String()+"/metrics")
	return hs, nil
}

// redact hides credentials in a store URL for logs.
func redact(loc string) string {
	if i := strings.Index(loc, "@"); i >= 0 && strings.HasPrefix(loc, "etcd://") {
		return "etcd://…" + loc[i:]
	}
	return loc
}

func newLogger(e *env, logFormat, logLevel string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return nil, usageErr("--log-level must be debug, info, warn or error, not %q", logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, hopts)), nil
	case "json":
		hopts.ReplaceAttr = secondsAttr
		return slog.New(slog.NewJSONHandler(e.stderr, hopts)), nil
	}
	return nil, usageErr("--log-format must be text or json, not %q", logFormat)
}

// secondsAttr writes a duration of a JSON log record as seconds, with the
// unit in its key ("took_seconds":0.004059): slog's JSON handler writes
// bare nanoseconds ("took":4059000), which a reader has to know. The text
// format keeps Go's "took=4.059ms".
func secondsAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_seconds", a.Value.Duration().Seconds())
	}
	return a
}
