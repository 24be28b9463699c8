package resolver

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/extract"
	grpcsc "google.golang.org/grpc/serviceconfig"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// State is what the resolver of one channel last learned about its
// target, for the application to read (Builder.State).
type State struct {
	// Target is the channel's target, as grpc-go parsed it.
	Target string
	// Addresses are the addresses last given to the channel.
	Addresses []string
	// Choice is the index, in the published list, of the choice whose
	// service config the channel uses; -1 when it uses none.
	Choice int
	// ServiceConfig is the service config (JSON) last given to the channel:
	// the chosen choice's, Options.DefaultServiceConfig, "{}" when a
	// published config was withdrawn, or "" when the channel uses its own
	// default.
	ServiceConfig string
	// Config says where ServiceConfig comes from, by gRFC A21: "published"
	// (a chosen choice), "default" (Options.DefaultServiceConfig), "empty"
	// ({} in place of a withdrawn config), "none" (the channel's own
	// default), "failed" (an invalid record on a new channel, which
	// refuses it), or "unset" (nothing given yet).
	Config string
	// Reason says why: which choice matched and how, why none did, or why
	// a record was rejected.
	Reason string
	// TTL is the shortest TTL of the last answers.
	TTL time.Duration
	// Bucket is the canary bucket the choices were matched with.
	Bucket int
	// Resolved is when the last resolution finished; NextRefresh is when
	// the next one is due.
	Resolved, NextRefresh time.Time
	// Updated is when this state last changed.
	Updated time.Time
	// LastError is the problem of the last resolution (a failed lookup, an
	// invalid record, a state the channel refused), or nil.
	LastError error
	// Problems counts the resolutions that had a problem, since the
	// channel started, by kind: "txt_lookup" (the TXT lookup failed),
	// "invalid_record" (the record, or the chosen config, is invalid),
	// "channel_refused" (the channel refused the update), "no_addresses"
	// (no address lookup answered), "bogus" (an answer failed DNSSEC
	// validation: Options.TrustAnchors; a lookup problem too).
	Problems map[string]uint64
}

// outcome is what the TXT answer of one resolution means.
type outcome struct {
	ev event
	// pr is the chosen config as grpc-go parsed it (evChosen).
	pr     *grpcsc.ParseResult
	reason string // for logs and State
	seq    int    // tells outcomes apart, so each is logged once
}

// dnsResolver resolves one target for one channel: the I/O shell around
// serviceconfig.ChooseRecords (what a record means) and channelConfig (what the
// channel does with that, gRFC A21).
type dnsResolver struct {
	b          *Builder
	cfg        *config
	key        string
	t          target
	cc         grpcresolver.ClientConn
	client     dnsClient
	sel        sc.Client
	wantConfig bool
	log        *slog.Logger
	defaultPR  *grpcsc.ParseResult
	headers    *ruleHolder
	// names are the names the host is asked as, in order (the search
	// list); hostsFile is the hosts file asked first, or "".
	names     []string
	hostsFile string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	rn     chan struct{}

	// Owned by the watch goroutine (or Build, before it starts).
	conf     channelConfig       // the config the channel was given
	pr       *grpcsc.ParseResult // conf as grpc-go parsed it
	addrs    []string            // the addresses the channel was given
	accepted bool                // the channel accepted the last state
	// famAddrs holds the addresses each family (A, AAAA) last gave, so a
	// family whose lookup fails on re-resolution keeps its addresses.
	famAddrs map[uint16][]string
	emptyPR  *grpcsc.ParseResult
	lastBad  string // the last invalid-record message logged
	// intercepted says whether the channel has the header interceptors
	// (it was created with the Builder's DialOptions).
	intercepted bool
	// headerGap is set while the config has headerExtraction rules that
	// no interceptor applies (the channel has no interceptors).
	headerGap error
	// name is the name the current resolution asks: where the addresses
	// are looked up and, with the _grpc_config. prefix, the config.
	name      string
	seq       int // outcomes evaluated
	loggedSeq int // the last outcome logged

	mu    sync.Mutex
	state State
}

