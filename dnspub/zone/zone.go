// Package zone is the record model of the publisher: one immutable version
// of a zone (its SOA and every other record) built from a validated config.
// It writes RFC 1035 master files, computes the content digest that decides
// whether a reload changed a zone, and the differences between versions
// that IXFR sends.
//
// A zone is made of units: the records of one service, and those of the
// zone's nameservers. The next version of a zone (Update) shares every unit
// whose config did not change with the previous one, so that a change to
// one service of 100 000 costs that service: its records, the names they
// touch, and the digest, kept as a sum over records.
//
// The package does no I/O beyond writing to the io.Writer it is given.
package zone

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/cow"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// Zone is one version of a zone. It is never modified once built.
type Zone struct {
	// Origin is the zone's absolute, lower-case name.
	Origin string
	// SOA is the zone's SOA record, serial included.
	SOA *dns.SOA

	units  cow.Map[*unit]  // by key: apexKey, or the service's name
	owners cow.Map[*owner] // names with records, and empty non-terminals
	// refs lists, for each host an NS or SRV record of the zone names,
	// the owners of those records: their answers carry its addresses.
	refs  cow.Map[[]string]
	count int // records, SOA aside
	bytes int // of the records, uncompressed
	// services is the list of the config the zone was built from, in its
	// order: the next Update finds the services that did not change by
	// walking it beside the next list (the same objects, mostly at the same
	// places), not by looking up each of 100 000 names.
	services []*model.Service
	sum      digestSum
	digest   [sha256.Size]byte
	// sec holds the DNSSEC records of a signed version (Sign), nil for
	// an unsigned one.
	sec *signing
	// dnssec is the signing settings of the config the zone was built
	// from, part of its digest: signing a zone, or changing how, is a new
	// version.
	dnssec *model.DNSSEC
}

func newOwner() *owner { return &owner{} }

// owner is what a name of the zone holds.
type owner struct {
	units []string // keys of the units with records at the name, sorted
	below int      // names with records strictly below it
}

// Change is what Update changed.
type Change struct {
	// Owners lists the names whose answers may differ: names that gained
	// or lost records or existence, and the owners of records that name
	// them as a host. It is nil for a zone built from nothing (Update
	// with no previous version), whose every name (Names) is new: sorting
	// 200 000 names was a sixth of building a fleet's zone.
	Owners []string
	// Deleted and Added are the records removed and added (the SOA aside),
	// as an IXFR difference sequence carries them (RFC 1995 §4). Both are
	// nil for a zone built from nothing, every record of which is new
	// (Records): its records are not made until its answers are.
	Deleted, Added []dns.RR

	// For a zone built from nothing: its units, and how many names
	// several of them hold (-1 when a service replaced another), which
	// EachName reads rather than look up every name.
	of     cow.Map[*unit]
	shared int
	// bound is AnswerBound's, 0 when a record did not pack.
	bound int
	// fresh is set for a zone built from nothing.
	fresh bool
}

// FromNothing reports whether c is the change of a zone built with no
// previous version (or c is nil): every name of the zone is new.
func (c *Change) FromNothing() bool { return c == nil || c.fresh }

// AnswerBound returns, for the change of a zone built from nothing in
// which no name is held by two units, an upper bound of the bytes of the
// records an answer at one of its names carries: the RRset of the name
// (all of it from one unit, at most the largest unit's records) and the
// addresses of the hosts it names (at most one unit each, as many as the
// unit has records naming hosts), uncompressed. ok is false for any other
// change, or when a record of the zone does not pack.
func (c *Change) AnswerBound() (bytes int, ok bool) {
	if c == nil || !c.fresh || c.shared != 0 || c.bound == 0 {
		return 0, false
	}
	return c.bound, true
}

// New builds the records of a zone from its validated config, with the
// given SOA serial.
func New(c *model.Zone, serial uint32) *Zone {
	z, _ := Update(nil, c)
	return z.WithSerial(serial)
}

