package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/backoff"

	"github.com/grpc-config-dns/grpc-config-dns/resolver/extract"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Options configure a Builder. The zero value is ready to use: language
// "go", this machine's hostname, a bucket drawn once per process, the
// nameservers of /etc/resolv.conf and the defaults below.
type Options struct {
	// Language is matched case-insensitively against a choice's
	// clientLanguage. Default "go".
	Language string
	// Hostname is matched exactly against a choice's clientHostname.
	// Default: os.Hostname().
	Hostname string
	// Bucket is the client's canary bucket, 1..100: a choice with
	// percentage p applies when Bucket <= p. 0 (the default) uses a bucket
	// drawn at random once per process and shared by every Builder, so a
	// client never flips between canary and non-canary on re-resolution.
	Bucket int
	// DynamicParameters are the client's dynamic parameters, matched
	// against a choice's dynamicParameterConstraints, for every target
	// without an entry in AuthorityParameters.
	DynamicParameters map[string]string
	// AuthorityParameters sets the dynamic parameters per DNS authority: for
	// a target dnsconfig://NS_IP[:PORT]/HOST, the entry keyed NS_IP[:PORT]
	// (port 53 may be left out) replaces DynamicParameters entirely; the two
	// are not merged (as gRFC A67 chose for xDS authorities).
	AuthorityParameters map[string]map[string]string
	// DefaultServiceConfig is the service config (JSON) a channel uses when
	// DNS publishes none for it, and when the first record it sees is
	// invalid (gRFC A21). DialOptions passes it to
	// grpc.WithDefaultServiceConfig too. Set the default here rather than
	// only with grpc.WithDefaultServiceConfig: grpc-go keeps a channel's last
	// config when a resolver gives none, so when a published config is
	// withdrawn the resolver must send the default itself, and this is the
	// one it knows (without it, it sends the empty config). Empty: no
	// default; an invalid record on a new channel then fails the channel
	// until the record is fixed. It is checked with the rules published
	// configs are checked with, and handed to grpc-go in the same form
	// (status codes upper-cased, members named like a field in another
	// case left out, as the spec ignores them).
	DefaultServiceConfig string

	// Nameservers are asked in order, each "IP[:PORT]" (port 53 by
	// default). Empty: those of ResolvConf. A target's authority
	// (dnsconfig://NS_IP/HOST) overrides both.
	Nameservers []string
	// ResolvConf is the resolv.conf file read when Nameservers is empty
	// and the target names no nameserver. Default /etc/resolv.conf. It is
	// followed as glibc and Go's resolver follow it: its nameservers (at
	// most three), its search list (or domain) and options ndots, timeout,
	// attempts (where QueryTimeout and Attempts are unset) and rotate. A
	// host with a final dot is asked as written only. The _grpc_config.
	// record is asked at the name the addresses were found at.
	ResolvConf string
	// HostsFile is read, when ResolvConf is, before DNS is asked: a host it
	// lists gets its addresses from it, and its _grpc_config. record from
	// DNS at the name as written. Default /etc/hosts.
	HostsFile string

	// QueryTimeout bounds one query to one nameserver. Default 2s.
	QueryTimeout time.Duration
	// Attempts is how many times the nameserver list is walked before a
	// lookup fails. Default 2.
	Attempts int
	// TXTBudget is how long a new channel's addresses, once they have
	// arrived, wait for the TXT answer (and the other address family)
	// before they go to the channel; a slower answer arrives in a later
	// update. A running channel waits for every answer instead (each
	// bounded by QueryTimeout): it has addresses, and a family that came
	// late would drop out of it for a moment. Default 200ms.
	TXTBudget time.Duration

	// MinRefresh and MaxRefresh bound the re-resolution interval, which is
	// otherwise the shortest TTL of the answers. Defaults 5s and 10m.
	MinRefresh, MaxRefresh time.Duration
	// MinResolveNowInterval is the least time between the start of one
	// resolution and a re-resolution asked by the channel (ResolveNow, on
	// connection trouble). Default 30s, as grpc-go's dns resolver.
	MinResolveNowInterval time.Duration
	// Backoff spaces retries after a failed resolution. Default
	// backoff.DefaultConfig (1s, ×1.6, jitter 0.2, at most 120s).
	Backoff backoff.Config

	// HeaderRules are headerExtraction rules given in code
	// (extract.New). They apply to the calls whose matched method config in
	// the published service config has no headerExtraction field: published
	// rules win, method by method, as a published config wins over a
	// default one. Nil: none.
	HeaderRules *extract.Rules

	// Validator, when set, checks every answer (docs/dnssec.md):
	// resolver/dnssec's validates DNSSEC up to trust anchors, so that a
	// forged, unsigned or expired answer is a failed lookup (gRFC A21: a
	// running channel keeps its config, a new one gets the default) and
	// State says "bogus" and why. It is an interface so that a client
	// that does not validate does not link the validator.
	Validator Validator
	// RequireAuthenticatedData trusts a validating resolver on this
	// machine (Unbound, systemd-resolved, BIND) instead: every answer
	// must carry the AD bit, or the lookup fails. The nameservers must
	// then be loopback addresses: the AD bit of a resolver across a
	// network proves nothing to the client (RFC 6840 §5.7). It is instead
	// of Validator.
	RequireAuthenticatedData bool

	// Logger receives a record for every service config change, with the
	// chosen choice and why, and for lookup failures. Default: grpc-go's
	// grpclog, component "dnsconfig" (lines start "[dnsconfig]"), so
	// GRPC_GO_LOG_SEVERITY_LEVEL=info shows config changes and warning
	// shows failures, as for grpc-go's own resolvers; debug records need
	// GRPC_GO_LOG_VERBOSITY_LEVEL=2. To silence it, give
	// slog.New(slog.DiscardHandler).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultLanguage              = "go"
	DefaultResolvConf            = "/etc/resolv.conf"
	DefaultQueryTimeout          = 2 * time.Second
	DefaultAttempts              = 2
	DefaultTXTBudget             = 200 * time.Millisecond
	DefaultMinRefresh            = 5 * time.Second
	DefaultMaxRefresh            = 10 * time.Minute
	DefaultMinResolveNowInterval = 30 * time.Second
)