// ResolveNow asks for a re-resolution; it happens at most once per
// MinResolveNowInterval after the previous one started.
func (d *dnsResolver) ResolveNow(grpcresolver.ResolveNowOptions) {
	select {
	case d.rn <- struct{}{}:
	default:
	}
}

// Close stops the resolver and waits for its goroutines, in-flight queries
// included.
func (d *dnsResolver) Close() {
	d.cancel()
	d.wg.Wait()
	d.b.remove(d)
}

// watch resolves, then waits for the refresh time (TTL-based after a
// success, backoff after a failure) or a rate-limited ResolveNow.
func (d *dnsResolver) watch() {
	defer d.wg.Done()
	retries := 0
	for {
		start := time.Now()
		refresh, failed := d.resolve()
		if d.ctx.Err() != nil {
			return
		}
		wait := refresh
		if failed {
			// Retry with backoff, but never later than the TTL says the
			// answers that did arrive expire.
			wait = d.cfg.backoff(retries)
			if refresh > 0 {
				wait = min(wait, refresh)
			}
			retries++
		} else {
			retries = 0
		}
		if !d.wait(start, wait) {
			return
		}
	}
}

// wait waits until the next resolution is due: wait after this one ended,
// or earlier when the channel asks (ResolveNow), but not before
// MinResolveNowInterval after start. It returns false when the resolver
// is closed.
func (d *dnsResolver) wait(start time.Time, wait time.Duration) bool {
	next := time.Now().Add(wait)
	d.setState(func(s *State) { s.NextRefresh = next })
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-d.rn:
			if at := start.Add(d.cfg.MinResolveNowInterval); at.Before(next) {
				next = at
				timer.Reset(time.Until(at))
				d.setState(func(s *State) { s.NextRefresh = next })
			}
		}
	}
}

// lookupResult is one of the parallel lookups of a resolution.
type lookupResult struct {
	qtype uint16
	ans   *answer
	err   error
}

// resolution is one resolution in progress: the lookups started, the
// answers in so far, and what the TXT answer means.
type resolution struct {
	qtypes  []uint16
	results chan lookupResult
	got     map[uint16]lookupResult
	out     outcome
	// budget fires TXTBudget after the first addresses arrived.
	budget    *time.Timer
	budgetOut bool
	// updateErr is the channel's verdict on the last state given.
	updateErr error
}

// budgetC is the budget's channel, nil (never ready) before it starts.
func (r *resolution) budgetC() <-chan time.Time {
	if r.budget == nil {
		return nil
	}
	return r.budget.C
}

// complete reports whether every lookup has answered.
func (r *resolution) complete() bool { return len(r.got) == len(r.qtypes) }

// resolve runs one resolution. A host the hosts file lists takes its
// addresses from there; otherwise the names of the search list are tried
// in turn until one has addresses (resolveName). A name that does not
// exist, or has no addresses, sends the search on; a failed lookup ends
// it, so that a nameserver in trouble never makes the channel use a
// different name's addresses.
func (d *dnsResolver) resolve() (time.Duration, bool) {
	if d.hostsFile != "" {
		addrs, err := lookupHosts(d.hostsFile, d.t.host)
		if err != nil {
			d.log.Warn("cannot read the hosts file; asking DNS", slog.String("file", d.hostsFile), slog.Any("error", err))
		}
		if len(addrs) > 0 {
			d.name = fqdn(d.t.host)
			preset := map[uint16]lookupResult{}
			for _, ip := range addrs {
				qt := typeA
				if ip.Is6() {
					qt = typeAAAA
				}
				lr := preset[qt]
				if lr.ans == nil {
					lr = lookupResult{qtype: qt, ans: &answer{name: d.name, server: d.hostsFile}}
				}
				lr.ans.addrs = append(lr.ans.addrs, ip)
				preset[qt] = lr
			}
			for _, qt := range []uint16{typeA, typeAAAA} {
				if _, ok := preset[qt]; !ok {
					preset[qt] = lookupResult{qtype: qt, ans: &answer{name: d.name, server: d.hostsFile}}
				}
			}
			refresh, failed, _ := d.resolveName(preset, true)
			return refresh, failed
		}
	}
	for i, name := range d.names {
		d.name = name
		refresh, failed, notFound := d.resolveName(nil, i == len(d.names)-1)
		if !notFound {
			return refresh, failed
		}
	}
	return 0, true // not reached: the last name is never notFound
}

