package testpb

import (
	"context"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Server implements the Echo service. Its zero value is not usable: use
// NewServer.
type Server struct {
	UnimplementedEchoServer
	name string
	*attempts
}

// attempts counts Flaky calls per key; servers made by Named share it, so
// that a retry which lands on another backend still counts as the next
// attempt.
type attempts struct {
	mu sync.Mutex
	n  map[string]int32
}

// NewServer returns a server that names itself name in every answer.
func NewServer(name string) *Server {
	return &Server{name: name, attempts: &attempts{n: map[string]int32{}}}
}

// Named returns a server that answers as name and shares s's Flaky
// attempt counts: two backends of one logical service.
func (s *Server) Named(name string) *Server {
	return &Server{name: name, attempts: s.attempts}
}

// Name is the backend name the server answers with.
func (s *Server) Name() string { return s.name }

func (s *Server) answer(ctx context.Context) *EchoResponse {
	_ = grpc.SetHeader(ctx, metadata.Pairs("backend", s.name))
	resp := &EchoResponse{Backend: s.name, Headers: map[string]string{}}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range md {
			if len(v) > 0 {
				resp.Headers[k] = v[0]
			}
		}
	}
	return resp
}

// Echo answers at once.
func (s *Server) Echo(ctx context.Context, _ *EchoRequest) (*EchoResponse, error) {
	return s.answer(ctx), nil
}

// Slow answers after req.SleepMs milliseconds, or fails when the call's
// deadline comes first.
func (s *Server) Slow(ctx context.Context, req *EchoRequest) (*EchoResponse, error) {
	t := time.NewTimer(time.Duration(req.GetSleepMs()) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return s.answer(ctx), nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// Flaky fails the first req.FailFirst attempts of each req.Key with
// UNAVAILABLE.
func (s *Server) Flaky(ctx context.Context, req *EchoRequest) (*EchoResponse, error) {
	s.mu.Lock()
	s.n[req.GetKey()]++
	n := s.n[req.GetKey()]
	s.mu.Unlock()
	if n <= req.GetFailFirst() {
		return nil, status.Errorf(codes.Unavailable, "flaky: attempt %d of key %q fails on purpose", n, req.GetKey())
	}
	resp := s.answer(ctx)
	resp.Attempt = n
	return resp, nil
}

// Attempts returns how many calls Flaky saw for key.
func (s *Server) Attempts(key string) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}

// Chat answers every request of the stream.
func (s *Server) Chat(stream grpc.BidiStreamingServer[EchoRequest, EchoResponse]) error {
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.Send(s.answer(stream.Context())); err != nil {
			return err
		}
	}
}

// Watch answers one request with three responses.
func (s *Server) Watch(_ *EchoRequest, stream grpc.ServerStreamingServer[EchoResponse]) error {
	for i := 0; i < 3; i++ {
		if err := stream.Send(s.answer(stream.Context())); err != nil {
			return err
		}
	}
	return nil
}