// Update returns the version of zone c that follows prev (nil for none),
// sharing every unit of prev whose config did not change, and what
// changed. Its serial is prev's; give it its own with WithSerial.
//
// A service of c equal to the one prev was built from, but another
// object, becomes the one the new version refers to, so that the older
// can be collected; c itself is not changed (a model.Parser keeps it to
// read the next text from, and may share it with later configs).
func Update(prev *Zone, c *model.Zone) (*Zone, *Change) {
	ed := newEditor(prev, c)
	if prev == nil {
		// Every service is new: nothing to compare, keep or remove. The
		// services' records are not made, only their shapes (see shape).
		fs := buildFresh(c.Services)
		shared, ok := ed.putAll(fs)
		if !ok {
			// Two services of one name: put one after the other, the
			// later replacing the earlier, as Update does for any zone.
			ed = newEditor(nil, c)
			for _, f := range fs {
				ed.put(ed.made(f.u, f.u.records()))
			}
			shared = -1
		}
		z, ch := ed.finish()
		// Every record is new: none listed (Added, and Deleted, which
		// the put of a service replacing another fills). Units put one
		// after the other (shared < 0) count no bound.
		ch.fresh, ch.shared, ch.of, ch.Added, ch.Deleted = true, shared, z.units, nil, nil
		z.services = c.Services
		return z, ch
	}
	kept := 1 // units of prev that c keeps: the apex, and services below
	var changed []*model.Service
	for i, s := range c.Services {
		if i < len(prev.services) && prev.services[i] == s {
			// The very service prev was built from, at its place: its
			// unit is prev's (names are unique in a zone's list).
			kept++
			continue
		}
		old, ok := ed.units.Get(s.Name)
		if ok {
			kept++
		}
		if ok && old.src != nil && sameService(old.src, s) {
			if old.src != s {
				ed.units.Set(s.Name, &unit{src: s})
			}
			continue
		}
		changed = append(changed, s)
	}
	for _, m := range ed.buildUnits(changed) {
		ed.put(m)
	}
	if kept < prev.units.Len() {
		// Some of prev's services are gone: which, a set of c's names
		// tells (made only then: a reload of 100 000 services that
		// removes none would build it for nothing).
		keep := make(map[string]bool, len(c.Services)+1)
		keep[apexKey] = true
		for _, s := range c.Services {
			keep[s.Name] = true
		}
		for key := range prev.units.All() {
			if !keep[key] {
				ed.remove(key)
			}
		}
	}
	z, ch := ed.finish()
	z.services = c.Services
	return z, ch
}

// newEditor starts the version of zone c that follows prev (nil for
// none), with c's SOA fields and apex records (its NS records and glue).
func newEditor(prev *Zone, c *model.Zone) *editor {
	z := &Zone{Origin: c.Origin}
	var serial uint32
	if prev != nil {
		*z = *prev
		serial = prev.SOA.Serial
		z.sec = nil // Sign makes the next version's
	}
	z.dnssec = c.DNSSEC
	z.SOA = &dns.SOA{
		Hdr:     hdr(c.Origin, dns.TypeSOA, c.TTL),
		Ns:      c.SOA.MName,
		Mbox:    c.SOA.RName,
		Serial:  serial,
		Refresh: c.SOA.Refresh,
		Retry:   c.SOA.Retry,
		Expire:  c.SOA.Expire,
		Minttl:  c.SOA.Minimum,
	}
	ed := &editor{z: z, units: z.units.Edit(), owners: z.owners.Edit(), refs: z.refs.Edit(), touched: map[string]bool{}}
	if prev == nil {
		ed.fresh = true
		// A new zone's maps are filled at once: sized for its services
		// (a service's names are most often two), they do not grow
		// shard by shard.
		ed.units = cow.NewEditor[*unit](len(c.Services) + 1)
		ed.owners = cow.NewEditor[*owner](2*len(c.Services) + 1)
	}
	ed.put(ed.made(apexUnit(c)))
	return ed
}

// WithSerial returns a copy of z with another SOA serial; everything else
// is shared, as neither version changes it.
func (z *Zone) WithSerial(serial uint32) *Zone {
	c := *z
	soa := *z.SOA
	soa.Serial = serial
	c.SOA = &soa
	return &c
}

// Serial is the zone's SOA serial.
func (z *Zone) Serial() uint32 { return z.SOA.Serial }

// Len is the number of records, the SOA aside.
func (z *Zone) Len() int {
	if z.sec != nil {
		return z.count + z.sec.count
	}
	return z.count
}

