package dnspub

import (
	"errors"
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
		if snap := s.snap.Load(); snap != nil {
			now := s.opts.Now()
			for _, e := range snap.zones {
				if e.cur.Signed() {
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
		snap := s.snap.Load()
		if snap == nil {
			continue
		}
		due := false
		for _, e := range snap.zones {
			due = due || e.cur.Signed() && !s.opts.Now().Before(e.cur.RefreshDue())
		}
		if !due {
			continue
		}
		s.reloadMu.Lock()
		if cur := s.snap.Load(); cur != nil {
			_, err := s.publish(cur.cfg, s.configName(), "signatures due", false, time.Now())
			if err != nil {
				s.log.Error("signatures due could not be made again; retrying in a minute", "err", err)
				s.reloadMu.Unlock()
				select {
				case <-s.done:
					return
				case <-time.After(time.Minute):
				}
				continue
			}
		}
		s.reloadMu.Unlock()
	}
}
