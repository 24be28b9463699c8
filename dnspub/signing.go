package dnspub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/dnssec"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// keyCache holds the DNSSEC keys of the signed zones: read from the key
// directory (or made there) the first time a zone is signed with an
// algorithm and kind of keys, the same KeySet afterwards, so that a
// version signs only what changed (zone.Sign).
type keyCache struct {
	mu   sync.Mutex
	sets map[keyFor]*dnssec.KeySet
}

type keyFor struct {
	origin    string
	algorithm uint8
	split     bool
}

func (c *keyCache) get(dir string, zc *model.Zone) (*dnssec.KeySet, error) {
	if dir == "" {
		return nil, errors.New("zone " + zc.Origin + " is signed (dnssec:) but there is no key directory: give --dnssec-keys DIR (in store mode, the same keys for every publisher of the store)")
	}
	k := keyFor{zc.Origin, zc.DNSSEC.Algorithm, zc.DNSSEC.SplitKeys}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ks := c.sets[k]; ks != nil {
		return ks, nil
	}
	ks, err := dnssec.Load(dir, zc.Origin, dnssec.Options{Algorithm: k.algorithm, SplitKeys: k.split, Generate: true})
	if err != nil {
		return nil, err
	}
	if c.sets == nil {
		c.sets = map[keyFor]*dnssec.KeySet{}
	}
	c.sets[k] = ks
	return ks, nil
}

// zoneKeys returns the keys zone zc is signed with at now, after
// starting a rollover of its zone-signing key when one is due.
func (s *Server) zoneKeys(zc *model.Zone, now time.Time) (*dnssec.KeySet, error) {
	all, err := s.keys.get(s.keyDir(), zc)
	if err != nil {
		return nil, err
	}
	r := rollover(zc)
	if rolled, err := all.Roll(s.keyDir(), now, r); err != nil {
		return nil, fmt.Errorf("zone %s: rolling its zone-signing key: %w", zc.Origin, err)
	} else if rolled {
		s.log.Info("key rollover", "zone", zc.Origin, "keys", fmt.Sprint(all.At(now.Add(r.Publish), r).Tags()), "signs_from", now.Add(r.Publish))
	}
	return all.At(now, r), nil
}

// rollover is the zone-signing key rollover of zc (RFC 7583 §3.2), its
// times derived from the TTLs: a new key is published twice the DNSKEY
// RRset's TTL before it signs, and the old one stays published twice the
// zone's longest TTL after it stopped.
func rollover(zc *model.Zone) dnssec.Rollover {
	if zc.DNSSEC.ZSKLifetime == 0 && zc.DNSSEC.KSKLifetime == 0 {
		return dnssec.Rollover{}
	}
	longest := max(zc.TTL, zc.SOA.Minimum)
	for _, svc := range zc.Services {
		longest = max(longest, svc.TTL)
	}
	return dnssec.Rollover{
		Lifetime:    time.Duration(zc.DNSSEC.ZSKLifetime) * time.Second,
		SEPLifetime: time.Duration(zc.DNSSEC.KSKLifetime) * time.Second,
		Publish:     2 * time.Duration(zc.TTL) * time.Second,
		Retire:      2 * time.Duration(longest) * time.Second,
	}
}

// keyDir is where the DNSSEC keys are (Options.KeyDir).
func (s *Server) keyDir() string {
	switch {
	case s.opts.KeyDir != "":
		return s.opts.KeyDir
	case s.opts.ConfigFile != "" && s.feed == nil:
		return s.opts.ConfigFile + ".keys"
	}
	return ""
}

// refreshSignatures publishes a new version of the signed zones whose
// signatures are due (zone.Zone.RefreshDue) when they are: the version
// served, signed again where due, with a new serial. It stops with the
// server.
func (s *Server) refreshSignatures() {
	for {
		wait := time.Hour
		again, decided := s.checkParents()
		if again > 0 {
			wait = again
		}
		if decided {
			wait = 0
		}
		if snap := s.snap.Load(); snap != nil {
			// The clock is read only when a zone is signed: Options.Now
			// is otherwise read by builds alone (tests' clocks rely on it).
			var now time.Time
			for _, e := range snap.zones {
				if e.cur.Signed() {
					if now.IsZero() {
						now = s.opts.Now()
					}
					wait = min(wait, max(e.cur.RefreshDue().Sub(now), time.Second))
				}
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-s.resign:
			t.Stop()
			continue
		case <-t.C:
		}
		if err := s.refreshDue(); err != nil {
			s.log.Error("signatures due could not be made again; retrying in a minute", "err", err)
			select {
			case <-s.done:
				return
			case <-time.After(time.Minute):
			}
		}
	}
}

// refreshDue publishes the served config again when a signed zone's
// signatures or keys are due (zone.Zone.RefreshDue): buildZone signs what
// is due, and rolls keys.
func (s *Server) refreshDue() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	snap := s.snap.Load()
	if snap == nil {
		return nil
	}
	var due []string
	now := s.opts.Now()
	for origin, e := range snap.zones {
		if !e.cur.Signed() {
			continue
		}
		if !now.Before(e.cur.RefreshDue()) {
			due = append(due, origin)
			continue
		}
		// Keys whose timing changed outside a build (checkParents).
		if all, err := s.keys.get(s.keyDir(), e.cfg); err == nil && !e.cur.SameKeys(all.At(now, rollover(e.cfg)), e.cfg.DNSSEC) {
			due = append(due, origin)
		}
	}
	if len(due) == 0 {
		return nil
	}
	if s.feed != nil {
		// The store decides serials: a new revision of each zone due,
		// which the feed follows with a build that signs what is due.
		for _, origin := range due {
			if err := s.feed.st.TouchZone(context.Background(), origin); err != nil {
				return fmt.Errorf("zone %s: a new revision for its signatures: %w", origin, err)
			}
		}
		return nil
	}
	_, err := s.publish(snap.cfg, s.configName(), "signatures due", false, time.Now())
	return err
}
