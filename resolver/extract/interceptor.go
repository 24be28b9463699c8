package extract

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Source returns the rules of the service config a channel uses now, or
// nil. Our resolver provides one; it follows config changes live, and on a
// channel's first call waits (within ctx) for the first resolution, so that
// even that call carries the published headers.
type Source func(ctx context.Context, cc *grpc.ClientConn) (*Rules, error)

// Interceptors returns the unary and stream client interceptors that add
// extracted headers to outgoing calls.
//
// Precedence, method by method: when the method config that source's rules
// match for a call has a headerExtraction field (even an empty list), those
// rules apply; otherwise the fallback rules given in code apply, like a
// default service config. Either may be nil.
//
// A header the application already set on the call is left alone: the
// application's value wins over the extracted one.
//
// A rule whose payloadFieldName does not fit the request type (unknown
// field, repeated, not a string, request not a protobuf message) fails the
// call with INTERNAL, naming the field. An unset or empty field adds no
// header. For streams, the first request message decides: the stream is
// opened on the first SendMsg, with the headers; a stream that receives,
// asks for headers or closes before it ever sent is opened without them.
func Interceptors(source Source, fallback *Rules) (grpc.UnaryClientInterceptor, grpc.StreamClientInterceptor) {
	ic := &interceptor{source: source, fallback: fallback}
	return ic.unary, ic.stream
}

// DialOptions returns the interceptors for rules given in code, for a
// channel that does not use our resolver.
func DialOptions(rules *Rules) []grpc.DialOption {
	u, s := Interceptors(nil, rules)
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(u), grpc.WithChainStreamInterceptor(s)}
}

type interceptor struct {
	source   Source
	fallback *Rules
}

// rulesFor picks the rules for a call, published rules first. It returns
// nil when none apply.
func (ic *interceptor) rulesFor(ctx context.Context, cc *grpc.ClientConn, method string) (*Rules, *methodRules, error) {
	if ic.source != nil {
		r, err := ic.source(ctx, cc)
		if err != nil {
			return nil, nil, err
		}
		if mr := r.lookup(method); mr != nil && mr.set {
			return r, mr, nil
		}
	}
	return ic.fallback, ic.fallback.lookup(method), nil
}

func (ic *interceptor) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	r, mr, err := ic.rulesFor(ctx, cc, method)
	if err != nil {
		return err
	}
	if mr == nil || len(mr.rules) == 0 {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	ctx, err = withHeaders(ctx, r, method, mr, req)
	if err != nil {
		return err
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// withHeaders returns ctx with the headers the rules extract from req.
func withHeaders(ctx context.Context, r *Rules, method string, mr *methodRules, req any) (context.Context, error) {
	msg, ok := req.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "headerExtraction is configured for %s, but its request %T is not a protobuf message", method, req)
	}
	m := msg.ProtoReflect()
	p, err := r.plan(method, mr, m.Descriptor())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	var buf [8]string
	kv := p.headers(buf[:0], m)
	if len(kv) == 0 {
		return ctx, nil
	}
	// The application's own value of a header wins.
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		out := kv[:0]
		for i := 0; i < len(kv); i += 2 {
			if len(md.Get(kv[i])) == 0 {
				out = append(out, kv[i], kv[i+1])
			}
		}
		if kv = out; len(kv) == 0 {
			return ctx, nil
		}
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), nil
}

func (ic *interceptor) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	r, mr, err := ic.rulesFor(ctx, cc, method)
	if err != nil {
		return nil, err
	}
	if mr == nil || len(mr.rules) == 0 {
		return streamer(ctx, desc, cc, method, opts...)
	}
	return &lazyStream{ctx: ctx, open: func(ctx context.Context) (grpc.ClientStream, error) {
		return streamer(ctx, desc, cc, method, opts...)
	}, rules: r, mr: mr, method: method}, nil
}

// lazyStream opens the real stream on the first SendMsg, so that the first
// request message can decide the headers.
type lazyStream struct {
	ctx    context.Context
	open   func(context.Context) (grpc.ClientStream, error)
	rules  *Rules
	mr     *methodRules
	method string

	mu     sync.Mutex
	cs     grpc.ClientStream
	err    error
	opened bool
}

// get opens the stream if needed; first, when not nil, is the first
// request message, from which headers are extracted.
func (s *lazyStream) get(first any) (grpc.ClientStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return s.cs, s.err
	}
	s.opened = true
	ctx := s.ctx
	if first != nil {
		if ctx, s.err = withHeaders(ctx, s.rules, s.method, s.mr, first); s.err != nil {
			return nil, s.err
		}
	}
	s.cs, s.err = s.open(ctx)
	return s.cs, s.err
}

func (s *lazyStream) SendMsg(m any) error {
	cs, err := s.get(m)
	if err != nil {
		return err
	}
	return cs.SendMsg(m)
}

func (s *lazyStream) RecvMsg(m any) error {
	cs, err := s.get(nil)
	if err != nil {
		return err
	}
	return cs.RecvMsg(m)
}

func (s *lazyStream) Header() (metadata.MD, error) {
	cs, err := s.get(nil)
	if err != nil {
		return nil, err
	}
	return cs.Header()
}

func (s *lazyStream) Trailer() metadata.MD {
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Trailer()
}

func (s *lazyStream) CloseSend() error {
	cs, err := s.get(nil)
	if err != nil {
		return err
	}
	return cs.CloseSend()
}

func (s *lazyStream) Context() context.Context {
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	if cs == nil {
		return s.ctx
	}
	return cs.Context()
}
