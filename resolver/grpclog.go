package resolver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc/grpclog"
)

// logComponent is the grpclog component the resolver logs to by default:
// GRPC_GO_LOG_SEVERITY_LEVEL and GRPC_GO_LOG_VERBOSITY_LEVEL choose what
// is shown, as for grpc-go's own resolvers.
var logComponent = grpclog.Component("dnsconfig")

// grpclogHandler is the default Options.Logger's handler: it writes each
// record to the grpclog component, Debug at verbosity 2, with its
// attributes as key=value after the message.
type grpclogHandler struct {
	attrs string // " key=value" of the With attributes, group-prefixed
	group string // "g." of WithGroup
}

func (h *grpclogHandler) Enabled(_ context.Context, l slog.Level) bool {
	if l < slog.LevelInfo {
		return logComponent.V(2)
	}
	return true
}

func (h *grpclogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	msg := b.String()
	switch {
	case r.Level >= slog.LevelError:
		logComponent.Error(msg)
	case r.Level >= slog.LevelWarn:
		logComponent.Warning(msg)
	default:
		logComponent.Info(msg)
	}
	return nil
}

func (h *grpclogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	return &grpclogHandler{attrs: b.String(), group: h.group}
}

func (h *grpclogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &grpclogHandler{attrs: h.attrs, group: h.group + name + "."}
}

// appendAttr writes " key=value", quoting values with spaces.
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			appendAttr(b, group+a.Key+".", g)
		}
		return
	}
	v := a.Value.String()
	if strings.ContainsAny(v, " \t\n\"=") || v == "" {
		v = fmt.Sprintf("%q", v)
	}
	b.WriteString(" " + group + a.Key + "=" + v)
}
