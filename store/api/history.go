package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// historyTakes: a history takes limit.
func historyTakes(string) []string { return []string{"limit"} }

// history serves GET …/history of a zone, a service or a policy: the
// versions the store still holds, newest first (store.History). There is
// no such thing in kube-apiserver: it is what history and rollback of
// the CLI read.
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		notAllowed(w, r, "GET")
		return
	}
	limit := 0
	if l := r.URL.Query().Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 {
			writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("limit %q is not a whole number of versions (0 or more)", l)})
			return
		}
		limit = v
	}
	zone, name := r.PathValue("zone"), r.PathValue("name")
	var hist *store.History
	var err error
	switch {
	case name == "":
		hist, err = h.s.ZoneHistory(r.Context(), zone, limit)
	case strings.Contains(r.Pattern, "/policies/"):
		hist, err = h.s.PolicyHistory(r.Context(), zone, name, limit)
	default:
		hist, err = h.s.ServiceHistory(r.Context(), zone, name, limit)
	}
	respond(w, http.StatusOK, hist, err)
}
