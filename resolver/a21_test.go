package resolver

import (
	"errors"
	"testing"

	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// What a resolution can learn about the config, by name: published
// records (run through serviceconfig.Choose, as the resolver does) and the
// lookup's own events.
var a21Answers = map[string]sc.Answer{
	"valid":         {Records: [][]string{sc.EncodeTXT([]byte(oneChoice(cfgA)))}},
	"another valid": {Records: [][]string{sc.EncodeTXT([]byte(oneChoice(cfgB)))}},
	"no record":     {},
	"NXDOMAIN":      {NXDomain: true},
	"no match":      {Records: [][]string{sc.EncodeTXT([]byte(`[{"clientLanguage":["java"],"serviceConfig":` + cfgA + `}]`))}},
	// gRFC A21's own example of an invalid config.
	"invalid": {Records: [][]string{sc.EncodeTXT([]byte(`[{"serviceConfig":{"loadBalancingPolicy":"UnknownPolicy"}}]`))}},
}

func a21Event(t *testing.T, name string) event {
	t.Helper()
	switch name {
	case "lookup failed":
		return event{kind: evLookupFailed, err: errors.New("SERVFAIL")}
	case "addresses first":
		return event{kind: evPending}
	case "service config disabled":
		return disabledOutcome.ev
	}
	a, ok := a21Answers[name]
	if !ok {
		t.Fatalf("no answer %q", name)
	}
	ev, _ := eventOf(sc.Choose(a, fastClient()), "_grpc_config.svc.test")
	return ev
}

// a21Section is where gRFC A21 (as of 2019-02-19) states each rule: the
// numbered steps of "Behavior on receiving a new gRPC Config", and
// "Service Config Channel Arguments" (channel args). ruleWait is ours: A21
// says nothing of answers that are not in yet or failed lookups.
var a21Section = map[rule]string{
	ruleUse:          "A21 step 3",         // a valid config is used
	ruleNoConfig:     "A21 channel args",   // the default when the resolver gives no config
	ruleKeepPrevious: "A21 step 4.1",       // an invalid config keeps the previous one
	ruleKeepEarly:    "A21 step 4.1",       // likewise: the channel runs on its own default
	ruleUseDefault:   "A21 step 4.2.1",     // an invalid config on a new client: the default
	ruleFail:         "A21 step 4.2.2",     // an invalid config on a new client without one: failure
	ruleWait:         "DESIGN §4, not A21", // no TXT answer yet, or its lookup failed
}

// TestA21 drives the channel's config through every row of gRFC A21
// ("Behavior on receiving a new gRPC Config", steps 1 to 4.2.2, and
// "Service Config Channel Arguments", the default config and disabling
// service config), from a new channel and from each state a channel can be
// in, with and without a default config. Each row is named by what
// happens, and the A21 step of the rule it expects is appended.
func TestA21(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []string // answers that made the channel's state, from new
		answer  string
		dflt    bool
		want    configKind
		rule    rule
	}{
		// A new channel.
		{"new channel, valid: use it", nil, "valid", false, configPublished, ruleUse},
		{"new channel with default, valid: use it", nil, "valid", true, configPublished, ruleUse},
		{"new channel, no record: no config", nil, "no record", false, configNone, ruleNoConfig},
		{"new channel with default, no record: the default", nil, "no record", true, configDefault, ruleNoConfig},
		{"new channel, NXDOMAIN: no config", nil, "NXDOMAIN", false, configNone, ruleNoConfig},
		{"new channel with default, NXDOMAIN: the default", nil, "NXDOMAIN", true, configDefault, ruleNoConfig},
		{"new channel, no match: no config", nil, "no match", false, configNone, ruleNoConfig},
		{"new channel with default, no match: the default", nil, "no match", true, configDefault, ruleNoConfig},
		{"new channel with default, invalid: the default", nil, "invalid", true, configDefault, ruleUseDefault},
		{"new channel, invalid: fail and retry", nil, "invalid", false, configFailed, ruleFail},
		{"new channel, TXT lookup failed: no config meanwhile", nil, "lookup failed", false, configNone, ruleWait},
		{"new channel with default, TXT lookup failed: the default meanwhile", nil, "lookup failed", true, configDefault, ruleWait},
		{"new channel, addresses before the TXT answer: no config meanwhile", nil, "addresses first", false, configNone, ruleWait},
		// grpc.WithDisableServiceConfig: no TXT lookup, so never a record
		// to fail on (A21, "Service Config Channel Arguments").
		{"new channel, service config disabled: no config", nil, "service config disabled", false, configNone, ruleNoConfig},
		{"new channel with default, service config disabled: the default", nil, "service config disabled", true, configDefault, ruleNoConfig},
		{"service config disabled, again: no config still", []string{"service config disabled"}, "service config disabled", false, configNone, ruleNoConfig},

		// After a valid config.
		{"after valid, valid: use the new one", []string{"valid"}, "another valid", false, configPublished, ruleUse},
		{"after valid, invalid: keep it", []string{"valid"}, "invalid", false, configPublished, ruleKeepPrevious},
		{"after valid with default, invalid: keep it", []string{"valid"}, "invalid", true, configPublished, ruleKeepPrevious},
		{"after valid, withdrawn: {} in its place", []string{"valid"}, "no record", false, configEmpty, ruleNoConfig},
		{"after valid with default, withdrawn: the default", []string{"valid"}, "no record", true, configDefault, ruleNoConfig},
		{"after valid, NXDOMAIN: {} in its place", []string{"valid"}, "NXDOMAIN", false, configEmpty, ruleNoConfig},
		{"after valid, no match: {} in its place", []string{"valid"}, "no match", false, configEmpty, ruleNoConfig},
		{"after valid with default, no match: the default", []string{"valid"}, "no match", true, configDefault, ruleNoConfig},
		{"after valid, TXT lookup failed: keep it", []string{"valid"}, "lookup failed", false, configPublished, ruleWait},

		// After no config.
		{"after none, invalid: keep no config", []string{"no record"}, "invalid", false, configNone, ruleKeepPrevious},
		{"after none with default, invalid: keep the default", []string{"no match"}, "invalid", true, configDefault, ruleKeepPrevious},
		{"after none, valid: use it", []string{"no record"}, "valid", false, configPublished, ruleUse},
		{"after withdrawn, no record: {} still", []string{"valid", "no record"}, "no record", false, configEmpty, ruleNoConfig},
		{"after withdrawn, invalid: keep {}", []string{"valid", "no record"}, "invalid", false, configEmpty, ruleKeepPrevious},

		// Addresses went out before the first TXT answer (TXTBudget).
		{"addresses first, invalid: keep the channel's default", []string{"addresses first"}, "invalid", false, configNone, ruleKeepEarly},
		{"addresses first with default, invalid: the default", []string{"addresses first"}, "invalid", true, configDefault, ruleUseDefault},
		{"addresses first, valid: use it", []string{"addresses first"}, "valid", false, configPublished, ruleUse},

		// A new channel that failed on an invalid record.
		{"failing, invalid: still failing", []string{"invalid"}, "invalid", false, configFailed, ruleFail},
		{"failing, valid: use it", []string{"invalid"}, "valid", false, configPublished, ruleUse},
		{"failing, no record: no config", []string{"invalid"}, "no record", false, configNone, ruleNoConfig},
		{"failing, TXT lookup failed: still failing", []string{"invalid"}, "lookup failed", false, configFailed, ruleWait},
	} {
		section, ok := a21Section[tc.rule]
		if !ok {
			t.Fatalf("%s: rule %q has no A21 section", tc.name, tc.rule)
		}
		t.Run(tc.name+" ("+section+")", func(t *testing.T) {
			s := newChannel
			for _, h := range tc.history {
				s, _ = s.next(a21Event(t, h), tc.dflt)
			}
			got, rule := s.next(a21Event(t, tc.answer), tc.dflt)
			if got.kind != tc.want || rule != tc.rule {
				t.Errorf("from %v: %v by rule %q, want %v by rule %q", s.kind, got.kind, rule, tc.want, tc.rule)
			}
			if got.kind == configPublished && (got.json == "" || got.choice < 0) || got.kind != configPublished && got.choice != -1 {
				t.Errorf("%+v: a published config names its choice, no other does", got)
			}
			if (got.kind == configFailed) != (got.err != nil) {
				t.Errorf("%+v: a failed config carries the record's error, no other does", got)
			}
		})
	}
}

// A config stays the same config whichever choice carries it; a failing
// channel's config changes with the record's problem.
func TestA21SameConfig(t *testing.T) {
	a := channelConfig{kind: configPublished, json: cfgA, choice: 0}
	b := channelConfig{kind: configPublished, json: cfgA, choice: 2}
	c := channelConfig{kind: configPublished, json: cfgB, choice: 0}
	f1 := channelConfig{kind: configFailed, choice: -1, err: errors.New("one")}
	f2 := channelConfig{kind: configFailed, choice: -1, err: errors.New("two")}
	if !a.sameConfig(b) || a.sameConfig(c) || f1.sameConfig(f2) || !f1.sameConfig(f1) {
		t.Error("sameConfig")
	}
}
