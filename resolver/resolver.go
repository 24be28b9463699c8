package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
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
}

// outcomeKind is what a TXT lookup means for the channel's config.
type outcomeKind int

const (
	outPending outcomeKind = iota // the TXT answer has not arrived
	outFailed                     // the TXT lookup failed: keep what we have
	outNone                       // no config: no record, NXDOMAIN, no choice matched
	outInvalid                    // the record or the chosen config is invalid
	outChosen                     // a valid choice was selected
)

// outcome is the meaning of one TXT answer.
type outcome struct {
	kind   outcomeKind
	index  int                 // outChosen
	json   string              // outChosen: the compact service config
	pr     *grpcsc.ParseResult // outChosen
	reason string              // for logs and State
	err    error               // outFailed, outInvalid
	seq    int                 // tells outcomes apart, so each is logged once
}

// sent is what the channel was last given.
type sent struct {
	any   bool
	ok    bool // UpdateState accepted it
	addrs []string
	pr    *grpcsc.ParseResult
	// key identifies pr: "" nil, "default", "empty", "error:…", or
	// "published:" + JSON.
	key    string
	choice int
	json   string
}

// dnsResolver resolves one target for one channel.
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

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	rn     chan struct{}

	// Owned by the watch goroutine (or Build, before it starts).
	last      sent
	hasResult bool // a TXT answer (a config, or none) has been applied
	// famAddrs holds the addresses each family (A, AAAA) last gave, so a
	// family whose lookup fails on re-resolution keeps its addresses.
	famAddrs  map[uint16][]string
	emptyPR   *grpcsc.ParseResult
	lastBad   string // the last invalid-record message logged
	seq       int    // outcomes evaluated
	loggedSeq int    // the last outcome logged

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
		next := time.Now().Add(wait)
		d.setState(func(s *State) { s.NextRefresh = next })
		timer := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-d.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
				break waiting
			case <-d.rn:
				if at := start.Add(d.cfg.MinResolveNowInterval); at.Before(next) {
					next = at
					timer.Reset(time.Until(at))
					d.setState(func(s *State) { s.NextRefresh = next })
				}
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

// resolve runs one resolution: A, AAAA and TXT in parallel; the addresses
// go to the channel once the other lookups are in too, or TXTBudget after
// the first addresses arrived; a late answer updates the channel again. It
// returns the refresh interval of the answers (0 when none arrived), and
// whether the resolution failed (and should be retried with backoff).
func (d *dnsResolver) resolve() (time.Duration, bool) {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	qtypes := []uint16{dns.TypeA, dns.TypeAAAA}
	if d.wantConfig {
		qtypes = append(qtypes, dns.TypeTXT)
	}
	results := make(chan lookupResult, len(qtypes))
	for _, qt := range qtypes {
		name := d.t.host
		if qt == dns.TypeTXT {
			name = sc.OwnerPrefix + d.t.host
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			a, err := d.client.lookup(ctx, name, qt)
			results <- lookupResult{qt, a, err}
		}()
	}
	// The budget starts when the first addresses are in: it bounds how long
	// the TXT answer (and the other address family) may hold them back.
	var budget <-chan time.Time
	var (
		got       = map[uint16]lookupResult{}
		budgetOut bool
		out       = outcome{kind: outPending, reason: "addresses delivered; the TXT answer is not in yet"}
		updateErr error
	)
	if !d.wantConfig {
		out = outcome{kind: outNone, reason: "service config disabled for this channel (grpc.WithDisableServiceConfig)"}
	}
	for len(got) < len(qtypes) {
		select {
		case <-d.ctx.Done():
			return 0, false
		case <-budget:
			budgetOut = true
		case r := <-results:
			got[r.qtype] = r
			if r.qtype == dns.TypeTXT {
				out = d.evaluate(r.ans, r.err)
				d.seq++
				out.seq = d.seq
			}
		}
		_, doneA := got[dns.TypeA]
		_, doneAAAA := got[dns.TypeAAAA]
		addrs := d.addresses(got)
		if doneA && doneAAAA && len(addrs) == 0 {
			err := d.addressError(got)
			d.log.Warn("resolution failed: no addresses", slog.Any("error", err))
			d.cc.ReportError(err)
			d.headers.markReady()
			// The channel has heard of trouble: the next good state must
			// reach it even if it equals the last one.
			d.last.ok = false
			d.setState(func(s *State) { s.LastError, s.Resolved = err, time.Now() })
			return 0, true
		}
		if len(addrs) == 0 {
			continue
		}
		if !budgetOut && len(got) < len(qtypes) {
			if d.last.any {
				// A running channel has addresses and a config: waiting for
				// every answer (each bounded by QueryTimeout) costs it
				// nothing, where delivering part of them would drop the
				// connections of the family not in yet.
				continue
			}
			if budget == nil {
				t := time.NewTimer(d.cfg.TXTBudget)
				defer t.Stop()
				budget = t.C
			}
			continue
		}
		updateErr = d.deliver(addrs, out)
	}

	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		if r := got[qt]; r.err == nil {
			if d.famAddrs == nil {
				d.famAddrs = map[uint16][]string{}
			}
			d.famAddrs[qt] = d.familyAddresses(r.ans)
		}
	}
	ttl, known := time.Duration(0), false
	for _, r := range got {
		if r.err == nil && r.ans.hasTTL && (!known || r.ans.ttl < ttl) {
			ttl, known = r.ans.ttl, true
		}
	}
	var lastErr error
	txt := got[dns.TypeTXT]
	switch {
	case out.kind == outFailed || out.kind == outInvalid:
		// Also when it made the channel refuse the update: the record's
		// problem is what the application needs to see.
		lastErr = out.err
	case updateErr != nil:
		lastErr = fmt.Errorf("the channel refused the update: %w", updateErr)
	}
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		if r := got[qt]; r.err != nil && lastErr == nil {
			lastErr = r.err
		}
	}
	d.setState(func(s *State) {
		s.TTL, s.Resolved, s.LastError = ttl, time.Now(), lastErr
	})
	// A failed TXT lookup, an update the channel refused (an invalid record
	// on a new channel), or failed lookups of both address families are
	// retried with backoff; a failed lookup of one family alone is not: the
	// other one serves, and the failed one keeps its last addresses.
	failed := updateErr != nil || (d.wantConfig && txt.err != nil) ||
		(got[dns.TypeA].err != nil && got[dns.TypeAAAA].err != nil) // served from last time's addresses
	return d.cfg.refresh(ttl, known), failed
}

