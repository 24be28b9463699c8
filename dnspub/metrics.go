package dnspub

import (
	"fmt"
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
)

// Query counters are plain atomic arrays indexed by protocol, type and
// rcode, exported by a custom collector: a query costs one uncontended
// atomic add, not a label lookup. Every type below 256 (all the common
// ones) has its own counter, named by its mnemonic, so that a type the
// zone model learns is counted with no list to update.
var (
	rcodeLabels = [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "NOTAUTH", "BADVERS", "other"}
	protoLabels = [...]string{"udp", "tcp"}
)

const (
	nQtype = 257 // types 0..255, then every other type
	nRcode = len(rcodeLabels)
	nProto = len(protoLabels)
)

func qtypeIndex(t uint16) int { return min(int(t), nQtype-1) }

func qtypeLabel(i int) string {
	if i == nQtype-1 {
		return "other"
	}
	if s, ok := dns.TypeToString[uint16(i)]; ok {
		return s
	}
	return fmt.Sprintf("TYPE%d", i)
}

func rcodeIndex(r int) int {
	switch {
	case r >= 0 && r <= 5:
		return r
	case r == wire.RcodeNotAuth:
		return 6
	case r == wire.RcodeBadVers:
		return 7
	}
	return 8
}

type queryStats struct {
	queries   [nProto][nQtype][nRcode]atomic.Uint64
	truncated [nProto]atomic.Uint64
	dropped   [nProto]atomic.Uint64
}

func (s *queryStats) count(proto int, r *wire.Result) {
	if r.Action == wire.Drop {
		s.dropped[proto].Add(1)
		return
	}
	s.queries[proto][qtypeIndex(r.Query.QType)][rcodeIndex(r.Rcode)].Add(1)
	if r.Truncated {
		s.truncated[proto].Add(1)
	}
}

const (
	protoUDP = 0
	protoTCP = 1
)

// metrics holds the server's Prometheus metrics.
type metrics struct {
	stats      queryStats
	reloads    *prometheus.CounterVec
	lastReload prometheus.Gauge
	transfers  *prometheus.CounterVec
	notifies   *prometheus.CounterVec
	tcpConns   prometheus.Gauge
	// tcpRefused counts connections closed at once, by the limit hit.
	tcpRefused *prometheus.CounterVec
	// tsigFailures counts signed messages whose TSIG did not verify.
	tsigFailures *prometheus.CounterVec
	// stateErrors counts versions not published because their serials
	// could not be persisted.
	stateErrors prometheus.Counter
	serials     func() map[string]uint32
}

const ns = "grpc_config_dns"

func newMetrics(serials func() map[string]uint32) *metrics {
	return &metrics{
		serials: serials,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "reloads_total",
			Help: "Config reloads by result: accepted (a new version is served), unchanged (no zone changed), rejected (invalid config, or its serials could not be persisted; the previous one keeps serving), held (the file watcher waits: a change written in place that removes zones or services)."},
			[]string{"result"}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_reload_successful",
			Help: "1 if the last config load was accepted, 0 if it was rejected."}),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "transfers_total",
			Help: "Zone transfers served, by type (axfr; ixfr incremental; ixfr_full when the asked serial was too old; ixfr_current when the client was up to date) and result."},
			[]string{"type", "result"}),
		notifies: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "notifies_total",
			Help: "NOTIFY messages sent to secondaries, by result (acked; refused by the secondary; bad_reply, a reply that does not acknowledge it; timeout; error)."},
			[]string{"result"}),
		tcpConns: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "tcp_connections",
			Help: "Open TCP connections."}),
		tcpRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tcp_refused_total",
			Help: "TCP connections closed on accept, by the limit they hit: total (server.maxTCPConnections) or per_address (server.maxTCPConnectionsPerAddress)."},
			[]string{"limit"}),
		tsigFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tsig_failures_total",
			Help: "Signed messages refused because their TSIG did not verify, by TSIG error (BADKEY, BADSIG, BADTIME)."},
			[]string{"error"}),
		stateErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "state_write_errors_total",
			Help: "Valid configs not published because the SOA serial state could not be written (full or read-only disk); the previous version keeps serving."}),
	}
}

var (
	queriesDesc = prometheus.NewDesc(ns+"_queries_total",
		"Queries answered, by transport, query type and response code.", []string{"proto", "qtype", "rcode"}, nil)
	truncatedDesc = prometheus.NewDesc(ns+"_truncated_total",
		"Responses sent with TC=1 because the answer did not fit the client's buffer.", []string{"proto"}, nil)
	droppedDesc = prometheus.NewDesc(ns+"_dropped_total",
		"Messages dropped unanswered (shorter than a header, or responses).", []string{"proto"}, nil)
	serialDesc = prometheus.NewDesc(ns+"_zone_serial",
		"SOA serial of each zone being served.", []string{"zone"}, nil)
)

// register adds the metrics to r.
func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.reloads, m.lastReload, m.transfers, m.notifies, m.tcpConns, m.tcpRefused, m.tsigFailures, m.stateErrors, m} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Describe and Collect make metrics a collector of the query counters and
// zone serials.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- queriesDesc
	ch <- truncatedDesc
	ch <- droppedDesc
	ch <- serialDesc
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for p := range nProto {
		for t := range nQtype {
			for r := range nRcode {
				if v := m.stats.queries[p][t][r].Load(); v > 0 {
					ch <- prometheus.MustNewConstMetric(queriesDesc, prometheus.CounterValue, float64(v), protoLabels[p], qtypeLabel(t), rcodeLabels[r])
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(truncatedDesc, prometheus.CounterValue, float64(m.stats.truncated[p].Load()), protoLabels[p])
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(m.stats.dropped[p].Load()), protoLabels[p])
	}
	for zone, serial := range m.serials() {
		ch <- prometheus.MustNewConstMetric(serialDesc, prometheus.GaugeValue, float64(serial), zone)
	}
}
