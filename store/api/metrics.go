package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics count the API's requests and time them, by route (the
// pattern that served the request, not its path: a bounded set), method
// and status code.
type requestMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRequestMetrics(r prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "grpc_config_dns", Subsystem: "admin",
			Name: "http_requests_total", Help: "Requests to the admin API, by route (the pattern that served them), method and status code."},
			[]string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "grpc_config_dns", Subsystem: "admin",
			Name: "http_request_duration_seconds", Help: "Time from a request read to its answer written, by route and method (a watch lasts as long as it is followed).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60}},
			[]string{"route", "method"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// wrap counts and times the requests mux serves.
func (m *requestMetrics) wrap(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(sw, r)
		// The mux sets the request's Pattern to the route it chose.
		route := r.Pattern
		if route == "" {
			route = "none"
		}
		method := knownMethod(r.Method)
		m.requests.WithLabelValues(route, method, strconv.Itoa(sw.code)).Inc()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	})
}

// knownMethod is the method as a label: anyone can send any method, and
// each would be a new series.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodOptions:
		return m
	}
	return "other"
}

// statusWriter remembers the status code written. It passes Flush on
// (watches stream) through Unwrap, as http.ResponseController expects.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
