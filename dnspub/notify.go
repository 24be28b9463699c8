package dnspub

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// notifier tells secondaries of zone changes (RFC 1996). Each (zone,
// secondary) pair has a goroutine that sends NOTIFY for the latest serial
// and retries, with exponential backoff up to a minute, until the
// secondary acknowledges it. A newer change restarts the cycle with the
// newer serial. A secondary that answers with an error (REFUSED, NOTAUTH)
// has spoken: it is not asked again until the next change.
type notifier struct {
	log *slog.Logger
	m   *metrics

	mu      sync.Mutex
	targets map[notifyKey]*notifyTarget
	done    <-chan struct{}
	wg      sync.WaitGroup

	// Timeout and backoff bounds; tests shorten them.
	timeout, minBackoff, maxBackoff time.Duration
}

type notifyKey struct {
	zone string
	addr netip.AddrPort
}

type notifyTarget struct {
	key  notifyKey
	wake chan struct{}
	stop chan struct{}

	mu   sync.Mutex
	soa  *dns.SOA
	tsig *model.Key
	gen  uint64 // bumped on every new serial
	// announced is when the latest serial was announced; behindSince,
	// when not zero, is since when the secondary has had a serial to
	// learn that it has not acknowledged; acked is the last serial it
	// acknowledged (hasAcked: any). They are the secondary's gauges.
	announced, behindSince time.Time
	acked                  uint32
	hasAcked               bool
}

func newNotifier(log *slog.Logger, m *metrics) *notifier {
	return &notifier{log: log, m: m, targets: map[notifyKey]*notifyTarget{},
		timeout: 2 * time.Second, minBackoff: time.Second, maxBackoff: time.Minute}
}

// start runs the targets' goroutines until done is closed.
func (n *notifier) start(done <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = done
	for _, t := range n.targets {
		n.run(t)
	}
}

func (n *notifier) wait() { n.wg.Wait() }

// update brings the targets in line with snap and announces the zones in
// changed (and every zone to a newly configured secondary).
func (n *notifier) update(snap *snapshot, changed []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	isChanged := map[string]bool{}
	for _, o := range changed {
		isChanged[o] = true
	}
	live := map[notifyKey]bool{}
	for origin, ze := range snap.zones {
		var key *model.Key
		if ze.cfg.Transfer.Key != "" {
			key = snap.keys[ze.cfg.Transfer.Key]
		}
		for _, ap := range ze.cfg.Transfer.Notify {
			k := notifyKey{origin, ap}
			live[k] = true
			t := n.targets[k]
			if t == nil {
				t = &notifyTarget{key: k, wake: make(chan struct{}, 1), stop: make(chan struct{})}
				n.targets[k] = t
				if n.done != nil {
					n.run(t)
				}
			} else if !isChanged[origin] {
				continue
			}
			t.announce(ze.cur.SOA, key)
		}
	}
	for k, t := range n.targets {
		if !live[k] {
			close(t.stop)
			delete(n.targets, k)
		}
	}
}

func (t *notifyTarget) announce(soa *dns.SOA, key *model.Key) {
	t.mu.Lock()
	t.soa, t.tsig = soa, key
	t.gen++
	t.announced = time.Now()
	if t.behindSince.IsZero() {
		t.behindSince = t.announced
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *notifyTarget) current() (*dns.SOA, *model.Key, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.soa, t.tsig, t.gen
}

// acknowledged records that the secondary acknowledged soa, the serial of
// version gen: it is behind no more, unless a newer serial was announced
// meanwhile (then since that one).
func (t *notifyTarget) acknowledged(soa *dns.SOA, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.acked, t.hasAcked = soa.Serial, true
	if gen == t.gen {
		t.behindSince = time.Time{}
	} else {
		t.behindSince = t.announced
	}
}

func (n *notifier) run(t *notifyTarget) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case <-n.done:
				return
			case <-t.stop:
				return
			case <-t.wake:
			}
			backoff := n.minBackoff
			for {
				soa, key, gen := t.current()
				if soa == nil {
					break
				}
				result := n.send(t.key, soa, key)
				n.m.notifies.WithLabelValues(result).Inc()
				if result == "acked" {
					t.acknowledged(soa, gen)
				}
				if result == "acked" || result == "refused" {
					if _, _, g := t.current(); g == gen {
						break
					}
					continue // a newer serial arrived meanwhile
				}
				select {
				case <-n.done:
					return
				case <-t.stop:
					return
				case <-t.wake:
					backoff = n.minBackoff
				case <-time.After(backoff):
					backoff = min(2*backoff, n.maxBackoff)
				}
			}
		}
	}()
}