// resolveName resolves d.name: A, AAAA and TXT in parallel, except the
// lookups preset answers; the addresses go to the channel once the other
// lookups are in too, or TXTBudget after the first addresses arrived; a
// late answer updates the channel again. It returns the refresh interval
// of the answers (0 when none arrived), and whether the resolution failed
// (and should be retried with backoff). When the name has no addresses
// and is not the last to try, it reports notFound and nothing else.
func (d *dnsResolver) resolveName(preset map[uint16]lookupResult, last bool) (refresh time.Duration, failed, notFound bool) {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	r := d.startLookups(ctx, preset)
	defer func() {
		if r.budget != nil {
			r.budget.Stop()
		}
	}()
	for {
		addrs := d.addresses(r.got)
		a, doneA := r.got[typeA]
		aaaa, doneAAAA := r.got[typeAAAA]
		if doneA && doneAAAA && len(addrs) == 0 {
			if searchOn(a, aaaa, last) {
				return 0, false, true
			}
			d.noAddresses(r.got)
			return 0, true, false
		}
		if len(addrs) > 0 && !d.holdBack(r) {
			r.updateErr = d.deliver(addrs, r.out)
		}
		if r.complete() {
			break
		}
		select {
		case <-d.ctx.Done():
			return 0, false, false
		case <-r.budgetC():
			r.budgetOut = true
		case lr := <-r.results:
			r.got[lr.qtype] = lr
			if lr.qtype == typeTXT {
				d.seq++
				r.out = d.evaluate(lr.ans, lr.err)
				r.out.seq = d.seq
			}
		}
	}
	refresh, failed = d.finish(r)
	return refresh, failed, false
}

// disabledOutcome is every resolution's outcome for the service config
// of a channel that disabled it: no TXT lookup, no config (gRFC A21,
// "Service Config Channel Arguments").
var disabledOutcome = outcome{ev: event{kind: evNone}, reason: "service config disabled for this channel (grpc.WithDisableServiceConfig)"}

// startLookups starts the lookups of one resolution.
func (d *dnsResolver) startLookups(ctx context.Context, preset map[uint16]lookupResult) *resolution {
	r := &resolution{qtypes: []uint16{typeA, typeAAAA}, got: map[uint16]lookupResult{},
		out: outcome{ev: event{kind: evPending}, reason: "addresses delivered; the TXT answer is not in yet"}}
	if d.wantConfig {
		r.qtypes = append(r.qtypes, typeTXT)
	} else {
		r.out = disabledOutcome
	}
	r.results = make(chan lookupResult, len(r.qtypes))
	for _, qt := range r.qtypes {
		if lr, ok := preset[qt]; ok {
			r.got[qt] = lr
			continue
		}
		name := d.name
		if qt == typeTXT {
			name = sc.OwnerPrefix + d.name
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			a, err := d.client.lookup(ctx, name, qt)
			r.results <- lookupResult{qt, a, err}
		}()
	}
	return r
}

// holdBack reports whether addresses that are in must wait for the other
// answers, and starts the TXT budget when they start waiting.
func (d *dnsResolver) holdBack(r *resolution) bool {
	if r.budgetOut || r.complete() {
		return false
	}
	if d.conf.given() {
		// A running channel has addresses and a config: waiting for every
		// answer (each bounded by QueryTimeout) costs it nothing, where
		// delivering part of them would drop the connections of the family
		// not in yet.
		return true
	}
	// The budget starts when the first addresses are in: it bounds how
	// long the TXT answer (and the other address family) may hold them.
	if r.budget == nil {
		r.budget = time.NewTimer(d.cfg.TXTBudget)
	}
	return true
}