// processBucket is the canary bucket of this process, drawn once.
var processBucket = sync.OnceValue(func() int { return rand.IntN(100) + 1 })

// processHostname is read once: it does not change under a running process
// in any way a client should follow.
var processHostname = sync.OnceValues(os.Hostname)

// config is Options with defaults applied and checked.
type config struct {
	Options
	bucket      int
	hostname    string
	hostnameErr error
	// timeoutSet and attemptsSet are set when Options chose QueryTimeout
	// and Attempts, which then win over resolv.conf's options.
	timeoutSet, attemptsSet bool
	nameservers             []string
	authParams              map[string]map[string]string
	defaultConfig           string // compact JSON, or ""
}

// Validate reports the first problem with the options, naming the field.
// NewBuilder keeps an invalid Options and reports the error from Build, so
// the channel using it fails with this message; call Validate at startup
// to fail earlier.
func (o Options) Validate() error {
	_, err := o.resolve()
	return err
}

func (o Options) resolve() (*config, error) {
	c := &config{Options: o}
	if c.Language == "" {
		c.Language = DefaultLanguage
	}
	switch {
	case o.Bucket == 0:
		c.bucket = processBucket()
	case o.Bucket < 1 || o.Bucket > 100:
		return nil, fmt.Errorf("resolver.Options.Bucket is %d: use 1..100, or 0 for a bucket drawn once per process", o.Bucket)
	default:
		c.bucket = o.Bucket
	}
	c.hostname = o.Hostname
	if c.hostname == "" {
		c.hostname, c.hostnameErr = processHostname()
	}
	for _, step := range []func() error{c.resolveTimers, c.resolveBackoff, c.resolveNameservers, c.resolveParams, c.resolveDefaultConfig, c.resolveValidation} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if c.HostsFile == "" {
		c.HostsFile = DefaultHostsFile
	}
	if c.Logger == nil {
		c.Logger = slog.New(&grpclogHandler{})
	}
	return c, nil
}

