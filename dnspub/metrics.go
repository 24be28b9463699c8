package dnspub

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	// queries counts the queries no zone answered (zone=""); a zone's
	// are in its zoneStats.
	queries   [nProto][nQtype][nRcode]atomic.Uint64
	truncated [nProto]atomic.Uint64
	dropped   [nProto]atomic.Uint64
	// zones holds the per-zone histograms, by origin (*zoneStats).
	zones sync.Map
}

// Buckets of the per-zone histograms: response sizes as CoreDNS's
// (coredns_dns_response_size_bytes), durations from 10µs (a precomputed
// answer takes well under that) to 2.6s.
var (
	sizeBuckets     = []float64{0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16000, 32000, 48000, 64000}
	durationBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 5e-3, 25e-3, 100e-3, 500e-3, 2.5}
)

// histogram is a Prometheus histogram kept in atomics, so that a query
// costs a few uncontended adds. sum is in the unit's integer (bytes,
// nanoseconds).
type histogram struct {
	counts [16]atomic.Uint64 // per bucket (not cumulative), then +Inf
	sum    atomic.Uint64
}

func (h *histogram) observe(bounds []float64, v float64, raw uint64) {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(raw)
}

// snapshot returns the cumulative bucket counts and the count.
func (h *histogram) snapshot(bounds []float64) (map[float64]uint64, uint64) {
	out := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, b := range bounds {
		n += h.counts[i].Load()
		out[b] = n
	}
	return out, n + h.counts[len(bounds)].Load()
}

// zoneStats are the histograms of one zone, by transport, and its query
// counters.
type zoneStats struct {
	size, duration [nProto]histogram
	// queries maps a queryKey to its counter (*atomic.Uint64): made for
	// the types and codes a zone is asked and answers, as a zone's array
	// of every one would take 37 KB, and a publisher may serve thousands.
	queries sync.Map
}

// queryKey is a query counter's proto, type index and rcode index.
func queryKey(proto, t, r int) int { return (proto*nQtype+t)*nRcode + r }

