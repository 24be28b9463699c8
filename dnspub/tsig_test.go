package dnspub

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// forwarded signs q as its client would (ID and TSIG original ID = id)
// and then rewrites the header ID to fwdID, as a forwarder does.
func forwarded(t *testing.T, q *dns.Msg, key, secret string, id, fwdID uint16, signedAt time.Time) ([]byte, string) {
	t.Helper()
	q.Id = id
	q.SetTsig(key, dns.HmacSHA256, 300, signedAt.Unix())
	b, mac, err := dns.TsigGenerate(q, secret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(b, fwdID)
	return b, mac
}

func exchangeRaw(t *testing.T, network, addr string, q []byte) []byte {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if network == "tcp" {
		writeTCP(t, c, q)
		var l [2]byte
		if _, err := c.Read(l[:]); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := readFull(c, buf); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	c.Write(q)
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestTSIGRepliesBehindAForwarder: a forwarder rewrites the message ID of
// a signed query and keeps the TSIG's original ID. Every reply, signed or
// an error, must carry the header ID the forwarder sent (or it drops the
// reply and its client times out), and keep the original ID in the TSIG
// so that the MAC verifies once the forwarder restores its client's ID
// (RFC 8945 §4.3, §5.2).
func TestTSIGRepliesBehindAForwarder(t *testing.T) {
	ts := startServer(t, baseConfig("allow: [127.0.0.1], key: xfr-key"), nil)
	const clientID, fwdID = 0x1111, 0x2222
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range []struct {
			name, key, secret string
			at                time.Time
			wantErr           uint16
		}{
			{"valid", "xfr-key.", testSecret, time.Now(), dns.RcodeSuccess},
			{"unknown key", "other-key.", testSecret, time.Now(), dns.RcodeBadKey},
			{"bad signature", "xfr-key.", "b3RoZXJzZWNyZXRvdGhlcnNlY3JldA==", time.Now(), dns.RcodeBadSig},
			{"bad time", "xfr-key.", testSecret, time.Now().Add(-time.Hour), dns.RcodeBadTime},
		} {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				q := new(dns.Msg)
				q.SetQuestion("echo.example.test.", dns.TypeA)
				raw, mac := forwarded(t, q, tc.key, tc.secret, clientID, fwdID, tc.at)
				resp := exchangeRaw(t, network, ts.addr, raw)
				r := new(dns.Msg)
				if err := r.Unpack(resp); err != nil {
					t.Fatal(err)
				}
				if r.Id != fwdID {
					t.Errorf("reply ID %#x, want the forwarder's %#x", r.Id, fwdID)
				}
				sig := r.IsTsig()
				if sig == nil {
					t.Fatalf("unsigned reply %v", r)
				}
				if sig.OrigId != clientID || sig.Error != tc.wantErr {
					t.Errorf("TSIG original ID %#x error %s, want %#x %s", sig.OrigId, dns.RcodeToString[int(sig.Error)], clientID, dns.RcodeToString[int(tc.wantErr)])
				}
				// (miekg/dns verifies no NOTAUTH reply, so BADTIME's MAC,
				// made by the same code, is not checked here.)
				if tc.wantErr == dns.RcodeSuccess {
					// The forwarder restores its client's ID: the MAC must verify.
					binary.BigEndian.PutUint16(resp, clientID)
					if err := dns.TsigVerify(resp, testSecret, mac, false); err != nil {
						t.Errorf("the reply's MAC does not verify at the client: %v", err)
					}
				}
			})
		}
	}
	// A signed transfer through a forwarder: every message carries the
	// forwarder's ID.
	q := axfrQuery()
	raw, _ := forwarded(t, q, "xfr-key.", testSecret, clientID, fwdID, time.Now())
	resp := exchangeRaw(t, "tcp", ts.addr, raw)
	if id := binary.BigEndian.Uint16(resp); id != fwdID {
		t.Errorf("transfer message ID %#x, want %#x", id, fwdID)
	}
}

// TestNotifyAcknowledgementMustAnswerIt: a reply to a signed NOTIFY that
// is unsigned, or that answers another question, is not an
// acknowledgement: the NOTIFY is sent again.
func TestNotifyAcknowledgementMustAnswerIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(r *dns.Msg) *dns.Msg
	}{
		{"unsigned", func(r *dns.Msg) *dns.Msg {
			m := new(dns.Msg)
			m.SetReply(r)
			return m
		}},
		{"another zone", func(r *dns.Msg) *dns.Msg {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Question[0].Name = "other.test."
			m.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
			return m
		}},
		{"not a NOTIFY", func(r *dns.Msg) *dns.Msg {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Opcode = dns.OpcodeQuery
			m.SetTsig("xfr-key.", dns.HmacSHA256, 300, time.Now().Unix())
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := 0
			srv := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{"xfr-key.": testSecret},
				Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
					mu.Lock()
					seen++
					mu.Unlock()
					w.WriteMsg(tc.reply(r))
				})}
			go srv.ActivateAndServe()
			t.Cleanup(func() { srv.Shutdown() })
			ts := startServerWith(t, baseConfig("allow: [127.0.0.1], key: xfr-key, notify: [\""+pc.LocalAddr().String()+"\"]"), nil, func(s *Server) {
				s.notifier.timeout = 200 * time.Millisecond
				s.notifier.minBackoff = 10 * time.Millisecond
			})
			waitFor(t, "NOTIFY sent again", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return seen >= 3
			})
			if strings.Contains(ts.logs.String(), "NOTIFY acknowledged") {
				t.Errorf("a bad reply was taken as an acknowledgement:\n%s", ts.logs.String())
			}
		})
	}
}