// send sends one NOTIFY and waits for the answer.
func (n *notifier) send(k notifyKey, soa *dns.SOA, key *model.Key) string {
	m := new(dns.Msg)
	m.SetNotify(k.zone)
	m.Answer = []dns.RR{soa}
	c := &dns.Client{Net: "udp", Timeout: n.timeout}
	if key != nil {
		m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		c.TsigSecret = map[string]string{key.Name: key.Secret}
	}
	r, _, err := c.Exchange(m, k.addr.String())
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		n.log.Warn("NOTIFY not answered; will retry", "zone", k.zone, "secondary", k.addr, "serial", soa.Serial)
		return "timeout"
	case err != nil:
		n.log.Warn("NOTIFY failed; will retry", "zone", k.zone, "secondary", k.addr, "serial", soa.Serial, "err", err)
		return "error"
	case notAnAck(m, r, key) != "":
		n.log.Warn("NOTIFY reply is not an acknowledgement; will retry", "zone", k.zone, "secondary", k.addr, "serial", soa.Serial, "why", notAnAck(m, r, key))
		return "bad_reply"
	case r.Rcode != dns.RcodeSuccess:
		n.log.Error("NOTIFY refused by the secondary; not retrying until the next change", "zone", k.zone, "secondary", k.addr, "serial", soa.Serial, "rcode", dns.RcodeToString[r.Rcode])
		return "refused"
	}
	n.log.Info("NOTIFY acknowledged", "zone", k.zone, "secondary", k.addr, "serial", soa.Serial)
	return "acked"
}

// notAnAck says why r does not acknowledge the NOTIFY m, or "" when it
// does. miekg/dns has checked the ID and, when r is signed, its TSIG; but
// a reply to a signed NOTIFY must itself be signed (RFC 8945 §5.3), and
// it must answer the same question with the NOTIFY opcode (RFC 1996 §4.7):
// otherwise anyone who sees the ID can silence the retries.
func notAnAck(m, r *dns.Msg, key *model.Key) string {
	switch {
	case r.Opcode != dns.OpcodeNotify:
		return "opcode " + dns.OpcodeToString[r.Opcode] + ", not NOTIFY"
	case len(r.Question) != 1 || !strings.EqualFold(r.Question[0].Name, m.Question[0].Name) ||
		r.Question[0].Qtype != m.Question[0].Qtype || r.Question[0].Qclass != m.Question[0].Qclass:
		return "it answers another question"
	case key != nil && r.IsTsig() == nil:
		return "unsigned reply to a NOTIFY signed with " + key.Name
	}
	return ""
}

var (
	secondaryAckedDesc = prometheus.NewDesc(ns+"_secondary_acknowledged_serial",
		"The last SOA serial each secondary (a zone's transfer.notify) acknowledged a NOTIFY for.", []string{"zone", "secondary"}, nil)
	secondaryBehindDesc = prometheus.NewDesc(ns+"_secondary_unacknowledged_seconds",
		"How long each secondary (a zone's transfer.notify) has had a serial of the zone to learn that it has not acknowledged (NOTIFY not answered, or refused); 0 when it acknowledged the serial served.", []string{"zone", "secondary"}, nil)
)

// Describe and Collect make the notifier the collector of the
// secondaries' gauges.
func (n *notifier) Describe(ch chan<- *prometheus.Desc) {
	ch <- secondaryAckedDesc
	ch <- secondaryBehindDesc
}

func (n *notifier) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	targets := make([]*notifyTarget, 0, len(n.targets))
	for _, t := range n.targets {
		targets = append(targets, t)
	}
	n.mu.Unlock()
	now := time.Now()
	for _, t := range targets {
		t.mu.Lock()
		acked, hasAcked, since := t.acked, t.hasAcked, t.behindSince
		t.mu.Unlock()
		zone, secondary := t.key.zone, t.key.addr.String()
		if hasAcked {
			ch <- prometheus.MustNewConstMetric(secondaryAckedDesc, prometheus.GaugeValue, float64(acked), zone, secondary)
		}
		behind := 0.0
		if !since.IsZero() {
			behind = now.Sub(since).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(secondaryBehindDesc, prometheus.GaugeValue, behind, zone, secondary)
	}
}