func (z *zoneStats) counter(key int) *atomic.Uint64 {
	if c, ok := z.queries.Load(key); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := z.queries.LoadOrStore(key, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (s *queryStats) zone(origin string) *zoneStats {
	if z, ok := s.zones.Load(origin); ok {
		return z.(*zoneStats)
	}
	z, _ := s.zones.LoadOrStore(origin, new(zoneStats))
	return z.(*zoneStats)
}

// record counts a query by its zone, type and response code, and records
// its response's size and the time it took in its zone's histograms
// (queries no zone answered have none).
func (s *queryStats) record(proto int, r *wire.Result, size int, took time.Duration) {
	if r.Action == wire.Drop {
		s.dropped[proto].Add(1)
		return
	}
	if r.Truncated {
		s.truncated[proto].Add(1)
	}
	t, rc := qtypeIndex(r.Query.QType), rcodeIndex(r.Rcode)
	if r.Zone == "" {
		s.queries[proto][t][rc].Add(1)
		return
	}
	z := s.zone(r.Zone)
	z.counter(queryKey(proto, t, rc)).Add(1)
	z.size[proto].observe(sizeBuckets, float64(size), uint64(size))
	z.duration[proto].observe(durationBuckets, took.Seconds(), uint64(took))
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
	// lastReloadTime is when a config was last accepted (or found
	// unchanged), in Unix seconds.
	lastReloadTime prometheus.Gauge
	transfers      *prometheus.CounterVec
	// transferred and transferredTime are the serial last sent to each
	// peer in a transfer over TCP, by zone, and when.
	transferred, transferredTime *prometheus.GaugeVec
	notifies                     *prometheus.CounterVec
	tcpConns                     prometheus.Gauge
	// tcpRefused counts connections closed at once, by the limit hit.
	tcpRefused *prometheus.CounterVec
	// tcpEvicted counts idle connections closed to admit a new one.
	tcpEvicted prometheus.Counter
	// tsigFailures counts signed messages whose TSIG did not verify.
	tsigFailures *prometheus.CounterVec
	// stateErrors counts versions not published because their serials
	// could not be persisted.
	stateErrors prometheus.Counter
	serials     func() map[string]uint32
}

const ns = "grpc_config_dns"

func newMetrics(serials func() map[string]uint32) *metrics {
	m := &metrics{
		lastReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_reload_success_timestamp_seconds",
			Help: "When a config was last loaded successfully (accepted, or unchanged), in Unix seconds; 0 before the first."}),
		serials: serials,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "reloads_total",
			Help: "Config reloads by result: accepted (a new version is served), unchanged (no zone changed), rejected (invalid config, or its serials could not be persisted; the previous one keeps serving), held (the file watcher waits: a change written in place that removes zones or services)."},
			[]string{"result"}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_reload_successful",
			Help: "1 if the last config load was accepted, 0 if it was rejected."}),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "transfers_total",
			Help: "Zone transfers served, by type (axfr; ixfr incremental; ixfr_full when the asked serial was too old; ixfr_current when the client was up to date) and result."},
			[]string{"type", "result"}),
		transferred: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "transferred_serial",
			Help: "The SOA serial last sent to each peer in a zone transfer over TCP, by zone and peer address."},
			[]string{"zone", "peer"}),
		transferredTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "transferred_timestamp_seconds",
			Help: "When each peer last received a zone transfer over TCP (Unix seconds), by zone and peer address."},
			[]string{"zone", "peer"}),
		notifies: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "notifies_total",
			Help: "NOTIFY messages sent to secondaries, by result (acked; refused by the secondary; bad_reply, a reply that does not acknowledge it; timeout; error)."},
			[]string{"result"}),
		tcpConns: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "tcp_connections",
			Help: "Open TCP connections."}),
		tcpRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tcp_refused_total",
			Help: "TCP connections closed on accept, by the limit they hit: total (server.maxTCPConnections) or per_address (server.maxTCPConnectionsPerAddress)."},
			[]string{"limit"}),
		tcpEvicted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "tcp_evicted_total",
			Help: "Idle TCP connections closed to admit a new one while all server.maxTCPConnections were taken: the one that had waited longest, preferring those that never sent a query."}),
		tsigFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tsig_failures_total",
			Help: "Signed messages refused because their TSIG did not verify, by TSIG error (BADKEY, BADSIG, BADTIME)."},
			[]string{"error"}),
		stateErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "state_write_errors_total",
			Help: "Valid configs not published because the SOA serial state could not be written (full or read-only disk); the previous version keeps serving."}),
	}
	// Every series an alert may watch exists from the start, at zero: a
	// rate() or increase() over a series that appears with its first
	// event misses that event.
	for _, r := range []string{"accepted", "unchanged", "rejected", "held"} {
		m.reloads.WithLabelValues(r)
	}
	for _, t := range []string{"axfr", "ixfr", "ixfr_full", "ixfr_current"} {
		for _, r := range transferResults {
			m.transfers.WithLabelValues(t, r)
		}
	}
	for _, r := range []string{"acked", "refused", "bad_reply", "timeout", "error"} {
		m.notifies.WithLabelValues(r)
	}
	for _, l := range []string{"total", "per_address"} {
		m.tcpRefused.WithLabelValues(l)
	}
	for _, e := range []string{"BADKEY", "BADSIG", "BADTIME"} {
		m.tsigFailures.WithLabelValues(e)
	}
	return m
}

