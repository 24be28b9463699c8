package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// maxBatchBody bounds the body of a batch: a whole publisher config may
// be this large, and a batch is a zone's services of one.
const maxBatchBody = model.MaxConfigSize

// batch is the body of POST /v1/zones/{zone}/services:batch.
type batch struct {
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Items      []*store.Object `json:"items"`
}

// servicesBatch creates or replaces many services of a zone at once
// (store.PutServices): one transaction on the embedded store, chunks of
// one on etcd.
func (h *handler) servicesBatch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		notAllowed(w, r, "POST")
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBatchBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, &store.Error{Code: http.StatusRequestEntityTooLarge, Reason: store.ReasonTooLarge,
			Message: fmt.Sprintf("the batch is larger than %d bytes: send its items in several batches", maxBatchBody)})
		return
	}
	if err != nil {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("reading the request body: %v", err)})
		return
	}
	if e := checkKeys(b, batchShape); e != nil {
		writeError(w, e)
		return
	}
	var in batch
	if err := json.Unmarshal(b, &in); err != nil {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest,
			Message: fmt.Sprintf(`the body is not a batch {"items":[{"metadata":{…},"spec":{…}},…]}: %v`, err)})
		return
	}
	if in.Kind != "" && in.Kind != "ServiceList" || in.APIVersion != "" && in.APIVersion != store.APIVersion {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest,
			Message: fmt.Sprintf("a batch of services is apiVersion %s, kind ServiceList (or neither), not %q %q", store.APIVersion, in.APIVersion, in.Kind)})
		return
	}
	for i, it := range in.Items {
		if it == nil || it.Kind != "" && it.Kind != store.ServiceKind {
			writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest,
				Message: fmt.Sprintf("item %d of the batch is not a service: a batch holds services (kind Service, or none)", i)})
			return
		}
	}
	ctx := r.Context()
	if dry, err := dryRun(r); err != nil {
		writeError(w, err)
		return
	} else if dry {
		ctx = store.DryRun(ctx)
	}
	res, err := h.s.PutServices(ctx, r.PathValue("zone"), in.Items)
	respond(w, http.StatusOK, res, err)
}
