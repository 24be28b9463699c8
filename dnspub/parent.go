package dnspub

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
)

// checkParents carries on the rollovers of SEP keys that wait for their
// parent (dnssec.KeySet.AwaitingDS): a new key's DS published by every
// parental agent of the zone, or an operator's `dnssec ds-seen` written
// to the key's files, decides the old key's retirement; refreshDue then
// publishes the keys as they are. It returns how soon to look again
// (zero: no rollover waits), and whether a retirement was decided.
func (s *Server) checkParents() (again time.Duration, decided bool) {
	snap := s.snap.Load()
	if snap == nil {
		return 0, false
	}
	for origin, e := range snap.zones {
		zc := e.cfg
		if zc.DNSSEC == nil || zc.DNSSEC.KSKLifetime == 0 {
			continue
		}
		r := rollover(zc)
		// Look again every half of the new key's publication time (the
		// TTL of the DNSKEY RRset), within a second and an hour.
		every := min(max(r.Publish/2, time.Second), time.Hour)
		s.reloadMu.Lock()
		all, err := s.keys.get(s.keyDir(), zc)
		var succ *dnssec.Key
		if err == nil {
			if succ = all.AwaitingDS(s.opts.Now()); succ != nil {
				// An operator's word (dnssec ds-seen), or another
				// publisher's, is in the files.
				err = all.Reload(s.keyDir())
				succ = all.AwaitingDS(s.opts.Now())
			}
		}
		s.reloadMu.Unlock()
		if err != nil {
			s.log.Error("reading the zone's keys for its rollover", "zone", origin, "err", err)
			again = nonzeroMin(again, every)
			continue
		}
		if succ == nil {
			continue
		}
		if seen := succ.Timing.DSPublish; !seen.IsZero() {
			// The operator's word (dnssec ds-seen).
			s.reloadMu.Lock()
			_, err = all.DSSeen(s.keyDir(), seen, dnssec.ManualDSTTL, r)
			s.reloadMu.Unlock()
			if err != nil {
				s.log.Error("recording the parent's new DS", "zone", origin, "err", err)
				again = nonzeroMin(again, every)
				continue
			}
			s.log.Info("the operator says the parent publishes the new key's DS: the old key retires", "zone", origin, "key", succ.DNSKEY.KeyTag(), "ds_ttl_assumed", dnssec.ManualDSTTL)
			decided = true
			continue
		}
		agents := zc.DNSSEC.Agents()
		if len(agents) == 0 {
			s.log.Info("key rollover waits for the parent: hand it the new DS and run `grpc-config-dns dnssec ds-seen`", "zone", origin, "key", succ.DNSKEY.KeyTag(), "ds", succ.DNSKEY.ToDS(dns.SHA256).String())
			again = nonzeroMin(again, every)
			continue
		}
		ttl, err := dsAtParents(agents, origin, succ.DNSKEY)
		if err != nil {
			s.log.Info("key rollover waits for the parent", "zone", origin, "key", succ.DNSKEY.KeyTag(), "reason", err)
			again = nonzeroMin(again, every)
			continue
		}
		s.reloadMu.Lock()
		_, err = all.DSSeen(s.keyDir(), s.opts.Now(), ttl, r)
		s.reloadMu.Unlock()
		if err != nil {
			s.log.Error("recording the parent's new DS", "zone", origin, "err", err)
			again = nonzeroMin(again, every)
			continue
		}
		s.log.Info("the parent publishes the new key's DS: the old key retires", "zone", origin, "key", succ.DNSKEY.KeyTag(), "ds_ttl", ttl)
		decided = true
	}
	return again, decided
}

func nonzeroMin(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// dsAtParents asks every agent for the DS RRset of origin and returns
// its longest TTL when each one's names key; else an error that says
// which agent does not (yet).
func dsAtParents(agents []netip.AddrPort, origin string, key *dns.DNSKEY) (time.Duration, error) {
	var ttl uint32
	for _, ap := range agents {
		t, err := dsAt(ap.String(), origin, key)
		if err != nil {
			return 0, fmt.Errorf("parental agent %s: %w", ap, err)
		}
		ttl = max(ttl, t)
	}
	return time.Duration(ttl) * time.Second, nil
}

// dsAt asks addr for origin's DS RRset and returns its TTL when it has a
// record for key (of any digest type).
func dsAt(addr, origin string, key *dns.DNSKEY) (uint32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(origin, dns.TypeDS)
	q.RecursionDesired = true
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	r, _, err := c.ExchangeContext(ctx, q, addr)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, q, addr)
	}
	if err != nil {
		return 0, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return 0, fmt.Errorf("answers %s to %s DS", dns.RcodeToString[r.Rcode], origin)
	}
	var names []string
	for _, rr := range r.Answer {
		ds, ok := rr.(*dns.DS)
		if !ok || !strings.EqualFold(ds.Hdr.Name, origin) {
			continue
		}
		names = append(names, fmt.Sprint(ds.KeyTag))
		if want := key.ToDS(ds.DigestType); want != nil && ds.KeyTag == want.KeyTag && ds.Algorithm == want.Algorithm && strings.EqualFold(ds.Digest, want.Digest) {
			return ds.Hdr.Ttl, nil
		}
	}
	if len(names) == 0 {
		return 0, errors.New("no DS record for " + origin)
	}
	return 0, fmt.Errorf("its DS records name keys %s, not %d", strings.Join(names, ", "), key.KeyTag())
}
