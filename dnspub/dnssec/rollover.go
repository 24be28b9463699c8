package dnssec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Timing is when a key is published in the DNSKEY RRset and when it signs:
// BIND's key timing metadata (dnssec-settime), kept as lines of the key's
// .private file. A zero time is not set: published or active from the
// start, never inactive or deleted.
type Timing struct {
	Publish, Activate, Inactive, Delete time.Time
	// DSPublish is when the parent was seen publishing the key's DS, as
	// an operator says (dnssec ds-seen; BIND's dnssec-settime -P ds).
	DSPublish time.Time
}

// timeFormat is the format of the timing metadata (UTC).
const timeFormat = "20060102150405"

// Published reports whether the key is in the DNSKEY RRset at now.
func (t Timing) Published(now time.Time) bool {
	return !now.Before(t.Publish) && (t.Delete.IsZero() || now.Before(t.Delete))
}

// Active reports whether the key signs at now.
func (t Timing) Active(now time.Time) bool {
	return !now.Before(t.Activate) && (t.Inactive.IsZero() || now.Before(t.Inactive))
}

// parseTiming reads the timing lines of a .private file.
func parseTiming(text string) Timing {
	var t Timing
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		at, err := time.Parse(timeFormat, strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "publish":
			t.Publish = at
		case "activate":
			t.Activate = at
		case "inactive":
			t.Inactive = at
		case "delete":
			t.Delete = at
		case "dspublish":
			t.DSPublish = at
		}
	}
	return t
}

// writePrivate writes the key's .private file, its timing with it, whole
// or not at all.
func (k *Key) writePrivate(created time.Time) error {
	var b strings.Builder
	b.WriteString(k.DNSKEY.PrivateKeyString(k.signer))
	fmt.Fprintf(&b, "Created: %s\n", created.UTC().Format(timeFormat))
	for _, f := range []struct {
		name string
		at   time.Time
	}{{"Publish", k.Timing.Publish}, {"Activate", k.Timing.Activate}, {"Inactive", k.Timing.Inactive}, {"Delete", k.Timing.Delete}, {"DSPublish", k.Timing.DSPublish}} {
		if !f.at.IsZero() {
			fmt.Fprintf(&b, "%s: %s\n", f.name, f.at.UTC().Format(timeFormat))
		}
	}
	return writeFile(k.File+".private", []byte(b.String()), 0o600)
}

// Rollover says when a zone's zone-signing key is replaced (RFC 7583
// §3.2, pre-publication): every Lifetime, its successor is published
// Publish before it signs (the DNSKEY RRset's TTL and then some, so that
// every resolver holds it when its signatures come), and the key it
// replaces stays published Retire after it stops signing (the zone's
// longest TTL and then some, so that no signature by it is still cached
// when it goes).
//
// SEPLifetime is the same for the key the parent's DS names (a CSK, or
// the KSK of a KSK/ZSK pair), rolled by double-DS (RFC 7583 §3.3.2)
// because the parent has a say: its successor is published (and signs
// the DNSKEY RRset) at once; Publish later it is ready, CDS and CDNSKEY
// name both keys, and a CSK successor signs the zone in the old one's
// place (its DNSKEY is in every cache by then); the old key goes only
// once the parent publishes the new key's DS (DSSeen) and that DS's TTL
// has passed, and, for a CSK, Retire after it stopped signing.
type Rollover struct {
	Lifetime, SEPLifetime, Publish, Retire time.Duration
}

// signers are the keys that sign: the active ones of a set from At, all
// of a set from Load.
func (ks *KeySet) signers() []*Key {
	if ks.active != nil {
		return ks.active
	}
	return ks.Keys
}

