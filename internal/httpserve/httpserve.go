// Package httpserve serves the publisher's HTTP endpoints (Prometheus
// metrics, and the admin API to come) with the limits a server reachable
// by untrusted clients needs: timeouts on every phase of a request, small
// headers, and a bound on connections that idle keep-alive connections
// cannot exhaust.
//
// Without them, clients that held keep-alive connections open used up the
// process's file descriptors, and the DNS server's next config reload
// failed to open the config file.
package httpserve

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound one HTTP server. The zero value of a field means its
// default.
type Limits struct {
	// MaxConns bounds open connections (default 64). When all are taken, a
	// new connection closes the longest idle keep-alive one; if none is
	// idle, the new one is closed.
	MaxConns int
	// ReadHeaderTimeout (default 5s), ReadTimeout (10s), WriteTimeout (30s)
	// and IdleTimeout (60s) are those of http.Server.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes is that of http.Server (default 16 KiB).
	MaxHeaderBytes int
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 64
	}
	def(&l.ReadHeaderTimeout, 5*time.Second)
	def(&l.ReadTimeout, 10*time.Second)
	def(&l.WriteTimeout, 30*time.Second)
	def(&l.IdleTimeout, 60*time.Second)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 16 << 10
	}
	return l
}

// Server is an http.Server on a limited listener.
type Server struct {
	*http.Server
	ln *listener
}

// Listen binds addr and returns a server for h within limits; run it with
// Serve and stop it with Shutdown.
func Listen(addr string, h http.Handler, limits Limits) (*Server, error) {
	limits = limits.withDefaults()
	inner, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln := &listener{Listener: inner, max: limits.MaxConns, conns: map[net.Conn]*connInfo{}}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ConnState:         ln.track,
	}
	return &Server{Server: hs, ln: ln}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown or Close; it returns nil then.
func (s *Server) Serve() error {
	err := s.Server.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeTLS is Serve over TLS, with s.TLSConfig and the certificate and
// key files as http.Server.ServeTLS takes them ("" when TLSConfig has
// them).
func (s *Server) ServeTLS(certFile, keyFile string) error {
	err := s.Server.ServeTLS(s.ln, certFile, keyFile)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Refused is how many connections were closed on accept because every
// slot was taken by a connection in a request.
func (s *Server) Refused() uint64 {
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	return s.ln.refused
}

type connInfo struct {
	state     http.ConnState
	idleSince time.Time
}

// listener bounds the connections it hands out, tracking their states
// through http.Server.ConnState.
type listener struct {
	net.Listener
	max int

	mu      sync.Mutex
	conns   map[net.Conn]*connInfo
	refused uint64
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if len(l.conns) >= l.max && !l.evictIdleLocked() {
			l.refused++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns[c] = &connInfo{state: http.StateNew}
		l.mu.Unlock()
		return c, nil
	}
}

// evictIdleLocked closes the connection idle the longest, if any.
func (l *listener) evictIdleLocked() bool {
	var oldest net.Conn
	var since time.Time
	for c, ci := range l.conns {
		if ci.state == http.StateIdle && (oldest == nil || ci.idleSince.Before(since)) {
			oldest, since = c, ci.idleSince
		}
	}
	if oldest == nil {
		return false
	}
	delete(l.conns, oldest)
	oldest.Close()
	return true
}

func (l *listener) track(c net.Conn, state http.ConnState) {
	// Over TLS the server reports the *tls.Conn around the connection
	// Accept returned.
	for {
		tc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = tc.NetConn()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ci := l.conns[c]
	if ci == nil {
		return // evicted
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	case http.StateIdle:
		ci.state, ci.idleSince = state, time.Now()
	default:
		ci.state = state
	}
}
