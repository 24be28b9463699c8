// Package promtest reads Prometheus metrics as a scraper sees them, for
// tests that assert what an operator would see.
package promtest

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Gather scrapes g as Prometheus would and returns each sample by its
// name and labels as the text format writes them (labels in name order),
// such as `grpc_config_dns_queries_total{proto="udp",qtype="A",rcode="NOERROR",zone=""}`.
func Gather(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