// addresses lists the addresses found so far, A records first. A family
// whose lookup failed keeps the addresses it gave last time: a failed
// lookup says nothing about them, unlike an answer without any.
func (d *dnsResolver) addresses(got map[uint16]lookupResult) []string {
	var out []string
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
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
	for _, rr := range ans.rrs {
		var ip netip.Addr
		switch rr := rr.(type) {
		case *dns.A:
			ip, _ = netip.AddrFromSlice(rr.A.To4())
		case *dns.AAAA:
			ip, _ = netip.AddrFromSlice(rr.AAAA.To16())
		}
		if !ip.IsValid() {
			continue
		}
		if a := d.t.addr(ip.Unmap()); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// addressError explains why a host has no addresses.
func (d *dnsResolver) addressError(got map[uint16]lookupResult) error {
	a, aaaa := got[dns.TypeA], got[dns.TypeAAAA]
	switch {
	case a.err != nil && aaaa.err != nil:
		return fmt.Errorf("dnsconfig: resolving %s: %v; %v", d.t.host, a.err, aaaa.err)
	case a.err == nil && a.ans.nxdomain:
		return fmt.Errorf("dnsconfig: %s does not exist (NXDOMAIN from %s)", d.t.host, a.ans.server)
	case a.err != nil:
		return fmt.Errorf("dnsconfig: %s has no AAAA records and its A lookup failed: %v", d.t.host, a.err)
	case aaaa.err != nil:
		return fmt.Errorf("dnsconfig: %s has no A records and its AAAA lookup failed: %v", d.t.host, aaaa.err)
	}
	return fmt.Errorf("dnsconfig: %s has no A or AAAA records (asked %s)", d.t.host, a.ans.server)
}

// evaluate turns a TXT answer into what it means for the channel, using
// package serviceconfig for every rule.
func (d *dnsResolver) evaluate(a *answer, err error) outcome {
	owner := sc.OwnerPrefix + d.t.host
	if err != nil {
		if d.ctx.Err() != nil {
			return outcome{kind: outPending}
		}
		return outcome{kind: outFailed, err: fmt.Errorf("dnsconfig: TXT lookup of %s: %w", owner, err),
			reason: "the TXT lookup failed: " + err.Error()}
	}
	if a.nxdomain {
		return outcome{kind: outNone, reason: fmt.Sprintf("no service config published: %s does not exist (NXDOMAIN)", owner)}
	}
	records := make([][]string, 0, len(a.rrs))
	for _, rr := range a.rrs {
		if t, ok := rr.(*dns.TXT); ok {
			records = append(records, txtStrings(t))
		}
	}
	if len(records) == 0 {
		return outcome{kind: outNone, reason: fmt.Sprintf("no service config published: %s has no TXT records", owner)}
	}
	value, err := sc.DecodeTXT(records)
	if errors.Is(err, sc.ErrNoConfig) {
		return outcome{kind: outNone, reason: fmt.Sprintf("no service config published: no TXT record at %s starts with grpc_config=", owner)}
	}
	invalid := func(err error) outcome {
		return outcome{kind: outInvalid, err: fmt.Errorf("dnsconfig: the record at %s is invalid: %w", owner, err), reason: "invalid record: " + err.Error()}
	}
	if err != nil {
		return invalid(err)
	}
	ch, err := sc.ParseChoices(value)
	if err != nil {
		return invalid(err)
	}
	i := ch.Select(d.sel)
	if i < 0 {
		why := d.skipped(ch, len(ch.List))
		return outcome{kind: outNone, reason: fmt.Sprintf("no choice matches this client (%s): %s", d.describeClient(), strings.Join(why, "; "))}
	}
	js, err := chosenConfig(ch, i)
	if err != nil {
		return invalid(err)
	}
	// Why the chosen one, and why not the earlier ones.
	why := append(d.skipped(ch, i), ch.Why(d.sel, i).String())
	reason := fmt.Sprintf("%s (%s)", strings.Join(why, "; "), d.describeClient())
	if d.last.key == "published:"+js {
		return outcome{kind: outChosen, index: i, json: js, pr: d.last.pr, reason: reason}
	}
	pr := d.cc.ParseServiceConfig(js)
	if pr.Err != nil {
		return invalid(fmt.Errorf("grpc-go rejects choice %d's service config: %v", i, pr.Err))
	}
	return outcome{kind: outChosen, index: i, json: js, pr: pr, reason: reason}
}

// maxExplained is how many skipped choices a reason explains one by one.
// A record may hold thousands; a sentence for each, on every resolution,
// would cost many times the record.
const maxExplained = 8

// skipped explains why the first n choices did not match, the first
// maxExplained of them one by one.
func (d *dnsResolver) skipped(ch *sc.Choices, n int) []string {
	why := make([]string, 0, min(n, maxExplained)+1)
	for j := range min(n, maxExplained) {
		why = append(why, ch.Why(d.sel, j).String())
	}
	if n > maxExplained {
		why = append(why, fmt.Sprintf("choices %d to %d: skipped too", maxExplained, n-1))
	}
	return why
}

// chosenConfig validates the service config of choice i, the one this
// client selected (gRFC A21: only it affects validation), and returns it in
// the form grpc-go's parser reads as the spec means (sc.Choices.GrpcGoConfig).
//
// The rule (docs/rules.md): the resolver fails a record only when the spec
// makes its chosen config invalid (an error of package serviceconfig), or
// when grpc-go cannot take it even in that form (a policy the program has
// not registered). It never fails a channel on a config that the spec and
// grpc-go both accept; TestSpecAndGrpcGoAcceptedConfigsPass checks it on
// every config of the corpus and of the peers' test suites.
func chosenConfig(ch *sc.Choices, i int) (string, error) {
	if ds := ch.Validate(i); ds.HasErrors() {
		return "", fmt.Errorf("choice %d's service config: %w", i, ds.Err())
	}
	return string(ch.GrpcGoConfig(i)), nil
}

func (d *dnsResolver) describeClient() string {
	s := fmt.Sprintf("language %q, bucket %d, hostname %q", d.sel.Language, d.sel.Bucket, d.sel.Hostname)
	if len(d.sel.Params) > 0 {
		s += ", parameters " + sc.FormatParams(d.sel.Params)
	}
	return s
}

// configFor decides, by gRFC A21, which service config the channel gets
// for outcome o, given what it had.
func (d *dnsResolver) configFor(o outcome) sent {
	keep := sent{pr: d.last.pr, key: d.last.key, choice: d.last.choice, json: d.last.json}
	switch o.kind {
	case outChosen:
		d.hasResult = true
		return sent{pr: o.pr, key: "published:" + o.json, choice: o.index, json: o.json}
	case outNone:
		if d.wantConfig {
			d.hasResult = true
		}
		return d.noConfig()
	case outInvalid:
		// After a config, or after no config, keep what the channel uses
		// (gRFC A21). That includes a new channel that got its addresses
		// before this TXT answer (TXTBudget): it runs on its default
		// already, and failing it now would break calls that work, and
		// only when the answer happened to be slow.
		if d.hasResult || d.last.any {
			return keep
		}
		if d.defaultPR != nil {
			return sent{pr: d.defaultPR, key: "default", choice: -1, json: d.cfg.defaultConfig}
		}
		return sent{pr: &grpcsc.ParseResult{Err: o.err}, key: "error:" + o.err.Error(), choice: -1}
	default: // pending, failed
		if d.last.any {
			return keep
		}
		return d.noConfig()
	}
}

// noConfig is "no service config": the channel's default. Sending nil
// leaves grpc-go on whatever it applied last, so once a published config
// was in use the default must be sent explicitly: Options.DefaultServiceConfig,
// or the empty config.
func (d *dnsResolver) noConfig() sent {
	if d.defaultPR != nil {
		return sent{pr: d.defaultPR, key: "default", choice: -1, json: d.cfg.defaultConfig}
	}
	if strings.HasPrefix(d.last.key, "published:") || d.last.key == "empty" {
		if d.emptyPR == nil {
			d.emptyPR = d.cc.ParseServiceConfig("{}")
		}
		return sent{pr: d.emptyPR, key: "empty", choice: -1, json: "{}"}
	}
	return sent{choice: -1}
}

// deliver gives the channel addrs and the config for o, unless it already
// has exactly that. It returns the channel's verdict.
func (d *dnsResolver) deliver(addrs []string, o outcome) error {
	next := d.configFor(o)
	next.addrs = addrs
	if o.seq == 0 || o.seq != d.loggedSeq {
		d.loggedSeq = o.seq
		d.logOutcome(o, next)
	}
	reason := o.reason
	if (o.kind == outInvalid || o.kind == outFailed) && d.last.any && next.key == d.last.key {
		if d.last.key == "" {
			reason = "keeping the channel's default config: " + reason
		} else {
			reason = "keeping the previous config: " + reason
		}
	}
	if d.last.any && d.last.ok && next.key == d.last.key && sameSet(addrs, d.last.addrs) {
		// The channel has this already; another choice may have the same
		// config, which State and the logs still follow.
		d.setState(func(s *State) { s.Reason, s.Choice = reason, next.choice })
		d.last.choice = next.choice
		return nil
	}
	st := grpcresolver.State{ServiceConfig: next.pr}
	for _, a := range addrs {
		addr := grpcresolver.Address{Addr: a}
		st.Addresses = append(st.Addresses, addr)
		st.Endpoints = append(st.Endpoints, grpcresolver.Endpoint{Addresses: []grpcresolver.Address{addr}})
	}
	// State first: whoever sees the channel's update must find it there.
	d.setState(func(s *State) {
		s.Addresses = slices.Clone(addrs)
		s.Choice = next.choice
		s.ServiceConfig = next.json
		s.Reason = reason
	})
	err := d.cc.UpdateState(st)
	next.any, next.ok = true, err == nil
	if err == nil && (next.json != d.last.json || !d.last.ok) {
		d.updateHeaderRules(next.json)
	}
	d.headers.markReady()
	d.last = next
	return err
}

// logOutcome logs a config change, and an invalid record or failed TXT
// lookup the first time it is seen.
func (d *dnsResolver) logOutcome(o outcome, next sent) {
	switch o.kind {
	case outInvalid:
		msg := o.err.Error()
		if msg == d.lastBad {
			return
		}
		d.lastBad = msg
		switch {
		case next.key == d.last.key && d.hasResult:
			d.log.Warn("ignoring an invalid service config record: keeping the previous config (gRFC A21)",
				slog.Int("choice", d.last.choice), slog.Any("error", o.err))
		case next.key == d.last.key && d.last.any:
			d.log.Warn("ignoring an invalid service config record: the channel got its addresses before it (TXT budget) and keeps the config it runs on (gRFC A21)",
				slog.Int("choice", d.last.choice), slog.Any("error", o.err))
		case next.key == "default":
			d.log.Warn("invalid service config record on a new channel: using Options.DefaultServiceConfig (gRFC A21)", slog.Any("error", o.err))
		default:
			d.log.Error("invalid service config record on a new channel and no default: the channel fails until the record is fixed (gRFC A21)", slog.Any("error", o.err))
		}
		return
	case outFailed:
		d.log.Warn("TXT lookup failed: keeping the current service config", slog.Any("error", o.err))
		return
	}
	d.lastBad = ""
	if d.last.any && next.key == d.last.key {
		if next.choice != d.last.choice && next.choice >= 0 {
			d.log.Info("service config choice changed, same config", slog.Int("choice", next.choice),
				slog.Int("previous", d.last.choice), slog.String("reason", o.reason))
		}
		return
	}
	if o.kind == outPending && !d.last.any {
		d.log.Debug("addresses delivered before the TXT answer", slog.Duration("budget", d.cfg.TXTBudget))
		return
	}
	d.log.Info("service config changed", slog.Int("choice", next.choice), slog.String("reason", o.reason),
		slog.String("config", next.json))
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
}
