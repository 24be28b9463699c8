// Package httpserve serves the publisher's HTTP endpoints (Prometheus
// metrics and probes, the admin API) with the limits a server reachable
// by untrusted clients needs: timeouts on every phase of a request, small
// headers, and a bound on connections that neither idle keep-alive
// connections nor ones that never finish a request can exhaust.
//
// Without them, clients that held keep-alive connections open used up the
// process's file descriptors, and the DNS server's next config reload
// failed to open the config file; and a few connections that sent nothing
// kept out every liveness probe, so that Kubernetes restarted the pod.
package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound one HTTP server. The zero value of a field means its
// default.
type Limits struct {
	// MaxConns bounds open connections (default 64). When all are taken, a
	// new connection closes another (see Listen); if none may be closed,
	// the new one is.
	MaxConns int
	// ReadHeaderTimeout (default 5s), ReadTimeout (10s), WriteTimeout (30s)
	// and IdleTimeout (60s) are those of http.Server.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// BusyHeaderTimeout (default 1s) is how long a connection may take
	// to send its first request header while three quarters of MaxConns
	// are in use, instead of ReadHeaderTimeout.
	BusyHeaderTimeout time.Duration
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
	def(&l.BusyHeaderTimeout, time.Second)
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
//
// Anyone who can connect can take a slot before sending a byte, so when
// every slot is taken a new connection closes another, in this order:
//   - the oldest that has not sent a complete request header (held open
//     sending nothing or a byte at a time, or stalled in its TLS
//     handshake) once the server has been reading it for a few
//     milliseconds, so that a client that sends its request at once (a
//     probe) is served however many others hold connections open;
//   - the one idle (between keep-alive requests) the longest, of those
//     that have not authenticated (see Authenticated);
//   - the one in a request the longest, of those; such as a request
//     whose body comes a byte at a time;
//   - the authenticated one idle the longest.
//
// A connection in an authenticated request is not closed; when every
// slot has one, the new connection is closed instead (and counted in
// Refused).
func Listen(addr string, h http.Handler, limits Limits) (*Server, error) {
	limits = limits.withDefaults()
	inner, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln := &listener{
		Listener:   inner,
		max:        limits.MaxConns,
		busy:       (limits.MaxConns*3 + 3) / 4,
		busyHeader: limits.BusyHeaderTimeout,
		conns:      map[*conn]struct{}{},
		change:     make(chan struct{}, 1),
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ConnState:         ln.track,
		ConnContext: func(ctx context.Context, nc net.Conn) context.Context {
			if c := unwrap(nc); c != nil {
				ctx = context.WithValue(ctx, connKey{}, c)
			}
			return ctx
		},
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
// slot was taken by a connection in an authenticated request.
func (s *Server) Refused() uint64 {
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	return s.ln.refused
}

type connKey struct{}

// Authenticated records that the client of r proved who it is (with a
// valid token, say), so that its connection is closed after those that
// did not to make room for a new one, and not while in a request. It does
// nothing for a request another server received.
func Authenticated(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*conn); ok {
		c.authenticated.Store(true)
	}
}

// When every slot is taken, an unproven connection is closed only once
// the server has waited blockedGrace in a read for it to send something,
// or has been reading it for readGrace (one that sends a byte at a time,
// faster). Under a flood the listener accepts faster than the server gets
// to read what connections sent, and one not read yet may hold a
// complete request, a probe's, which the server reads in microseconds
// once it gets to it. Until a connection may be closed, Accept waits, up
// to maxGraceWait, and new connections queue in the kernel's backlog.
const (
	blockedGrace = time.Millisecond
	readGrace    = 10 * time.Millisecond
	maxGraceWait = 100 * time.Millisecond
)

// conn is a connection the listener handed out.
type conn struct {
	net.Conn
	l        *listener
	accepted time.Time
	// firstRead is when the server first read from the connection, and
	// reading when the Read under way began, as offsets from accepted
	// plus 1ns; 0 for none.
	firstRead, reading atomic.Int64
	// authenticated is set by Authenticated, for good.
	authenticated atomic.Bool

	// Guarded by the listener's mu.
	state http.ConnState // StateNew until a request header is read
	since time.Time      // when it entered state
	timer *time.Timer    // the header deadline under pressure
}

func (c *conn) Read(p []byte) (int, error) {
	at := int64(time.Since(c.accepted)) + 1
	if c.firstRead.CompareAndSwap(0, at) {
		c.l.changed()
	}
	c.reading.Store(at)
	n, err := c.Conn.Read(p)
	c.reading.Store(0)
	return n, err
}

// graceLeft is how long c, unproven, has left before it may be closed for
// a new connection; readGrace when it has not been read.
func (c *conn) graceLeft(now time.Time) time.Duration {
	age := now.Sub(c.accepted)
	left := readGrace
	if r := c.firstRead.Load(); r != 0 {
		left = readGrace - (age - time.Duration(r-1))
	}
	if r := c.reading.Load(); r != 0 {
		left = min(left, blockedGrace-(age-time.Duration(r-1)))
	}
	return left
}

// listener bounds the connections it hands out, tracking their states
// through http.Server.ConnState.
type listener struct {
	net.Listener
	max        int
	busy       int // connections from which the server is under pressure
	busyHeader time.Duration

	// change wakes Accept waiting for a connection to be read or to
	// change state.
	change chan struct{}

	mu      sync.Mutex
	conns   map[*conn]struct{}
	refused uint64
}

func (l *listener) changed() {
	select {
	case l.change <- struct{}{}:
	default:
	}
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
		nc.Close()
	}
}

// admit gives nc a slot, closing another connection if need be, or
// returns nil when none may be closed.
func (l *listener) admit(nc net.Conn) *conn {
	var waited time.Duration
	for {
		l.mu.Lock()
		now := time.Now()
		// Those there before the pressure began are past their header
		// deadline too.
		l.cutSlowLocked(now)
		if len(l.conns) >= l.max {
			victim, wait := l.victimLocked(now, waited >= maxGraceWait)
			if victim == nil && wait > 0 {
				l.mu.Unlock()
				t := time.NewTimer(wait)
				select {
				case <-l.change:
				case <-t.C:
				}
				t.Stop()
				waited += time.Since(now)
				continue
			}
			if victim == nil {
				l.refused++
				l.mu.Unlock()
				return nil
			}
			l.closeLocked(victim)
		}
		c := &conn{Conn: nc, l: l, accepted: now, state: http.StateNew, since: now}
		c.timer = time.AfterFunc(l.busyHeader, l.headerDue)
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		return c
	}
}

// cutSlowLocked closes, oldest first, the connections that have had
// BusyHeaderTimeout to send a request header and have not, while the
// server is under pressure.
func (l *listener) cutSlowLocked(now time.Time) {
	if len(l.conns) < l.busy {
		return
	}
	var due []*conn
	for c := range l.conns {
		if c.state == http.StateNew && now.Sub(c.accepted) >= l.busyHeader {
			due = append(due, c)
		}
	}
	slices.SortFunc(due, func(a, b *conn) int { return a.accepted.Compare(b.accepted) })
	for _, c := range due {
		if len(l.conns) < l.busy {
			return
		}
		l.closeLocked(c)
	}
}

// headerDue is the header deadline of a connection under pressure, run
// BusyHeaderTimeout after it was accepted.
func (l *listener) headerDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cutSlowLocked(time.Now())
}

