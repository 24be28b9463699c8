package api

import (
	"context"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"

	"github.com/grpc-config-dns/grpc-config-dns/store"
)

func (h *handler) policies(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		notAllowed(w, r, "GET")
		return
	}
	zone := r.PathValue("zone")
	h.listOrWatch(w, r, func(ctx context.Context, o store.ListOptions) (*store.List, error) {
		return h.s.ListPolicies(ctx, zone, o)
	}, func(ctx context.Context, rv string) (<-chan store.Event, error) {
		return h.s.WatchPolicies(ctx, zone, rv)
	})
}

func (h *handler) policy(w http.ResponseWriter, r *http.Request) {
	objectOps{
		get: func(ctx context.Context, r *http.Request, rv string) (*store.Object, error) {
			return h.s.GetPolicy(ctx, r.PathValue("zone"), r.PathValue("name"), rv)
		},
		put: func(ctx context.Context, r *http.Request, obj *store.Object) (any, bool, error) {
			out, created, err := h.s.PutPolicy(ctx, r.PathValue("zone"), r.PathValue("name"), obj)
			if err != nil || !r.URL.Query().Has("dryRun") {
				return out, created, err
			}
			eff, err := h.s.PolicyEffect(ctx, r.PathValue("zone"), r.PathValue("name"), obj)
			return dryRunEffect{Object: out, Effect: eff}, created, err
		},
		del: func(ctx context.Context, r *http.Request, rv string) (any, error) {
			out, err := h.s.DeletePolicy(ctx, r.PathValue("zone"), r.PathValue("name"), rv)
			if err != nil || !r.URL.Query().Has("dryRun") {
				return out, err
			}
			eff, err := h.s.PolicyEffect(ctx, r.PathValue("zone"), r.PathValue("name"), nil)
			return dryRunEffect{Object: out, Effect: eff}, err
		},
	}.serve(w, r)
}

func (h *handler) inspect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		notAllowed(w, r, "GET")
		return
	}
	in, err := h.s.Inspect(r.Context(), r.PathValue("zone"), r.PathValue("name"))
	respond(w, http.StatusOK, in, err)
}

// uiCookie holds a browser's token for the web view.
const uiCookie = "grpc_config_dns_token"

var loginPage = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>grpc-config-dns: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"></head>
<body><main><h1>grpc-config-dns</h1>
<p>The web view needs a token of the server's <code>--admin-token-file</code>.</p>
{{if .Failed}}<p role="alert"><strong>That token is not accepted.</strong></p>{{end}}
<form method="post" action="/ui/login">
<input type="hidden" name="next" value="{{.Next}}">
<label for="token">Token</label> <input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form></main></body></html>
`))

// login takes a token from a form (the web view works without
// JavaScript, and a browser sends no Authorization header of its own) and
// keeps it in a cookie for /ui/ only.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	// Anyone may send this: the body is bounded before it is read, and
	// only URL-encoded forms are read (never multipart).
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, &store.Error{Code: http.StatusBadRequest, Reason: store.ReasonBadRequest, Message: "the login form is a URL-encoded token and next, at most 4 KiB"})
		return
	}
	next := safeNext(r.Form.Get("next"))
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet:
		if len(h.tokens) == 0 {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		loginPage.Execute(w, struct {
			Next   string
			Failed bool
		}{next, false})
	case http.MethodPost:
		token := strings.TrimSpace(r.PostForm.Get("token"))
		if len(h.tokens) > 0 && !h.valid(token) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			loginPage.Execute(w, struct {
				Next   string
				Failed bool
			}{next, true})
			return
		}
		// Encoded: a token may hold bytes a cookie may not.
		http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(token)), Path: "/ui/", HttpOnly: true,
			Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteStrictMode, MaxAge: 12 * 3600})
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		notAllowed(w, r, "GET, POST")
	}
}

// safeNext returns where a login goes on: next when it is a path of the
// web view (only the characters its links use, nothing a browser could
// read as another host: no "//", "\\", "..", scheme or host), else /ui/.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "/ui/login") ||
		strings.Contains(next, "//") || strings.Contains(next, "..") {
		return "/ui/"
	}
	for i := 0; i < len(next); i++ {
		c := next[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/-._~?=&%+", c) >= 0) {
			return "/ui/"
		}
	}
	return next
}
