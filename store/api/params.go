package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// The query parameters each kind of route takes: a list (or watch), one
// object by method, and what takes none.
var (
	listParams   = []string{"limit", "continue", "resourceVersion", "resourceVersionMatch", "watch", "timeoutSeconds", "allowWatchBookmarks", "labelSelector", "fieldSelector"}
	objectParams = map[string][]string{http.MethodGet: {"resourceVersion"}, http.MethodDelete: {"resourceVersion"}}
)

// takes wraps next so that a request with a query parameter the route
// does not take, for its method, is refused (400, naming the ones it
// takes) before anything is done: kube-apiserver's clients send dryRun,
// labelSelector and the like, and a write asked as a dry run, or a list
// asked with a selector, must not be carried out as another request.
func takes(params func(method string) []string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		allowed := params(r.Method)
		for name := range r.URL.Query() {
			if slices.Contains(allowed, name) {
				continue
			}
			writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: refusedParam(name, r, allowed)})
			return
		}
		next(w, r)
	}
}

func refusedParam(name string, r *http.Request, allowed []string) string {
	what := fmt.Sprintf("%s %s", r.Method, r.Pattern)
	if r.Pattern == "" {
		what = fmt.Sprintf("%s %s", r.Method, r.URL.Path)
	}
	takes := "takes no query parameter"
	if len(allowed) > 0 {
		takes = "takes " + strings.Join(allowed, ", ")
	}
	msg := fmt.Sprintf("query parameter %q is not supported by %s, which %s: nothing was done", name, what, takes)
	switch name {
	case "dryRun":
		msg += " (dryRun=All applies to writes: PUT, PATCH, DELETE, POST of a batch)"
	case "labelSelector", "fieldSelector":
		msg += " (selectors apply to lists and watches: GET the collection)"
	}
	return msg
}

func listTakes(string) []string { return listParams }

// writeTakes is what one object's route takes: a GET resourceVersion,
// and every write may be a dry run.
func writeTakes(method string) []string {
	switch method {
	case http.MethodPut, http.MethodPatch:
		return []string{"dryRun"}
	case http.MethodDelete:
		return []string{"resourceVersion", "dryRun"}
	}
	return objectParams[method]
}

// batchTakes: a batch may be a dry run.
func batchTakes(method string) []string {
	if method == http.MethodPost {
		return []string{"dryRun"}
	}
	return nil
}

func takesNone(string) []string { return nil }