// At returns the keys of ks at now: those published, those of them that
// sign, and when that changes next (a key's timing, or a rollover r
// starts: Next).
func (ks *KeySet) At(now time.Time, r Rollover) *KeySet {
	view := &KeySet{Origin: ks.Origin, active: []*Key{}, parent: []*Key{}}
	soonest := func(t time.Time) {
		if t.After(now) && (view.next.IsZero() || t.Before(view.next)) {
			view.next = t
		}
	}
	for _, k := range ks.Keys {
		if k.Timing.Published(now) {
			view.Keys = append(view.Keys, k)
			if k.Timing.Active(now) {
				view.active = append(view.active, k)
			}
			// The parent is to name a SEP key once its DNSKEY is in
			// every cache (it signs: a successor is activated Publish
			// after it is published) until its retirement is decided.
			if k.SEP() && !now.Before(k.Timing.Activate) && k.Timing.Delete.IsZero() {
				view.parent = append(view.parent, k)
			}
		}
		soonest(k.Timing.Publish)
		soonest(k.Timing.Activate)
		soonest(k.Timing.Inactive)
		soonest(k.Timing.Delete)
	}
	if cur := ks.currentZSK(now); cur != nil && r.Lifetime > 0 && cur.Timing.Inactive.IsZero() {
		soonest(cur.Timing.Activate.Add(r.Lifetime - r.Publish))
	}
	if cur, succ := ks.currentSEP(now); cur != nil && succ == nil && r.SEPLifetime > 0 && !cur.Timing.Activate.IsZero() {
		soonest(cur.Timing.Activate.Add(r.SEPLifetime - r.Publish))
	}
	return view
}

// Next is when the keys of a set from At change next; zero for never.
func (ks *KeySet) Next() time.Time { return ks.next }

// Phase names the keys of a set from At: those published and those that
// sign. Two sets of one phase sign alike.
func (ks *KeySet) Phase() string {
	return fmt.Sprint(tags(ks.Keys), "/", tags(ks.signers()), "/", tags(ks.parentKeys()))
}

// SignersPhase names the keys that sign: when it changes, every
// signature must be made again.
func (ks *KeySet) SignersPhase() string { return fmt.Sprint(tags(ks.signers())) }

func tags(keys []*Key) []uint16 {
	out := make([]uint16, len(keys))
	for i, k := range keys {
		out[i] = k.DNSKEY.KeyTag()
	}
	return out
}

// currentZSK is the zone-signing key that signs at now, the last
// activated when several do.
func (ks *KeySet) currentZSK(now time.Time) *Key {
	var cur *Key
	for _, k := range ks.Keys {
		if !k.SEP() && k.Timing.Active(now) && (cur == nil || k.Timing.Activate.After(cur.Timing.Activate)) {
			cur = k
		}
	}
	return cur
}

// Roll starts the rollovers r asks for when a key's lifetime is up, and
// carries on those under way: the SEP key's (rollSEP) and the
// zone-signing key's (rollZSK). Files are written before it returns. It
// reports whether the keys changed. dir is the key directory.
//
// Publishers of one store share the key directory: Roll reads the keys
// again under the directory's lock before it decides, so that one of
// them makes a key that is due and the others take it.
func (ks *KeySet) Roll(dir string, now time.Time, r Rollover) (bool, error) {
	if r.Lifetime <= 0 && r.SEPLifetime <= 0 {
		return false, nil
	}
	unlock, err := lockKeys(dir, ks.Origin)
	if err != nil {
		return false, err
	}
	defer unlock()
	before := fmt.Sprint(tags(ks.Keys))
	if err := ks.Reload(dir); err != nil {
		return false, err
	}
	rolled, err := ks.roll(dir, now, r)
	return rolled || fmt.Sprint(tags(ks.Keys)) != before, err
}

// roll is Roll with the lock held.
func (ks *KeySet) roll(dir string, now time.Time, r Rollover) (bool, error) {
	split := slices.ContainsFunc(ks.Keys, func(k *Key) bool { return !k.SEP() })
	rolled, err := ks.rollSEP(dir, now, r, split)
	if err != nil || r.Lifetime <= 0 {
		return rolled, err
	}
	z, err := ks.rollZSK(dir, now, r)
	return rolled || z, err
}

