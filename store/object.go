package store

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Object is a zone or a service, shaped as Kubernetes shapes its objects
// (docs/store.md).
type Object struct {
	// APIVersion is APIVersion; Kind "Zone", "Service" or "Policy". The
	// store sets both on what it returns; on input, either may be left
	// out, and one that is not the object's is refused.
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Metadata   Metadata        `json:"metadata"`
	Spec       json.RawMessage `json:"spec"`
}

// Metadata names an object and says which version it is.
type Metadata struct {
	// Name is a zone's name (its origin without the final dot), or a
	// service's name relative to its zone's origin ("@" for the origin).
	Name string `json:"name"`
	// Zone is the zone of a service; empty for a zone.
	Zone string `json:"zone,omitempty"`
	// ResourceVersion is the store revision of the write that made this
	// version of the object (for a deleted object, of its deletion), in
	// decimal. On a PUT it is a precondition: the write is done only if
	// the object is still at that version (409 Conflict otherwise).
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	// Annotations are stored as written (keys 1 to 253 bytes, 256 KiB
	// together), but for WrittenAt, which only history items carry. The
	// CLI writes grpc-config-dns/source on the objects it writes from a
	// file. A BOOKMARK's say what it marks ("k8s.io/initial-events-end"
	// after the synthetic ADDED events of a watch).
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Kind is what an object is.
type Kind int

// The kinds of objects.
const (
	KindZone Kind = iota + 1
	KindService
)

func (k Kind) String() string {
	switch k {
	case KindZone:
		return "zone"
	case KindPolicy:
		return "policy"
	case KindMarker:
		return "marker"
	}
	return "service"
}

// APIVersion is the apiVersion of the store's objects and lists.
const APIVersion = "grpc-config-dns/v1"

// The kinds of objects, as their kind field says them.
const (
	ZoneKind    = "Zone"
	ServiceKind = "Service"
)

// kindOf is the kind of the object stored under key.
func kindOf(key string) string {
	switch {
	case strings.HasPrefix(key, "z/"):
		return ZoneKind
	case strings.HasPrefix(key, "p/"):
		return PolicyKind
	}
	return ServiceKind
}

// typed returns o with its apiVersion and kind set.
func typed(o *Object, kind string) *Object {
	o.APIVersion, o.Kind = APIVersion, kind
	return o
}

// checkKind refuses an object whose apiVersion or kind, when given, are
// not those of a kind object.
func checkKind(obj *Object, kind, what string) error {
	if obj.APIVersion != "" && obj.APIVersion != APIVersion {
		return badRequest("apiVersion %q of %s: this API is %s: write that, or leave apiVersion out", obj.APIVersion, what, APIVersion)
	}
	if obj.Kind != "" && obj.Kind != kind {
		return badRequest("kind %q of %s: it is a %s: write that, or leave kind out", obj.Kind, what, kind)
	}
	return nil
}

// List is one page of a list.
type List struct {
	// APIVersion is APIVersion; Kind "ZoneList", "ServiceList" or
	// "PolicyList".
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   ListMeta  `json:"metadata"`
	Items      []*Object `json:"items"`
}

// ListMeta says at which revision a list was read, and how to go on.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion"`
	Continue        string `json:"continue,omitempty"`
	// RemainingItemCount is set when more items follow and the backend
	// counted them.
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// EventType is the type of a watch event.
type EventType string

// The watch event types, as Kubernetes names them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	// ErrorEvent ends a stream that cannot go on (its revision was
	// compacted while it was behind); Object is then nil and Status set.
	ErrorEvent EventType = "ERROR"
)

// Event is one watch event.
type Event struct {
	Type   EventType `json:"type"`
	Object any       `json:"object"`
}

// Error is a failed request as the API answers it: an HTTP status code,
// a Kubernetes reason, a message that names the input and the fix, and
// for Invalid the diagnostics of the spec exactly as `lint --format json`
// lists them.
type Error struct {
	Code        int          `json:"code"`
	Reason      string       `json:"reason"`
	Message     string       `json:"message"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Stored, for a batch that failed after some of its transactions,
	// says what those wrote: it stays written.
	Stored *BatchResult `json:"stored,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Diagnostics) == 0 {
		return e.Message
	}
	s := e.Message
	for _, d := range e.Diagnostics {
		if d.Severity == "error" {
			s += fmt.Sprintf("\n  %s: %s [%s]", d.Path, d.Message, d.Code)
		}
	}
	return s
}

// Diagnostic is a problem found in a spec, as `lint --format json`
// reports it; Path is a JSON pointer into the object (/spec/…), Line and
// Column are positions in the spec's text when known.
type Diagnostic struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	// Clients says, for a diagnostic that concerns some gRPC clients and
	// not others, what each does (serviceconfig.ClientEffects).
	Clients map[string]string `json:"clients,omitempty"`
}

// Reasons of errors (Kubernetes StatusReason).
const (
	ReasonConflict      = "Conflict"
	ReasonInvalid       = "Invalid"
	ReasonGone          = "Gone"
	ReasonBadRequest    = "BadRequest"
	ReasonUnauthorized  = "Unauthorized"
	ReasonNotFound      = "NotFound"
	ReasonTimeout       = "Timeout"
	ReasonUnavailable   = "ServiceUnavailable"
	ReasonInternal      = "InternalError"
	ReasonTooLarge      = "RequestEntityTooLarge"
	ReasonNotAllowed    = "MethodNotAllowed"
	ReasonStorageFull   = "InsufficientStorage"
	ReasonAlreadyExists = "AlreadyExists"
	// ReasonUnsupportedMedia is a PATCH of a media type not taken.
	ReasonUnsupportedMedia = "UnsupportedMediaType"
)

func errorf(code int, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// BadRequest, NotFound, Conflict, Gone: the errors the API documents.
func badRequest(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, ReasonBadRequest, format, args...)
}

func notFound(format string, args ...any) *Error {
	return errorf(http.StatusNotFound, ReasonNotFound, format, args...)
}

func conflict(format string, args ...any) *Error {
	return errorf(http.StatusConflict, ReasonConflict, format, args...)
}

func gone(format string, args ...any) *Error {
	return errorf(http.StatusGone, ReasonGone, format, args...)
}

// invalid is a 422 with the diagnostics of a spec, their paths made
// pointers into the object.
func invalid(what string, ds sc.Diagnostics) *Error {
	e := errorf(http.StatusUnprocessableEntity, ReasonInvalid, "%s is invalid: nothing was stored; fix the errors listed in diagnostics", what)
	for _, d := range ds {
		e.Diagnostics = append(e.Diagnostics, Diagnostic{Severity: d.Severity.String(), Code: d.Code, Message: d.Message,
			Path: "/spec" + d.Path, Line: d.Line, Column: d.Column, Clients: sc.ClientEffects(&d)})
	}
	return e
}

// FormatRV writes a revision as a resourceVersion.
func FormatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

// ParseRV reads a resourceVersion parameter: a revision written as the
// store writes it (FormatRV), in decimal without sign, leading zeros or
// spaces. Anything else ("+5", "05") is refused rather than read as a
// version the client may not have meant.
func ParseRV(s string) (int64, error) { return parseRV("resourceVersion", s) }

// parseRV is ParseRV of the parameter or field name, which its error
// names.
func parseRV(name, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || FormatRV(v) != s {
		return 0, badRequest("%s %q is not a resourceVersion: give one as the store writes them, a decimal number without sign, leading zeros or spaces (a previous answer's metadata.resourceVersion)", name, s)
	}
	return v, nil
}