// resolveTimers applies the defaults of the durations and attempts, and
// checks them.
func (c *config) resolveTimers() error {
	c.timeoutSet, c.attemptsSet = c.QueryTimeout != 0, c.Attempts != 0
	onlyMax := c.MinRefresh == 0 && c.MaxRefresh > 0
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"QueryTimeout", &c.QueryTimeout, DefaultQueryTimeout},
		{"TXTBudget", &c.TXTBudget, DefaultTXTBudget},
		{"MinRefresh", &c.MinRefresh, DefaultMinRefresh},
		{"MaxRefresh", &c.MaxRefresh, DefaultMaxRefresh},
		{"MinResolveNowInterval", &c.MinResolveNowInterval, DefaultMinResolveNowInterval},
	} {
		if *d.v < 0 {
			return fmt.Errorf("resolver.Options.%s is %v: durations must be positive (0 means the default, %v)", d.name, *d.v, d.def)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if onlyMax && c.MaxRefresh < c.MinRefresh {
		// Only MaxRefresh was set, below the default minimum: it wins.
		c.MinRefresh = c.MaxRefresh
	}
	if c.MinRefresh > c.MaxRefresh {
		return fmt.Errorf("resolver.Options.MinRefresh (%v) is above MaxRefresh (%v)", c.MinRefresh, c.MaxRefresh)
	}
	if c.Attempts < 0 {
		return fmt.Errorf("resolver.Options.Attempts is %d: use 1 or more (0 means %d)", c.Attempts, DefaultAttempts)
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	return nil
}

// resolveBackoff applies the default backoff, and checks it.
func (c *config) resolveBackoff() error {
	if c.Backoff == (backoff.Config{}) {
		c.Backoff = backoff.DefaultConfig
	}
	if c.Backoff.BaseDelay <= 0 || c.Backoff.MaxDelay < c.Backoff.BaseDelay || c.Backoff.Multiplier < 1 || c.Backoff.Jitter < 0 || c.Backoff.Jitter > 1 {
		return fmt.Errorf("resolver.Options.Backoff %+v: need BaseDelay > 0, MaxDelay >= BaseDelay, Multiplier >= 1 and Jitter in [0,1]", c.Backoff)
	}
	return nil
}

// resolveNameservers normalises Options.Nameservers.
func (c *config) resolveNameservers() error {
	for i, ns := range c.Options.Nameservers {
		n, err := parseNameserver(ns)
		if err != nil {
			return fmt.Errorf("resolver.Options.Nameservers[%d] %q: %v", i, ns, err)
		}
		c.nameservers = append(c.nameservers, n)
	}
	return nil
}

// resolveParams copies the dynamic parameters, keyed by normalised
// authority: the caller may change its maps later, and channels must not
// see that half-way through a selection.
func (c *config) resolveParams() error {
	if len(c.AuthorityParameters) > 0 {
		c.authParams = make(map[string]map[string]string, len(c.AuthorityParameters))
		for auth, p := range c.AuthorityParameters {
			n, err := parseNameserver(auth)
			if err != nil {
				return fmt.Errorf("resolver.Options.AuthorityParameters key %q: %v; keys are the NS_IP[:PORT] of dnsconfig://NS_IP[:PORT]/HOST targets", auth, err)
			}
			if _, dup := c.authParams[n]; dup {
				return fmt.Errorf("resolver.Options.AuthorityParameters has two keys for nameserver %s", n)
			}
			c.authParams[n] = maps.Clone(p)
		}
	}
	c.DynamicParameters = maps.Clone(c.DynamicParameters)
	c.AuthorityParameters = nil
	return nil
}

// resolveDefaultConfig checks Options.DefaultServiceConfig with the rules
// published configs are checked with, and keeps it in the form grpc-go
// gets them in.
func (c *config) resolveDefaultConfig() error {
	if c.DefaultServiceConfig == "" {
		return nil
	}
	if !json.Valid([]byte(c.DefaultServiceConfig)) {
		return errors.New("resolver.Options.DefaultServiceConfig is not valid JSON")
	}
	if ds := sc.ValidateServiceConfig([]byte(c.DefaultServiceConfig)); ds.HasErrors() {
		return fmt.Errorf("resolver.Options.DefaultServiceConfig is invalid: %v", ds.Err())
	}
	// The default reaches grpc-go's parser as published configs do: in
	// the form that makes it read what the spec says (status codes in any
	// case, no case-variant field names), or a default that Validate
	// accepted would fail grpc.NewClient.
	ch, err := sc.ParseChoices([]byte(`[{"serviceConfig":` + c.DefaultServiceConfig + `}]`))
	if err != nil {
		return fmt.Errorf("resolver.Options.DefaultServiceConfig is invalid: %v", err)
	}
	c.defaultConfig = string(ch.GrpcGoConfig(0))
	return nil
}

// params returns the dynamic parameters for a target's nameserver
// authority ("" for none).
func (c *config) params(authority string) map[string]string {
	if authority != "" {
		if p, ok := c.authParams[authority]; ok {
			return p
		}
	}
	return c.DynamicParameters
}

// client describes this client to choice selection.
func (c *config) client(authority string) sc.Client {
	return sc.Client{Language: c.Language, Hostname: c.hostname, Bucket: c.bucket, Params: c.params(authority)}
}

// refresh clamps a TTL to the refresh bounds.
func (c *config) refresh(ttl time.Duration, known bool) time.Duration {
	if !known {
		return c.MaxRefresh
	}
	return min(max(ttl, c.MinRefresh), c.MaxRefresh)
}

// backoff returns the wait before retry number retries (0 first), with
// jitter, as gRPC's connection backoff spec says.
func (c *config) backoff(retries int) time.Duration {
	b := c.Backoff
	d, maxD := float64(b.BaseDelay), float64(b.MaxDelay)
	for ; d < maxD && retries > 0; retries-- {
		d *= b.Multiplier
	}
	d = min(d, maxD)
	d *= 1 + b.Jitter*(rand.Float64()*2-1)
	return max(time.Duration(d), 0)
}

// resolveValidation checks the validation options.
func (c *config) resolveValidation() error {
	if c.RequireAuthenticatedData && c.Validator != nil {
		return fmt.Errorf("resolver.Options: RequireAuthenticatedData and Validator are two ways to validate: choose one")
	}
	if c.RequireAuthenticatedData {
		for _, ns := range c.nameservers {
			if ap, err := netip.ParseAddrPort(ns); err != nil || !ap.Addr().IsLoopback() {
				return fmt.Errorf("resolver.Options.RequireAuthenticatedData trusts the AD bit of a resolver on this machine only: nameserver %s is not a loopback address", ns)
			}
		}
	}
	return nil
}