// rollZSK replaces the zone-signing key of ks when its lifetime is up:
// it makes the successor, published at now and signing from now +
// r.Publish, and retires the current one then, deleted r.Retire later;
// both files are written before it returns. A successor found without
// the current key's retirement (a crash between the two writes) gets it.
func (ks *KeySet) rollZSK(dir string, now time.Time, r Rollover) (bool, error) {
	cur := ks.currentZSK(now)
	if cur == nil {
		return false, nil
	}
	if cur.Timing.Activate.IsZero() {
		return false, cur.startLifetime(now)
	}
	var succ *Key
	for _, k := range ks.Keys {
		if !k.SEP() && k != cur && k.Timing.Activate.After(cur.Timing.Activate) {
			succ = k
		}
	}
	if succ != nil {
		if cur.Timing.Inactive.IsZero() {
			cur.Timing.Inactive, cur.Timing.Delete = succ.Timing.Activate, succ.Timing.Activate.Add(r.Retire)
			return true, cur.writePrivate(now)
		}
		return false, nil
	}
	if !cur.Timing.Inactive.IsZero() || now.Before(cur.Timing.Activate.Add(r.Lifetime-r.Publish)) {
		return false, nil
	}
	next, err := generate(dir, ks.Origin, cur.DNSKEY.Algorithm, dns.ZONE, Timing{Publish: now, Activate: now.Add(r.Publish)})
	if err != nil {
		return false, err
	}
	// The successor's files are written: it is one of the keys whether
	// or not the current key's retirement is (a failed write of it is
	// healed by the next Roll, as after a crash).
	ks.Keys = append(ks.Keys, next)
	slices.SortFunc(ks.Keys, func(a, b *Key) int { return int(a.DNSKEY.KeyTag()) - int(b.DNSKEY.KeyTag()) })
	was := cur.Timing
	cur.Timing.Inactive, cur.Timing.Delete = next.Timing.Activate, next.Timing.Activate.Add(r.Retire)
	if err := cur.writePrivate(now); err != nil {
		cur.Timing = was // memory as the files say
		return true, err
	}
	return true, nil
}

// currentSEP is the SEP key of ks at now that is not being retired and
// was activated first, and its successor when a rollover is under way.
func (ks *KeySet) currentSEP(now time.Time) (cur, succ *Key) {
	for _, k := range ks.Keys {
		if !k.SEP() || !k.Timing.Delete.IsZero() || !k.Timing.Published(now) {
			continue
		}
		switch {
		case cur == nil:
			cur = k
		case k.Timing.Activate.Before(cur.Timing.Activate):
			cur, succ = k, cur
		case succ == nil || k.Timing.Activate.After(succ.Timing.Activate):
			succ = k
		}
	}
	return cur, succ
}

// startLifetime starts the lifetime of a key without timing (a zone's
// first, or one brought from dnssec-keygen without -A): active, and
// published, from now.
func (k *Key) startLifetime(now time.Time) error {
	k.Timing.Activate = now
	if k.Timing.Publish.IsZero() {
		k.Timing.Publish = now
	}
	return k.writePrivate(now)
}

// rollSEP starts the rollover of the SEP key of ks when its lifetime is
// up (Rollover), and heals one that a crash interrupted. split says the
// zone has zone-signing keys: the SEP key signs only the DNSKEY RRset.
func (ks *KeySet) rollSEP(dir string, now time.Time, r Rollover, split bool) (bool, error) {
	cur, succ := ks.currentSEP(now)
	if r.SEPLifetime <= 0 || cur == nil {
		return false, nil
	}
	if cur.Timing.Activate.IsZero() {
		return false, cur.startLifetime(now)
	}
	if succ != nil {
		if !split && cur.Timing.Inactive.IsZero() {
			// A CSK hands its signing over when its successor starts.
			cur.Timing.Inactive = succ.Timing.Activate
			return true, cur.writePrivate(now)
		}
		return false, nil
	}
	if now.Before(cur.Timing.Activate.Add(r.SEPLifetime - r.Publish)) {
		return false, nil
	}
	next, err := generate(dir, ks.Origin, cur.DNSKEY.Algorithm, dns.ZONE|dns.SEP, Timing{Publish: now, Activate: now.Add(r.Publish)})
	if err != nil {
		return false, err
	}
	ks.Keys = append(ks.Keys, next)
	slices.SortFunc(ks.Keys, func(a, b *Key) int { return int(a.DNSKEY.KeyTag()) - int(b.DNSKEY.KeyTag()) })
	if !split {
		was := cur.Timing
		cur.Timing.Inactive = next.Timing.Activate
		if err := cur.writePrivate(now); err != nil {
			cur.Timing = was
			return true, err
		}
	}
	return true, nil
}

