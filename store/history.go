package store

import (
	"context"
	"errors"
	"time"
)

// WrittenAt is the annotation of a History item that says when the
// version was written (RFC 3339, UTC), when the store knows: the time is
// kept as the value of the zone's change marker, which every write of
// the zone, its services and policies rewrites in its transaction.
const WrittenAt = "grpc-config-dns/written-at"

// writtenAt is the marker value of a write made now.
func (s *Store) writtenAt() []byte {
	return []byte(s.opts.Now().UTC().Format(time.RFC3339))
}

// History is the versions of one object the store still holds, newest
// first: the current one and those before it, back to its creation or
// to the oldest revision kept (Options.History).
type History struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   ListMeta  `json:"metadata"`
	Items      []*Object `json:"items"`
	// Truncated says older versions were compacted: the oldest item is
	// not the object's creation.
	Truncated bool `json:"truncated,omitempty"`
}

// ZoneHistory returns the versions of a zone (History).
func (s *Store) ZoneHistory(ctx context.Context, zone string, limit int) (*History, error) {
	name, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	return s.history(ctx, name, zoneKey(name), limit, "zone %s not found", name)
}

// ServiceHistory returns the versions of a service (History).
func (s *Store) ServiceHistory(ctx context.Context, zone, svc string, limit int) (*History, error) {
	z, name, err := serviceName(zone, svc)
	if err != nil {
		return nil, err
	}
	return s.history(ctx, z, serviceKey(z, name), limit, "service %s of zone %s not found", name, z)
}

// PolicyHistory returns the versions of a policy (History).
func (s *Store) PolicyHistory(ctx context.Context, zone, policy string, limit int) (*History, error) {
	z, name, err := policyName(zone, policy)
	if err != nil {
		return nil, err
	}
	return s.history(ctx, z, policyKey(z, name), limit, "policy %s of zone %s not found", name, z)
}

// history walks back from the version of key now: the one before a
// version is key as of the revision before it, down to the object's
// creation (its createRev) or the oldest revision kept. At most limit
// versions (0: all).
func (s *Store) history(ctx context.Context, zone, key string, limit int, missing string, args ...any) (*History, error) {
	cur, err := s.getKey(ctx, key, "")
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, notFound(missing+" (the history of a deleted object is not kept: list at a resourceVersion before its deletion with resourceVersionMatch=Exact to read it)", args...)
	}
	h := &History{APIVersion: APIVersion, Kind: kindOf(key) + "History", Metadata: ListMeta{ResourceVersion: FormatRV(cur.modRev)}}
	for k := cur; k != nil; {
		o, err := decode(*k)
		if err != nil {
			return nil, s.internal(err)
		}
		if at := s.writeTime(ctx, zone, k.modRev); at != "" {
			if o.Metadata.Annotations == nil {
				o.Metadata.Annotations = map[string]string{}
			}
			o.Metadata.Annotations[WrittenAt] = at
		}
		h.Items = append(h.Items, o)
		if k.modRev <= k.createRev || limit > 0 && len(h.Items) == limit {
			break
		}
		kvs, _, _, err := s.b.rangeKeys(ctx, key, key, 1, k.modRev-1)
		switch {
		case errors.Is(err, errCompacted):
			h.Truncated = true
			return h, nil
		case err != nil:
			return nil, s.internal(err)
		}
		k = nil
		if len(kvs) == 1 && kvs[0].key == key {
			k = &kvs[0]
		}
	}
	return h, nil
}

// writeTime is when the write at revision rev of zone was made: its
// marker's value at rev, written by the same transaction; "" when the
// marker of rev is gone or holds no time (a store written before).
func (s *Store) writeTime(ctx context.Context, zone string, rev int64) string {
	kvs, _, _, err := s.b.rangeKeys(ctx, markerKey(zone), markerKey(zone), 1, rev)
	if err != nil || len(kvs) != 1 || kvs[0].key != markerKey(zone) || kvs[0].modRev != rev {
		return ""
	}
	if _, err := time.Parse(time.RFC3339, string(kvs[0].value)); err != nil {
		return ""
	}
	return string(kvs[0].value)
}
