package dnspub

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strconv"
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

// tsigMACValid checks the HMAC-SHA256 TSIG of a reply to a request whose
// MAC was requestMAC (RFC 8945 §4.3), as a client does, for any rcode.
func tsigMACValid(t *testing.T, msg []byte, secret, requestMAC string) bool {
	t.Helper()
	if len(msg) < 12 {
		t.Fatalf("reply of %d bytes", len(msg))
	}
	off := 12
	for range binary.BigEndian.Uint16(msg[4:]) {
		_, end, err := dns.UnpackDomainName(msg, off)
		if err != nil {
			t.Fatal(err)
		}
		off = end + 4
	}
	records := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	var sig *dns.TSIG
	start := off
	for range records {
		start = off
		rr, end, err := dns.UnpackRR(msg, off)
		if err != nil {
			t.Fatal(err)
		}
		off = end
		if s, ok := rr.(*dns.TSIG); ok {
			sig = s
			break
		}
	}
	if sig == nil || off != len(msg) {
		t.Fatal("no TSIG record at the end of the reply")
	}
	// The request's MAC with its size, the message without its TSIG (the
	// original ID, one record fewer), then the TSIG variables.
	reqMAC, _ := hex.DecodeString(requestMAC)
	buf := binary.BigEndian.AppendUint16(nil, uint16(len(reqMAC)))
	buf = append(buf, reqMAC...)
	stripped := append([]byte(nil), msg[:start]...)
	binary.BigEndian.PutUint16(stripped, sig.OrigId)
	binary.BigEndian.PutUint16(stripped[10:], binary.BigEndian.Uint16(stripped[10:])-1)
	buf = append(buf, stripped...)
	name := func(n string) {
		b := make([]byte, 256)
		end, err := dns.PackDomainName(dns.CanonicalName(n), b, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, b[:end]...)
	}
	name(sig.Hdr.Name)
	buf = binary.BigEndian.AppendUint16(buf, dns.ClassANY)
	buf = binary.BigEndian.AppendUint32(buf, sig.Hdr.Ttl)
	name(sig.Algorithm)
	buf = binary.BigEndian.AppendUint16(buf, uint16(sig.TimeSigned>>32))
	buf = binary.BigEndian.AppendUint32(buf, uint32(sig.TimeSigned))
	buf = binary.BigEndian.AppendUint16(buf, sig.Fudge)
	buf = binary.BigEndian.AppendUint16(buf, sig.Error)
	other, _ := hex.DecodeString(sig.OtherData)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(other)))
	buf = append(buf, other...)
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, key)
	h.Write(buf)
	got, _ := hex.DecodeString(sig.MAC)
	return hmac.Equal(h.Sum(nil), got)
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
				switch tc.wantErr {
				case dns.RcodeSuccess:
					// The forwarder restores its client's ID: the MAC must verify.
					binary.BigEndian.PutUint16(resp, clientID)
					// (TsigVerify rewrites the header of what it is given.)
					if err := dns.TsigVerify(append([]byte(nil), resp...), testSecret, mac, false); err != nil {
						t.Errorf("the reply's MAC does not verify at the client: %v", err)
					}
					if !tsigMACValid(t, resp, testSecret, mac) {
						t.Error("tsigMACValid disagrees with miekg/dns on a NOERROR reply")
					}
				case dns.RcodeBadTime:
					// RFC 8945 §5.2.3: signed with the key, over the request's
					// MAC, with the server's time in Other Data, so that the
					// client can trust the time and correct its clock.
					// (miekg/dns's TsigVerify refuses every NOTAUTH reply.)
					binary.BigEndian.PutUint16(resp, clientID)
					if !tsigMACValid(t, resp, testSecret, mac) {
						t.Error("the BADTIME reply's MAC does not verify at the client")
					}
					if sig.OtherLen != 6 {
						t.Fatalf("BADTIME Other Data %q, want the server's 48-bit time", sig.OtherData)
					}
					other, err := strconv.ParseUint(sig.OtherData, 16, 64)
					if d := time.Since(time.Unix(int64(other), 0)); err != nil || d < -5*time.Second || d > 5*time.Second {
						t.Errorf("BADTIME Other Data %q is not the server's time", sig.OtherData)
					}
					// The check is not vacuous: another secret, or another
					// request MAC, does not verify.
					if tsigMACValid(t, resp, "b3RoZXJzZWNyZXRvdGhlcnNlY3JldA==", mac) || tsigMACValid(t, resp, testSecret, strings.Repeat("00", 32)) {
						t.Error("the BADTIME reply verifies with another secret or request")
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

// TestTSIGThatCannotBeInterpreted: a query whose TSIG record lacks some of
// its fields (an empty body, the algorithm alone, no Other Len) is corrupt
// and answered FORMERR, unsigned (RFC 8945 §5.2). It used to get a NOTAUTH
// whose TSIG copied the request's algorithm: an empty name, which made the
// reply unreadable. Every reply must parse and carry the query's ID.
func TestTSIGThatCannotBeInterpreted(t *testing.T) {
	ts := startServer(t, baseConfig("allow: [127.0.0.1], key: xfr-key"), nil)
	const alg = "\x0bhmac-sha256\x00"
	fixed := "\x00\x00\x67\x00\x00\x00\x01\x2c" // time signed, fudge
	for _, tc := range []struct{ name, rdata string }{
		{"empty", ""},
		{"algorithm alone", alg},
		{"no MAC size", alg + fixed},
		{"MAC cut short", alg + fixed + "\x00\x20\x01\x02"},
		{"no Other Len", alg + fixed + "\x00\x00\x12\x34\x00\x00"},
		{"Other Data cut short", alg + fixed + "\x00\x00\x12\x34\x00\x00\x00\x06\x00"},
	} {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				q := new(dns.Msg)
				q.SetQuestion("echo.example.test.", dns.TypeA)
				q.Id = 0x4242
				raw := pack(t, q)
				raw[11] = 1 // one additional record: the TSIG
				raw = append(raw, "\x07xfr-key\x00\x00\xfa\x00\xff\x00\x00\x00\x00"...)
				raw = binary.BigEndian.AppendUint16(raw, uint16(len(tc.rdata)))
				raw = append(raw, tc.rdata...)
				resp := exchangeRaw(t, network, ts.addr, raw)
				r := new(dns.Msg)
				if err := r.Unpack(resp); err != nil {
					t.Fatalf("the reply does not parse: %v\n% x", err, resp)
				}
				if r.Id != q.Id || r.Rcode != dns.RcodeFormatError || r.IsTsig() != nil {
					t.Errorf("reply ID %#x %s with a TSIG %v, want %#x FORMERR without", r.Id, dns.RcodeToString[r.Rcode], r.IsTsig() != nil, q.Id)
				}
			})
		}
	}
}