// AwaitingDS returns the new SEP key of a rollover whose DS the parent
// is to publish: ready (CDS names it), the old key's retirement not yet
// decided. Nil when no rollover waits for the parent.
func (ks *KeySet) AwaitingDS(now time.Time) *Key {
	if _, succ := ks.currentSEP(now); succ != nil && !now.Before(succ.Timing.Activate) {
		return succ
	}
	return nil
}

// DSSeen records that the parent publishes the DS of the key AwaitingDS
// returns, with TTL ttl: the old SEP key is deleted once that TTL has
// passed (no cache holds a DS RRset without the new key) and, for a CSK,
// r.Retire after it stopped signing (no cache holds its signatures). It
// reads the keys again under the directory's lock first (another
// publisher of the store may have decided), and writes the old key's
// file before it returns. It reports whether a rollover waited.
func (ks *KeySet) DSSeen(dir string, now time.Time, ttl time.Duration, r Rollover) (bool, error) {
	unlock, err := lockKeys(dir, ks.Origin)
	if err != nil {
		return false, err
	}
	defer unlock()
	if err := ks.Reload(dir); err != nil {
		return false, err
	}
	cur, succ := ks.currentSEP(now)
	if succ == nil || now.Before(succ.Timing.Activate) {
		return false, nil
	}
	del := now.Add(ttl + r.Publish/2)
	if !cur.Timing.Inactive.IsZero() {
		del = later(del, cur.Timing.Inactive.Add(r.Retire))
	}
	was := cur.Timing
	cur.Timing.Delete = del
	if cur.Timing.Inactive.IsZero() || cur.Timing.Inactive.After(del) {
		cur.Timing.Inactive = del
	}
	if err := cur.writePrivate(now); err != nil {
		cur.Timing = was
		return true, err
	}
	return true, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ManualDSTTL is the DS TTL assumed when an operator says the parent
// publishes a new DS (MarkDSSeen): a day, the longest parents commonly
// use (.com's); parental agents' answers say the real one.
const ManualDSTTL = 24 * time.Hour

// MarkDSSeen records an operator's word that the parent of zone origin
// publishes the DS of the new key of the rollover under way (AwaitingDS)
// since now, in that key's .private file (DSPublish, as BIND keeps it):
// a publisher serving the zone then retires the old key (DSSeen, with
// ManualDSTTL). It returns the new key.
func MarkDSSeen(dir, origin string, now time.Time) (*Key, error) {
	origin = dns.CanonicalName(origin)
	unlock, err := lockKeys(dir, origin)
	if err != nil {
		return nil, err
	}
	defer unlock()
	keys, err := Find(dir, origin)
	if err != nil {
		return nil, err
	}
	ks := &KeySet{Origin: origin, Keys: keys}
	succ := ks.AwaitingDS(now)
	if succ == nil {
		if _, next := ks.currentSEP(now); next != nil {
			return nil, fmt.Errorf("dnssec: zone %s: the new key %d is not ready yet (published %s; its DS is asked for from %s, when CDS names it)", origin, next.DNSKEY.KeyTag(), next.Timing.Publish.UTC().Format(time.RFC3339), next.Timing.Activate.UTC().Format(time.RFC3339))
		}
		return nil, fmt.Errorf("dnssec: zone %s: no key rollover in %s waits for the parent's DS (kskLifetime starts one; `dnssec ds` prints the DS records the parent is to have)", origin, dir)
	}
	succ.Timing.DSPublish = now
	return succ, succ.writePrivate(now)
}