// noAddresses reports a resolution that found no address at all.
func (d *dnsResolver) noAddresses(got map[uint16]lookupResult) {
	err := d.addressError(got)
	d.log.Warn("resolution failed: no addresses", slog.Any("error", err))
	d.cc.ReportError(err)
	d.headers.markReady()
	// The channel has heard of trouble: the next good state must reach it
	// even if it equals the last one.
	d.accepted = false
	d.setState(func(s *State) {
		s.LastError, s.Resolved = err, time.Now()
		s.count("no_addresses")
	})
}

// count counts a problem of kind in s.Problems.
func (s *State) count(kind string) {
	if s.Problems == nil {
		s.Problems = map[string]uint64{}
	}
	s.Problems[kind]++
}

// finish records what a complete resolution found, and returns the
// refresh interval and whether to retry with backoff.
func (d *dnsResolver) finish(r *resolution) (time.Duration, bool) {
	d.keepAddresses(r.got)
	ttl, known := shortestTTL(r.got)
	lastErr := d.lastError(r)
	d.setState(func(s *State) {
		s.TTL, s.Resolved, s.LastError = ttl, time.Now(), lastErr
		switch {
		case r.out.ev.kind == evLookupFailed:
			s.count("txt_lookup")
		case r.out.ev.kind == evInvalid:
			s.count("invalid_record")
		}
		if r.updateErr != nil {
			s.count("channel_refused")
		}
		for _, lr := range r.got {
			if isBogus(lr.err) {
				s.count("bogus")
				break
			}
		}
	})
	// A failed TXT lookup, an update the channel refused (an invalid record
	// on a new channel), or failed lookups of both address families are
	// retried with backoff; a failed lookup of one family alone is not: the
	// other one serves, and the failed one keeps its last addresses.
	a, aaaa := r.got[typeA], r.got[typeAAAA]
	failed := r.updateErr != nil || (d.wantConfig && r.got[typeTXT].err != nil) ||
		(a.err != nil && aaaa.err != nil) // served from last time's addresses
	return d.cfg.refresh(ttl, known), failed
}

// keepAddresses keeps the addresses of each family whose lookup in got
// answered, for a later resolution whose lookup of it fails (see
// addresses).
func (d *dnsResolver) keepAddresses(got map[uint16]lookupResult) {
	for _, qt := range []uint16{typeA, typeAAAA} {
		if lr := got[qt]; lr.err == nil {
			if d.famAddrs == nil {
				d.famAddrs = map[uint16][]string{}
			}
			d.famAddrs[qt] = d.familyAddresses(lr.ans)
		}
	}
}

// shortestTTL is the shortest TTL of the answers in got, and whether one
// of them had a TTL.
func shortestTTL(got map[uint16]lookupResult) (ttl time.Duration, known bool) {
	for _, lr := range got {
		if lr.err == nil && lr.ans.hasTTL && (!known || lr.ans.ttl < ttl) {
			ttl, known = lr.ans.ttl, true
		}
	}
	return ttl, known
}

// lastError is the State.LastError a complete resolution r leaves: the
// record's problem, else the channel's refusal of the update, else a
// failed address lookup, else the header rules the channel cannot apply
// (headerGap).
func (d *dnsResolver) lastError(r *resolution) error {
	var err error
	switch {
	case r.out.ev.kind == evLookupFailed || r.out.ev.kind == evInvalid:
		// Also when it made the channel refuse the update: the record's
		// problem is what the application needs to see.
		err = r.out.ev.err
	case r.updateErr != nil:
		err = fmt.Errorf("the channel refused the update: %w", r.updateErr)
	}
	return cmp.Or(err, r.got[typeA].err, r.got[typeAAAA].err, d.headerGap)
}

