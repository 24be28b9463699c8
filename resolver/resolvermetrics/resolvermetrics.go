// Package resolvermetrics exports what the dnsconfig resolvers of a
// resolver.Builder know as Prometheus metrics, so that an operator sees
// which clients run which config: per target, the choice used and where
// its config comes from (gRFC A21), when it last changed and was
// resolved, and the problems met. It is a package of its own so that the
// resolver does not bring the Prometheus client into every gRPC client.
//
//	b := resolver.NewBuilder(resolver.Options{…})
//	prometheus.MustRegister(resolvermetrics.NewCollector(b))
package resolvermetrics

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/resolver"
)

const ns = "grpc_config_dns_resolver"

var (
	choiceDesc = prometheus.NewDesc(ns+"_choice",
		"The index, in the published list, of the choice whose service config the channel uses; -1 when none.", []string{"target"}, nil)
	configDesc = prometheus.NewDesc(ns+"_config_info",
		"1 for the config the channel uses: config says where it comes from (published, default, empty, none, failed, unset), sha256 is the first 16 hex digits of its SHA-256 (empty for none).", []string{"target", "config", "sha256"}, nil)
	updatedDesc = prometheus.NewDesc(ns+"_last_update_timestamp_seconds",
		"When the channel's resolver state last changed (Unix seconds).", []string{"target"}, nil)
	resolvedDesc = prometheus.NewDesc(ns+"_last_resolution_timestamp_seconds",
		"When the last resolution finished (Unix seconds).", []string{"target"}, nil)
	ttlDesc = prometheus.NewDesc(ns+"_ttl_seconds",
		"The shortest TTL of the last answers.", []string{"target"}, nil)
	addressesDesc = prometheus.NewDesc(ns+"_addresses",
		"The addresses last given to the channel.", []string{"target"}, nil)
	problemsDesc = prometheus.NewDesc(ns+"_problems_total",
		"Resolutions that had a problem, by kind: txt_lookup, invalid_record, channel_refused, no_addresses.", []string{"target", "kind"}, nil)
)

// problemKinds are the kinds of resolver.State.Problems, exported at zero
// until they happen.
var problemKinds = []string{"txt_lookup", "invalid_record", "channel_refused", "no_addresses"}

type collector struct{ b *resolver.Builder }

// NewCollector returns a collector of the states of b's resolvers (every
// target an open channel of b resolves).
func NewCollector(b *resolver.Builder) prometheus.Collector { return collector{b} }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{choiceDesc, configDesc, updatedDesc, resolvedDesc, ttlDesc, addressesDesc, problemsDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.b.States() {
		t := st.Target
		ch <- prometheus.MustNewConstMetric(choiceDesc, prometheus.GaugeValue, float64(st.Choice), t)
		sum := ""
		if st.ServiceConfig != "" {
			h := sha256.Sum256([]byte(st.ServiceConfig))
			sum = hex.EncodeToString(h[:8])
		}
		ch <- prometheus.MustNewConstMetric(configDesc, prometheus.GaugeValue, 1, t, st.Config, sum)
		if !st.Updated.IsZero() {
			ch <- prometheus.MustNewConstMetric(updatedDesc, prometheus.GaugeValue, float64(st.Updated.UnixNano())/1e9, t)
		}
		if !st.Resolved.IsZero() {
			ch <- prometheus.MustNewConstMetric(resolvedDesc, prometheus.GaugeValue, float64(st.Resolved.UnixNano())/1e9, t)
			ch <- prometheus.MustNewConstMetric(ttlDesc, prometheus.GaugeValue, st.TTL.Seconds(), t)
		}
		ch <- prometheus.MustNewConstMetric(addressesDesc, prometheus.GaugeValue, float64(len(st.Addresses)), t)
		for _, k := range problemKinds {
			ch <- prometheus.MustNewConstMetric(problemsDesc, prometheus.CounterValue, float64(st.Problems[k]), t, k)
		}
	}
}
