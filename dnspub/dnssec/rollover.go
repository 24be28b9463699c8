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
	}{{"Publish", k.Timing.Publish}, {"Activate", k.Timing.Activate}, {"Inactive", k.Timing.Inactive}, {"Delete", k.Timing.Delete}} {
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
type Rollover struct {
	Lifetime, Publish, Retire time.Duration
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
	view := &KeySet{Origin: ks.Origin, active: []*Key{}}
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
		}
		soonest(k.Timing.Publish)
		soonest(k.Timing.Activate)
		soonest(k.Timing.Inactive)
		soonest(k.Timing.Delete)
	}
	if cur := ks.currentZSK(now); cur != nil && r.Lifetime > 0 && cur.Timing.Inactive.IsZero() {
		soonest(cur.Timing.Activate.Add(r.Lifetime - r.Publish))
	}
	return view
}

// Next is when the keys of a set from At change next; zero for never.
func (ks *KeySet) Next() time.Time { return ks.next }

// Phase names the keys of a set from At: those published and those that
// sign. Two sets of one phase sign alike.
func (ks *KeySet) Phase() string {
	return fmt.Sprint(tags(ks.Keys), "/", tags(ks.signers()))
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

// Roll replaces the zone-signing key of ks when its lifetime is up:
// it makes the successor, published at now and signing from now +
// r.Publish, and retires the current one then, deleted r.Retire later;
// both files are written before Roll returns. A successor found without
// the current key's retirement (a crash between the two writes) gets it.
// It reports whether the keys changed. dir is the key directory.
func (ks *KeySet) Roll(dir string, now time.Time, r Rollover) (bool, error) {
	if r.Lifetime <= 0 {
		return false, nil
	}
	cur := ks.currentZSK(now)
	if cur == nil {
		return false, nil
	}
	if cur.Timing.Activate.IsZero() {
		// A key without timing (a zone's first, or one brought from
		// dnssec-keygen -G): its lifetime starts now.
		cur.Timing.Activate = now
		if cur.Timing.Publish.IsZero() {
			cur.Timing.Publish = now
		}
		return false, cur.writePrivate(now)
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
