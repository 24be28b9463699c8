package resolver

// The service config a channel runs on, as gRFC A21 says a client handles
// the records it resolves: a small value and a pure transition function,
// so that every rule is a row of a table test (a21_test.go) and the
// resolver's goroutines only carry its decisions out.

// configKind is which service config the channel was given.
type configKind uint8

const (
	// configUnset: nothing was given yet; the channel is new.
	configUnset configKind = iota
	// configNone: no service config (nil): the channel's own default, from
	// grpc.WithDefaultServiceConfig, or none at all.
	configNone
	// configDefault: Options.DefaultServiceConfig.
	configDefault
	// configEmpty: the empty config, {}. It replaces a published config that
	// was withdrawn when there is no default: given nil, grpc-go would keep
	// the withdrawn config.
	configEmpty
	// configPublished: the service config of the chosen choice.
	configPublished
	// configFailed: the record's error. The channel refuses it and stays in
	// TRANSIENT_FAILURE, and the resolver retries with backoff.
	configFailed
)

var configKindNames = [...]string{"unset", "none", "default", "empty", "published", "failed"}

func (k configKind) String() string { return configKindNames[k] }

// eventKind is what one resolution learned about the service config.
type eventKind uint8

const (
	// evPending: the addresses go to the channel before the TXT answer is
	// in (Options.TXTBudget).
	evPending eventKind = iota
	// evLookupFailed: the TXT lookup failed; the records are unknown.
	evLookupFailed
	// evNone: no service config is published for this client: no record,
	// NXDOMAIN, or no choice matches (also: service config disabled, or an
	// IP target, which has no record).
	evNone
	// evInvalid: the record, or the chosen choice's config, is invalid.
	evInvalid
	// evChosen: a valid choice was chosen.
	evChosen
)

// event is what the TXT answer of one resolution means for the config.
type event struct {
	kind   eventKind
	json   string // evChosen: the config as grpc-go gets it
	choice int    // evChosen: its index
	err    error  // evInvalid, evLookupFailed
}

// rule is the gRFC A21 rule a transition applied.
type rule uint8

const (
	// ruleUse: a valid config was chosen, use it (A21, "Behavior on
	// receiving a new gRPC Config", step 3).
	ruleUse rule = iota
	// ruleNoConfig: no config is published: use the default if there is
	// one, else {} in place of a withdrawn published config, else the
	// channel's own default (A21, "Service Config Channel Arguments").
	ruleNoConfig
	// ruleKeepPrevious: an invalid record after a valid config, or after
	// no config: keep it (step 4.1).
	ruleKeepPrevious
	// ruleKeepEarly: an invalid record on a channel without a default
	// whose addresses went out before any TXT answer (Options.TXTBudget):
	// it runs on its own default, which is kept as after no config (step
	// 4.1); failing the channel would break calls that work, and only
	// because the answer was slow.
	ruleKeepEarly
	// ruleUseDefault: an invalid record on a channel that never had a
	// valid config, with a default config: use the default (step 4.2.1).
	ruleUseDefault
	// ruleFail: an invalid record on a new channel without a default: the
	// resolution fails and is retried with backoff; the channel stays in
	// TRANSIENT_FAILURE until a valid record comes (step 4.2.2).
	ruleFail
	// ruleWait: the TXT answer is not in yet, or its lookup failed: a
	// running channel keeps its config; a new one starts on its default
	// (DESIGN §4, TXT lookup errors).
	ruleWait
)

var ruleNames = [...]string{"use", "no config", "keep previous", "keep early", "use default", "fail", "wait"}

func (r rule) String() string { return ruleNames[r] }

// channelConfig is the service config state of one channel.
type channelConfig struct {
	kind configKind
	// answered is set once a TXT answer (a config, or none) decided the
	// config, as opposed to addresses that went out before it.
	answered bool
	// json is the config given to grpc-go (configPublished).
	json string
	// choice is the chosen choice's index (configPublished), else -1.
	choice int
	// err is the record's problem (configFailed).
	err error
}

// newChannel is the state of a channel that was given nothing yet.
var newChannel = channelConfig{kind: configUnset, choice: -1}

// next applies event e to s by gRFC A21. hasDefault says whether
// Options.DefaultServiceConfig is set.
func (s channelConfig) next(e event, hasDefault bool) (channelConfig, rule) {
	switch e.kind {
	case evChosen:
		return channelConfig{kind: configPublished, answered: true, json: e.json, choice: e.choice}, ruleUse
	case evNone:
		n := s.noConfig(hasDefault)
		n.answered = true
		return n, ruleNoConfig
	case evInvalid:
		switch {
		case s.kind == configFailed:
			// Still failing, now for this record's reason.
		case s.answered:
			return s, ruleKeepPrevious
		case hasDefault:
			// A new channel, or one that started on this default before
			// any TXT answer: it never had a valid config.
			return channelConfig{kind: configDefault, choice: -1}, ruleUseDefault
		case s.kind != configUnset:
			return s, ruleKeepEarly
		}
		return channelConfig{kind: configFailed, choice: -1, err: e.err}, ruleFail
	}
	// evPending, evLookupFailed.
	if s.kind == configUnset {
		return s.noConfig(hasDefault), ruleWait
	}
	return s, ruleWait
}

// noConfig is "no service config": the default when there is one; {} when
// a published config (or {} in its place) was in use; else nil.
func (s channelConfig) noConfig(hasDefault bool) channelConfig {
	switch {
	case hasDefault:
		return channelConfig{kind: configDefault, choice: -1}
	case s.kind == configPublished || s.kind == configEmpty:
		return channelConfig{kind: configEmpty, choice: -1}
	}
	return channelConfig{kind: configNone, choice: -1}
}

// sameConfig reports whether s and o give the channel the same config (the
// choice that carries it may differ).
func (s channelConfig) sameConfig(o channelConfig) bool {
	if s.kind != o.kind || s.json != o.json {
		return false
	}
	return s.kind != configFailed || s.err.Error() == o.err.Error()
}

// given reports whether the channel was given a state.
func (s channelConfig) given() bool { return s.kind != configUnset }