// Bytes is the size of the records in wire format, uncompressed: about
// what a full transfer sends.
func (z *Zone) Bytes() int {
	if z.sec != nil {
		return z.bytes + z.sec.bytes
	}
	return z.bytes
}

// Digest identifies the zone's content: every record and every SOA field
// but the serial. Two versions with the same digest serve the same answers,
// so a reload that keeps it publishes no change and keeps the serial.
func (z *Zone) Digest() [sha256.Size]byte { return z.digest }

// NegativeTTL is the TTL of the SOA in negative answers (RFC 2308 §5): the
// smaller of the SOA's TTL and its MINIMUM field.
func (z *Zone) NegativeTTL() uint32 { return min(z.SOA.Hdr.Ttl, z.SOA.Minttl) }

// Records returns every record but the SOA, in canonical order (RFC 4034
// §6: by owner name, then type, then data).
func (z *Zone) Records() []dns.RR {
	out := make([]dns.RR, 0, z.Len())
	for _, u := range z.units.All() {
		out = append(out, u.records()...)
	}
	if z.sec != nil {
		for _, s := range z.sec.at.All() {
			out = append(out, s.records()...)
		}
		out = append(out, z.sec.soa...)
		out = append(out, z.sec.zonemd...)
	}
	slices.SortFunc(out, compareRR)
	return out
}

// AXFR returns the records of a full zone transfer (RFC 5936): the SOA,
// every other record, and the SOA again.
func (z *Zone) AXFR() []dns.RR {
	out := make([]dns.RR, 0, z.Len()+2)
	// Copies of the SOA, as unit.records says: transfers at once pack it.
	out = append(out, dns.Copy(z.SOA))
	out = append(out, z.Records()...)
	return append(out, dns.Copy(z.SOA))
}

// RecordsAt returns the records at name, the SOA included at the origin,
// in canonical order.
func (z *Zone) RecordsAt(name string) []dns.RR {
	out := z.plainAt(name)
	if sec := z.securedAt(name); len(sec) > 0 {
		// The DNSSEC records, canonical among themselves, go among the
		// others by type.
		out = append(out, sec...)
		slices.SortStableFunc(out, func(a, b dns.RR) int { return int(a.Header().Rrtype) - int(b.Header().Rrtype) })
	}
	return out
}

// EachName calls fn with every name of the zone and its records, as
// RecordsAt returns them (none for an empty non-terminal), from workers
// goroutines at once (fn's first argument says which). It is what a build
// of every answer reads: name by name, RecordsAt makes a service's
// records once for each of its names; here each unit's records are made
// once, and cut at their owners. When made is the Change of the Update
// that built z from nothing, and no name of z is held by two units, the
// names are not looked up either (200 000 for a fleet).
func (z *Zone) EachName(workers int, made *Change, fn func(worker int, name string, records []dns.RR)) {
	if z.sec != nil {
		z.eachSigned(workers, fn)
		return
	}
	units := make([]*unit, 0, z.units.Len())
	for _, u := range z.units.All() {
		units = append(units, u)
	}
	// A name a single unit holds gets that unit's records there, which
	// are canonical already. The origin (which has the SOA too) and names
	// shared by several units are read below.
	alone := func(name string) bool {
		o, ok := z.owners.Get(name)
		return ok && name != z.Origin && len(o.units) == 1
	}
	if made != nil && made.fresh && made.shared == 0 && made.of.Same(z.units) {
		alone = func(name string) bool { return name != z.Origin }
	}
	var wg sync.WaitGroup
	for w := range max(workers, 1) {
		wg.Go(func() {
			for i := w; i < len(units); i += max(workers, 1) {
				rrs := units[i].records()
				for j := 0; j < len(rrs); {
					name := rrs[j].Header().Name
					k := j + 1
					for k < len(rrs) && rrs[k].Header().Name == name {
						k++
					}
					if alone(name) {
						fn(w, name, rrs[j:k:k])
					}
					j = k
				}
			}
		})
	}
	wg.Wait()
	fn(0, z.Origin, z.RecordsAt(z.Origin))
	for name, o := range z.owners.All() {
		if name != z.Origin && len(o.units) != 1 { // not alone, as above
			fn(0, name, z.RecordsAt(name))
		}
	}
}