var (
	queriesDesc = prometheus.NewDesc(ns+"_queries_total",
		"Queries answered, by zone (\"\" for none), transport, query type and response code.", []string{"zone", "proto", "qtype", "rcode"}, nil)
	truncatedDesc = prometheus.NewDesc(ns+"_truncated_total",
		"Responses sent with TC=1 because the answer did not fit the client's buffer.", []string{"proto"}, nil)
	droppedDesc = prometheus.NewDesc(ns+"_dropped_total",
		"Messages dropped unanswered (shorter than a header, or responses).", []string{"proto"}, nil)
	serialDesc = prometheus.NewDesc(ns+"_zone_serial",
		"SOA serial of each zone being served.", []string{"zone"}, nil)
	sizeDesc = prometheus.NewDesc(ns+"_response_size_bytes",
		"Size of the responses sent, by zone and transport.", []string{"zone", "proto"}, nil)
	durationDesc = prometheus.NewDesc(ns+"_request_duration_seconds",
		"Time from a query read to its response built, by zone and transport (transfers and signed messages included).", []string{"zone", "proto"}, nil)
	// alwaysCounted are the query counters of each zone present from the
	// start, at zero (over UDP), so that alerts on them work before the
	// first query.
	alwaysCounted = []struct {
		qtype uint16
		rcode int
	}{{dns.TypeA, 0}, {dns.TypeAAAA, 0}, {dns.TypeTXT, 0}, {dns.TypeTXT, 3}, {dns.TypeSOA, 0}}
)

// rejected counts a config load rejected: the previous version keeps serving.
func (m *metrics) rejected() { m.reloads.WithLabelValues("rejected").Inc(); m.lastReload.Set(0) }

// register adds the metrics to r.
func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.reloads, m.lastReload, m.lastReloadTime, m.transfers, m.transferred, m.transferredTime, m.notifies, m.tcpConns, m.tcpRefused, m.tcpEvicted, m.tsigFailures, m.stateErrors, m} {
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
	ch <- sizeDesc
	ch <- durationDesc
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for p := range nProto {
		for t := range nQtype {
			for r := range nRcode {
				// Of the queries no zone answered, REFUSED is there from the
				// start: an alert on names asked outside the zones.
				if v := m.stats.queries[p][t][r].Load(); v > 0 || p == protoUDP && t == qtypeIndex(dns.TypeA) && r == rcodeIndex(wire.RcodeRefused) {
					ch <- prometheus.MustNewConstMetric(queriesDesc, prometheus.CounterValue, float64(v), "", protoLabels[p], qtypeLabel(t), rcodeLabels[r])
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(truncatedDesc, prometheus.CounterValue, float64(m.stats.truncated[p].Load()), protoLabels[p])
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(m.stats.dropped[p].Load()), protoLabels[p])
	}
	for zone, serial := range m.serials() {
		ch <- prometheus.MustNewConstMetric(serialDesc, prometheus.GaugeValue, float64(serial), zone)
		m.stats.zone(zone) // served zones have their histograms from the start
	}
	m.stats.zones.Range(func(k, v any) bool {
		z := v.(*zoneStats)
		zone := k.(string)
		counted := map[int]bool{}
		z.queries.Range(func(k, v any) bool {
			key := k.(int)
			counted[key] = true
			p, t, r := key/(nQtype*nRcode), key/nRcode%nQtype, key%nRcode
			ch <- prometheus.MustNewConstMetric(queriesDesc, prometheus.CounterValue, float64(v.(*atomic.Uint64).Load()), zone, protoLabels[p], qtypeLabel(t), rcodeLabels[r])
			return true
		})
		for _, a := range alwaysCounted {
			if key := queryKey(protoUDP, qtypeIndex(a.qtype), rcodeIndex(a.rcode)); !counted[key] {
				ch <- prometheus.MustNewConstMetric(queriesDesc, prometheus.CounterValue, 0, zone, protoLabels[protoUDP], dns.TypeToString[a.qtype], rcodeLabels[rcodeIndex(a.rcode)])
			}
		}
		for p := range nProto {
			b, n := z.size[p].snapshot(sizeBuckets)
			ch <- prometheus.MustNewConstHistogram(sizeDesc, n, float64(z.size[p].sum.Load()), b, k.(string), protoLabels[p])
			b, n = z.duration[p].snapshot(durationBuckets)
			ch <- prometheus.MustNewConstHistogram(durationDesc, n, float64(z.duration[p].sum.Load())/1e9, b, k.(string), protoLabels[p])
		}
		return true
	})
}

// transferResults are the results a transfer is counted with that exist
// from the start: done, failed on the way, or refused.
var transferResults = []string{"ok", "error", "refused", "notauth"}