// addresses lists the addresses found so far, A records first. A family
// whose lookup failed keeps the addresses it gave last time: a failed
// lookup says nothing about them, unlike an answer without any.
func (d *dnsResolver) addresses(got map[uint16]lookupResult) []string {
	var out []string
	for _, qt := range []uint16{typeA, typeAAAA} {
		r, ok := got[qt]
		if !ok {
			continue
		}
		fam := d.famAddrs[qt]
		if r.err == nil {
			fam = d.familyAddresses(r.ans)
		}
		for _, a := range fam {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// familyAddresses lists the addresses of an A or AAAA answer.
func (d *dnsResolver) familyAddresses(ans *answer) []string {
	var out []string
	for _, ip := range ans.addrs {
		if a := d.t.addr(ip.Unmap()); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// searchOn reports whether the search for a host's addresses goes on to
// the next name of the search list after a name whose address lookups a
// and aaaa found no address: when both lookups answered (the name does
// not exist, or has no address records) and the name is not the last. A
// failed lookup ends the search, so that a nameserver in trouble never
// makes a client use a different name's addresses.
func searchOn(a, aaaa lookupResult, last bool) bool {
	return !last && a.err == nil && aaaa.err == nil
}

// addressError explains why a host has no addresses.
func (d *dnsResolver) addressError(got map[uint16]lookupResult) error {
	return addressError(d.names, d.name, d.cfg.ResolvConf, got)
}

// addressError explains why a host has no addresses: name, of names (the
// search list of resolvConf), was the last asked, and its address lookups
// are got.
func addressError(names []string, name, resolvConf string, got map[uint16]lookupResult) error {
	err := nameError(name, got)
	if i := slices.Index(names, name); i > 0 {
		err = fmt.Errorf("%w (and %s, before it in the search list of %s, has no addresses either)", err, strings.Join(names[:i], ", "), resolvConf)
	}
	return err
}

// nameError explains why name has no addresses.
func nameError(name string, got map[uint16]lookupResult) error {
	a, aaaa := got[typeA], got[typeAAAA]
	name = strings.TrimSuffix(name, ".")
	switch {
	case a.err != nil && aaaa.err != nil:
		return fmt.Errorf("dnsconfig: resolving %s: %v; %v", name, a.err, aaaa.err)
	case a.err == nil && a.ans.nxdomain:
		return fmt.Errorf("dnsconfig: %s does not exist (NXDOMAIN from %s)", name, a.ans.server)
	case a.err != nil:
		return fmt.Errorf("dnsconfig: %s has no AAAA records and its A lookup failed: %v", name, a.err)
	case aaaa.err != nil:
		return fmt.Errorf("dnsconfig: %s has no A records and its AAAA lookup failed: %v", name, aaaa.err)
	}
	return fmt.Errorf("dnsconfig: %s has no A or AAAA records (asked %s)", name, a.ans.server)
}

// evaluate turns a TXT answer into what it means for the channel:
// serviceconfig.ChooseRecords decides, and grpc-go must be able to parse the
// chosen config.
func (d *dnsResolver) evaluate(a *answer, err error) outcome {
	owner := sc.OwnerPrefix + strings.TrimSuffix(d.name, ".")
	if err != nil {
		if d.ctx.Err() != nil {
			return outcome{ev: event{kind: evPending}}
		}
		return outcome{ev: event{kind: evLookupFailed, err: fmt.Errorf("dnsconfig: TXT lookup of %s: %w", owner, err)},
			reason: "the TXT lookup failed: " + err.Error()}
	}
	o := sc.ChooseRecords(sc.Answer{Owner: owner, NXDomain: a.nxdomain, Records: a.txt}, d.sel)
	return d.outcomeOf(o, owner)
}

// outcomeOf maps a serviceconfig outcome to the event the channel's
// config follows, parsing a chosen config with grpc-go.
func (d *dnsResolver) outcomeOf(o sc.Outcome, owner string) outcome {
	ev, reason := eventOf(o, owner)
	if ev.kind != evChosen {
		return outcome{ev: ev, reason: reason}
	}
	if d.conf.kind == configPublished && d.conf.json == ev.json {
		return outcome{ev: ev, pr: d.pr, reason: reason}
	}
	pr := d.cc.ParseServiceConfig(ev.json)
	if pr.Err != nil {
		ev, reason = invalidEvent(owner, fmt.Errorf("grpc-go rejects choice %d's service config: %v", o.Choice, pr.Err))
		return outcome{ev: ev, reason: reason}
	}
	return outcome{ev: ev, pr: pr, reason: reason}
}

// eventOf is the event of a serviceconfig outcome for the record at
// owner, and the reason to show for it.
func eventOf(o sc.Outcome, owner string) (event, string) {
	switch o.Result {
	case sc.NoConfig:
		return event{kind: evNone}, o.Reason
	case sc.Invalid:
		return invalidEvent(owner, o.Err)
	}
	return event{kind: evChosen, json: string(o.GrpcGoConfig), choice: o.Choice}, o.Reason
}

func invalidEvent(owner string, err error) (event, string) {
	return event{kind: evInvalid, err: fmt.Errorf("dnsconfig: the record at %s is invalid: %w", owner, err)}, "invalid record: " + err.Error()
}

// deliver gives the channel addrs and the config for o (by gRFC A21,
// channelConfig.next), unless it already has exactly that. It returns the
// channel's verdict.
func (d *dnsResolver) deliver(addrs []string, o outcome) error {
	next, rule := d.conf.next(o.ev, d.defaultPR != nil)
	if o.seq == 0 || o.seq != d.loggedSeq {
		d.loggedSeq = o.seq
		d.logOutcome(o, next, rule)
	}
	reason := d.reason(o, next, rule)
	if d.conf.given() && d.accepted && next.sameConfig(d.conf) && sameSet(addrs, d.addrs) {
		// The channel has this already; another choice may have the same
		// config, which State and the logs still follow.
		d.setState(func(s *State) {
			s.Reason, s.Choice, s.Config = reason, next.choice, next.kind.String()
			s.LastError = cmp.Or(o.ev.err, s.LastError)
		})
		d.conf = next
		return nil
	}
	pr, js := d.parsed(next, o), d.configJSON(next)
	st := grpcresolver.State{ServiceConfig: pr}
	for _, a := range addrs {
		addr := grpcresolver.Address{Addr: a}
		st.Addresses = append(st.Addresses, addr)
		st.Endpoints = append(st.Endpoints, grpcresolver.Endpoint{Addresses: []grpcresolver.Address{addr}})
	}
	// State first: whoever sees the channel's update must find it there,
	// the record's problem included (finish completes LastError).
	d.setState(func(s *State) {
		s.Addresses = slices.Clone(addrs)
		s.Choice = next.choice
		s.ServiceConfig = js
		s.Config = next.kind.String()
		s.Reason = reason
		s.LastError = cmp.Or(o.ev.err, s.LastError)
	})
	err := d.cc.UpdateState(st)
	if err == nil && (js != d.configJSON(d.conf) || !d.accepted) {
		d.updateHeaderRules(js)
	}
	d.headers.markReady()
	d.conf, d.pr, d.addrs, d.accepted = next, pr, addrs, err == nil
	return err
}

// parsed is the config of c as the channel gets it.
func (d *dnsResolver) parsed(c channelConfig, o outcome) *grpcsc.ParseResult {
	switch c.kind {
	case configPublished:
		return cmp.Or(o.pr, d.pr)
	case configDefault:
		return d.defaultPR
	case configEmpty:
		if d.emptyPR == nil {
			d.emptyPR = d.cc.ParseServiceConfig("{}")
		}
		return d.emptyPR
	case configFailed:
		return &grpcsc.ParseResult{Err: c.err}
	}
	return nil
}

// configJSON is the config of c as State shows it: "" for none.
func (d *dnsResolver) configJSON(c channelConfig) string {
	switch c.kind {
	case configPublished:
		return c.json
	case configDefault:
		return d.cfg.defaultConfig
	case configEmpty:
		return "{}"
	}
	return ""
}

// reason is State.Reason for outcome o, which made the config next.
func (d *dnsResolver) reason(o outcome, next channelConfig, rule rule) string {
	switch {
	case rule == ruleKeepPrevious || rule == ruleKeepEarly || o.ev.kind == evLookupFailed && d.conf.given():
		if next.kind == configNone {
			return "keeping the channel's default config: " + o.reason
		}
		return "keeping the previous config: " + o.reason
	case rule == ruleUseDefault:
		return "using Options.DefaultServiceConfig: " + o.reason
	}
	return o.reason
}

// logOutcome logs a config change, and an invalid record or failed TXT
// lookup the first time it is seen.
func (d *dnsResolver) logOutcome(o outcome, next channelConfig, rule rule) {
	switch o.ev.kind {
	case evInvalid:
		d.logInvalid(o.ev.err, rule)
		return
	case evLookupFailed:
		d.log.Warn("TXT lookup failed: keeping the current service config", slog.Any("error", o.ev.err))
		return
	}
	d.lastBad = ""
	if d.conf.given() && next.sameConfig(d.conf) {
		if next.choice != d.conf.choice && next.choice >= 0 {
			d.log.Info("service config choice changed, same config", slog.Int("choice", next.choice),
				slog.Int("previous", d.conf.choice), slog.String("reason", o.reason))
		}
		return
	}
	if o.ev.kind == evPending && !d.conf.given() {
		d.log.Debug("addresses delivered before the TXT answer", slog.Duration("budget", d.cfg.TXTBudget))
		return
	}
	d.log.Info("service config changed", slog.Int("choice", next.choice), slog.String("reason", o.reason),
		slog.String("config", d.configJSON(next)))
}

// logInvalid logs an invalid record, once until another one comes, with
// the gRFC A21 rule applied.
func (d *dnsResolver) logInvalid(err error, rule rule) {
	if err.Error() == d.lastBad {
		return
	}
	d.lastBad = err.Error()
	switch rule {
	case ruleKeepPrevious:
		d.log.Warn("ignoring an invalid service config record: keeping the previous config (gRFC A21)",
			slog.Int("choice", d.conf.choice), slog.Any("error", err))
	case ruleKeepEarly:
		d.log.Warn("ignoring an invalid service config record: the channel got its addresses before it (TXT budget) and keeps the config it runs on (gRFC A21)",
			slog.Int("choice", d.conf.choice), slog.Any("error", err))
	case ruleUseDefault:
		d.log.Warn("invalid service config record on a new channel: using Options.DefaultServiceConfig (gRFC A21)", slog.Any("error", err))
	default:
		d.log.Error("invalid service config record on a new channel and no default: the channel fails until the record is fixed (gRFC A21)", slog.Any("error", err))
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func (d *dnsResolver) setState(f func(*State)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.state)
	d.state.Updated = time.Now()
}

func (d *dnsResolver) snapshot() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.state
	s.Addresses = slices.Clone(s.Addresses)
	s.Problems = maps.Clone(s.Problems)
	return s
}

// updateHeaderRules publishes the headerExtraction rules of the config the
// channel now uses to the interceptors. The config was validated, so its
// rules parse.
func (d *dnsResolver) updateHeaderRules(config string) {
	var rules *extract.Rules
	if config != "" {
		r, err := extract.FromServiceConfig([]byte(config))
		if err != nil {
			d.log.Warn("cannot read the headerExtraction rules of the service config", slog.Any("error", err))
		}
		rules = r
	}
	d.headers.rules.Store(rules)
	d.headerGap = nil
	if rules.HasRules() && !d.intercepted {
		d.headerGap = fmt.Errorf("dnsconfig: the service config of %s has headerExtraction rules, but the channel has no header interceptors, so no header is added: "+
			"resolver.Register cannot add interceptors (grpc-go has no public API for it); create the channel with grpc.NewClient(target, builder.DialOptions()...), "+
			"builder being the *resolver.Builder that Register or NewBuilder returned", d.key)
		d.log.Error("headerExtraction rules cannot be applied: the channel has no header interceptors; create it with Builder.DialOptions()", slog.Any("error", d.headerGap))
	}
}
