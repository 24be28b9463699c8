package main

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
)

// health serves /healthz and /readyz on the metrics listener, as CoreDNS's
// health and ready plugins do: /healthz answers 200 while the process
// serves (a liveness probe); /readyz answers 200 once the config is loaded
// and the DNS listeners are up, and 503 from the moment a stop begins, for
// the lame-duck period (--lame-duck) during which DNS is still answered,
// so that load balancers and Kubernetes endpoints take the server out of
// rotation before it stops answering.
type health struct {
	ready atomic.Bool
	// check, when set, says why the server is not ready although it is
	// up (with --store: the store does not answer).
	check func() error
}

// err says why the server is not ready, or nil.
func (h *health) err() error {
	if !h.ready.Load() {
		return errors.New("starting or shutting down")
	}
	if h.check != nil {
		return h.check()
	}
	return nil
}

func (h *health) register(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		w.Write([]byte("ok\n"))
	})
}