// Exists reports whether name is in the zone: it holds records, or names
// below it do (an empty non-terminal, RFC 8020).
func (z *Zone) Exists(name string) bool {
	if name == z.Origin {
		return true
	}
	_, ok := z.owners.Get(name)
	return ok
}

// Names yields every name of the zone: the origin, the names holding
// records, and the empty non-terminals.
func (z *Zone) Names() []string {
	out := []string{z.Origin}
	for name := range z.owners.All() {
		if name != z.Origin {
			out = append(out, name)
		}
	}
	return out
}

// AdditionalTarget is the host an answer with rr names, whose addresses
// go in the additional section when the zone holds them (RFC 1034 §3.6.2
// and §4.3.2 for NS and MX, RFC 2782 for SRV): the one rule of
// additional-section processing, whatever the type.
func AdditionalTarget(rr dns.RR) (string, bool) {
	switch r := rr.(type) {
	case *dns.NS:
		return r.Ns, true
	case *dns.MX:
		return r.Mx, true
	case *dns.SRV:
		return r.Target, true
	}
	return "", false
}

// editor builds the next version of a zone.
type editor struct {
	z       *Zone
	units   *cow.Editor[*unit]
	owners  *cow.Editor[*owner]
	refs    *cow.Editor[[]string]
	touched map[string]bool
	change  Change
	// fresh is set for a zone built from nothing: every name is new, so
	// the names touched are not tracked (Change.Owners is nil).
	fresh bool
}

// made is a unit to put in the zone, with what putting it counts: its
// records and their sum, and those of the unit of the same key it
// replaces (made again from its config).
type made struct {
	u          *unit
	records    []dns.RR
	size       int // of records, uncompressed
	sum        digestSum
	old        *unit // nil when the zone has none
	oldRecords []dns.RR
	oldSum     digestSum
}

// fresh is a service's unit in a zone built from nothing (putAll): the
// shape of its records, which are not made, and the list of the unit's
// key alone, which its names share. It is half a made: a first build
// writes 100 000 of them, in memory it touches for the first time (the
// made of each was a tenth of a store start's CPU on etcd).
type fresh struct {
	u   *unit
	sh  shape
	one []string
}

// made counts u, whose records are records, and the unit it replaces. It
// only reads the editor.
func (ed *editor) made(u *unit, records []dns.RR) made { return ed.madeIn(u, records, nil) }

// madeIn is made, packing records for their sum into *scratch.
func (ed *editor) madeIn(u *unit, records []dns.RR, scratch *[]byte) made {
	m := made{u: u, records: records, size: size(records)}
	m.sum, _ = hashRecords(records, scratch)
	if ed.fresh {
		return m // nothing to replace
	}
	if old, ok := ed.units.Get(u.key()); ok {
		m.old, m.oldRecords = old, old.records()
		m.oldSum = sumOf(m.oldRecords)
	}
	return m
}

// buildFresh makes the units of a zone built from nothing, with the
// shape of each service's records rather than the records.
func buildFresh(services []*model.Service) []fresh {
	out := make([]fresh, len(services))
	inParallel(len(services), func(i int, w *serviceWire) {
		u := &unit{src: services[i]}
		out[i] = fresh{u: u, sh: serviceShape(services[i], w), one: []string{u.key()}}
	})
	return out
}

// buildUnits makes the units of services, with their records and those
// they replace (a reload that changes them all).
func (ed *editor) buildUnits(services []*model.Service) []made {
	out := make([]made, len(services))
	inParallel(len(services), func(i int, w *serviceWire) {
		out[i] = ed.madeIn(&unit{src: services[i]}, serviceRecords(services[i]), &w.b) // w's buffer as the scratch
	})
	return out
}

// inParallel calls fn with each index below n, on every core when n is
// large (a new zone of 100 000 services); each goroutine has a
// serviceWire of its own.
func inParallel(n int, fn func(i int, w *serviceWire)) {
	workers := 1
	if n >= 1024 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for k := range workers {
		wg.Go(func() {
			var w serviceWire
			for i := k; i < n; i += workers {
				fn(i, &w)
			}
		})
	}
	wg.Wait()
}

