package dnstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Network is an in-memory network of test servers, for code that runs
// under testing/synctest: a socket is not something the bubble's clock can
// wait on, so a test that queries a real server waits in real time. A
// query goes through the Network's Exchange, which packs it, has the
// server at its address answer it (delays and faults included, timed by
// the bubble's clock), and unpacks the reply, as the wire would.
type Network struct {
	mu      sync.Mutex
	servers map[string]*Server
	silent  map[string]bool
}

// NewNetwork returns a network with no servers: a query to an address
// with none fails at once, as a closed UDP port does.
func NewNetwork() *Network {
	return &Network{servers: map[string]*Server{}, silent: map[string]bool{}}
}

// Server adds a server at addr ("IP:PORT") and returns it.
func (n *Network) Server(addr string) *Server {
	s := &Server{
		Addr:  addr,
		done:  make(chan struct{}),
		rrs:   map[key][]dns.RR{},
		names: map[string]int{},
		delay: map[uint16]time.Duration{},
		hold:  map[uint16]<-chan struct{}{},
		fault: map[uint16]Fault{},
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.servers[addr] = s
	return s
}

// Silent makes addr a server that reads queries and never answers.
func (n *Network) Silent(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.silent[addr] = true
}

// Exchange sends the wire-format query to server over network ("udp" or
// "tcp") and returns the reply in wire format, or fails when ctx ends
// first. The reply is whole, as a socket with a large buffer reads it: the
// client decides whether it fits the buffer it advertised.
func (n *Network) Exchange(ctx context.Context, network, server string, query []byte) ([]byte, error) {
	n.mu.Lock()
	s, silent := n.servers[server], n.silent[server]
	n.mu.Unlock()
	if s == nil && !silent {
		return nil, fmt.Errorf("dial %s %s: connection refused", network, server)
	}
	req := new(dns.Msg)
	if err := req.Unpack(query); err != nil {
		return nil, err
	}
	var reply *dns.Msg
	var delay time.Duration
	hold := (<-chan struct{})(closed)
	if !silent {
		reply, delay, hold = s.respond(network, req)
	}
	if reply == nil {
		<-ctx.Done() // silent, or dropped: no answer ever comes
		return nil, ctx.Err()
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case <-hold:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return reply.Pack()
}
