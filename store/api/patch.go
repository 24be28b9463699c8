package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

// The patch media types PATCH takes, as kube-apiserver names them.
const (
	mergePatch = "application/merge-patch+json" // RFC 7386
	jsonPatch  = "application/json-patch+json"  // RFC 6902
)

// patch serves PATCH of one object: the patch applied to the object as
// stored, then written as a PUT would be, with its validation. A
// metadata.resourceVersion the patch sets (or a JSON patch "test" of it)
// is a precondition (409 when the object moved on); without one, a
// write that raced another is patched again on the newer version.
func (o objectOps) patch(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != mergePatch && mt != jsonPatch {
		writeError(w, &store.Error{Code: http.StatusUnsupportedMediaType, Reason: store.ReasonUnsupportedMedia,
			Message: fmt.Sprintf("PATCH takes Content-Type %s (RFC 7386) or %s (RFC 6902), not %q (no strategic merge or server-side apply: objects here are plain JSON)", mergePatch, jsonPatch, r.Header.Get("Content-Type"))})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, &store.Error{Code: http.StatusRequestEntityTooLarge, Reason: store.ReasonTooLarge, Message: fmt.Sprintf("the patch is larger than %d bytes", maxBody)})
		return
	}
	if err != nil {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("reading the request body: %v", err)})
		return
	}
	var ops jsonpatch.Patch
	if mt == jsonPatch {
		if ops, err = jsonpatch.DecodePatch(body); err != nil {
			writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: fmt.Sprintf("the body is not a JSON patch (RFC 6902: [{\"op\":\"replace\",\"path\":\"/spec/ttl\",\"value\":\"60s\"}]): %v", err)})
			return
		}
	} else if !json.Valid(body) {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: "the body is not a JSON merge patch (RFC 7386: a JSON object, such as {\"spec\":{\"ttl\":\"60s\"}})"})
		return
	}
	// Without a version asked for, a patch lands however many writes
	// race it (as kube-apiserver's): each lost race is another's win.
	const retries = 100
	for i := range retries {
		if i > 0 {
			time.Sleep(time.Duration(rand.IntN(1000*i)) * time.Microsecond)
		}
		cur, err := o.get(ctx, r, "")
		if err != nil {
			writeError(w, err)
			return
		}
		doc, err := json.Marshal(cur)
		if err != nil {
			writeError(w, err)
			return
		}
		var patched []byte
		if mt == jsonPatch {
			patched, err = ops.Apply(doc)
		} else {
			patched, err = jsonpatch.MergePatch(doc, body)
		}
		if err != nil {
			code := http.StatusUnprocessableEntity
			if errors.Is(err, jsonpatch.ErrTestFailed) {
				code = http.StatusConflict // a "test" op failed: a precondition
			}
			writeError(w, &store.Error{Code: code, Reason: reasonFor(code), Message: fmt.Sprintf("the patch does not apply to %s: %v", r.URL.Path, err)})
			return
		}
		if e := checkKeys(patched, objectShape); e != nil {
			e.Message = "the patched object: " + e.Message
			writeError(w, e)
			return
		}
		var obj store.Object
		if err := json.Unmarshal(patched, &obj); err != nil {
			writeError(w, &store.Error{Code: http.StatusUnprocessableEntity, Reason: store.ReasonInvalid, Message: fmt.Sprintf("the patched object is not {\"metadata\":{…},\"spec\":{…}}: %v", err)})
			return
		}
		asked := obj.Metadata.ResourceVersion != cur.Metadata.ResourceVersion
		if obj.Metadata.ResourceVersion == "" {
			// A patch that removes the version asks for none.
			obj.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
		}
		out, _, err := o.put(ctx, r, &obj)
		var se *store.Error
		if errors.As(err, &se) && se.Code == http.StatusConflict && !asked {
			continue // another write came between: patch the newer version
		}
		respond(w, http.StatusOK, out, err)
		return
	}
	writeError(w, &store.Error{Code: http.StatusConflict, Reason: store.ReasonConflict, Message: fmt.Sprintf("%s kept changing while it was patched; try again", r.URL.Path)})
}

func reasonFor(code int) string {
	if code == http.StatusConflict {
		return store.ReasonConflict
	}
	return store.ReasonInvalid
}