// victimLocked is the connection a new one closes to take its slot (see
// Listen), or nil and how long to wait for an unproven one to be out of
// its grace (see readGrace; none when force), or nil and 0 when none may
// be closed.
func (l *listener) victimLocked(now time.Time, force bool) (*conn, time.Duration) {
	var victim *conn
	var vs standing
	var wait time.Duration
	for c := range l.conns {
		if c.state == http.StateNew && !force {
			if left := c.graceLeft(now); left > 0 {
				if wait == 0 || left < wait {
					wait = left
				}
				continue
			}
		}
		s, ok := c.standing()
		if !ok {
			continue
		}
		if victim == nil || s.before(vs) {
			victim, vs = c, s
		}
	}
	if wait > 0 && (victim == nil || vs.rank > rankUnproven) {
		// One in its grace goes before any proven one.
		return nil, wait
	}
	return victim, 0
}

// The ranks of connections in the order in which they give way to a new
// one (see Listen), first to last.
const (
	rankUnproven  = iota // has not sent a complete request header
	rankIdle             // idle, not authenticated
	rankActive           // in a request, not authenticated
	rankAdminIdle        // idle, authenticated
)

// standing is where a connection stands in the order in which connections
// give way: by rank, then the longest in its state first.
type standing struct {
	rank  int
	since time.Time
}

func (s standing) before(o standing) bool {
	return s.rank < o.rank || s.rank == o.rank && s.since.Before(o.since)
}

// standing is c's standing, or false when c may not be closed: it is in
// an authenticated request, or closing.
func (c *conn) standing() (standing, bool) {
	switch c.state {
	case http.StateNew:
		return standing{rankUnproven, c.accepted}, true
	case http.StateIdle:
		if c.authenticated.Load() {
			return standing{rankAdminIdle, c.since}, true
		}
		return standing{rankIdle, c.since}, true
	case http.StateActive:
		if c.authenticated.Load() {
			return standing{}, false
		}
		return standing{rankActive, c.since}, true
	}
	return standing{}, false
}

// closeLocked closes c and frees its slot.
func (l *listener) closeLocked(c *conn) {
	delete(l.conns, c)
	c.timer.Stop()
	c.Conn.Close()
}

// unwrap is the connection the listener handed out under nc, which
// http.Server may have wrapped (in a *tls.Conn).
func unwrap(nc net.Conn) *conn {
	for {
		switch v := nc.(type) {
		case *conn:
			return v
		case interface{ NetConn() net.Conn }:
			nc = v.NetConn()
		default:
			return nil
		}
	}
}

func (l *listener) track(nc net.Conn, state http.ConnState) {
	c := unwrap(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[c]; !ok {
		return // closed to make room
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
		c.timer.Stop()
	case http.StateActive, http.StateIdle:
		c.state, c.since = state, time.Now()
		c.timer.Stop()
	}
	l.changed()
}