// put adds the unit m made, replacing the unit of the same key, if its
// records differ. The unit does not keep the records of a service: they
// are made again when needed.
func (ed *editor) put(m made) {
	u, records := m.u, m.records
	key := u.key()
	old, had := ed.units.Get(key)
	var oldRecords []dns.RR
	var oldSum digestSum
	switch {
	case had && old == m.old:
		oldRecords, oldSum = m.oldRecords, m.oldSum
	case had: // put since m was made
		oldRecords = old.records()
		oldSum = sumOf(oldRecords)
	}
	if had && oldSum == m.sum && slices.EqualFunc(oldRecords, records, func(a, b dns.RR) bool { return compareRR(a, b) == 0 }) {
		// Same records from a config that differs otherwise: keep the
		// new config, for sameService to compare against next time.
		ed.units.Set(key, u)
		return
	}
	if had {
		ed.unlink(key, oldRecords, oldSum)
	}
	ed.units.Set(key, u)
	ed.link(key, records, m.sum, m.size)
	del, add := diffRecords(oldRecords, records)
	ed.change.Deleted = append(ed.change.Deleted, del...)
	ed.change.Added = append(ed.change.Added, add...)
}

// putAll puts the units of a zone built from nothing as put would, one
// after the other, and reports whether it could (false when two have the
// same key, and then ed must not be used) and how many names several
// units hold. The counts, the digest and the hosts of additional records
// are done in order (the records added are not listed: Update); the
// names, a tenth of a first start when linked one at a time, are put in
// the maps by shards, a share of them for each core.
func (ed *editor) putAll(ms []fresh) (shared int, ok bool) {
	// The bound counts the apex's unit too (the nameservers' addresses
	// in the zone are its names).
	largest, targets, packed := 0, 0, true
	if apex, ok := ed.units.Get(apexKey); ok {
		records := apex.records()
		_, packed = hashRecords(records, nil)
		largest = size(records)
		for _, rr := range records {
			if _, ok := AdditionalTarget(rr); ok {
				targets++
			}
		}
	}
	for i := range ms {
		sh := &ms[i].sh
		ed.z.bytes += sh.size
		ed.z.sum.add(sh.sum)
		ed.z.count += sh.count
		hosts := 0
		if sh.target != "" {
			list, _ := ed.refs.Get(sh.target)
			ed.refs.Set(sh.target, append(slices.Clip(list), sh.names[sh.srv]))
			hosts++
		}
		// The records a shape counts all pack (serviceWire.write).
		largest, targets = max(largest, sh.size), max(targets, hosts)
	}
	if packed {
		// Counted as Change.AnswerBound says, with no overflow: a
		// unit's size is less than 2^32, its records fewer.
		ed.change.bound = largest * (1 + targets)
	}
	workers := 1
	if len(ms) >= 1024 {
		workers = runtime.GOMAXPROCS(0)
	}
	newUnits, newOwners, shares := make([]int, workers), make([]int, workers), make([]int, workers)
	mine := func(w int, h uint64) bool { return int(uint8(h))%workers == w }
	// entry is the owner entry of name, whose hash h is of worker w's
	// shards, made when the zone has none yet.
	entry := func(w int, h uint64, name string) *owner {
		o, added := ed.owners.EntryHashed(h, name, newOwner)
		if added {
			newOwners[w]++
		}
		return o
	}
	// Every owner in the maps is this edit's own (the zone has no older
	// version): a worker changes those of its shards in place.
	firsts := make([][]string, workers) // names that got their first unit
	dup := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range ms {
				m := &ms[i]
				key := m.one[0]
				if h := cow.Hash(key); mine(w, h) {
					if ed.units.PutHashed(h, key, m.u) {
						newUnits[w]++
					} else {
						dup[w] = true
					}
				}
				for _, name := range m.sh.names[:m.sh.nnames] {
					h := cow.Hash(name)
					if !mine(w, h) {
						continue
					}
					o := entry(w, h, name)
					if len(o.units) == 0 {
						o.units = m.one
					} else {
						i, _ := slices.BinarySearch(o.units, key)
						o.units = slices.Insert(slices.Clip(o.units), i, key) // a new array
						if len(o.units) == 2 {
							shares[w]++
						}
					}
					if len(o.units) == 1 {
						firsts[w] = append(firsts[w], name)
					}
				}
			}
		})
	}
	wg.Wait()
	if slices.Contains(dup, true) {
		return 0, false
	}
	// Each name that got its first unit counts below its ancestors in the
	// zone, which become empty non-terminals when they hold no records.
	origin := ed.z.Origin
	for w := range workers {
		wg.Go(func() {
			for _, names := range firsts {
				for _, name := range names {
					for p, ok := parentName(name); ok && inside(origin, p); p, ok = parentName(p) {
						h := cow.Hash(p)
						if !mine(w, h) {
							continue
						}
						entry(w, h, p).below++
					}
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		ed.units.AddLen(newUnits[w])
		ed.owners.AddLen(newOwners[w])
		shared += shares[w]
	}
	return shared, true
}

func (ed *editor) remove(key string) {
	old, ok := ed.units.Get(key)
	if !ok {
		return
	}
	records := old.records()
	ed.unlink(key, records, sumOf(records))
	ed.units.Delete(key)
	ed.change.Deleted = append(ed.change.Deleted, records...)
}

// link adds the unit of key, whose records are records of digest sum
// sum and size bytes, to the counts, the owner index and the refs.
func (ed *editor) link(key string, records []dns.RR, sum digestSum, bytes int) {
	ed.z.count += len(records)
	ed.z.bytes += bytes
	ed.z.sum.add(sum)
	// The names of a service are each its own only, most of the time:
	// they share one list of units.
	one := []string{key}
	for _, name := range owners(records) {
		o := ed.ownerCopy(name)
		if len(o.units) == 0 {
			o.units = one
		} else {
			i, _ := slices.BinarySearch(o.units, key)
			o.units = slices.Insert(slices.Clip(o.units), i, key) // a new array
		}
		ed.owners.Set(name, o)
		ed.touch(name)
		if len(o.units) == 1 {
			ed.ancestors(name, +1)
		}
	}
	for _, rr := range records {
		if host, ok := AdditionalTarget(rr); ok {
			list, _ := ed.refs.Get(host)
			ed.refs.Set(host, append(slices.Clip(list), rr.Header().Name))
		}
	}
}

// unlink removes the unit of key, whose records are records of digest
// sum sum, from the counts, the index and the refs.
func (ed *editor) unlink(key string, records []dns.RR, sum digestSum) {
	ed.z.count -= len(records)
	ed.z.bytes -= size(records)
	ed.z.sum.sub(sum)
	for _, name := range owners(records) {
		o := ed.ownerCopy(name)
		if i, found := slices.BinarySearch(o.units, key); found {
			o.units = slices.Delete(slices.Clone(o.units), i, i+1)
		}
		ed.touch(name)
		if len(o.units) == 0 {
			ed.ancestors(name, -1)
		}
		if len(o.units) == 0 && o.below == 0 {
			ed.owners.Delete(name)
		} else {
			ed.owners.Set(name, o)
		}
	}
	for _, rr := range records {
		if host, ok := AdditionalTarget(rr); ok {
			list, _ := ed.refs.Get(host)
			if i := slices.Index(list, rr.Header().Name); i >= 0 {
				list = slices.Delete(slices.Clone(list), i, i+1)
			}
			if len(list) == 0 {
				ed.refs.Delete(host)
			} else {
				ed.refs.Set(host, list)
			}
		}
	}
}

// ancestors adds d to the count of names with records below each
// ancestor of name inside the zone (the origin aside, which always
// exists), creating and deleting empty non-terminals (RFC 8020).
func (ed *editor) ancestors(name string, d int) {
	for p, ok := parentName(name); ok && inside(ed.z.Origin, p); p, ok = parentName(p) {
		o := ed.ownerCopy(p)
		o.below += d
		if len(o.units) == 0 && (o.below == 0 || o.below == d) {
			ed.touch(p) // an empty non-terminal appears or goes
		}
		if len(o.units) == 0 && o.below == 0 {
			ed.owners.Delete(p)
		} else {
			ed.owners.Set(p, o)
		}
	}
}

// ownerCopy returns a copy of the owner entry of name, or a new one. Its
// units are shared with the entry's: versions share the lists, which are
// never modified, only replaced.
func (ed *editor) ownerCopy(name string) *owner {
	o := &owner{}
	if old, ok := ed.owners.Get(name); ok {
		*o = *old
	}
	return o
}

func (ed *editor) touch(name string) {
	if !ed.fresh {
		ed.touched[name] = true
	}
}

func (ed *editor) finish() (*Zone, *Change) {
	z := ed.z
	z.units, z.owners, z.refs = ed.units.Map(), ed.owners.Map(), ed.refs.Map()
	for name := range ed.touched {
		// Answers that carry the addresses of a changed name change too.
		if list, ok := z.refs.Get(name); ok {
			for _, o := range list {
				ed.touched[o] = true
			}
		}
	}
	for name := range ed.touched {
		ed.change.Owners = append(ed.change.Owners, name)
	}
	slices.Sort(ed.change.Owners)
	z.digest = z.computeDigest()
	return z, &ed.change
}

// computeDigest hashes the SOA fields but the serial with the sum of the
// records' hashes.
func (z *Zone) computeDigest() [sha256.Size]byte {
	h := sha256.New()
	soa := *z.SOA
	soa.Serial = 0
	fmt.Fprintln(h, soa.String())
	if z.dnssec != nil {
		fmt.Fprintf(h, "dnssec %+v\n", *z.dnssec)
	}
	var b [32]byte
	for i, v := range z.sum {
		binary.BigEndian.PutUint64(b[8*i:], v)
	}
	h.Write(b[:])
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// inside reports whether name lies strictly below origin. A zone's names
// are lower-case and without escapes (the config refuses others), and for
// them a suffix says it: dns.IsSubDomain, which splits both names into
// labels, was a tenth of building a fleet's zone. It still decides names
// with escapes.
func inside(origin, name string) bool {
	if strings.IndexByte(name, '\\') >= 0 || strings.IndexByte(origin, '\\') >= 0 {
		return name != origin && dns.IsSubDomain(origin, name)
	}
	if origin == "." {
		return name != "."
	}
	cut := len(name) - len(origin)
	return cut > 0 && name[cut-1] == '.' && strings.EqualFold(name[cut:], origin)
}

func parentName(name string) (string, bool) {
	off, end := dns.NextLabel(name, 0)
	if end {
		return "", false
	}
	return name[off:], true
}

// diffRecords returns the records of from missing in to, and of to
// missing in from; both are in canonical order.
func diffRecords(from, to []dns.RR) (deleted, added []dns.RR) {
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		switch {
		case j == len(to):
			deleted = append(deleted, from[i])
			i++
		case i == len(from):
			added = append(added, to[j])
			j++
		default:
			switch c := compareRR(from[i], to[j]); {
			case c < 0:
				deleted = append(deleted, from[i])
				i++
			case c > 0:
				added = append(added, to[j])
				j++
			default:
				i++
				j++
			}
		}
	}
	return deleted, added
}

// compareRR orders records canonically: owner name (RFC 4034 §6.1), type,
// data, then TTL (so that a TTL change shows up in diffRecords).
func compareRR(a, b dns.RR) int {
	ha, hb := a.Header(), b.Header()
	if c := CompareNames(ha.Name, hb.Name); c != 0 {
		return c
	}
	if c := int(ha.Rrtype) - int(hb.Rrtype); c != 0 {
		return c
	}
	if c := strings.Compare(rdata(a), rdata(b)); c != 0 {
		return c
	}
	return int(int64(ha.Ttl) - int64(hb.Ttl))
}

func rdata(rr dns.RR) string {
	switch r := rr.(type) {
	case *dns.A:
		return string(r.A.To4())
	case *dns.AAAA:
		return string(r.AAAA.To16())
	}
	s := rr.String()
	h := rr.Header().String()
	return strings.TrimPrefix(s, h)
}

// CompareNames orders absolute lower-case names canonically: label by label
// from the right, so that a zone's apex sorts first and each name's
// children follow it.
func CompareNames(a, b string) int {
	for {
		la, ra, oka := lastLabel(a)
		lb, rb, okb := lastLabel(b)
		switch {
		case !oka && !okb:
			return 0
		case !oka:
			return -1
		case !okb:
			return 1
		}
		if c := strings.Compare(la, lb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
}

// lastLabel splits the last label off an absolute name ("a.b." → "b",
// "a."); ok is false for the root.
func lastLabel(name string) (label, rest string, ok bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", "", false
	}
	i := strings.LastIndexByte(name, '.')
	return name[i+1:], name[:i+1], true
}
