package dnspub

import (
	"context"
	"errors"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// ServiceSpecs returns the specs, as a store holds them, of services of
// zone origin (services of a config this server published), as they were
// read for it, by name: what a service wrote itself, which the published
// config does not keep, for the web view's per-field origins
// (model.Zone.Inspect). In store mode each is read at its own revision;
// from a config file, the file is read again, and only while it is still
// the text served. A service it cannot read (the store compacted its
// revision; the file changed since) is left out, and the view says that
// its origins may be short.
func (s *Server) ServiceSpecs(ctx context.Context, origin string, services []*model.Service) map[string][]byte {
	if len(services) == 0 {
		return nil
	}
	if s.feed != nil {
		return s.storeSpecs(ctx, origin, services)
	}
	s.reloadMu.Lock()
	served := s.servedSum
	snap := s.snap.Load()
	s.reloadMu.Unlock()
	if snap == nil {
		return nil
	}
	text := model.Example // the built-in example
	if s.opts.ConfigFile != "" {
		var err error
		if text, err = readConfigFile(s.opts.ConfigFile); err != nil || s.sums.sum(text) != served {
			return nil
		}
	}
	// Services of another version than snap's (a reload since the page
	// read its config) are not snap.cfg's: left out.
	return model.ServiceSpecsOf(text, snap.cfg, origin, services)
}

// storeSpecs is ServiceSpecs in store mode: the services are read at
// their revisions, those of one revision at once.
func (s *Server) storeSpecs(ctx context.Context, origin string, services []*model.Service) map[string][]byte {
	zone, msg := model.ZoneName(origin)
	if msg != "" {
		return nil
	}
	byRev := map[int64]map[string]*model.Service{} // store name
	for _, sv := range services {
		name, msg := model.ServiceName(origin, sv.Name)
		if msg != "" || sv.ResourceVersion <= 0 {
			continue
		}
		if byRev[sv.ResourceVersion] == nil {
			byRev[sv.ResourceVersion] = map[string]*model.Service{}
		}
		byRev[sv.ResourceVersion][name] = sv
	}
	out := make(map[string][]byte, len(services))
	for rev, want := range byRev {
		names := make([]string, 0, len(want))
		for name := range want {
			names = append(names, name)
		}
		if s.feed.specs == nil {
			return out
		}
		items, err := s.feed.specs.ServicesAt(ctx, zone, names, rev)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.log.Debug("cannot read services again for the web view", "zone", origin, "revision", rev, "err", err)
			}
			continue
		}
		for _, it := range items {
			// The version served: written at rev, read at rev.
			if sv := want[it.Name]; sv != nil && it.Rev == rev {
				out[sv.Name] = it.Spec
			}
		}
	}
	return out
}
