// Package pubtest runs a publisher on 127.0.0.1 for a program's own
// tests: it serves a publisher config (the YAML or JSON that `serve
// --config` reads) over UDP and TCP, and a test changes it in Go —
// the whole config, or one service — and sees the change in the next
// answer. Point a gRPC channel at it with
// "dnsconfig://"+s.Addr()+"/HOST:PORT" (package resolver).
//
// The answers are dnspub's: the config is validated by the same rules
// (package model) and answered from the same precomputed table, byte for
// byte. What a test does not need is left out, so that importing this
// package brings neither the store (bbolt, etcd) nor metrics nor a file
// watcher: no zone transfers (AXFR and IXFR are refused), no NOTIFY, no
// TSIG, and every change is a new version of every zone, with its SOA
// serial one higher.
package pubtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/dnspub/zone"
	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Server is a publisher serving one config on 127.0.0.1. Its methods are
// safe for concurrent use.
type Server struct {
	udp *net.UDPConn
	tcp *net.TCPListener

	// mu orders changes: cfg is the config served, serial its version.
	mu     sync.Mutex
	cfg    *model.Config
	serial uint32
	table  atomic.Pointer[wire.Table]

	done  chan struct{}
	conns sync.WaitGroup
	once  sync.Once
}

// Start serves config on a free port of 127.0.0.1 until the test ends. A
// config that is not valid fails t with its diagnostics, as lint prints
// them (the place is "config:LINE:COLUMN").
func Start(t testing.TB, config string) *Server {
	t.Helper()
	s, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New is Start without a test: the caller closes the server.
func New(config string) (*Server, error) {
	cfg, err := parse(config)
	if err != nil {
		return nil, err
	}
	udp, tcp, err := listen()
	if err != nil {
		return nil, err
	}
	s := &Server{udp: udp, tcp: tcp, done: make(chan struct{})}
	if err := s.serve(cfg); err != nil {
		udp.Close()
		tcp.Close()
		return nil, err
	}
	s.conns.Add(2)
	go s.serveUDP()
	go s.serveTCP()
	return s, nil
}

// listen opens UDP and TCP on one free port of 127.0.0.1. The kernel
// picks a port free for UDP; another program may hold it for TCP, so a
// few ports are tried.
func listen() (*net.UDPConn, *net.TCPListener, error) {
	var err error
	for range 20 {
		var udp *net.UDPConn
		udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, nil, fmt.Errorf("pubtest: %w", err)
		}
		port := udp.LocalAddr().(*net.UDPAddr).Port
		tcp, terr := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if terr == nil {
			return udp, tcp, nil
		}
		udp.Close()
		err = fmt.Errorf("pubtest: TCP on the UDP port %d: %w", port, terr)
	}
	return nil, nil, err
}

// Addr is the address of the server, "127.0.0.1:PORT", UDP and TCP.
func (s *Server) Addr() string { return s.udp.LocalAddr().String() }

// SetConfig serves config instead of the config served. An invalid one
// is refused with its diagnostics, and the config served stays.
func (s *Server) SetConfig(config string) error {
	cfg, err := parse(config)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serve(cfg)
}

// SetService adds or replaces service name of zone (its origin, with or
// without the final dot). spec is the service as a services: entry
// writes it, in YAML or JSON, without its name: for example
//
//	{addresses: [127.0.0.1], serviceConfig: {loadBalancingConfig: [{round_robin: {}}]}}
//
// It is validated against the zone (its compat: and policies) as the
// admin API validates a service's spec; a service that is not valid is
// refused with its diagnostics, and nothing changes.
func (s *Server) SetService(zoneName, name, spec string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, zc, err := s.zone(zoneName)
	if err != nil {
		return err
	}
	svc, ds := model.ValidateService(zc, name, nil, []byte(spec), s.cfg.Keys)
	if svc == nil || ds.HasErrors() {
		return fmt.Errorf("pubtest: service %s of zone %s is not valid:\n%s", name, zc.Origin, format("spec", ds))
	}
	next := *zc
	next.Services = slices.Clone(zc.Services) // names are unique: parse and this keep them so
	if j := slices.IndexFunc(next.Services, func(old *model.Service) bool { return old.Name == svc.Name }); j >= 0 {
		next.Services[j] = svc
	} else {
		next.Services = append(next.Services, svc)
	}
	return s.serve(s.withZone(i, &next))
}

