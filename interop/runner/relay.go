package main

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// relay is the one DNS server grpc-java is given. grpc-java ignores the
// authority of dns://NS/HOST and asks the nameservers of /etc/resolv.conf,
// and the JDK's DNS client takes the first server's answer (an NXDOMAIN
// too) as final, so a JVM can ask only one server; the suite's records
// live on two (our publisher, and the stand-in for the records it refuses
// to publish). The relay passes each query, over UDP or TCP as it came,
// to the server that holds its name, and the answer back byte for byte:
// the JVM sees exactly what that server sent.
type relay struct {
	addr  string
	route func(qname string) string // the upstream server for a name
	pc    net.PacketConn
	l     net.Listener
	wg    sync.WaitGroup
}

func startRelay(route func(string) string) (*relay, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		return nil, err
	}
	r := &relay{addr: addr, route: route, pc: pc, l: l}
	r.wg.Add(2)
	go r.serveUDP()
	go r.serveTCP()
	return r, nil
}

func (r *relay) Close() {
	r.pc.Close()
	r.l.Close()
	r.wg.Wait()
}

// upstream is the server for a query's name.
func (r *relay) upstream(query []byte) string {
	var m dns.Msg
	if err := m.Unpack(query); err != nil || len(m.Question) == 0 {
		return r.route("")
	}
	return r.route(strings.ToLower(m.Question[0].Name))
}

func (r *relay) serveUDP() {
	defer r.wg.Done()
	for {
		buf := make([]byte, dns.MaxMsgSize)
		n, from, err := r.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		go func(q []byte) {
			c, err := net.Dial("udp", r.upstream(q))
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(q); err != nil {
				return
			}
			resp := make([]byte, dns.MaxMsgSize)
			n, err := c.Read(resp)
			if err != nil {
				return // the client times out, as it would on a lost answer
			}
			_, _ = r.pc.WriteTo(resp[:n], from)
		}(buf[:n])
	}
}

func (r *relay) serveTCP() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		go r.serveConn(c)
	}
}

// serveConn relays the length-prefixed messages of one TCP connection
// (RFC 1035 §4.2.2), one upstream connection per query.
func (r *relay) serveConn(c net.Conn) {
	defer c.Close()
	for {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		q, err := readTCPMsg(c)
		if err != nil {
			return
		}
		resp, err := r.exchangeTCP(q)
		if err != nil {
			return
		}
		if writeTCPMsg(c, resp) != nil {
			return
		}
	}
}

func (r *relay) exchangeTCP(q []byte) ([]byte, error) {
	up, err := net.DialTimeout("tcp", r.upstream(q), 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeTCPMsg(up, q); err != nil {
		return nil, err
	}
	return readTCPMsg(up)
}

func readTCPMsg(c io.Reader) ([]byte, error) {
	var n uint16
	if err := binary.Read(c, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	msg := make([]byte, n)
	_, err := io.ReadFull(c, msg)
	return msg, err
}

func writeTCPMsg(c io.Writer, msg []byte) error {
	out := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(msg)), uint16(len(msg)))
	_, err := c.Write(append(out, msg...))
	return err
}