// Remove takes service name out of zone; removing a service the zone
// does not have is an error.
func (s *Server) Remove(zoneName, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, zc, err := s.zone(zoneName)
	if err != nil {
		return err
	}
	rel, msg := model.ServiceName(zc.Origin, name)
	if msg != "" {
		return errors.New("pubtest: " + msg)
	}
	want := zc.Origin // the service at the apex, "@"
	if rel != "@" {
		want = strings.TrimSuffix(rel+"."+zc.Origin, ".") + "."
	}
	next := *zc
	next.Services = slices.DeleteFunc(slices.Clone(zc.Services), func(svc *model.Service) bool { return svc.Name == want })
	if len(next.Services) == len(zc.Services) {
		return fmt.Errorf("pubtest: zone %s has no service %s", zc.Origin, name)
	}
	return s.serve(s.withZone(i, &next))
}

// Close stops the server and waits for its goroutines. It may be called
// more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.udp.Close()
		s.tcp.Close()
	})
	s.conns.Wait()
}

// parse reads a config as the publisher does.
func parse(config string) (*model.Config, error) {
	cfg, ds := model.Parse([]byte(config))
	if cfg == nil || ds.HasErrors() {
		return nil, fmt.Errorf("pubtest: the config is not valid:\n%s", format("config", ds))
	}
	return cfg, nil
}

// format lists ds, placed in the text called name, a line each.
func format(name string, ds sc.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		if d.Line > 0 {
			b.WriteString(name + ":")
		}
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// zone finds the zone named name in the config served.
func (s *Server) zone(name string) (int, *model.Zone, error) {
	key, msg := model.ZoneName(name)
	if msg != "" {
		return 0, nil, errors.New("pubtest: " + msg)
	}
	for i, zc := range s.cfg.Zones {
		if k, _ := model.ZoneName(zc.Origin); k == key {
			return i, zc, nil
		}
	}
	return 0, nil, fmt.Errorf("pubtest: the config has no zone %s", name)
}

// withZone is the config served with its zone i replaced by zc.
func (s *Server) withZone(i int, zc *model.Zone) *model.Config {
	next := *s.cfg
	next.Zones = append([]*model.Zone(nil), s.cfg.Zones...)
	next.Zones[i] = zc
	return &next
}

// serve builds the answers of cfg, a new version, and serves them. It is
// called with mu held, or before the server runs.
func (s *Server) serve(cfg *model.Config) error {
	serial := s.serial + 1
	zs := make([]*zone.Zone, len(cfg.Zones))
	for i, zc := range cfg.Zones {
		zs[i] = zone.New(zc, serial)
	}
	t, err := wire.Build(zs, wire.Options{MaxUDPSize: cfg.Server.MaxUDPSize})
	if err != nil {
		return fmt.Errorf("pubtest: %w", err)
	}
	s.cfg, s.serial = cfg, serial
	s.table.Store(t)
	return nil
}

// respond answers msg into out; ok is false when nothing is sent.
func (s *Server) respond(out, msg []byte, tcp bool) ([]byte, bool) {
	resp, r := s.table.Load().Respond(out, msg, tcp)
	switch r.Action {
	case wire.Drop:
		return nil, false
	case wire.Transfer, wire.Signed:
		return refused(msg)
	}
	return resp, true
}

// refused is a REFUSED answer to msg: what this server says to zone
// transfers and signed queries, which it does not do.
func refused(msg []byte) ([]byte, bool) {
	var q dns.Msg
	if q.Unpack(msg) != nil {
		return nil, false
	}
	var r dns.Msg
	r.SetRcode(&q, dns.RcodeRefused)
	b, err := r.Pack()
	return b, err == nil
}

func (s *Server) serveUDP() {
	defer s.conns.Done()
	buf, out := make([]byte, 65535), make([]byte, 0, 65535)
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if s.closed() {
				return
			}
			continue
		}
		if resp, ok := s.respond(out, buf[:n], false); ok {
			s.udp.WriteToUDPAddrPort(resp, from)
		}
	}
}

func (s *Server) serveTCP() {
	defer s.conns.Done()
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			if s.closed() {
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		s.conns.Add(1)
		go s.serveConn(c)
	}
}

// serveConn answers the queries of one TCP connection (RFC 7766), until
// it is idle for 10 seconds or the server closes.
func (s *Server) serveConn(c net.Conn) {
	defer s.conns.Done()
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.done:
			c.Close()
		case <-stop:
		}
	}()
	var size [2]byte
	msg, out, frame := make([]byte, 65535), make([]byte, 0, 65535), make([]byte, 0, 65535+2)
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg[:n]); err != nil {
			return
		}
		resp, ok := s.respond(out, msg[:n], true)
		if !ok {
			continue
		}
		frame = append(binary.BigEndian.AppendUint16(frame[:0], uint16(len(resp))), resp...)
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

func (s *Server) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
